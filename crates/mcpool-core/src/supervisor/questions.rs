//! A session server's questions during a 2026-07-28 agent's call
//! (behaviour.md rule 16, between revisions). Such an agent has no stream
//! for a server's own request (elicitation, sampling, roots), so mcpool
//! answers its call with `InputRequiredResult` carrying the question and a
//! `requestState` of its own, and keeps the server's call waiting (parked).
//! When the agent calls again with its answer and that state, the answer
//! goes to the server and mcpool waits on: for the result, or the next
//! question. A call nobody comes back for is dropped after [`PARK_LIMIT`].
//! A call that ends early (the agent closed its request, or never came
//! back) is cancelled at the server, as a session agent's would be.

#![allow(deprecated)] // SEP-2577: sampling and roots are still in use.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientRequest, ClientResult, ErrorData as McpError, InputRequest, InputRequiredResult,
    ServerRequest, ServerResult,
};
use rmcp::service::{Peer, RequestContext, RoleClient, RoleServer};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::forward::{Forwarder, Outgoing};
use super::{RequestError, Supervisor};
use crate::hub::{Caller, Question};
use crate::sync::lock;
use crate::upstream::ledger::ProgressLedger;

/// How long a parked call waits for the agent's next round.
pub(super) const PARK_LIMIT: Duration = Duration::from_secs(300);
/// The one key of mcpool's `inputRequests` (one question per round).
const KEY: &str = "mcpool";
/// mcpool's `requestState` values start with this.
const STATE_PREFIX: &str = "mcpool-";

/// A server's call running for a 2026-07-28 agent, and the questions it asks.
pub(super) struct Asking {
    done: oneshot::Receiver<Result<ServerResult, RequestError>>,
    questions: mpsc::UnboundedReceiver<Question>,
    /// Dropping the call cancels it: the server gets `notifications/cancelled`.
    _stop: DropGuard,
}

/// A call waiting for the agent's answer to `asked`.
struct Parked {
    call: Asking,
    asked: ServerRequest,
    answer: oneshot::Sender<Result<ClientResult, McpError>>,
    since: Instant,
}

/// One server's parked calls, by `requestState`, and the calls that park:
/// started, waited on, and resumed with the agent's next round.
#[derive(Default)]
pub(super) struct ParkedCalls(Mutex<HashMap<String, Parked>>);

impl ParkedCalls {
    /// Parks `call` until the agent answers `asked`; gives the state to send.
    fn park(
        &self,
        call: Asking,
        asked: ServerRequest,
        answer: oneshot::Sender<Result<ClientResult, McpError>>,
    ) -> String {
        let state = format!("{STATE_PREFIX}{:032x}", rand::random::<u128>());
        let mut parked = lock(&self.0);
        // Calls nobody came back for end here (dropping them stops them).
        parked.retain(|_, p| p.since.elapsed() < PARK_LIMIT);
        parked.insert(
            state.clone(),
            Parked {
                call,
                asked,
                answer,
                since: Instant::now(),
            },
        );
        state
    }

    fn take(&self, state: &str) -> Option<Parked> {
        let mut parked = lock(&self.0);
        parked.remove(state).filter(|p| p.since.elapsed() < PARK_LIMIT)
    }

    /// The agent's next round of a parked call: its answer goes to the
    /// server, and the call goes on. `None` when the request is no such round.
    pub(super) async fn resume(
        &self,
        sup: &Supervisor,
        request: &ClientRequest,
        agent: &RequestContext<RoleServer>,
    ) -> Option<Result<ServerResult, RequestError>> {
        let (state, answer) = round_of(request)?;
        // One that ended (answered, or not within PARK_LIMIT) starts over:
        // the request goes to the server as a new call.
        let parked = self.take(state)?;
        let _ = parked.answer.send(read_answer(&parked.asked, answer));
        Some(self.wait(&sup.name, parked.call, agent).await)
    }

    /// Starts `request` as a call that takes the server's questions.
    pub(super) fn start(
        sup: &Arc<Supervisor>,
        peer: Peer<RoleClient>,
        generation: u64,
        ledger: Arc<ProgressLedger>,
        request: ClientRequest,
        caller: Caller,
    ) -> Asking {
        let (done_tx, done) = oneshot::channel();
        let (questions_tx, questions) = mpsc::unbounded_channel();
        let sup = sup.clone();
        let stop = CancellationToken::new();
        let cancel = stop.clone();
        tokio::spawn(async move {
            let guard = sup.hub.begin_call(&sup.name, caller);
            guard.send_questions(questions_tx);
            let sent = Outgoing {
                request,
                told: None,
                stop: Some(cancel),
            };
            let forwarder = Forwarder { sup: &sup };
            let result = match forwarder
                .round(&peer, generation, &ledger, sent, Some(&guard), None)
                .await
            {
                Ok(response) => forwarder.outcome(generation, response),
                Err(e) => Err(e),
            };
            let _ = done_tx.send(result);
        });
        Asking {
            done,
            questions,
            _stop: stop.drop_guard(),
        }
    }

