//! The tools: their JSON schemas and what each call does, faults included.

// Sampling, roots and logging are deprecated by SEP-2577 but are exactly what
// the tests exercise over the legacy (initialize) lifecycle.
#![allow(deprecated)]

use std::time::Duration;

use rmcp::{
    model::{
        CallToolResult, ContentBlock, JsonObject, LoggingLevel, LoggingMessageNotificationParam,
        ProgressNotificationParam, ResourceUpdatedNotification, ResourceUpdatedNotificationParam, ServerNotification,
        Tool, ToolListChangedNotification,
    },
    service::RequestContext,
    ErrorData as McpError, RoleServer,
};
use serde::{de::DeserializeOwned, Deserialize};
use serde_json::{json, Value};

use crate::asks;
use crate::schemas::{count_schema, no_arguments, object, text_schema};
use crate::shared::Shared;

/// Default size of the `big` tool's answer: 10 MiB.
pub const DEFAULT_BIG_BYTES: usize = 10 * 1024 * 1024;

/// Names a JSON file `{"TOOL": "description", ...}` whose descriptions
/// replace the built-in ones at every listing, so a test can change a tool
/// under a client (then call `set_tools` with no names for `list_changed`),
/// and the change outlives a restart of the server.
pub const DESCRIPTIONS_ENV: &str = "MCPOOL_FAULTY_DESCRIPTIONS";

/// The built-in tools, unprefixed, in a stable order (descriptions
/// replaced from [`DESCRIPTIONS_ENV`]'s file, if set).
pub fn builtin_tools() -> Vec<Tool> {
    let replaced: std::collections::BTreeMap<String, String> = std::env::var_os(DESCRIPTIONS_ENV)
        .and_then(|path| std::fs::read(path).ok())
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default();
    let mut tools = original_tools();
    for tool in &mut tools {
        if let Some(description) = replaced.get(tool.name.as_ref()) {
            tool.description = Some(description.clone().into());
        }
    }
    tools
}

fn original_tools() -> Vec<Tool> {
    vec![
        Tool::new("echo", "Returns the text", text_schema("text", "Text to echo")),
        Tool::new(
            "add",
            "Returns the sum of a and b",
            object(
                json!({ "a": { "type": "number" }, "b": { "type": "number" } }),
                &["a", "b"],
            ),
        ),
        Tool::new(
            "crash",
            "Writes a message to stderr and exits with code 3 without answering",
            object(json!({ "message": { "type": "string" } }), &[]),
        ),
        Tool::new("hang", "Never answers (until cancelled)", no_arguments()),
        Tool::new(
            "slow",
            "Sleeps ms milliseconds, then answers",
            count_schema("ms", true),
        ),
        Tool::new(
            "big",
            "Returns `bytes` 'x' characters (default 10 MiB)",
            count_schema("bytes", false),
        ),
        Tool::new(
            "malformed",
            "stdio: writes a line of invalid JSON to stdout, then answers",
            no_arguments(),
        ),
        Tool::new(
            "progress",
            "Sends `steps` progress notifications, `interval_ms` apart (default 20), then answers; or each of \
             `values` at once, just before the answer (as a server that flushes its progress with the result)",
            object(
                json!({
                    "steps": { "type": "integer", "minimum": 0 },
                    "interval_ms": { "type": "integer", "minimum": 0 },
                    "values": { "type": "array", "items": { "type": "number" } },
                }),
                &[],
            ),
        ),
        Tool::new(
            "fail",
            "Answers with a tool error (isError) whose text is `text`",
            text_schema("text", "The error text"),
        ),
        Tool::new(
            "stray",
            "stdio: writes `lines` lines of JSON that are not JSON-RPC (a JSON logger's) to stdout, then answers",
            count_schema("lines", false),
        ),
        Tool::new(
            "wrong_id",
            "stdio: answers with the request's id of the other JSON type (3 as \"3\"), then never answers (until cancelled)",
            no_arguments(),
        ),
        Tool::new(
            "sample",
            "Asks the client to sample a message for the prompt",
            text_schema("prompt", "User message to sample from"),
        ),
        Tool::new(
            "elicit",
            "Asks the client to elicit an answer",
            text_schema("message", "Message shown to the user"),
        ),
        Tool::new("roots", "Asks the client for its roots", no_arguments()),
        Tool::new(
            "log",
            "Sends an info log message",
            text_schema("message", "Message to log"),
        ),
        Tool::new(
            "set_tools",
            "Adds echo-like tools with these names and notifies list_changed",
            object(
                json!({ "names": { "type": "array", "items": { "type": "string" } } }),
                &["names"],
            ),
        ),
        Tool::new(
            "touch",
            "Sends notifications/resources/updated for the uri if subscribed",
            text_schema("uri", "Resource URI"),
        ),
        Tool::new(
            "getenv",
            "Returns the value of the environment variable `name` (a tool error when it is not set)",
            text_schema("name", "Variable name"),
        ),
        Tool::new(
            "spawn",
            "Starts a grandchild (`mcpool-faulty linger`) that ignores its stdin closing and runs until killed; \
             returns its process id",
            no_arguments(),
        ),
        Tool::new(
            "show_client",
            "Returns the extensions the client declared for this request (structuredContent.extensions; \
             null when none), as MCP Apps servers read them to decide whether to render an app",
            no_arguments(),
        ),
        Tool::new(
            "show_meta",
            "Returns the request's `_meta` as received (structuredContent.meta); sends a log message and, with a \
             progress token, a progress notification first; each of them and the result carry a `_meta` of \
             their own (`com.example/from` names which)",
            no_arguments(),
        ),
        Tool::new(
            "argv",
            "Returns this process's command-line arguments (after the program) as a JSON array",
            no_arguments(),
        ),
    ]
}

