//! One agent session on `/mcp` (every server, names prefixed) or on
//! `/servers/NAME/mcp` (one server, names unchanged). Requests go to the
//! servers through their supervisors; listings on `/mcp` never wait.

// Logging and subscriptions are deprecated by SEP-2577 but still used by the
// agents and servers mcpool sits between, so it passes them through.
#![allow(deprecated)]

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientRequest, CompleteRequestParams, CompleteResult, ContentBlock,
    ErrorData as McpError, GetPromptRequestParams, Implementation, InitializeRequestParams, InitializeResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, Reference, Request, RequestOptionalParam, ServerCapabilities,
    ServerConfig, ServerResult, SetLevelRequestParams, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::model::{CallToolResponse, GetPromptResponse, ReadResourceResponse};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::ServerHandler;

use crate::endpoint::builtin;
use crate::hub::{Registration, Scope};
use crate::lifecycle::Status;
use crate::pool::Pool;
use crate::supervisor::{RequestError, Supervisor};

#[derive(Clone)]
pub struct AgentSession {
    pool: Pool,
    scope: Scope,
    /// Set once initialized; dropped with the last clone of the handler,
    /// which is when rmcp ends the session.
    agent: Arc<OnceLock<Registration>>,
}

impl AgentSession {
    pub fn new(pool: Pool, scope: Scope) -> Self {
        AgentSession {
            pool,
            scope,
            agent: Arc::new(OnceLock::new()),
        }
    }

    fn agent_id(&self) -> u64 {
        self.agent.get().map(Registration::id).unwrap_or(u64::MAX)
    }

    fn single(&self) -> Result<Arc<Supervisor>, McpError> {
        let Scope::One(name) = &self.scope else {
            return Err(McpError::internal_error("not a per-server session", None));
        };
        self.pool.server(name).ok_or_else(|| {
            McpError::invalid_request(format!("Server '{name}' is no longer in the mcpool config."), None)
        })
    }

