//! Forwarding one agent request to the server, once: [`Forwarder`].

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CancelledNotification, CancelledNotificationParam, ClientCapabilities, ClientNotification, ClientRequest, GetMeta,
    InputRequest, InputRequiredResult, ProtocolVersion, RequestMetaObject, RequestParamsMeta, ServerResult,
};
use rmcp::service::{PeerRequestOptions, RequestContext, RoleServer};
use rmcp::ServiceError;

use super::told::{of_a_task, take_session_task, told_capabilities};
use super::{Link, RequestError, Supervisor, Unavailable, PROGRESS_SETTLE};
use crate::errors::{call_timeout_sentence, chain_text, dropped_during_call_sentence};
use crate::hub::Caller;
use crate::lifecycle::Event;
use crate::secrets::redact;

/// One server's requests, as [`Supervisor::forward`] sends them. It is a
/// view of the whole supervisor: a request takes admission (and may wait
/// for the attempt), the session connection, the parked questions, and on
/// a 401 or a broken connection it moves the lifecycle itself.
#[derive(Clone, Copy)]
pub(super) struct Forwarder<'a> {
    pub sup: &'a Arc<Supervisor>,
}

impl Forwarder<'_> {
    /// Forwards one agent request to the server, with progress, cancellation
    /// and server-to-client requests routed back to that agent. A request
    /// that may have reached the server is never sent twice.
    pub async fn forward(
        self,
        mut request: ClientRequest,
        ctx: Option<(&RequestContext<RoleServer>, u64)>,
    ) -> Result<ServerResult, RequestError> {
        if let Some((agent, _)) = ctx {
            carry_agent_meta(&mut request, &agent.meta);
        }
        let asker = ctx.map(|(c, _)| c).filter(|c| agent_takes_input_requests(Some(c)));
        if let Some(agent) = asker {
            // The next round of a call parked on a server's question.
            if let Some(resumed) = self.sup.parked.resume(self.sup, &request, agent).await {
                return resumed;
            }
        }
        let primary = self.sup.peer().await.map_err(RequestError::Unavailable)?;
        // A session agent's request that a server may answer with questions
        // of its own: over the session connection, where it can ask them
        // (session_upstream.rs). Held until the request ends.
        // An agent that shows apps, to a session server that offers them:
        // over the connection that declared MCP Apps.
        let agent = ctx.map(|(c, _)| c);
        let second = match self.sup.session.session_for(self.sup, &request, agent, &primary).await {
            Some(found) => Some(found),
            None => self.sup.apps.session_for(self.sup, &request, agent, &primary).await,
        };
        let (link, _busy) = match second {
            Some((second, busy)) => (second, Some(busy)),
            None => (primary, None),
        };
        let Link {
            peer,
            generation,
            ledger,
            activity,
            listen,
        } = link;
        activity.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        strip_agent_lifecycle(&mut request);
        let stateless = peer.peer_info().is_some_and(|i| !i.protocol_version.has_initialize());
        if stateless {
            // 2026-07-28 has no `logging/setLevel`: the level rides on every request.
            if let ClientRequest::SetLevelRequest(r) = &request {
                #[allow(deprecated)] // SEP-2577; agents in use still set levels.
                let level = r.params.level;
                self.sup.lock().log_level = Some(level);
                return Ok(ServerResult::empty(()));
            }
            // A 2026-07-28 agent's own level (its request's `_meta`) first.
            let agent_level = ctx.and_then(|(c, _)| c.meta.log_level());
            if let Some(level) = agent_level.or(self.sup.lock().log_level) {
                request.get_meta_mut().set_log_level(level);
            }
        }
        if let Some(listen) = &listen {
            match &request {
                ClientRequest::SubscribeRequest(r) => {
                    return listen
                        .resubscribe(&self.sup.hub, &self.sup.name, &r.params.uri, true)
                        .await
                }
                ClientRequest::UnsubscribeRequest(r) => {
                    return listen
                        .resubscribe(&self.sup.hub, &self.sup.name, &r.params.uri, false)
                        .await
                }
                _ => {}
            }
        }
        let caller = |ctx: &RequestContext<RoleServer>| Caller {
            peer: ctx.peer.clone(),
            request_id: ctx.id.clone(),
            agent_token: ctx.meta.get_progress_token(),
            stateless: agent_takes_input_requests(Some(ctx)),
            log_level: ctx.meta.log_level(),
        };
        if let Some(agent) = asker.filter(|a| !stateless && super::questions::may_ask(&request, a)) {
            // A session server may ask this 2026-07-28 agent questions during
            // the call: they become rounds of it (questions.rs).
            let call = super::questions::ParkedCalls::start(self.sup, peer, generation, ledger, request, caller(agent));
            return self.sup.parked.wait(&self.sup.name, call, agent).await;
        }
        let guard = ctx.map(|(ctx, _)| self.sup.hub.begin_call(&self.sup.name, caller(ctx)));
        let agent = ctx.map(|(c, _)| c);
        // A task's own requests are of an agent that takes tasks, whichever
        // way it asked for them (endpoint/session/tasks.rs bridges).
        let asked_task = stateless && (take_session_task(&mut request) || of_a_task(&request));
        let told = if stateless {
            told_capabilities(agent, asked_task)
        } else {
            None
        };
        let mut rounds = 0;
        loop {
            let response = self
                .round(
                    &peer,
                    generation,
                    &ledger,
                    Outgoing {
                        request: request.clone(),
                        told: told.clone(),
                        stop: None,
                    },
                    guard.as_ref(),
                    ctx,
                )
                .await?;
            match response {
                Ok(ServerResult::InputRequiredResult(input)) if agent_takes_input_requests(agent) => {
                    // A 2026-07-28 agent answers the questions itself, if it can.
                    return match lacking_capabilities(agent, &input) {
                        None => Ok(ServerResult::InputRequiredResult(input)),
                        Some(lacking) => Err(RequestError::Mcp(missing_capability(&self.sup.name, lacking))),
                    };
                }
                Ok(ServerResult::InputRequiredResult(input)) => {
                    // A session agent: ask it the server's questions as
                    // requests of its own, and send the answers as the next round.
                    let asked = match ctx {
                        Some((c, _)) if rounds < super::bridge::MAX_ROUNDS => super::bridge::ask_agent(c, &input).await,
                        _ => None,
                    };
                    match asked.and_then(|answers| super::bridge::answered(&mut request, answers, &input)) {
                        Some(()) => rounds += 1,
                        None => {
                            return Err(RequestError::Unavailable(Unavailable {
                                sentence: input_required_sentence(
                                    &self.sup.name,
                                    &input,
                                    ctx.and_then(|(c, _)| c.protocol_version()),
                                ),
                            }))
                        }
                    }
                }
                other => return self.outcome(generation, other),
            }
        }
    }

    /// A server's answer as the agent gets it: its own error redacted (it
    /// may quote its environment or request), a failed request said in one
    /// sentence.
    pub fn outcome(
        self,
        generation: u64,
        response: Result<ServerResult, ServiceError>,
    ) -> Result<ServerResult, RequestError> {
        match response {
            Ok(ServerResult::CallToolResult(result)) if result.is_error == Some(true) => {
                // A tool's error is the server's error too: redacted alike.
                let secrets = self.sup.lock().secret_values.clone();
                let clean = redacted_json(result, &secrets).unwrap_or_else(|| {
                    rmcp::model::CallToolResult::error(vec![rmcp::model::ContentBlock::text(format!(
                        "Server '{}' answered with an error that quoted a secret; see the mcpool log.",
                        self.sup.name
                    ))])
                });
                Ok(ServerResult::CallToolResult(clean))
            }
            Ok(result) => Ok(result),
            Err(ServiceError::McpError(mut e)) => {
                let secrets = self.sup.lock().secret_values.clone();
                e.message = redact(&e.message, &secrets).into();
                e.data = e.data.take().and_then(|data| redacted_json(data, &secrets));
                Err(RequestError::Mcp(e))
            }
            Err(e) => Err(self.failed_request(generation, &e)),
        }
    }

    /// One request to the server and its answer, cancelled upstream when
    /// the agent cancels; progress sent before the answer reaches the agent
    /// before it.
    pub async fn round(
        self,
        peer: &rmcp::service::Peer<rmcp::service::RoleClient>,
        generation: u64,
        ledger: &crate::upstream::ledger::ProgressLedger,
        Outgoing { request, told, stop }: Outgoing,
        guard: Option<&crate::hub::CallGuard<'_>>,
        ctx: Option<(&RequestContext<RoleServer>, u64)>,
    ) -> Result<Result<ServerResult, ServiceError>, RequestError> {
        let mut options = PeerRequestOptions::no_options();
        options.meta = told;
        let limit = self.sup.lock().spec.call_timeout;
        let asked = limit.map(|_| asked_for(&request));
        let handle = match peer.send_request_with_option(request, options).await {
            Ok(h) => h,
            Err(e) => return Err(self.failed_request(generation, &e)),
        };
        let handle_token = handle.progress_token.clone();
        if let Some(g) = guard {
            g.route_progress(ledger.hub_token(&handle_token));
        }
        let id = handle.id.clone();
        let cancelled = ctx.map(|(c, _)| c.ct.clone()).or(stop).unwrap_or_default();
        // The call's limit: time without an answer or a progress from the server.
        let quiet = async {
            match limit {
                Some(limit) => ledger.quiet_for(&handle_token, limit).await,
                None => std::future::pending().await,
            }
        };
        let response = tokio::select! {
            r = handle.await_response() => r,
            _ = cancelled.cancelled() => {
                let note = CancelledNotification::new(CancelledNotificationParam::new(Some(id), Some("cancelled by the agent".into())));
                let _ = peer.send_notification(ClientNotification::CancelledNotification(note)).await;
                ledger.forget(&handle_token);
                return Err(RequestError::Cancelled);
            }
            () = quiet => {
                let limit = limit.unwrap_or_default();
                let reason = format!("no answer within {} (callTimeout)", crate::errors::human_duration(limit));
                let note = CancelledNotification::new(CancelledNotificationParam::new(Some(id), Some(reason)));
                let _ = peer.send_notification(ClientNotification::CancelledNotification(note)).await;
                ledger.forget(&handle_token);
                let sentence = call_timeout_sentence(&self.sup.name, asked.as_deref().unwrap_or("the request"), limit);
                tracing::warn!(server = %self.sup.name, "{sentence}");
                return Err(RequestError::TimedOut(Unavailable { sentence }));
            }
        };
        ledger.settle(&handle_token, PROGRESS_SETTLE).await;
        if ctx.is_some_and(|(c, _)| c.meta.log_level().is_some()) {
            // Logs read just before the result are routed by tasks of their
            // own: a moment for them, as a 2026-07-28 request's stream ends
            // with its result.
            tokio::time::sleep(LOG_SETTLE).await;
        }
        Ok(response)
    }

    fn failed_request(self, generation: u64, err: &ServiceError) -> RequestError {
        let reason = match err {
            ServiceError::TransportClosed => "the connection closed".to_string(),
            other => redact(&chain_text(other), &self.sup.lock().secret_values),
        };
        let auth = err.is_authorization_required();
        if auth {
            let mut inner = self.sup.lock();
            if matches!(&inner.live, Some(l) if l.generation == generation) {
                // Closes the connection and drops the tools.
                let changed = self
                    .sup
                    .apply(&mut inner, Event::Unauthorized { error: reason.clone() })
                    .lists_changed;
                drop(inner);
                self.sup.notify_status();
                if changed {
                    self.sup.notify_lists();
                }
            }
            return RequestError::Unavailable(Unavailable {
                sentence: format!("Server '{}' needs sign-in in the mcpool tray.", self.sup.name),
            });
        }
        // Wait briefly for a local process's exit, so the drop names it.
        let this = self.sup.clone();
        let sentence = dropped_during_call_sentence(&self.sup.name, &reason);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            this.dropped(generation, &reason);
        });
        RequestError::Unavailable(Unavailable { sentence })
    }
}

