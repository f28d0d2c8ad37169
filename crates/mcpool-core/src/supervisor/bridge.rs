//! A 2026-07-28 server that asks for input before it answers
//! (`InputRequiredResult`: elicitation, sampling, roots) while the agent
//! speaks a session revision (behaviour.md rule 16): mcpool asks the agent
//! each question as an ordinary server-to-client request on the call's
//! stream, and sends the answers back to the server as the next round of
//! the same request (`inputResponses`, with the server's `requestState`).
//! An agent that did not declare the capability a question needs is not
//! asked: the call fails with one sentence instead.

#![allow(deprecated)] // SEP-2577: sampling and roots are still in use.

use rmcp::model::{
    ClientRequest, ClientResult, InputRequest, InputRequiredResult, InputResponses, RequestId, ServerRequest,
};
use rmcp::service::{OriginatingRequestId, Peer, RequestContext, RoleServer};

/// Rounds of questions one request may take before mcpool gives up.
pub(super) const MAX_ROUNDS: usize = 8;

/// The agent's answers to every question of `input`, or `None` when it
/// cannot answer one (no such capability, an error, a refusal to answer).
pub(super) async fn ask_agent(ctx: &RequestContext<RoleServer>, input: &InputRequiredResult) -> Option<InputResponses> {
    let requests = input.input_requests.clone().unwrap_or_default();
    let caps = ctx.peer.peer_info().map(|i| i.capabilities.clone())?;
    let mut answers = InputResponses::new();
    for (key, request) in requests {
        let request = match request {
            InputRequest::Elicitation(r) if caps.elicitation.is_some() => ServerRequest::ElicitRequest(r),
            InputRequest::CreateMessage(r) if caps.sampling.is_some() => ServerRequest::CreateMessageRequest(r),
            InputRequest::ListRoots(r) if caps.roots.is_some() => ServerRequest::ListRootsRequest(r),
            _ => return None,
        };
        let answer = ask(&ctx.peer, ctx.id.clone(), request).await?;
        let value = match answer {
            ClientResult::ElicitResult(r) => serde_json::to_value(r),
            ClientResult::CreateMessageResult(r) => serde_json::to_value(r),
            ClientResult::ListRootsResult(r) => serde_json::to_value(r),
            _ => return None,
        };
        answers.insert(key, value.ok()?);
    }
    Some(answers)
}

/// One question to the agent, on the stream of its call `origin`.
async fn ask(peer: &Peer<RoleServer>, origin: RequestId, mut request: ServerRequest) -> Option<ClientResult> {
    use rmcp::model::GetExtensions;
    request.extensions_mut().insert(OriginatingRequestId(origin));
    let peer = peer.clone();
    // A task of its own, so rmcp's task-local origin does not replace it.
    let sent = tokio::spawn(async move { peer.send_request(request).await })
        .await
        .ok()?;
    match sent {
        Ok(result) => Some(result),
        Err(e) => {
            tracing::debug!("the agent did not answer a bridged input request: {e}");
            None
        }
    }
}

/// Puts the answers and the server's state on the request for its next
/// round; `None` for a request that cannot carry them.
pub(super) fn answered(
    request: &mut ClientRequest,
    answers: InputResponses,
    input: &InputRequiredResult,
) -> Option<()> {
    let answers = (!answers.is_empty()).then_some(answers);
    let state = input.request_state.clone();
    match request {
        ClientRequest::CallToolRequest(r) => {
            r.params.input_responses = answers;
            r.params.request_state = state;
        }
        ClientRequest::GetPromptRequest(r) => {
            r.params.input_responses = answers;
            r.params.request_state = state;
        }
        ClientRequest::ReadResourceRequest(r) => {
            r.params.input_responses = answers;
            r.params.request_state = state;
        }
        _ => return None,
    }
    Some(())
}