    /// Waits for the call's result; a question first answers the agent
    /// with it (the call parked), or the server with an error when the
    /// agent cannot answer it.
    pub(super) async fn wait(
        &self,
        server: &str,
        mut call: Asking,
        agent: &RequestContext<RoleServer>,
    ) -> Result<ServerResult, RequestError> {
        let declared = agent.client_capabilities().unwrap_or_default();
        loop {
            tokio::select! {
                done = &mut call.done => {
                    return done.unwrap_or_else(|_| Err(RequestError::Mcp(McpError::internal_error(
                        format!("the call to server '{server}' ended without an answer"), None,
                    ))));
                }
                question = call.questions.recv() => {
                    let Some((asked, answer)) = question else { continue };
                    match as_input(&asked, &declared) {
                        Some(input) => {
                            let state = self.park(call, asked, answer);
                            let input = InputRequiredResult::new(
                                Some([(KEY.to_string(), input)].into_iter().collect()),
                                Some(state),
                            );
                            return Ok(ServerResult::InputRequiredResult(input));
                        }
                        None => {
                            let _ = answer.send(Err(McpError::internal_error(
                                format!("the agent calling server '{server}' through mcpool did not declare the capability this request needs"),
                                None,
                            )));
                        }
                    }
                }
                _ = agent.ct.cancelled() => return Err(RequestError::Cancelled),
            }
        }
    }
}

/// Whether this request may take a server's questions as rounds: a 2026-07-28
/// agent's call, prompt or read that declared some capability to answer.
pub(super) fn may_ask(request: &ClientRequest, agent: &RequestContext<RoleServer>) -> bool {
    let kind = matches!(
        request,
        ClientRequest::CallToolRequest(_) | ClientRequest::GetPromptRequest(_) | ClientRequest::ReadResourceRequest(_)
    );
    let caps = agent.client_capabilities().unwrap_or_default();
    kind && (caps.elicitation.is_some() || caps.sampling.is_some() || caps.roots.is_some())
}

/// The `requestState` and answer of an agent's next round, if it has them.
fn round_of(request: &ClientRequest) -> Option<(&str, Option<&serde_json::Value>)> {
    let (state, responses) = match request {
        ClientRequest::CallToolRequest(r) => (&r.params.request_state, &r.params.input_responses),
        ClientRequest::GetPromptRequest(r) => (&r.params.request_state, &r.params.input_responses),
        ClientRequest::ReadResourceRequest(r) => (&r.params.request_state, &r.params.input_responses),
        _ => return None,
    };
    let state = state.as_deref().filter(|s| s.starts_with(STATE_PREFIX))?;
    Some((state, responses.as_ref().and_then(|r| r.get(KEY))))
}

/// A server's request as an input request the agent declared it can answer.
fn as_input(asked: &ServerRequest, declared: &ClientCapabilities) -> Option<InputRequest> {
    match asked {
        ServerRequest::ElicitRequest(r) if declared.elicitation.is_some() => Some(InputRequest::Elicitation(r.clone())),
        ServerRequest::CreateMessageRequest(r) if declared.sampling.is_some() => {
            Some(InputRequest::CreateMessage(r.clone()))
        }
        ServerRequest::ListRootsRequest(r) if declared.roots.is_some() => Some(InputRequest::ListRoots(r.clone())),
        _ => None,
    }
}

/// The agent's answer to `asked`, as the server's request expects it.
fn read_answer(asked: &ServerRequest, answer: Option<&serde_json::Value>) -> Result<ClientResult, McpError> {
    let unreadable =
        |why: String| McpError::invalid_params(format!("the agent's answer could not be read: {why}"), None);
    let answer = answer
        .cloned()
        .ok_or_else(|| unreadable(format!("no inputResponses.{KEY}")))?;
    let read = match asked {
        ServerRequest::ElicitRequest(_) => serde_json::from_value(answer).map(ClientResult::ElicitResult),
        ServerRequest::CreateMessageRequest(_) => serde_json::from_value(answer).map(ClientResult::CreateMessageResult),
        ServerRequest::ListRootsRequest(_) => serde_json::from_value(answer).map(ClientResult::ListRootsResult),
        _ => return Err(unreadable("not a question mcpool asked".into())),
    };
    read.map_err(|e| unreadable(e.to_string()))
}

#[cfg(test)]
#[path = "questions_tests.rs"]
mod tests;