/// What a request asks for, as the call-limit sentence names it: a tool's
/// name, a prompt's, a resource's URI, else the method.
fn asked_for(request: &ClientRequest) -> String {
    match request {
        ClientRequest::CallToolRequest(r) => format!("`{}`", r.params.name),
        ClientRequest::GetPromptRequest(r) => format!("the prompt `{}`", r.params.name),
        ClientRequest::ReadResourceRequest(r) => format!("the resource `{}`", r.params.uri),
        other => format!("`{}`", other.method()),
    }
}

/// `value` with every secret value redacted wherever it appears in its JSON
/// (texts, structured content, error data); `None` when the redacted JSON
/// no longer reads as `T`, so that a secret never goes out unredacted.
fn redacted_json<T: serde::Serialize + serde::de::DeserializeOwned>(value: T, secrets: &[String]) -> Option<T> {
    let text = serde_json::to_string(&value).ok()?;
    let clean = redact(&text, secrets);
    if clean == text {
        return Some(value);
    }
    serde_json::from_str(&clean).ok()
}

/// One round's request, what a 2026-07-28 server is told of the client
/// behind it (see [`told_capabilities`]), and what cancels it when no
/// agent's request does (a parked call, whose agent comes and goes).
pub(super) struct Outgoing {
    pub request: ClientRequest,
    pub told: Option<RequestMetaObject>,
    pub stop: Option<tokio_util::sync::CancellationToken>,
}

