//! What a session sends to one server: the request forwarded through its
//! supervisor with the agent behind it, and for a prompt or read, noted in
//! the activity log and the trace.

use std::sync::{Arc, OnceLock};

use rmcp::model::{ClientRequest, ErrorData as McpError, GetMeta, JsonObject, ServerResult};
use rmcp::service::{RequestContext, RoleServer};

use super::record::{failure_outcome, failure_text, kept_text, Pending};
use super::{into_mcp, mark_complete};
use crate::activity::Kind;
use crate::hub::Registration;
use crate::pool::Pool;
use crate::supervisor::Supervisor;
use crate::telemetry::RequestSpan;

/// A session's requests to its servers, as the agent behind them.
#[derive(Clone, Copy)]
pub(super) struct Forwarder<'a> {
    pub pool: &'a Pool,
    /// Set once the session is initialized (never for a 2026-07-28 agent).
    pub agent: &'a OnceLock<Registration>,
}

impl Forwarder<'_> {
    /// The hub's id of the agent (`u64::MAX` before it is registered).
    pub fn agent_id(&self) -> u64 {
        self.agent.get().map(Registration::id).unwrap_or(u64::MAX)
    }

    pub async fn forward(
        &self,
        sup: &Arc<Supervisor>,
        request: ClientRequest,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<ServerResult, McpError> {
        let mut result = sup
            .forward(request, Some((ctx, self.agent_id())))
            .await
            .map_err(into_mcp)?;
        mark_complete(ctx, &mut result);
        Ok(result)
    }

    /// [`Self::forward`] for a prompt get or resource read, noted
    /// in the activity log.
    pub async fn forward_noted(
        &self,
        sup: &Arc<Supervisor>,
        kind: Kind,
        name: &str,
        arguments: Option<&JsonObject>,
        request: ClientRequest,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<ServerResult, McpError> {
        let mut pending = Pending::now(ctx);
        let method = match kind {
            Kind::Prompt => "prompts/get",
            _ => "resources/read",
        };
        let span = RequestSpan::start(
            method,
            Some(name),
            pending.agent.session.as_deref(),
            &ctx.meta,
            pending.at,
        );
        let mut request = request;
        let upstream = span.as_ref().and_then(|s| {
            s.routed(sup.name(), Some(name));
            pending.trace_id = Some(s.trace_id());
            s.upstream(sup.name(), Some(name), request.get_meta_mut())
        });
        let result = sup.forward(request, Some((ctx, self.agent_id()))).await;
        let word = result.as_ref().map_or_else(failure_outcome, |_| "ok");
        if let Some(upstream) = upstream {
            upstream.end(word);
        }
        if let Some(span) = span {
            span.end(word);
        }
        let activity = self.pool.activity();
        let log_arguments = sup.log_arguments();
        let args = || {
            arguments
                .filter(|_| log_arguments)
                .and_then(|a| serde_json::to_string(a).ok())
                .map(|t| kept_text(&t))
        };
        let entry = match &result {
            Ok(r) => {
                let text = serde_json::to_string(r).unwrap_or_default();
                let kept = log_arguments.then(|| (args(), Some(kept_text(&text))));
                pending.entry(kind, sup.name(), name, "ok", None, Some(text.len() as u64), kept)
            }
            Err(e) => {
                let kept = log_arguments.then(|| (args(), None));
                let error = Some(failure_text(e, log_arguments));
                pending.entry(kind, sup.name(), name, failure_outcome(e), error, None, kept)
            }
        };
        activity.record(entry);
        let mut result = result.map_err(into_mcp)?;
        mark_complete(ctx, &mut result);
        Ok(result)
    }
}
