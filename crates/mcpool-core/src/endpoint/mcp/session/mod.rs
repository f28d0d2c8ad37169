//! One agent on `/mcp` (every server, names prefixed), on
//! `/servers/NAME/mcp` (one server, names unchanged) or on
//! `/profiles/NAME/mcp` (a profile's subset). Requests go to the servers
//! through their supervisors; listings on `/mcp` never wait.
//!
//! An agent speaks a session revision (`initialize`, then requests under a
//! session id; the handler lives as long as the session) or 2026-07-28
//! (stateless: rmcp builds a handler for each request, whose `_meta` says
//! who is asking; list changes reach it only through `subscriptions/listen`).
//! rmcp's Streamable HTTP service tells the two apart per request
//! (behaviour.md rule 16).
//!
//! `AgentSession` holds the session's state and answers rmcp; each concern
//! is a small type of its own, a borrowed view of that state made per
//! request: `Identity` (`info.rs`: `initialize` and `server/discover`),
//! `Listing` (`lists.rs`: the lists), `Calls` (`calls.rs`: requests to
//! one server), `Subscriptions` (`listen.rs`: resource subscriptions and
//! `subscriptions/listen`), `Tasks` (`tasks.rs`), `MetaTools`
//! (`meta.rs`: the listing modes and the meta-tools), `Routes`
//! (`routing.rs`: names and URIs to servers) and `Forwarder`
//! (`forward.rs`: a request to one server as this agent). `record.rs` is
//! `record::Pending`, what the activity log keeps of a request; `script.rs`
//! is `mcpool__run_script`, whose tool calls go the way of direct ones.

// Logging and subscriptions are deprecated by SEP-2577 but still used by the
// agents and servers mcpool sits between, so it passes them through.
#![allow(deprecated)]

mod calls;
mod forward;
mod info;
mod listen;
mod lists;
mod meta;
mod record;
mod routing;
mod script;
mod tasks;
pub(super) use tasks::SESSION_PREFIX as TASKS_SESSION_PREFIX;

use calls::Calls;
use forward::Forwarder;
use info::Identity;
use listen::{EarlySubscriptions, Subscriptions};
use lists::Listing;
use meta::MetaTools;
use routing::Routes;
use tasks::Tasks;

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, CompleteRequestParams, CompleteResult,
    ContentBlock, CustomRequest, CustomResult, DiscoverResult, ErrorCode, ErrorData as McpError,
    GetPromptRequestParams, GetPromptResponse, GetTaskParams, GetTaskResult, InitializeRequestParams, InitializeResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ResultType, ServerConfig, ServerResult,
    SetLevelRequestParams, SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use rmcp::ServerHandler;

use crate::hub::{Registration, Scope};
use crate::pool::Pool;
use crate::supervisor::RequestError;

#[derive(Clone)]
pub struct AgentSession {
    pool: Pool,
    scope: Scope,
    /// Set once initialized; dropped with the last clone of the handler,
    /// which is when rmcp ends the session. Never set for a 2026-07-28
    /// agent, which has no session.
    agent: Arc<OnceLock<Registration>>,
    /// The tools this session's searches found, which its `search` listing
    /// adds (behaviour.md rule 19).
    found: Arc<std::sync::Mutex<crate::search::listing::FoundTools>>,
    /// What 2026-07-28 agents (no session) found, shared by every endpoint.
    stateless_found: Arc<super::found::FoundBook>,
    /// Listen streams' resources subscribed before their acknowledgment.
    early: Arc<EarlySubscriptions>,
}

impl AgentSession {
    pub fn new(pool: Pool, scope: Scope, stateless_found: Arc<super::found::FoundBook>) -> Self {
        AgentSession {
            early: Arc::new(EarlySubscriptions::new(pool.hub().clone())),
            pool,
            scope,
            agent: Arc::new(OnceLock::new()),
            found: Default::default(),
            stateless_found,
        }
    }

    fn routes(&self) -> Routes<'_> {
        Routes {
            pool: &self.pool,
            scope: &self.scope,
        }
    }

    fn forwarder(&self) -> Forwarder<'_> {
        Forwarder {
            pool: &self.pool,
            agent: &self.agent,
        }
    }

    fn meta(&self) -> MetaTools<'_> {
        MetaTools {
            routes: self.routes(),
            found: &self.found,
            stateless_found: &self.stateless_found,
            agent: &self.agent,
        }
    }

    fn identity(&self) -> Identity<'_> {
        Identity { routes: self.routes() }
    }

    fn listing(&self) -> Listing<'_> {
        Listing {
            routes: self.routes(),
            forwarder: self.forwarder(),
            meta: self.meta(),
        }
    }

    fn calls(&self) -> Calls<'_> {
        Calls {
            routes: self.routes(),
            forwarder: self.forwarder(),
            meta: self.meta(),
        }
    }

    fn subscriptions(&self) -> Subscriptions<'_> {
        Subscriptions {
            routes: self.routes(),
            forwarder: self.forwarder(),
            early: &self.early,
        }
    }

    fn tasks(&self) -> Tasks<'_> {
        Tasks {
            routes: self.routes(),
            forwarder: self.forwarder(),
        }
    }
}