/// A tool added at runtime by `set_tools`; behaves like `echo`.
pub fn extra_tool(name: String) -> Tool {
    Tool::new(name, "Dynamic tool (echoes text)", text_schema("text", "Text to echo"))
}

fn parse<T: DeserializeOwned>(arguments: Option<JsonObject>) -> Result<T, McpError> {
    let value = Value::Object(arguments.unwrap_or_default());
    serde_json::from_value(value).map_err(|error| McpError::invalid_params(format!("bad arguments: {error}"), None))
}

pub(crate) fn text(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

pub(crate) fn failure(text: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}

#[derive(Deserialize)]
struct Text {
    text: String,
}

#[derive(Deserialize)]
struct Add {
    a: f64,
    b: f64,
}

#[derive(Deserialize)]
struct Crash {
    message: Option<String>,
}

#[derive(Deserialize)]
struct Slow {
    ms: u64,
}

#[derive(Deserialize)]
struct Big {
    bytes: Option<usize>,
}

#[derive(Deserialize)]
struct Progress {
    steps: Option<u32>,
    interval_ms: Option<u64>,
    values: Option<Vec<f64>>,
}

#[derive(Deserialize)]
struct Stray {
    lines: Option<u32>,
}

#[derive(Deserialize)]
struct Prompt {
    prompt: String,
}

#[derive(Deserialize)]
struct Message {
    message: String,
}

#[derive(Deserialize)]
struct Names {
    names: Vec<String>,
}

#[derive(Deserialize)]
struct Name {
    name: String,
}

#[derive(Deserialize)]
struct Uri {
    uri: String,
}

/// What a session contributes to a call beyond the shared state.
pub struct Call<'a> {
    pub shared: &'a Shared,
    pub context: RequestContext<RoleServer>,
    /// Whether this session subscribed to a URI (for `touch`).
    pub is_subscribed: &'a (dyn Fn(&str) -> bool + Send + Sync),
}