    async fn forward(
        &self,
        sup: &Arc<Supervisor>,
        request: ClientRequest,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<ServerResult, McpError> {
        sup.forward(request, Some((ctx, self.agent_id())))
            .await
            .map_err(into_mcp)
    }
}

fn into_mcp(e: RequestError) -> McpError {
    match e {
        RequestError::Unavailable(u) => McpError::internal_error(u.sentence, None),
        RequestError::Mcp(e) => e,
        RequestError::Cancelled => McpError::internal_error("The request was cancelled.", None),
    }
}

fn unexpected() -> McpError {
    McpError::internal_error("the server answered with an unexpected result type", None)
}

fn aggregated_info() -> ServerConfig {
    let capabilities = ServerCapabilities::builder()
        .enable_tools()
        .enable_tool_list_changed()
        .enable_prompts()
        .enable_prompts_list_changed()
        .enable_resources()
        .enable_resources_list_changed()
        .enable_resources_subscribe()
        .enable_logging()
        .enable_completions()
        .build();
    let mut info = ServerConfig::default();
    info.capabilities = capabilities;
    info.server_info = Implementation::new("mcpool", env!("CARGO_PKG_VERSION"));
    info.instructions = Some(
        "mcpool pools this machine's MCP servers. Tools are named <server>__<tool>. Call mcpool__status to see each server's health and mcpool__reconnect to mend one."
            .into(),
    );
    info
}

/// What an upstream said about itself, as this endpoint's own `initialize`
/// result, so a client cannot tell mcpool from the server.
fn mirrored_info(sup: &Supervisor) -> ServerConfig {
    let mut info = ServerConfig::default();
    match sup.info() {
        Some(peer) => {
            info.capabilities = peer.capabilities.clone();
            info.server_info = peer
                .server_info
                .clone()
                .unwrap_or_else(|| Implementation::new(sup.name(), "unknown"));
            info.instructions = peer.instructions.clone();
        }
        None => {
            let mut generic = aggregated_info();
            generic.server_info = Implementation::new(sup.name(), "unknown");
            generic.instructions = None;
            info = generic;
        }
    }
    info
}

impl ServerHandler for AgentSession {
    fn get_info(&self) -> ServerConfig {
        match &self.scope {
            Scope::All | Scope::Profile(_) => aggregated_info(),
            Scope::One(name) => match self.pool.server(name) {
                Some(sup) => mirrored_info(&sup),
                None => aggregated_info(),
            },
        }
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        // Sessions carry the agent registry (list_changed, routing), so only
        // versions that have `initialize` and sessions are offered.
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        if let Scope::One(_) = &self.scope {
            // Connect first so the answer carries the server's own identity.
            if let Ok(sup) = self.single() {
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

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        match &self.scope {
            Scope::All => Ok(ListToolsResult::with_all_items(self.pool.tool_view().tools.clone())),
            Scope::Profile(name) => Ok(ListToolsResult::with_all_items(
                self.pool.profile_tools(name).ok_or_else(|| no_profile(name))?,
            )),
            Scope::One(_) => {
                let sup = self.single()?;
                let control = self.pool.tool_control().clone();
                match self
                    .forward(
                        &sup,
                        ClientRequest::ListToolsRequest(RequestOptionalParam::with_param(request.unwrap_or_default())),
                        &context,
                    )
                    .await
                {
                    Ok(ServerResult::ListToolsResult(mut r)) => {
                        // Disabled and held-back tools are not listed here either.
                        r.tools.retain(|t| control.visible(sup.name(), t));
                        Ok(r)
                    }
                    Ok(_) => Err(unexpected()),
                    Err(e) => {
                        let mut kept = sup.lists().tools;
                        kept.retain(|t| control.visible(sup.name(), t));
                        if kept.is_empty() {
                            Err(e)
                        } else {
                            Ok(ListToolsResult::with_all_items(kept))
                        }
                    }
                }
            }
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let profile = match &self.scope {
            Scope::Profile(name) => Some((
                name,
                self.pool.tool_control().profile(name).ok_or_else(|| no_profile(name))?,
            )),
            _ => None,
        };
        let (sup, upstream_request) = match &self.scope {
            Scope::All | Scope::Profile(_) => {
                if builtin::is_builtin(&request.name) {
                    if let Some((name, p)) = &profile {
                        if !p.includes_tool(None, &request.name) {
                            return Ok(refused(not_in_profile(&request.name, name)));
                        }
                    }
                    let result = builtin::call(&self.pool, &request.name, request.arguments.as_ref()).await;
                    return Ok(CallToolResponse::Complete(result));
                }
                let Some((sup, tool)) = self.route_tool(&request.name) else {
                    return Err(McpError::invalid_params(
                        format!("mcpool has no tool named '{}'.", request.name),
                        None,
                    ));
                };
                if let Some((name, p)) = &profile {
                    if !p.includes_tool(Some(sup.name()), &request.name) {
                        return Ok(refused(not_in_profile(&request.name, name)));
                    }
                }
                let mut upstream = request.clone();
                upstream.name = tool.into();
                (sup, upstream)
            }
            Scope::One(_) => (self.single()?, request),
        };
        let current = sup.lists().tools.into_iter().find(|t| t.name == upstream_request.name);
        let control = self.pool.tool_control();
        if let Some(sentence) = control.refusal(sup.name(), &upstream_request.name, current.as_ref()) {
            return Ok(refused(sentence));
        }
        match sup
            .forward(
                ClientRequest::CallToolRequest(Request::new(upstream_request)),
                Some((&context, self.agent_id())),
            )
            .await
        {
            Ok(ServerResult::CallToolResult(r)) => Ok(CallToolResponse::Complete(r)),
            Ok(ServerResult::CreateTaskResult(t)) => Ok(CallToolResponse::Task(t)),
            Ok(ServerResult::InputRequiredResult(i)) => Ok(CallToolResponse::InputRequired(i)),
            Ok(_) => Err(unexpected()),
            Err(RequestError::Unavailable(u)) => Ok(CallToolResponse::Complete(CallToolResult::error(vec![
                ContentBlock::text(u.sentence),
            ]))),
            Err(e) => Err(into_mcp(e)),
        }
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        match &self.scope {
            Scope::All => Ok(ListPromptsResult::with_all_items(
                self.pool.prompt_view().prompts.clone(),
            )),
            Scope::Profile(_) => {
                let view = self.pool.prompt_view();
                let prompts = view
                    .prompts
                    .iter()
                    .filter(|p| view.names.resolve(&p.name).is_some_and(|(s, _)| self.in_scope(s)))
                    .cloned()
                    .collect();
                Ok(ListPromptsResult::with_all_items(prompts))
            }
            Scope::One(_) => {
                let sup = self.single()?;
                match self
                    .forward(
                        &sup,
                        ClientRequest::ListPromptsRequest(RequestOptionalParam::with_param(
                            request.unwrap_or_default(),
                        )),
                        &context,
                    )
                    .await
                {
                    Ok(ServerResult::ListPromptsResult(r)) => Ok(r),
                    Ok(_) => Err(unexpected()),
                    Err(e) => {
                        let kept = sup.lists().prompts;
                        if kept.is_empty() {
                            Err(e)
                        } else {
                            Ok(ListPromptsResult::with_all_items(kept))
                        }
                    }
                }
            }
        }
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let (sup, upstream) = match &self.scope {
            Scope::All | Scope::Profile(_) => {
                let view = self.pool.prompt_view();
                let found = view.names.resolve(&request.name).filter(|(s, _)| self.in_scope(s));
                let Some((server, prompt)) = found else {
                    return Err(McpError::invalid_params(
                        format!("mcpool has no prompt named '{}'.", request.name),
                        None,
                    ));
                };
                let sup = self
                    .pool
                    .server(server)
                    .ok_or_else(|| McpError::invalid_params("unknown prompt", None))?;
                let mut upstream = request.clone();
                upstream.name = prompt.to_string();
                (sup, upstream)
            }
            Scope::One(_) => (self.single()?, request),
        };
        match self
            .forward(&sup, ClientRequest::GetPromptRequest(Request::new(upstream)), &context)
            .await?
        {
            ServerResult::GetPromptResult(r) => Ok(GetPromptResponse::Complete(r)),
            ServerResult::InputRequiredResult(i) => Ok(GetPromptResponse::InputRequired(i)),
            _ => Err(unexpected()),
        }
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        match &self.scope {
            Scope::All | Scope::Profile(_) => {
                let mut seen = std::collections::BTreeSet::new();
                let resources = self
                    .pool
                    .servers()
                    .iter()
                    .filter(|s| self.in_scope(s.name()))
                    .flat_map(|s| s.lists().resources)
                    .filter(|r| seen.insert(r.uri.clone()))
                    .collect();
                Ok(ListResourcesResult::with_all_items(resources))
            }
            Scope::One(_) => {
                let sup = self.single()?;
                match self
                    .forward(
                        &sup,
                        ClientRequest::ListResourcesRequest(RequestOptionalParam::with_param(
                            request.unwrap_or_default(),
                        )),
                        &context,
                    )
                    .await
                {
                    Ok(ServerResult::ListResourcesResult(r)) => Ok(r),
                    Ok(_) => Err(unexpected()),
                    Err(e) => {
                        let kept = sup.lists().resources;
                        if kept.is_empty() {
                            Err(e)
                        } else {
                            Ok(ListResourcesResult::with_all_items(kept))
                        }
                    }
                }
            }
        }
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        match &self.scope {
            Scope::All | Scope::Profile(_) => {
                let templates = self
                    .pool
                    .servers()
                    .iter()
                    .filter(|s| self.in_scope(s.name()))
                    .flat_map(|s| s.lists().templates)
                    .collect();
                Ok(ListResourceTemplatesResult::with_all_items(templates))
            }
            Scope::One(_) => {
                let sup = self.single()?;
                match self
                    .forward(
                        &sup,
                        ClientRequest::ListResourceTemplatesRequest(RequestOptionalParam::with_param(
                            request.unwrap_or_default(),
                        )),
                        &context,
                    )
                    .await
                {
                    Ok(ServerResult::ListResourceTemplatesResult(r)) => Ok(r),
                    Ok(_) => Err(unexpected()),
                    Err(e) => {
                        let kept = sup.lists().templates;
                        if kept.is_empty() {
                            Err(e)
                        } else {
                            Ok(ListResourceTemplatesResult::with_all_items(kept))
                        }
                    }
                }
            }
        }
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let sup = self.owner_of_uri(&request.uri)?;
        match self
            .forward(
                &sup,
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

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let sup = self.owner_of_uri(&request.uri)?;
        let uri = request.uri.clone();
        self.forward(&sup, ClientRequest::SubscribeRequest(Request::new(request)), &context)
            .await?;
        self.pool.hub().subscribe(self.agent_id(), sup.name(), &uri, true);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let sup = self.owner_of_uri(&request.uri)?;
        let uri = request.uri.clone();
        let hub = self.pool.hub();
        hub.subscribe(self.agent_id(), sup.name(), &uri, false);
        if hub.others_subscribed(self.agent_id(), sup.name(), &uri) {
            // Another agent still wants the updates of this resource.
            return Ok(());
        }
        self.forward(&sup, ClientRequest::UnsubscribeRequest(Request::new(request)), &context)
            .await?;
        Ok(())
    }

    async fn complete(
        &self,
        mut request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let sup = match (&self.scope, &mut request.r#ref) {
            (Scope::One(_), _) => self.single()?,
            (Scope::All | Scope::Profile(_), Reference::Prompt(prompt)) => {
                let view = self.pool.prompt_view();
                let found = view.names.resolve(&prompt.name).filter(|(s, _)| self.in_scope(s));
                let Some((server, name)) = found else {
                    return Err(McpError::invalid_params(
                        format!("mcpool has no prompt named '{}'.", prompt.name),
                        None,
                    ));
                };
                let sup = self
                    .pool
                    .server(server)
                    .ok_or_else(|| McpError::invalid_params("unknown prompt", None))?;
                prompt.name = name.to_string();
                sup
            }
            (Scope::All | Scope::Profile(_), Reference::Resource(resource)) => self.owner_of_uri(&resource.uri)?,
            (Scope::All | Scope::Profile(_), _) => {
                return Err(McpError::invalid_params(
                    "mcpool cannot route this completion reference.",
                    None,
                ))
            }
        };
        match self
            .forward(&sup, ClientRequest::CompleteRequest(Request::new(request)), &context)
            .await?
        {
            ServerResult::CompleteResult(r) => Ok(r),
            _ => Err(unexpected()),
        }
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        match &self.scope {
            Scope::One(_) => {
                let sup = self.single()?;
                self.forward(&sup, ClientRequest::SetLevelRequest(Request::new(request)), &context)
                    .await?;
            }
            Scope::All | Scope::Profile(_) => {
                // Only servers that are up and say they log; nothing is dialled for it.
                for sup in self.pool.servers().into_iter().filter(|s| self.in_scope(s.name())) {
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

impl AgentSession {
    /// Whether this session sees the prompts and resources of `server`.
    fn in_scope(&self, server: &str) -> bool {
        match &self.scope {
            Scope::All => true,
            Scope::One(name) => name == server,
            Scope::Profile(name) => self
                .pool
                .tool_control()
                .profile(name)
                .is_some_and(|p| p.includes_server(server)),
        }
    }

    /// The server and upstream name behind a public tool name. A name whose
    /// tools are not listed right now (a disconnected or signed-out server)
    /// still reaches its server by prefix, so the agent hears why.
    fn route_tool(&self, public: &str) -> Option<(Arc<Supervisor>, String)> {
        let view = self.pool.tool_view();
        if let Some((server, tool)) = view.names.resolve(public) {
            return self.pool.server(server).map(|s| (s, tool.to_string()));
        }
        let (server, tool) = public.split_once(crate::names::SEPARATOR)?;
        let sup = self
            .pool
            .servers()
            .into_iter()
            .find(|s| crate::names::sanitize(s.name()) == server)?;
        Some((sup, tool.to_string()))
    }

    /// The server a resource URI belongs to: the one listing it, else the
    /// one whose template's fixed prefix matches it.
    fn owner_of_uri(&self, uri: &str) -> Result<Arc<Supervisor>, McpError> {
        if let Scope::One(_) = &self.scope {
            return self.single();
        }
        let servers: Vec<Arc<Supervisor>> = self
            .pool
            .servers()
            .into_iter()
            .filter(|s| self.in_scope(s.name()))
            .collect();
        if let Some(sup) = servers
            .iter()
            .find(|s| s.lists().resources.iter().any(|r| r.uri == uri))
        {
            return Ok(sup.clone());
        }
        let best = servers
            .iter()
            .filter_map(|s| {
                let longest = s
                    .lists()
                    .templates
                    .iter()
                    .map(|t| t.uri_template.split('{').next().unwrap_or("").to_string())
                    .filter(|prefix| !prefix.is_empty() && uri.starts_with(prefix.as_str()))
                    .map(|p| p.len())
                    .max();
                longest.map(|l| (l, s.clone()))
            })
            .max_by_key(|(l, _)| *l);
        match best {
            Some((_, sup)) => Ok(sup),
            None => Err(McpError::resource_not_found(
                format!("No server in mcpool offers the resource '{uri}'."),
                None,
            )),
        }
    }
}
