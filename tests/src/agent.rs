//! Agents for the tests: an rmcp client that records what the server sent, and the official Python SDK agent script.

use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail};
use rmcp::model::{CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::ClientHandler;
use serde_json::{json, Value};
use tokio::process::Command;

use crate::{python, repo_root, Mcpool};

/// What an rmcp test agent saw from the server.
#[derive(Clone, Default)]
pub struct AgentHandler {
    pub tool_list_changed: Arc<AtomicUsize>,
    pub progress: Arc<std::sync::Mutex<Vec<f64>>>,
    /// The progress token of each progress notification, as JSON.
    pub progress_tokens: Arc<std::sync::Mutex<Vec<Value>>>,
    pub sampling_answer: Arc<std::sync::Mutex<Option<String>>>,
    /// Every `notifications/message`, as JSON.
    pub logs: Arc<std::sync::Mutex<Vec<Value>>>,
    /// The URI of every `notifications/resources/updated`.
    pub resource_updates: Arc<std::sync::Mutex<Vec<String>>>,
    /// Declares elicitation and accepts every form with `{"answer": ...}`.
    pub elicit_answer: Option<String>,
    /// The message of every elicitation asked.
    pub elicited: Arc<std::sync::Mutex<Vec<String>>>,
    /// The extensions the agent declares (an object by id, e.g. MCP Apps').
    pub extensions: Option<Value>,
    /// The `_meta` of every progress, log and resource-update notification
    /// and sampling request, as `{"method", "_meta"}`.
    pub notification_metas: Arc<std::sync::Mutex<Vec<Value>>>,
}

impl AgentHandler {
    /// A handler that answers an elicitation with `answer`.
    pub fn answering(answer: &str) -> Self {
        AgentHandler {
            elicit_answer: Some(answer.to_string()),
            ..AgentHandler::default()
        }
    }

    pub fn tool_list_changes(&self) -> usize {
        self.tool_list_changed.load(Ordering::SeqCst)
    }
    pub fn progress(&self) -> Vec<f64> {
        self.progress.lock().map(|p| p.clone()).unwrap_or_default()
    }
    pub fn progress_tokens(&self) -> Vec<Value> {
        self.progress_tokens.lock().map(|p| p.clone()).unwrap_or_default()
    }
    pub fn sampling_answer(&self) -> Option<String> {
        self.sampling_answer.lock().ok().and_then(|a| a.clone())
    }
    pub fn logs(&self) -> Vec<Value> {
        self.logs.lock().map(|l| l.clone()).unwrap_or_default()
    }
    pub fn elicited(&self) -> Vec<String> {
        self.elicited.lock().map(|e| e.clone()).unwrap_or_default()
    }
    pub fn resource_updates(&self) -> Vec<String> {
        self.resource_updates.lock().map(|r| r.clone()).unwrap_or_default()
    }
    /// The `_meta` of every notification (or request) of `method` so far.
    pub fn notification_metas(&self, method: &str) -> Vec<Value> {
        self.notification_metas
            .lock()
            .map(|m| {
                m.iter()
                    .filter(|n| n["method"] == method)
                    .map(|n| n["_meta"].clone())
                    .collect()
            })
            .unwrap_or_default()
    }
    fn note_meta(&self, method: &str, context: &NotificationContext<RoleClient>) {
        // rmcp leaves the meta in the extensions it hands over.
        let meta = context
            .extensions
            .get::<rmcp::model::NotificationMetaObject>()
            .unwrap_or(&context.meta);
        let meta = serde_json::to_value(meta).unwrap_or_default();
        note(&self.notification_metas, json!({"method": method, "_meta": meta}));
    }
}

/// Adds `item` to one of the lists a test reads afterwards (lost if a
/// panic poisoned the lock).
fn note<T>(list: &std::sync::Mutex<Vec<T>>, item: T) {
    if let Ok(mut items) = list.lock() {
        items.push(item);
    }
}

impl ClientHandler for AgentHandler {
    fn get_info(&self) -> ClientConfig {
        #[allow(deprecated)]
        let mut caps = ClientCapabilities::builder().enable_sampling().build();
        if self.elicit_answer.is_some() {
            caps.elicitation = Some(Default::default());
        }
        caps.extensions = self.extensions.clone().and_then(|e| serde_json::from_value(e).ok());
        ClientConfig::new(caps, Implementation::new("mcpool-test-agent", "0"))
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::model::ErrorData> {
        let Some(answer) = &self.elicit_answer else {
            return Err(rmcp::model::ErrorData::method_not_found::<
                rmcp::model::ElicitationCreateRequestMethod,
            >());
        };
        let message = serde_json::to_value(&request)
            .ok()
            .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_string))
            .unwrap_or_default();
        note(&self.elicited, message);
        serde_json::from_value(json!({"action": "accept", "content": {"answer": answer}}))
            .map_err(|e| rmcp::model::ErrorData::internal_error(e.to_string(), None))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tool_list_changed.fetch_add(1, Ordering::SeqCst);
    }

    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        self.note_meta("notifications/progress", &context);
        note(&self.progress, params.progress);
        note(
            &self.progress_tokens,
            serde_json::to_value(&params.progress_token).unwrap_or_default(),
        );
    }

    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        self.note_meta("notifications/message", &context);
        note(&self.logs, serde_json::to_value(&params).unwrap_or_default());
    }

    #[allow(deprecated)]
    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        self.note_meta("notifications/resources/updated", &context);
        note(&self.resource_updates, params.uri);
    }

    #[allow(deprecated)]
    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::model::ErrorData> {
        let meta = serde_json::to_value(&context.meta).unwrap_or_default();
        note(
            &self.notification_metas,
            json!({"method": "sampling/createMessage", "_meta": meta}),
        );
        let prompt = serde_json::to_string(&params.messages).unwrap_or_default();
        let answer = format!("sampled: {}", prompt.len());
        if let Ok(mut a) = self.sampling_answer.lock() {
            *a = Some(answer.clone());
        }
        serde_json::from_value(
            json!({"role": "assistant", "content": {"type": "text", "text": answer}, "model": "test-model"}),
        )
        .map_err(|e| rmcp::model::ErrorData::internal_error(e.to_string(), None))
    }
}