/// The capabilities `input`'s questions need that the 2026-07-28 agent did
/// not declare (`None` when it can answer them all).
fn lacking_capabilities(
    agent: Option<&RequestContext<RoleServer>>,
    input: &InputRequiredResult,
) -> Option<ClientCapabilities> {
    let declared = agent.and_then(RequestContext::client_capabilities).unwrap_or_default();
    let mut lacking = ClientCapabilities::default();
    for request in input.input_requests.iter().flat_map(|r| r.values()) {
        match request {
            InputRequest::Elicitation(_) if declared.elicitation.is_none() => {
                lacking.elicitation = Some(Default::default());
            }
            InputRequest::CreateMessage(_) if declared.sampling.is_none() => {
                lacking.sampling = Some(Default::default());
            }
            InputRequest::ListRoots(_) if declared.roots.is_none() => lacking.roots = Some(Default::default()),
            _ => {}
        }
    }
    let any = lacking.elicitation.is_some() || lacking.sampling.is_some() || lacking.roots.is_some();
    any.then_some(lacking)
}

/// -32021 for a 2026-07-28 agent asked what it cannot answer, with one
/// sentence that says which server asked for what.
fn missing_capability(server: &str, lacking: ClientCapabilities) -> rmcp::model::ErrorData {
    let mut kinds = Vec::new();
    if lacking.elicitation.is_some() {
        kinds.push("elicitation");
    }
    if lacking.sampling.is_some() {
        kinds.push("sampling");
    }
    if lacking.roots.is_some() {
        kinds.push("roots");
    }
    let mut error = rmcp::model::ErrorData::missing_required_client_capability(lacking);
    error.message = format!(
        "Server '{server}' needs the client capability {} to answer, which this agent did not declare.",
        kinds.join(" and ")
    )
    .into();
    error
}

