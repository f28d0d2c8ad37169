//! The MCP handler: tools (with the prefix), prompts, resources, completion and logging.
//!
//! One `Faulty` serves one session; what outlives a session is in [`Shared`].

// Logging and resources/subscribe are deprecated by SEP-2577 but still served
// to legacy-lifecycle clients, which is what mcpool's upstreams are.
#![allow(deprecated)]

use std::{
    borrow::Cow,
    collections::BTreeSet,
    sync::{Arc, Mutex, PoisonError},
};

use rmcp::{
    model::{
        CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams, CompleteResult,
        CompletionInfo, GetPromptRequestParams, GetPromptResponse, GetPromptResult, GetTaskParams, GetTaskResult,
        Implementation, InitializeRequestParams, InitializeResult, ListPromptsResult, ListResourceTemplatesResult,
        ListResourcesResult, ListToolsResult, PaginatedRequestParams, Prompt, PromptArgument, PromptMessage,
        ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Reference, Resource,
        ResourceContents, ResourceTemplate, Role, ServerCapabilities, ServerConfig, SetLevelRequestParams,
        SubscribeRequestParams, SubscriptionFilter, Tool, UnsubscribeRequestParams, UpdateTaskParams,
    },
    service::{RequestContext, SubscriptionContext},
    ErrorData as McpError, RoleServer, ServerHandler,
};
use serde_json::Value;

use crate::{
    shared::Shared,
    tools::{self, Call},
};

pub const HELLO_URI: &str = "faulty://static/hello";
pub const HELLO_TEXT: &str = "hello from faulty";
pub const ITEM_TEMPLATE: &str = "faulty://item/{id}";
const ITEM_PREFIX: &str = "faulty://item/";
const GREET_NAMES: [&str; 3] = ["alice", "albert", "bob"];

pub struct Faulty {
    shared: Arc<Shared>,
    subscriptions: Mutex<BTreeSet<String>>,
}

impl Faulty {
    pub fn new(shared: Arc<Shared>) -> Self {
        Self {
            shared,
            subscriptions: Mutex::new(BTreeSet::new()),
        }
    }

