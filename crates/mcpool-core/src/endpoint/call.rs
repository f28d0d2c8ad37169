//! `tools/call` from an agent: a built-in tool, or routed to its server
//! (through a profile's and the tool controls' checks), and noted in the
//! recent calls by name and timing only (`GET /api/calls`).

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientRequest, ContentBlock, ErrorData as McpError,
    Request, ServerResult,
};
use rmcp::service::{RequestContext, RoleServer};

use super::builtin;
use super::builtin::BUILTIN_SERVER;
use super::session::{into_mcp, no_profile, not_in_profile, refused, unexpected, AgentSession};
use crate::calls::{Outcome, Recording};
use crate::hub::Scope;
use crate::supervisor::{RequestError, Supervisor};

impl AgentSession {
    pub(super) async fn call_tool_recorded(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let hub = self.pool.hub().clone();
        let mut recording = Recording::start(hub.recent_calls());
        let (result, outcome) = self.call_tool_routed(request, context, &mut recording).await;
        let outcome = outcome.unwrap_or(match &result {
            Ok(CallToolResponse::Complete(r)) if r.is_error == Some(true) => Outcome::ToolError,
            Ok(CallToolResponse::Complete(_)) => Outcome::Ok,
            Ok(CallToolResponse::Task(_)) => Outcome::Task,
            Ok(CallToolResponse::InputRequired(_)) => Outcome::InputRequired,
            // A kind of response newer than this code: it came back.
            Ok(_) => Outcome::Ok,
            Err(_) => Outcome::ProtocolError,
        });
        recording.finish(outcome);
        result
    }

    /// The call itself; an outcome the result alone does not tell
    /// (refused, unavailable, cancelled) comes with it.
    async fn call_tool_routed(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        recording: &mut Recording<'_>,
    ) -> (Result<CallToolResponse, McpError>, Option<Outcome>) {
        let profile = match &self.scope {
            Scope::Profile(name) => match self.pool.tool_control().profile(name) {
                Some(p) => Some((name, p)),
                None => return (Err(no_profile(name)), None),
            },
            _ => None,
        };
        let refusal = |sentence| (Ok(refused(sentence)), Some(Outcome::Refused));
        let (sup, upstream_request): (Arc<Supervisor>, _) = match &self.scope {
            Scope::All | Scope::Profile(_) => {
                if builtin::is_builtin(&request.name) {
                    let short = request
                        .name
                        .strip_prefix(BUILTIN_SERVER)
                        .and_then(|n| n.strip_prefix(crate::names::SEPARATOR))
                        .unwrap_or(&request.name);
                    recording.target(BUILTIN_SERVER, short);
                    if let Some((name, p)) = &profile {
                        if !p.includes_tool(None, &request.name) {
                            return refusal(not_in_profile(&request.name, name));
                        }
                    }
                    let result = builtin::call(&self.pool, &request.name, request.arguments.as_ref()).await;
                    return (Ok(CallToolResponse::Complete(result)), None);
                }
                let Some((sup, tool)) = self.route_tool(&request.name) else {
                    let error = McpError::invalid_params(format!("mcpool has no tool named '{}'.", request.name), None);
                    return (Err(error), None);
                };
                recording.target(sup.name(), &tool);
                if let Some((name, p)) = &profile {
                    if !p.includes_tool(Some(sup.name()), &request.name) {
                        return refusal(not_in_profile(&request.name, name));
                    }
                }
                let mut upstream = request.clone();
                upstream.name = tool.into();
                (sup, upstream)
            }
            Scope::One(_) => match self.single() {
                Ok(sup) => {
                    recording.target(sup.name(), &request.name);
                    (sup, request)
                }
                Err(e) => return (Err(e), None),
            },
        };
        let current = sup.lists().tools.into_iter().find(|t| t.name == upstream_request.name);
        let control = self.pool.tool_control();
        if let Some(sentence) = control.refusal(sup.name(), &upstream_request.name, current.as_ref()) {
            return refusal(sentence);
        }
        let forwarded = sup
            .forward(
                ClientRequest::CallToolRequest(Request::new(upstream_request)),
                Some((&context, self.agent_id())),
            )
            .await;
        match forwarded {
            Ok(ServerResult::CallToolResult(r)) => (Ok(CallToolResponse::Complete(r)), None),
            Ok(ServerResult::CreateTaskResult(t)) => (Ok(CallToolResponse::Task(t)), None),
            Ok(ServerResult::InputRequiredResult(i)) => (Ok(CallToolResponse::InputRequired(i)), None),
            Ok(_) => (Err(unexpected()), None),
            Err(RequestError::Unavailable(u)) => (
                Ok(CallToolResponse::Complete(CallToolResult::error(vec![
                    ContentBlock::text(u.sentence),
                ]))),
                Some(Outcome::Unavailable),
            ),
            Err(RequestError::Cancelled) => (Err(into_mcp(RequestError::Cancelled)), Some(Outcome::Cancelled)),
            Err(e) => (Err(into_mcp(e)), None),
        }
    }
}