/// How long a 2026-07-28 agent's result waits for logs read before it.
const LOG_SETTLE: Duration = Duration::from_millis(50);

/// The `_meta` keys that say which revision, client and capabilities a
/// request comes with (2026-07-28): they describe the agent, not mcpool,
/// which is the server's client. rmcp adds mcpool's own for a stateless
/// server; a session server must not see a revision it never agreed to.
const AGENT_LIFECYCLE_KEYS: [&str; 3] = [
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientInfo",
    "io.modelcontextprotocol/clientCapabilities",
];

/// The `_meta` keys of an agent's request that mcpool owns, so they are not
/// carried upstream as the agent sent them: the progress token (rmcp gives
/// each upstream request one of this connection's own, and progress comes
/// back to the agent under its token), the revision, client and
/// capabilities of a 2026-07-28 agent (mcpool is the server's client: a
/// stateless server is told mcpool's, with the questions only the agent can
/// answer as the agent declared them) and its log level (set on the request
/// for a stateless server, by `logging/setLevel` for a session one).
/// Every other key goes on unchanged (behaviour.md §4).
pub(crate) const OWNED_REQUEST_KEYS: [&str; 5] = [
    "progressToken",
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientInfo",
    "io.modelcontextprotocol/clientCapabilities",
    "io.modelcontextprotocol/logLevel",
];

/// The agent's request `_meta` (rmcp hands it over apart from the params,
/// in the request's context) on the request mcpool sends upstream: every
/// key mcpool does not own, unless mcpool set that key itself (its trace
/// context, when tracing is on).
fn carry_agent_meta(request: &mut ClientRequest, agent: &RequestMetaObject) {
    if agent.is_empty() {
        return;
    }
    let meta = request.get_meta_mut();
    for (key, value) in agent.iter() {
        if !OWNED_REQUEST_KEYS.contains(&key.as_str()) && !meta.contains_key(key) {
            meta.insert(key.clone(), value.clone());
        }
    }
}