/// Runs the tool `name` (already stripped of the prefix). `None`: no such tool.
pub async fn call(
    call: Call<'_>,
    name: &str,
    arguments: Option<JsonObject>,
) -> Option<Result<CallToolResult, McpError>> {
    let Call {
        shared,
        context,
        is_subscribed,
    } = call;
    let result = match name {
        "echo" => parse::<Text>(arguments).map(|args| text(args.text)),
        "add" => parse::<Add>(arguments).map(|args| text((args.a + args.b).to_string())),
        "crash" => match parse::<Crash>(arguments) {
            Ok(args) => crash(args.message),
            Err(error) => Err(error),
        },
        "hang" => {
            context.ct.cancelled().await;
            shared.log_line("cancelled hang");
            Err(McpError::internal_error("cancelled", None))
        }
        "slow" => match parse::<Slow>(arguments) {
            Ok(args) => {
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(args.ms)) => {
                        Ok(text(format!("slept {}", args.ms)))
                    }
                    () = context.ct.cancelled() => Err(McpError::internal_error("cancelled", None)),
                }
            }
            Err(error) => Err(error),
        },
        "big" => parse::<Big>(arguments).map(|args| text("x".repeat(args.bytes.unwrap_or(DEFAULT_BIG_BYTES)))),
        "malformed" => {
            let injected = shared.inject_stdout("this is {not json");
            Ok(text(if injected {
                "sent a malformed line"
            } else {
                "nothing malformed over http"
            }))
        }
        "show_meta" => Ok(show_meta(&context).await),
        "show_client" => Ok(show_client(&context)),
        "progress" => match parse::<Progress>(arguments) {
            Ok(Progress {
                values: Some(values), ..
            }) => burst(&context, &values).await,
            Ok(args) => {
                let interval = Duration::from_millis(args.interval_ms.unwrap_or(20));
                progress(&context, args.steps.unwrap_or(3), interval).await
            }
            Err(error) => Err(error),
        },
        "fail" => parse::<Text>(arguments).map(|args| failure(args.text)),
        "stray" => match parse::<Stray>(arguments) {
            Ok(args) => {
                let lines = args.lines.unwrap_or(2);
                for line in 1..=lines {
                    let log = json!({"level": "info", "msg": format!("stray line {line}"), "id": line});
                    shared.inject_stdout(&log.to_string());
                }
                Ok(text(format!("answered after {lines} stray lines")))
            }
            Err(error) => Err(error),
        },
        "wrong_id" => {
            let other = match &context.id {
                rmcp::model::NumberOrString::Number(n) => json!(n.to_string()),
                rmcp::model::NumberOrString::String(s) => json!(s.parse::<i64>().unwrap_or(-1)),
            };
            let reply = json!({"jsonrpc": "2.0", "id": other, "result": {"content": [{"type": "text", "text": "an answer to another id"}]}});
            shared.inject_stdout(&reply.to_string());
            context.ct.cancelled().await;
            shared.log_line("cancelled wrong_id");
            Err(McpError::internal_error("cancelled", None))
        }
        "sample" => match parse::<Prompt>(arguments) {
            Ok(args) => asks::sample(&context, args.prompt).await,
            Err(error) => Err(error),
        },
        "elicit" => match parse::<Message>(arguments) {
            Ok(args) => asks::elicit(&context, args.message).await,
            Err(error) => Err(error),
        },
        "roots" => Ok(match context.peer.list_roots().await {
            Ok(roots) => text(to_json(&roots)),
            Err(error) => failure(format!("roots/list failed: {error}")),
        }),
        "log" => match parse::<Message>(arguments) {
            // 2026-07-28: the level a client wants rides on the request.
            Ok(_) if stateless(&context) && context.meta.log_level().is_some_and(above_info) => Ok(text("filtered")),
            Ok(args) => {
                let param = LoggingMessageNotificationParam::new(LoggingLevel::Info, Value::String(args.message))
                    .with_logger("faulty");
                Ok(match context.peer.notify_logging_message(param).await {
                    Ok(()) => text("logged"),
                    Err(error) => failure(format!("log failed: {error}")),
                })
            }
            Err(error) => Err(error),
        },
        "set_tools" => match parse::<Names>(arguments) {
            Ok(args) => {
                shared.add_extra_tools(args.names);
                if stateless(&context) {
                    let change =
                        ServerNotification::ToolListChangedNotification(ToolListChangedNotification::default());
                    shared.announce(change).await;
                    return Some(Ok(text("tools set")));
                }
                Ok(match context.peer.notify_tool_list_changed().await {
                    Ok(()) => text("tools set"),
                    Err(error) => failure(format!("list_changed failed: {error}")),
                })
            }
            Err(error) => Err(error),
        },
        "touch" => match parse::<Uri>(arguments) {
            Ok(args) if stateless(&context) => {
                let mut param = ResourceUpdatedNotificationParam::new(args.uri);
                param.meta = Some(marked("updated"));
                let update = ResourceUpdatedNotification::new(param);
                let sent = shared
                    .announce(ServerNotification::ResourceUpdatedNotification(update))
                    .await;
                Ok(text(if sent > 0 { "notified" } else { "not subscribed" }))
            }
            Ok(args) if is_subscribed(&args.uri) => {
                let mut param = ResourceUpdatedNotificationParam::new(args.uri);
                param.meta = Some(marked("updated"));
                Ok(match context.peer.notify_resource_updated(param).await {
                    Ok(()) => text("notified"),
                    Err(error) => failure(format!("resources/updated failed: {error}")),
                })
            }
            Ok(_) => Ok(text("not subscribed")),
            Err(error) => Err(error),
        },
        "getenv" => parse::<Name>(arguments).map(|args| match std::env::var(&args.name) {
            Ok(value) => text(value),
            Err(_) => failure(format!("{} is not set", args.name)),
        }),
        "spawn" => Ok(match spawn_lingerer() {
            Ok(pid) => text(pid.to_string()),
            Err(error) => failure(format!("spawn failed: {error}")),
        }),
        "argv" => Ok(text(to_json(&std::env::args().skip(1).collect::<Vec<_>>()))),
        other if shared.has_extra_tool(other) => parse::<Text>(arguments).map(|a| text(a.text)),
        _ => return None,
    };
    Some(result)
}

