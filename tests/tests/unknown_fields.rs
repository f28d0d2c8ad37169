//! behaviour.md §4 (the pool is transparent), for the fields of a server's
//! definitions and results that mcpool's MCP library does not model: a
//! tool's `execution` (2025-11-25) and vendors' fields on a tool, a prompt
//! and a call's result reach the agent exactly as the server sent them.
//! The server is the official Python SDK's low-level one
//! (`tests/py/kept_server.py`) over stdio and over Streamable HTTP
//! answering with SSE streams and with JSON bodies; the agents are bare
//! JSON-RPC (any typed client could drop the fields itself), a session
//! agent on every path and a 2026-07-28 one on `/mcp`.

use std::time::Duration;

use anyhow::Context as _;
use mcpool_tests::raw::RawSession;
use mcpool_tests::*;
use serde_json::{json, Value};
use tokio::process::{Child, Command};

/// `kept_server.py` over Streamable HTTP (`--json`: JSON bodies) and its URL.
async fn kept_http(json_bodies: bool) -> anyhow::Result<(Child, String)> {
    let mut cmd = Command::new(python());
    cmd.arg(repo_root().join("tests/py/kept_server.py")).arg("--http");
    if json_bodies {
        cmd.arg("--json");
    }
    let (child, line) = spawn_quiet(&mut cmd, Duration::from_secs(30))
        .await
        .context("kept_server.py printed no LISTENING line")?;
    Ok((child, announced(&line, "LISTENING ")?))
}

/// The `add` tool as the server lists it, named `name`.
fn add_tool(name: &str) -> Value {
    json!({
        "name": name,
        "description": "Adds two numbers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
        "execution": {"taskSupport": "optional"},
        "x-vendor": {"tier": "gold", "since": [2025, 11]},
    })
}

/// The item of `list` (`tools`, `prompts`) in `result` named `name`.
fn item<'a>(result: &'a Value, list: &str, name: &str) -> anyhow::Result<&'a Value> {
    result[list]
        .as_array()
        .and_then(|items| items.iter().find(|t| t["name"] == name))
        .with_context(|| format!("no {name} in {result}"))
}

#[tokio::test]
async fn unknown_fields_of_tools_prompts_and_results_reach_the_agent_as_sent() -> anyhow::Result<()> {
    let (_sse, sse_url) = kept_http(false).await?;
    let (_json, json_url) = kept_http(true).await?;
    let dir = TempDir::new("unknown-fields");
    let script = repo_root().join("tests/py/kept_server.py");
    let config = json!({
        "mcpServers": {
            "local": {"command": python(), "args": [script]},
            "sse": {"url": sse_url},
            "json": {"url": json_url},
        },
        "profiles": {"p": {"servers": ["local", "sse", "json"]}},
    });
    let pool = Mcpool::start_connected_in(dir, config).await?;
    for server in ["local", "sse", "json"] {
        let routes = [
            ("/mcp".to_string(), format!("{server}__add"), format!("{server}__greet")),
            (
                "/profiles/p/mcp".to_string(),
                format!("{server}__add"),
                format!("{server}__greet"),
            ),
            (format!("/servers/{server}/mcp"), "add".to_string(), "greet".to_string()),
        ];
        for (path, add, greet) in routes {
            let at = format!("{server} through {path}");
            let session = RawSession::open(&pool, &path).await?;
            let listed = session
                .send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
                .await?
                .message
                .with_context(|| format!("{at}: no tools/list reply"))?;
            let tool = item(&listed["result"], "tools", &add)?;
            assert_eq!(tool, &add_tool(&add), "{at}: the tool as the server sent it");
            let prompts = session
                .send(json!({"jsonrpc": "2.0", "id": 2, "method": "prompts/list"}))
                .await?
                .message
                .with_context(|| format!("{at}: no prompts/list reply"))?;
            let prompt = item(&prompts["result"], "prompts", &greet)?;
            assert_eq!(prompt["x-kind"], "salutation", "{at}: {prompt}");
            assert_eq!(prompt.get("_meta"), None, "{at}: nothing of mcpool's own: {prompt}");
            let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": add, "arguments": {"a": 2, "b": 3}}});
            let called = session.send(call).await?.message.context("no tools/call reply")?;
            let result = &called["result"];
            assert_eq!(result["x-trace"], json!({"id": "t-1"}), "{at}: {result}");
            assert_eq!(result["content"][0]["text"], "5", "{at}: {result}");
            assert_eq!(result.get("_meta"), None, "{at}: {result}");
        }
        // A 2026-07-28 agent gets the same.
        let reply = pool
            .stateless_request("/mcp", "tools/list", json!({}), json!({}))
            .await?;
        let listed = reply.messages.last().context("no 2026-07-28 tools/list reply")?;
        let tool = item(&listed["result"], "tools", &format!("{server}__add"))?;
        assert_eq!(tool, &add_tool(&format!("{server}__add")), "{server}, 2026-07-28");
    }
    Ok(())
}