fn strip_agent_lifecycle(request: &mut ClientRequest) {
    fn strip(meta: &mut Option<RequestMetaObject>) {
        if let Some(meta) = meta {
            for key in AGENT_LIFECYCLE_KEYS {
                meta.remove(key);
            }
        }
    }
    match request {
        ClientRequest::CallToolRequest(r) => strip(r.params.meta_mut()),
        ClientRequest::GetPromptRequest(r) => strip(r.params.meta_mut()),
        ClientRequest::ReadResourceRequest(r) => strip(r.params.meta_mut()),
        ClientRequest::CompleteRequest(r) => strip(r.params.meta_mut()),
        ClientRequest::SetLevelRequest(r) => strip(r.params.meta_mut()),
        ClientRequest::SubscribeRequest(r) => strip(r.params.meta_mut()),
        ClientRequest::UnsubscribeRequest(r) => strip(r.params.meta_mut()),
        ClientRequest::ListToolsRequest(r) => r.params.iter_mut().for_each(|p| strip(p.meta_mut())),
        ClientRequest::ListPromptsRequest(r) => r.params.iter_mut().for_each(|p| strip(p.meta_mut())),
        ClientRequest::ListResourcesRequest(r) => r.params.iter_mut().for_each(|p| strip(p.meta_mut())),
        ClientRequest::ListResourceTemplatesRequest(r) => r.params.iter_mut().for_each(|p| strip(p.meta_mut())),
        _ => {}
    }
}

/// Whether the agent behind `ctx` speaks 2026-07-28, where a server asks
/// for input by answering `InputRequiredResult` and the agent retries.
pub(super) fn agent_takes_input_requests(ctx: Option<&RequestContext<RoleServer>>) -> bool {
    ctx.and_then(RequestContext::protocol_version)
        .is_some_and(|v| !v.has_initialize())
}

/// What an agent on a session revision reads when a 2026-07-28 server asks
/// for input before it answers (behaviour.md rule 16 bridges this; until
/// then the call fails with this sentence instead of an answer the agent
/// cannot read).
pub(crate) fn input_required_sentence(
    server: &str,
    input: &InputRequiredResult,
    agent: Option<ProtocolVersion>,
) -> String {
    let mut kinds: Vec<&str> = input
        .input_requests
        .iter()
        .flat_map(|m| m.values())
        .map(|r| match r {
            InputRequest::Elicitation(_) => "an answer from the user (elicitation)",
            InputRequest::CreateMessage(_) => "a model completion (sampling)",
            InputRequest::ListRoots(_) => "the agent's roots",
            _ => "more input",
        })
        .collect();
    kinds.sort_unstable();
    kinds.dedup();
    let what = if kinds.is_empty() {
        "more input".to_string()
    } else {
        kinds.join(" and ")
    };
    let agent = agent.map_or_else(|| "an older MCP revision".to_string(), |v| format!("MCP {v}"));
    format!(
        "Server '{server}' asked for {what} before answering, the MCP 2026-07-28 way; \
         mcpool cannot yet pass that request on to this agent, which speaks {agent}."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{CallToolRequestParams, Request};

    #[test]
    fn the_agents_lifecycle_keys_stay_behind_and_the_rest_goes_on() {
        let mut meta = RequestMetaObject::with_client_context(
            ProtocolVersion::V_2026_07_28,
            rmcp::model::Implementation::new("agent", "1"),
            Default::default(),
        );
        meta.insert("progressToken".into(), serde_json::json!(7));
        meta.insert("traceparent".into(), serde_json::json!("00-x"));
        let mut params = CallToolRequestParams::new("echo");
        params.set_meta(meta);
        let mut request = ClientRequest::CallToolRequest(Request::new(params));
        strip_agent_lifecycle(&mut request);
        let ClientRequest::CallToolRequest(r) = request else {
            unreachable!()
        };
        let mut keys: Vec<&String> = r.params.meta().map(|m| m.keys().collect()).unwrap_or_default();
        keys.sort();
        assert_eq!(keys, ["progressToken", "traceparent"]);
    }

    #[test]
    fn the_agents_own_keys_go_upstream_and_mcpools_stay() {
        let mut agent = RequestMetaObject::with_client_context(
            ProtocolVersion::V_2026_07_28,
            rmcp::model::Implementation::new("agent", "1"),
            Default::default(),
        );
        agent.insert("progressToken".into(), serde_json::json!(7));
        agent.insert("io.modelcontextprotocol/logLevel".into(), serde_json::json!("debug"));
        agent.insert("com.example/probe".into(), serde_json::json!({"n": [1, 2]}));
        agent.insert("traceparent".into(), serde_json::json!("00-agent"));
        let mut request = ClientRequest::CallToolRequest(Request::new(CallToolRequestParams::new("echo")));
        // mcpool's own trace context, when tracing is on, is kept.
        request
            .get_meta_mut()
            .insert("traceparent".into(), serde_json::json!("00-mcpool"));
        carry_agent_meta(&mut request, &agent);
        let wire = serde_json::to_value(&request).unwrap();
        assert_eq!(
            wire["params"]["_meta"],
            serde_json::json!({"com.example/probe": {"n": [1, 2]}, "traceparent": "00-mcpool"})
        );
    }
}