/// Starts `mcpool-faulty linger ARGS` (our own arguments) with no stdio of
/// ours, so it neither sees our stdin close nor holds our pipes open; it is
/// not waited for.
fn spawn_lingerer() -> std::io::Result<u32> {
    use std::process::Stdio;
    let child = std::process::Command::new(std::env::current_exe()?)
        .arg("linger")
        .args(std::env::args_os().skip(1))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    Ok(child.id())
}

pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|error| format!("<unserializable: {error}>"))
}

/// Exits mid-call: the client sees the connection drop, never a response.
fn crash(message: Option<String>) -> Result<CallToolResult, McpError> {
    eprintln!("{}", message.unwrap_or_else(|| "crashing on purpose".to_owned()));
    std::process::exit(3)
}

async fn progress(
    context: &RequestContext<RoleServer>,
    steps: u32,
    interval: Duration,
) -> Result<CallToolResult, McpError> {
    let Some(token) = context.meta.get_progress_token() else {
        return Ok(text("done"));
    };
    for step in 1..=steps {
        if step > 1 {
            tokio::time::sleep(interval).await;
        }
        let param = ProgressNotificationParam::new(token.clone(), f64::from(step))
            .with_total(f64::from(steps))
            .with_message(format!("step {step}"));
        if let Err(error) = context.peer.notify_progress(param).await {
            return Ok(failure(format!("progress failed: {error}")));
        }
    }
    Ok(text("done"))
}

/// A `_meta` that says where it came from (`com.example/from`), for a
/// notification or a result (`show_meta`, `touch`, a prompt, a read).
pub(crate) fn marked<T: serde::de::DeserializeOwned + Default>(from: &str) -> T {
    serde_json::from_value(json!({"com.example/from": from, "com.example/nested": {"list": [1, "two"]}}))
        .unwrap_or_default()
}

async fn show_meta(context: &RequestContext<RoleServer>) -> CallToolResult {
    let received = Value::Object(context.meta.0 .0.clone());
    let mut log = LoggingMessageNotificationParam::new(LoggingLevel::Info, json!("show_meta")).with_logger("faulty");
    log.meta = Some(marked("log"));
    let _ = context.peer.notify_logging_message(log).await;
    if let Some(token) = context.meta.get_progress_token() {
        let mut progress = ProgressNotificationParam::new(token, 1.0).with_message("show_meta");
        progress.meta = Some(marked("progress"));
        let _ = context.peer.notify_progress(progress).await;
    }
    let mut result = text(received.to_string());
    result.structured_content = Some(json!({ "meta": received }));
    result.meta = Some(marked("result"));
    result
}

/// The client's declared extensions, per request on 2026-07-28, else the
/// session's.
fn show_client(context: &RequestContext<RoleServer>) -> CallToolResult {
    let extensions = context.client_capabilities().and_then(|c| c.extensions);
    let extensions = serde_json::to_value(extensions).unwrap_or_default();
    let mut result = text(extensions.to_string());
    result.structured_content = Some(json!({ "extensions": extensions }));
    result
}

/// Sends every value as progress back to back, with no pause before the
/// answer: the notifications reach the client in one burst with the result.
async fn burst(context: &RequestContext<RoleServer>, values: &[f64]) -> Result<CallToolResult, McpError> {
    let Some(token) = context.meta.get_progress_token() else {
        return Ok(text("done"));
    };
    let total = values.last().copied();
    for (step, value) in values.iter().enumerate() {
        let mut param = ProgressNotificationParam::new(token.clone(), *value).with_message(format!("value {step}"));
        if let Some(total) = total {
            param = param.with_total(total);
        }
        if let Err(error) = context.peer.notify_progress(param).await {
            return Ok(failure(format!("progress failed: {error}")));
        }
    }
    Ok(text("done"))
}

/// Whether the request came on 2026-07-28, whose changes go to
/// `subscriptions/listen` streams only.
pub(crate) fn stateless(context: &RequestContext<RoleServer>) -> bool {
    context.protocol_version().is_some_and(|v| !v.has_initialize())
}

fn above_info(level: LoggingLevel) -> bool {
    !matches!(level, LoggingLevel::Debug | LoggingLevel::Info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_tools_have_unique_names_and_object_schemas() {
        let tools = builtin_tools();
        let mut names: Vec<_> = tools.iter().map(|tool| tool.name.to_string()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), tools.len());
        for tool in &tools {
            assert_eq!(tool.input_schema.get("type"), Some(&json!("object")));
        }
    }

    #[test]
    fn arguments_are_checked() {
        let args = json!({ "a": 1, "b": 2.5 });
        let Value::Object(args) = args else { panic!() };
        let add: Add = parse(Some(args)).unwrap();
        assert_eq!(add.a + add.b, 3.5);
        assert!(parse::<Add>(None).is_err());
    }
}
