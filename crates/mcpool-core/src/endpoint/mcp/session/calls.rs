//! Requests that reach one server: tool calls (and the built-in tools),
//! prompts, resource reads, completions and the logging level. Tool calls
//! are noted in the recent calls by name and timing only (`GET /api/calls`).

#![allow(deprecated)] // SEP-2577: logging is still what agents and servers use.

use std::sync::Arc;

use rmcp::model::GetMeta;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientRequest, CompleteRequestParams, CompleteResult,
    ContentBlock, ErrorData as McpError, GetPromptRequestParams, GetPromptResponse, ReadResourceRequestParams,
    ReadResourceResponse, Reference, Request, ServerResult, SetLevelRequestParams,
};
use rmcp::service::{RequestContext, RoleServer};

use super::forward::Forwarder;
use super::meta::{self as meta_call, MetaTools};
use super::record;
use super::routing::Routes;
use super::{into_mcp, mark_complete, no_profile, not_in_profile, refused, unexpected};
use crate::activity::Kind;
use crate::calls::{Outcome, Recording};
use crate::endpoint::mcp::builtin::{self, BUILTIN_SERVER};
use crate::hub::Scope;
use crate::lifecycle::Status;
use crate::search::meta;
use crate::supervisor::{RequestError, Supervisor};
use crate::telemetry::RequestSpan;

/// A session's requests that reach one server (or mcpool's own tools).
pub(super) struct Calls<'a> {
    pub routes: Routes<'a>,
    pub forwarder: Forwarder<'a>,
    /// The meta-tools a tool call may name.
    pub meta: MetaTools<'a>,
}