    fn subscriptions(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.subscriptions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn prefixed(&self, mut tool: Tool) -> Tool {
        if !self.shared.tools_prefix.is_empty() {
            tool.name = Cow::Owned(format!("{}{}", self.shared.tools_prefix, tool.name));
        }
        tool
    }

    /// Every tool as the client sees it: built-ins, then `set_tools` extras.
    pub fn tools(&self) -> Vec<Tool> {
        tools::builtin_tools()
            .into_iter()
            .chain(self.shared.extra_tools().into_iter().map(tools::extra_tool))
            .map(|tool| self.prefixed(tool))
            .collect()
    }
}

/// MCP Apps' extension, and what this server offers of it.
pub const UI_EXTENSION: &str = "io.modelcontextprotocol/ui";

pub fn capabilities() -> ServerCapabilities {
    let mut capabilities = ServerCapabilities::builder()
        .enable_logging()
        .enable_completions()
        .enable_prompts()
        .enable_resources()
        .enable_resources_subscribe()
        .enable_resources_list_changed()
        .enable_tools()
        .enable_tool_list_changed()
        .enable_tasks()
        .build();
    let mut ui = serde_json::Map::new();
    ui.insert("mimeTypes".into(), serde_json::json!(["text/html;profile=mcp-app"]));
    capabilities
        .extensions
        .get_or_insert_with(Default::default)
        .insert(UI_EXTENSION.to_string(), ui);
    capabilities
}

fn greet_prompt() -> Prompt {
    Prompt::new(
        "greet",
        Some("Greets someone by name"),
        Some(vec![PromptArgument::new("name")
            .with_description("Who to greet")
            .with_required(true)]),
    )
}

/// Completes `value` against the names greet knows, by prefix.
pub fn complete_name(value: &str) -> Vec<String> {
    GREET_NAMES
        .iter()
        .filter(|name| name.starts_with(value))
        .map(|name| (*name).to_owned())
        .collect()
}

impl ServerHandler for Faulty {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(capabilities())
            .with_server_info(Implementation::new(self.shared.name.clone(), env!("CARGO_PKG_VERSION")))
            .with_instructions("A fault-injecting MCP server for tests.")
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        let up_to = match &self.shared.max_protocol_version {
            Some(max) => ProtocolVersion::known_up_to(max),
            None => ProtocolVersion::KNOWN_VERSIONS,
        };
        match &self.shared.min_protocol_version {
            Some(min) => Cow::Owned(up_to.iter().filter(|v| v.as_str() >= min.as_str()).cloned().collect()),
            None => Cow::Borrowed(up_to),
        }
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        self.shared.record_initialize();
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.shared.record_call(&request.name);
        // What a tracing client passed on (SEP-414), for the trace tests.
        if let Some(traceparent) = context.meta.get_traceparent() {
            self.shared.log_line(&format!("traceparent {traceparent}"));
        }
        let unknown = || McpError::invalid_params(format!("unknown tool: {}", request.name), None);
        let Some(name) = request.name.strip_prefix(self.shared.tools_prefix.as_str()) else {
            return Err(unknown());
        };
        if name == "elicit" {
            if let Some(response) =
                crate::asks::elicit_by_input_required(&request, &context, self.shared.ignore_client_capabilities)
            {
                return response;
            }
        }
        let is_subscribed = |uri: &str| self.subscriptions().contains(uri);
        let tasks_context = (name == "echo").then(|| context.clone());
        let call = Call {
            shared: &self.shared,
            context,
            is_subscribed: &is_subscribed,
        };
        match tools::call(call, name, request.arguments.clone()).await {
            // `echo` to a client that takes tasks answers with a task (tasks.rs).
            Some(Ok(result)) => Ok(tasks_context
                .and_then(|c| self.shared.tasks.maybe_task(&c, &result))
                .unwrap_or_else(|| CallToolResponse::from(result))),
            Some(Err(e)) => Err(e),
            None => Err(unknown()),
        }
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        self.shared.tasks.get(&request.task_id)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.shared.tasks.get(&request.task_id).map(|_| ())
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.shared.tasks.cancel(&request.task_id)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(ListPromptsResult::with_all_items(vec![greet_prompt()]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        if request.name != "greet" {
            return Err(McpError::invalid_params(
                format!("unknown prompt: {}", request.name),
                None,
            ));
        }
        let name = request
            .arguments
            .as_ref()
            .and_then(|arguments| arguments.get("name"))
            .and_then(Value::as_str)
            .ok_or_else(|| McpError::invalid_params("greet needs a string `name`", None))?;
        let message = PromptMessage::new_text(Role::User, format!("Hello, {name}!"));
        let mut result = GetPromptResult::new(vec![message]);
        result.meta = Some(tools::marked("prompt"));
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let hello = Resource::new(HELLO_URI, "hello").with_mime_type("text/plain");
        Ok(ListResourcesResult::with_all_items(vec![hello]))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let item = ResourceTemplate::new(ITEM_TEMPLATE, "item").with_mime_type("text/plain");
        Ok(ListResourceTemplatesResult::with_all_items(vec![item]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let text = match request.uri.strip_prefix(ITEM_PREFIX) {
            _ if request.uri == HELLO_URI => HELLO_TEXT.to_owned(),
            Some(id) if !id.is_empty() => format!("item {id}"),
            _ => {
                return Err(McpError::resource_not_found(
                    format!("no resource {}", request.uri),
                    None,
                ));
            }
        };
        let contents = ResourceContents::text(text, request.uri).with_mime_type("text/plain");
        let mut result = ReadResourceResult::new(vec![contents]);
        result.meta = Some(tools::marked("read"));
        Ok(result.into())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscriptions().insert(request.uri);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscriptions().remove(&request.uri);
        Ok(())
    }

    /// 2026-07-28 clients hear of changes on `subscriptions/listen` only.
    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let id = context.sink().id().clone();
        self.shared.add_listener(context.sink().clone());
        context.cancelled().await;
        self.shared.remove_listener(&id);
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let values = match &request.r#ref {
            Reference::Prompt(prompt) if prompt.name == "greet" && request.argument.name == "name" => {
                complete_name(&request.argument.value)
            }
            _ => Vec::new(),
        };
        let info = CompletionInfo::with_all_values(values).map_err(|error| McpError::internal_error(error, None))?;
        Ok(CompleteResult::new(info))
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.shared.set_log_level(request.level);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn faulty(prefix: &str) -> Faulty {
        Faulty::new(Arc::new(Shared::new("t".into(), prefix.into(), None, None, None)))
    }

    #[test]
    fn completion_is_by_prefix() {
        assert_eq!(complete_name("al"), ["alice", "albert"]);
        assert_eq!(complete_name("b"), ["bob"]);
        assert!(complete_name("z").is_empty());
    }

    #[test]
    fn tools_carry_the_prefix_and_extras_follow_builtins() {
        let server = faulty("p_");
        server.shared.add_extra_tools(["dyn".to_owned()]);
        let names: Vec<_> = server.tools().iter().map(|t| t.name.to_string()).collect();
        assert_eq!(names.first().map(String::as_str), Some("p_echo"));
        assert_eq!(names.last().map(String::as_str), Some("p_dyn"));
        assert!(names.iter().all(|name| name.starts_with("p_")));
    }

    #[test]
    fn capabilities_advertise_what_tests_need() {
        let caps = serde_json::to_value(capabilities()).unwrap();
        assert_eq!(caps["tools"]["listChanged"], true);
        assert_eq!(caps["resources"]["subscribe"], true);
        assert_eq!(caps["resources"]["listChanged"], true);
        assert!(caps["prompts"].is_object());
        assert!(caps["logging"].is_object());
        assert!(caps["completions"].is_object());
        assert!(caps["extensions"][UI_EXTENSION]["mimeTypes"].is_array());
        assert!(caps["extensions"]["io.modelcontextprotocol/tasks"].is_object());
    }
}