pub struct Agent {
    pub service: RunningService<RoleClient, AgentHandler>,
    pub handler: AgentHandler,
}

impl Agent {
    pub async fn call(&self, tool: &str, args: Value) -> anyhow::Result<CallToolResult> {
        Ok(self.service.peer().call_tool(call_params(tool, args)).await?)
    }

    /// Sends a tools/call and returns its handle (which knows the progress
    /// token rmcp put on the request).
    pub async fn start_call(
        &self,
        tool: &str,
        args: Value,
    ) -> anyhow::Result<rmcp::service::RequestHandle<RoleClient>> {
        let request = rmcp::model::ClientRequest::CallToolRequest(rmcp::model::Request::new(call_params(tool, args)));
        let options = rmcp::service::PeerRequestOptions::no_options();
        Ok(self.service.peer().send_cancellable_request(request, options).await?)
    }

    /// `resources/subscribe` to `uri` (deprecated in the 2026 revision,
    /// still what these agents speak).
    #[allow(deprecated)]
    pub async fn subscribe(&self, uri: &str) -> anyhow::Result<()> {
        let params = rmcp::model::SubscribeRequestParams::new(uri);
        Ok(self.service.peer().subscribe(params).await?)
    }

    /// `resources/unsubscribe` from `uri`.
    #[allow(deprecated)]
    pub async fn unsubscribe(&self, uri: &str) -> anyhow::Result<()> {
        let params = rmcp::model::UnsubscribeRequestParams::new(uri);
        Ok(self.service.peer().unsubscribe(params).await?)
    }

    /// Waits for the first `resources/updated` at this agent.
    pub async fn first_resource_update(&self, limit: Duration) -> anyhow::Result<()> {
        let h = self.handler.clone();
        wait_for("resources/updated at the subscriber", limit, || {
            !h.resource_updates().is_empty()
        })
        .await
    }