impl Calls<'_> {
    pub async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let aggregated = !matches!(self.routes.scope, Scope::One(_));
        if aggregated && request.name == meta::RUN_SCRIPT {
            return self.run_script(request, context).await;
        }
        self.call_as(request, context, None).await.0
    }

    /// A tool call, directly or one a script made (`parent`: the run's key,
    /// which its activity entry names).
    pub(super) async fn call_as(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        parent: Option<&str>,
    ) -> (Result<CallToolResponse, McpError>, Outcome) {
        let mut recording = Recording::start(self.routes.pool.recent_calls());
        let mut pending = record::Pending::now(&context);
        pending.parent = parent.map(str::to_string);
        let session = pending.agent.session.as_deref();
        let span = RequestSpan::start("tools/call", Some(&request.name), session, &context.meta, pending.at);
        pending.trace_id = span.as_ref().map(RequestSpan::trace_id);
        let aggregated = !matches!(self.routes.scope, Scope::One(_));
        let wrapped = aggregated && request.name == meta::CALL_TOOL;
        let request = if wrapped {
            match meta_call::unwrap_call(&request) {
                Ok(inner) => inner,
                Err(sentence) => {
                    recording.target(BUILTIN_SERVER, "call_tool");
                    recording.finish(Outcome::Refused);
                    return (Ok(refused(sentence)), Outcome::Refused);
                }
            }
        } else {
            request
        };
        let arguments = self
            .routes
            .pool
            .activity()
            .is_on()
            .then(|| request.arguments.clone())
            .flatten();
        let (result, outcome) = self
            .call_tool_routed(request, context, &mut recording, span.as_ref())
            .await;
        // Through the call tool, an error the endpoint would answer a direct
        // call with is the meta-tool's result, in the same words.
        let (result, outcome) = match result {
            Err(e) if wrapped && outcome != Some(Outcome::Cancelled) => (
                Ok(refused(e.message.to_string())),
                outcome.or(Some(Outcome::ProtocolError)),
            ),
            other => (other, outcome),
        };
        let outcome = outcome.unwrap_or(match &result {
            Ok(CallToolResponse::Complete(r)) if r.is_error == Some(true) => Outcome::ToolError,
            Ok(CallToolResponse::Complete(_)) => Outcome::Ok,
            Ok(CallToolResponse::Task(_)) => Outcome::Task,
            Ok(CallToolResponse::InputRequired(_)) => Outcome::InputRequired,
            // A kind of response newer than this code: it came back.
            Ok(_) => Outcome::Ok,
            Err(_) => Outcome::ProtocolError,
        });
        let reached = matches!(
            outcome,
            Outcome::Ok | Outcome::ToolError | Outcome::Task | Outcome::InputRequired
        );
        if let Some((server, tool)) = recording.target_of().filter(|(s, _)| reached && *s != BUILTIN_SERVER) {
            self.routes.pool.count_call(server, tool);
        }
        if let Some(span) = span {
            if let Some((server, tool)) = recording.target_of() {
                span.routed(server, Some(tool));
            }
            span.end(&record::outcome_word(outcome));
        }
        if let Some((server, tool)) = recording.target_of() {
            pending.note_call(self.routes.pool, server, tool, arguments.as_ref(), &result, outcome);
        }
        recording.finish(outcome);
        (result, outcome)
    }

    /// The call itself; an outcome the result alone does not tell
    /// (refused, unavailable, cancelled) comes with it.
    async fn call_tool_routed(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        recording: &mut Recording<'_>,
        span: Option<&RequestSpan>,
    ) -> (Result<CallToolResponse, McpError>, Option<Outcome>) {
        let profile = match self.routes.scope {
            Scope::Profile(name) => match self.routes.pool.tool_control().profile(name) {
                Some(p) => Some((name, p)),
                None => return (Err(no_profile(name)), None),
            },
            _ => None,
        };
        let refusal = |sentence| (Ok(refused(sentence)), Some(Outcome::Refused));
        let (sup, upstream_request): (Arc<Supervisor>, _) = match self.routes.scope {
            Scope::All | Scope::Profile(_) => {
                if request.name == meta::SEARCH_TOOL {
                    recording.target(BUILTIN_SERVER, "search_tools");
                    let result = self.meta.search_call(request.arguments.as_ref(), &context).await;
                    return (Ok(CallToolResponse::Complete(result)), None);
                }
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
                    let result = builtin::call(self.routes.pool, &request.name, request.arguments.as_ref()).await;
                    return (Ok(CallToolResponse::Complete(result)), None);
                }
                let Some((sup, tool)) = self.routes.route_tool(&request.name) else {
                    let error = McpError::invalid_params(format!("mcpool has no tool named '{}'.", request.name), None);
                    return (Err(error), None);
                };
                recording.target(sup.name(), &tool);
                if let Some((name, p)) = &profile {
                    if !p.includes_tool(Some(sup.name()), &request.name) {
                        return refusal(not_in_profile(&request.name, name));
                    }
                }
                // Renamed in place: the arguments are not copied per call.
                let mut upstream = request;
                upstream.name = tool.into();
                (sup, upstream)
            }
            Scope::One(_) => match self.routes.single() {
                Ok(sup) => {
                    recording.target(sup.name(), &request.name);
                    (sup, request)
                }
                Err(e) => return (Err(e), None),
            },
        };
        let current = sup.tool(&upstream_request.name);
        let control = self.routes.pool.tool_control();
        if let Some(sentence) = control.refusal(sup.name(), &upstream_request.name, current.as_ref()) {
            return refusal(sentence);
        }
        // A 2026-07-28 agent that takes tasks, to a 2025-11-25 server that
        // runs this tool as one: the server is asked for a task (bridged).
        let bridged = super::tasks::bridges_2025_task(&context, &sup, current.as_ref());
        let mut upstream_request = upstream_request;
        if bridged {
            super::tasks::ask_2025_task(&mut upstream_request);
        }
        // A session agent that asks for a task the 2025-11-25 way, of a
        // 2026-07-28 server: handed the extension's task that way (bridged).
        let asked_2025_task =
            !super::speaks_2026(&context) && super::tasks::asks_2025_task(&upstream_request, &context);
        let tool = upstream_request.name.to_string();
        let mut upstream = ClientRequest::CallToolRequest(Request::new(upstream_request));
        let child = span.and_then(|s| s.upstream(sup.name(), Some(&tool), upstream.get_meta_mut()));
        let forwarded = sup
            .forward(upstream, Some((&context, self.forwarder.agent_id())))
            .await
            .map(|mut r| {
                mark_complete(&context, &mut r);
                r
            });
        if let Some(child) = child {
            child.end(match &forwarded {
                Ok(ServerResult::CallToolResult(r)) if r.is_error == Some(true) => "tool_error",
                Ok(_) => "ok",
                Err(e) => record::failure_outcome(e),
            });
        }
        match forwarded {
            Ok(ServerResult::CallToolResult(mut r)) => {
                match super::tasks::hand_out_2025_task(&self.routes, &self.forwarder, sup.name(), &mut r, bridged) {
                    Some(task) => (Ok(CallToolResponse::Task(task)), None),
                    None => (Ok(CallToolResponse::Complete(r)), None),
                }
            }
            Ok(ServerResult::CreateTaskResult(t)) if asked_2025_task => {
                let r = super::tasks::hand_out_as_session_task(&self.routes, &self.forwarder, sup.name(), t);
                (Ok(CallToolResponse::Complete(r)), None)
            }
            Ok(ServerResult::CreateTaskResult(mut t)) => {
                let upstream = std::mem::take(&mut t.task.task_id);
                t.task.task_id = super::tasks::hand_out(
                    &self.routes,
                    &self.forwarder,
                    sup.name(),
                    upstream,
                    crate::hub::Bridge::None,
                );
                (Ok(CallToolResponse::Task(t)), None)
            }
            Ok(ServerResult::InputRequiredResult(i)) => (Ok(CallToolResponse::InputRequired(i)), None),
            Ok(_) => (Err(unexpected()), None),
            Err(RequestError::Unavailable(u)) => (
                Ok(CallToolResponse::Complete(CallToolResult::error(vec![
                    ContentBlock::text(u.sentence),
                ]))),
                Some(Outcome::Unavailable),
            ),
            Err(RequestError::TimedOut(u)) => (
                Ok(CallToolResponse::Complete(CallToolResult::error(vec![
                    ContentBlock::text(u.sentence),
                ]))),
                Some(Outcome::Timeout),
            ),
            Err(RequestError::Cancelled) => (Err(into_mcp(RequestError::Cancelled)), Some(Outcome::Cancelled)),
            Err(e) => (Err(into_mcp(e)), None),
        }
    }

    pub async fn prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let (sup, upstream) = match self.routes.scope {
            Scope::All | Scope::Profile(_) => {
                let (sup, prompt) = self.routes.route_prompt(&request.name)?;
                let mut upstream = request.clone();
                upstream.name = prompt;
                (sup, upstream)
            }
            Scope::One(_) => (self.routes.single()?, request),
        };
        self.refuse_held_prompt(&sup, &upstream.name)?;
        let name = upstream.name.clone();
        let arguments = upstream.arguments.clone();
        match self
            .forwarder
            .forward_noted(
                &sup,
                Kind::Prompt,
                &name,
                arguments.as_ref(),
                ClientRequest::GetPromptRequest(Request::new(upstream)),
                &context,
            )
            .await?
        {
            ServerResult::GetPromptResult(r) => Ok(GetPromptResponse::Complete(r)),
            ServerResult::InputRequiredResult(i) => Ok(GetPromptResponse::InputRequired(i)),
            _ => Err(unexpected()),
        }
    }

    /// Refuses a prompt the scan holds back (by its definition as last
    /// listed), as if it were not there.
    fn refuse_held_prompt(&self, sup: &Supervisor, name: &str) -> Result<(), McpError> {
        let control = self.routes.pool.tool_control();
        let held = sup
            .lists()
            .prompts
            .iter()
            .any(|p| p.name == name && control.prompt_held(sup.name(), p));
        if held {
            return Err(McpError::invalid_params(
                format!(
                    "Prompt '{name}' of server '{}' is held back: mcpool's scan of its definition found it dangerous. \
                     The user can see why in the mcpool dashboard.",
                    sup.name()
                ),
                None,
            ));
        }
        Ok(())
    }

    pub async fn read(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let sup = self.routes.owner_of_uri(&request.uri)?;
        let uri = request.uri.clone();
        match self
            .forwarder
            .forward_noted(
                &sup,
                Kind::Resource,
                &uri,
                None,
                ClientRequest::ReadResourceRequest(Request::new(request)),
                &context,
            )
            .await?
        {
            ServerResult::ReadResourceResult(r) => Ok(ReadResourceResponse::Complete(r)),
            ServerResult::InputRequiredResult(i) => Ok(ReadResourceResponse::InputRequired(i)),
            _ => Err(unexpected()),
        }
    }

    pub async fn completion(
        &self,
        mut request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let sup = match (self.routes.scope, &mut request.r#ref) {
            (Scope::One(_), Reference::Prompt(prompt)) => {
                let sup = self.routes.single()?;
                self.refuse_held_prompt(&sup, &prompt.name)?;
                sup
            }
            (Scope::One(_), _) => self.routes.single()?,
            (Scope::All | Scope::Profile(_), Reference::Prompt(prompt)) => {
                let (sup, name) = self.routes.route_prompt(&prompt.name)?;
                self.refuse_held_prompt(&sup, &name)?;
                prompt.name = name;
                sup
            }
            (Scope::All | Scope::Profile(_), Reference::Resource(resource)) => {
                self.routes.owner_of_uri(&resource.uri)?
            }
            (Scope::All | Scope::Profile(_), _) => {
                return Err(McpError::invalid_params(
                    "mcpool cannot route this completion reference.",
                    None,
                ))
            }
        };
        match self
            .forwarder
            .forward(&sup, ClientRequest::CompleteRequest(Request::new(request)), &context)
            .await?
        {
            ServerResult::CompleteResult(r) => Ok(r),
            _ => Err(unexpected()),
        }
    }

    pub async fn level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        match self.routes.scope {
            Scope::One(_) => {
                let sup = self.routes.single()?;
                self.forwarder
                    .forward(&sup, ClientRequest::SetLevelRequest(Request::new(request)), &context)
                    .await?;
            }
            Scope::All | Scope::Profile(_) => {
                // Only servers that are up and say they log; nothing is dialled for it.
                for sup in self
                    .routes
                    .pool
                    .servers()
                    .into_iter()
                    .filter(|s| self.routes.in_scope(s.name()))
                {
                    let logs = sup.info().is_some_and(|i| i.capabilities.logging.is_some());
                    if sup.status() == Status::Connected && logs {
                        let _ = sup
                            .forward(ClientRequest::SetLevelRequest(Request::new(request.clone())), None)
                            .await;
                    }
                }
            }
        }
        Ok(())
    }
}
