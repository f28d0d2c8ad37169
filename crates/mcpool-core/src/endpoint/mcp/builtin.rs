//! The aggregated endpoint's own tools: `mcpool__status` and
//! `mcpool__reconnect`, so an agent can see and mend the pool even with an
//! empty config.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde_json::json;

use crate::control::ControlError;
use crate::pool::Pool;

pub use crate::names::BUILTIN_SERVER;
pub const STATUS_TOOL: &str = "mcpool__status";
pub const RECONNECT_TOOL: &str = "mcpool__reconnect";

fn schema(value: serde_json::Value) -> Arc<JsonObject> {
    match value {
        serde_json::Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

/// The built-in tools' definitions; the pool lists them first in the
/// aggregated view ([`crate::pool::PoolOptions::builtin_tools`]).
pub fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            STATUS_TOOL,
            "Show every MCP server in the mcpool pool: its status (pending, connected, failed, needs_auth, disabled), last error and tool count.",
            schema(json!({"type": "object", "properties": {}})),
        ),
        Tool::new(
            RECONNECT_TOOL,
            "Reconnect one MCP server of the mcpool pool now, bypassing any backoff. Use it when mcpool__status shows a server failed.",
            schema(json!({
                "type": "object",
                "properties": {"server": {"type": "string", "description": "The server's name as mcpool__status shows it"}},
                "required": ["server"]
            })),
        ),
    ]
}

pub fn is_builtin(name: &str) -> bool {
    name == STATUS_TOOL || name == RECONNECT_TOOL
}

pub async fn call(pool: &Pool, name: &str, arguments: Option<&JsonObject>) -> CallToolResult {
    if name == STATUS_TOOL {
        let servers: Vec<serde_json::Value> = pool
            .snapshot()
            .into_iter()
            .map(|s| json!({"name": s.name, "status": s.status, "error": s.error, "tools": s.tool_count}))
            .collect();
        let text = if servers.is_empty() {
            "mcpool has no servers configured. Add them to the mcpool config (or run `mcpool import`).".to_string()
        } else {
            serde_json::to_string_pretty(&servers).unwrap_or_default()
        };
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = Some(json!({"servers": servers}));
        return result;
    }
    let server = arguments.and_then(|a| a.get("server")).and_then(|v| v.as_str());
    let Some(server) = server else {
        return CallToolResult::error(vec![ContentBlock::text(
            "mcpool__reconnect needs the argument 'server'.",
        )]);
    };
    match crate::control::reconnect(pool, server).await {
        Ok(snapshot) => CallToolResult::success(vec![ContentBlock::text(format!(
            "Server '{server}' is connected with {} tools.",
            snapshot.tool_count
        ))]),
        Err(ControlError::UnknownServer(_)) => {
            let names: Vec<String> = pool.servers().iter().map(|s| s.name().to_string()).collect();
            CallToolResult::error(vec![ContentBlock::text(format!(
                "There is no server '{server}' in mcpool; the servers are: {}.",
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ))])
        }
        Err(e) => CallToolResult::error(vec![ContentBlock::text(e.to_string())]),
    }
}