    /// The name the server gave in its `initialize` answer.
    pub fn server_name(&self) -> Option<String> {
        self.service
            .peer()
            .peer_info()
            .and_then(|i| i.server_info.as_ref().map(|s| s.name.clone()))
    }

    pub async fn tool_names(&self) -> anyhow::Result<Vec<String>> {
        Ok(self
            .service
            .peer()
            .list_all_tools()
            .await?
            .into_iter()
            .map(|t| t.name.to_string())
            .collect())
    }
}

/// `tools/call` of `tool` with `args` (an object; anything else: none).
fn call_params(tool: &str, args: Value) -> CallToolRequestParams {
    let params = CallToolRequestParams::new(tool.to_string());
    match args {
        Value::Object(map) => params.with_arguments(map),
        _ => params,
    }
}

/// Polls `check` every 50 ms until it holds, or fails with `what` after `limit`.
pub async fn wait_for(what: &str, limit: Duration, mut check: impl FnMut() -> bool) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + limit;
    while !check() {
        if tokio::time::Instant::now() > deadline {
            bail!("{what} did not happen within {limit:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// The text parts of a tool result, joined.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs the Python SDK agent script and returns its JSON report.
pub async fn python_agent(args: &[&str]) -> anyhow::Result<Value> {
    python_agent_with_env(args, &[]).await
}

impl Mcpool {
    /// Runs the Python SDK agent's `scenario` on `path` here, with the
    /// token and `extra` arguments; its JSON report.
    pub async fn python_scenario(&self, path: &str, scenario: &str, extra: &[&str]) -> anyhow::Result<Value> {
        let url = self.url(path);
        let mut args = vec!["--url", &url, "--token", &self.token, "--scenario", scenario];
        args.extend_from_slice(extra);
        python_agent(&args).await
    }
}

/// Runs the Python SDK agent script with extra environment (which a
/// `--stdio-cmd` child inherits) and returns its JSON report.
pub async fn python_agent_with_env(args: &[&str], env: &[(&str, &str)]) -> anyhow::Result<Value> {
    let script = repo_root().join("tests/py/agent.py");
    let mut cmd = Command::new(python());
    cmd.arg(script).args(args).stdin(Stdio::null()).kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = tokio::time::timeout(Duration::from_secs(120), cmd.output()).await??;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: Value = serde_json::from_str(stdout.trim()).map_err(|e| {
        anyhow!(
            "agent.py printed no JSON ({e}); stdout: {stdout}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })?;
    if !out.status.success() {
        bail!(
            "agent.py failed: {report}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(report)
}

/// A plain rmcp session agent on `url` (with `token` as its bearer, if
/// any) over a keep-alive HTTP client. rmcp's default client turns
/// connection reuse off; agents built on the Python and TypeScript SDKs
/// keep connections alive, so the benchmarks measure the hop the way they
/// use it.
pub async fn keep_alive_agent(
    url: &str,
    token: Option<&str>,
    limit: Duration,
) -> anyhow::Result<RunningService<RoleClient, ()>> {
    use rmcp::service::ServiceExt;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::transport::StreamableHttpClientTransport;

    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    if let Some(token) = token {
        config = config.auth_header(token.to_string());
    }
    let client = reqwest::Client::builder().tcp_nodelay(true).build()?;
    let transport = StreamableHttpClientTransport::with_client(client, config);
    tokio::time::timeout(limit, ().serve(transport))
        .await
        .map_err(|_| anyhow!("the agent on {url} did not initialize within {limit:?}"))?
        .map_err(|e| anyhow!("the agent on {url} failed to initialize: {e}"))
}

/// Asserts that a tool call came back as an error (`isError`) whose text
/// starts with `start`.
#[track_caller]
pub fn assert_error_starts(r: &CallToolResult, start: &str) {
    assert_eq!(r.is_error, Some(true), "{r:?}");
    let said = text(r);
    assert!(said.starts_with(start), "{said}");
}