/// A 2026-07-28 agent reads `resultType` on every result; a server on a
/// session revision leaves it out, so mcpool says `complete` for it.
fn mark_complete(ctx: &RequestContext<RoleServer>, result: &mut ServerResult) {
    if !speaks_2026(ctx) {
        return;
    }
    let result_type = match result {
        ServerResult::CallToolResult(r) => &mut r.result_type,
        ServerResult::GetPromptResult(r) => &mut r.result_type,
        ServerResult::ReadResourceResult(r) => &mut r.result_type,
        ServerResult::CompleteResult(r) => &mut r.result_type,
        ServerResult::ListToolsResult(r) => &mut r.result_type,
        ServerResult::ListPromptsResult(r) => &mut r.result_type,
        ServerResult::ListResourcesResult(r) => &mut r.result_type,
        ServerResult::ListResourceTemplatesResult(r) => &mut r.result_type,
        _ => return,
    };
    result_type.get_or_insert(ResultType::COMPLETE);
}

/// Whether the request comes from a 2026-07-28 (stateless) agent.
fn speaks_2026(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.protocol_version().is_some_and(|v| !v.has_initialize())
}

/// The methods 2026-07-28 removed (SEP-2575: the handshake, `ping`,
/// logging levels and resource subscriptions, which `subscriptions/listen`
/// replaces): a 2026-07-28 agent that sends one gets -32601, which rmcp
/// answers with HTTP 404, as for any method the server does not have.
const REMOVED_IN_2026: &[&str] = &[
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

fn removed_in_2026(method: &str, ctx: &RequestContext<RoleServer>) -> Result<(), McpError> {
    if speaks_2026(ctx) && REMOVED_IN_2026.contains(&method) {
        return Err(McpError::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: {method} is not part of MCP 2026-07-28."),
            None,
        ));
    }
    Ok(())
}

fn into_mcp(e: RequestError) -> McpError {
    match e {
        RequestError::Unavailable(u) | RequestError::TimedOut(u) => McpError::internal_error(u.sentence, None),
        RequestError::Mcp(e) => e,
        RequestError::Cancelled => McpError::internal_error("The request was cancelled.", None),
    }
}

fn unexpected() -> McpError {
    McpError::internal_error("the server answered with an unexpected result type", None)
}

impl ServerHandler for AgentSession {
    fn get_info(&self) -> ServerConfig {
        self.identity().info()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        info::supported_versions()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        if let Scope::One(_) = &self.scope {
            // Connect first so the answer carries the server's own identity.
            if let Ok(sup) = self.routes().single() {
                let _ = sup.peer().await;
            }
        }
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let registration = self.pool.hub().register(self.scope.clone(), context.peer);
        let _ = self.agent.set(registration);
    }

    async fn discover(&self, _context: RequestContext<RoleServer>) -> Result<DiscoverResult, McpError> {
        Ok(self.identity().discovered().await)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.listing().tools(request, context).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.calls().call(request, context).await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        self.listing().prompts(request, context).await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        self.calls().prompt(request, context).await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        self.listing().resources(request, context).await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        self.listing().templates(request, context).await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        self.calls().read(request, context).await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        removed_in_2026("resources/subscribe", &context)?;
        self.subscriptions().subscribe(request, context).await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        removed_in_2026("resources/unsubscribe", &context)?;
        self.subscriptions().unsubscribe(request, context).await
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        // Called before rmcp acknowledges the stream: its resources are
        // subscribed at their servers now (listen.rs).
        self.subscriptions().subscribe_early(requested);
        Some(listen::accepted(requested))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        self.subscriptions().listen(context).await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        self.calls().completion(request, context).await
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        removed_in_2026("logging/setLevel", &context)?;
        self.calls().level(request, context).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        self.tasks().get(request, context).await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks().update(request, context).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks().cancel(request, context).await
    }

    /// rmcp hands over as custom a request of a method MCP defines whose
    /// params do not fit its schema: that is -32602 with what they must be,
    /// not -32601 (the method exists), except for a method the agent's
    /// revision no longer has.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        removed_in_2026(&request.method, &context)?;
        if let Some(method) = request.method.strip_prefix(tasks::SESSION_PREFIX) {
            return self.tasks().session_request(method, request.params, context).await;
        }
        match super::request_check::params_sentence(&request.method) {
            Some(sentence) => Err(McpError::invalid_params(sentence, None)),
            None => Err(McpError::new(ErrorCode::METHOD_NOT_FOUND, request.method, None)),
        }
    }
}

fn no_profile(name: &str) -> McpError {
    McpError::invalid_request(format!("mcpool has no profile named '{name}' any more."), None)
}

fn not_in_profile(tool: &str, profile: &str) -> String {
    format!("Tool '{tool}' is not part of the mcpool profile '{profile}'.")
}

/// A call mcpool refuses itself: a tool result with the reason, so the
/// model reads it.
fn refused(sentence: String) -> CallToolResponse {
    CallToolResponse::Complete(CallToolResult::error(vec![ContentBlock::text(sentence)]))
}
