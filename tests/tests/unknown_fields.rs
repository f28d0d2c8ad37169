//! behaviour.md §4 (the pool is transparent), for the fields of a server's
//! definitions and results that mcpool's MCP library does not model: a
//! tool's `execution` (2025-11-25) and vendors' fields on a tool, its
//! annotations, a prompt, a call's result, a content block and an embedded
//! resource reach the agent exactly as the server sent them.
//! The server is the official Python SDK's low-level one
//! (`tests/py/kept_server.py`) over stdio and over Streamable HTTP
//! answering with SSE streams and with JSON bodies, and the official
//! TypeScript SDK's low-level servers at 2025-11-25 (v1) and 2026-07-28
//! (v2, `tests/js/fields_server.mjs`) and the Python SDK 2.x's (the same
//! `kept_server.py` at 2026-07-28), compared with a direct connection;
//! the agents are bare JSON-RPC (any typed client could drop the fields
//! itself), a session agent on every path and a 2026-07-28 one.

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
        "annotations": {"readOnlyHint": true, "x-cost": "low"},
        "execution": {"taskSupport": "optional"},
        "x-vendor": {"tier": "gold", "since": [2025, 11]},
    })
}

/// `add`'s answer to 2 + 3 as the server sends it.
fn added() -> Value {
    json!({
        "content": [
            {"type": "text", "text": "5", "x-note": "exact"},
            {
                "type": "resource",
                "resource": {"uri": "note://sum", "mimeType": "text/plain", "text": "5", "x-rev": 7},
                "annotations": {"priority": 0.5, "x-weight": 2},
            },
        ],
        "isError": false,
        "x-trace": {"id": "t-1"},
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
            assert_eq!(called["result"], added(), "{at}: the result as the server sent it");
            // mcpool's reserved key in an agent's request is not the
            // agent's to use: a call cannot name another tool through it.
            let sneaky = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
                "name": add, "arguments": {"a": 2, "b": 3},
                "_meta": {"io.mcpool/kept": {"$result": {"name": "missing", "arguments": {}}}},
            }});
            let called = session.send(sneaky).await?.message.context("no tools/call reply")?;
            assert_eq!(called["result"]["content"][0]["text"], "5", "{at}: {called}");
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

/// The revision's own `_meta` for a direct 2026-07-28 request.
fn revision_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "direct", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// `fields_server.mjs --sdk SDK`, the TypeScript SDK's server.
fn ts_server(sdk: &str) -> Command {
    let mut command = Command::new("node");
    command
        .arg(repo_root().join("tests/js/fields_server.mjs"))
        .args(["--sdk", sdk, "--node-modules"])
        .arg(node_modules());
    command
}

/// What a direct connection (stdio, no mcpool) to `command`'s server gets
/// at `revision`: its first tool, and its answer to `add` of 1 and 2. What
/// mcpool must hand on.
async fn direct(mut command: Command, revision: &str) -> anyhow::Result<(Value, Value)> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let opening = match revision {
        "2025-11-25" => json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "direct", "version": "1"}}}),
        _ => json!({"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {"_meta": revision_meta()}}),
    };
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": revision_meta()}});
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "add", "arguments": {"a": 1, "b": 2}, "_meta": revision_meta()}});
    let mut stdin = child.stdin.take().context("stdin")?;
    for message in [
        opening,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        list,
        call,
    ] {
        stdin.write_all(format!("{message}\n").as_bytes()).await?;
    }
    let mut lines = BufReader::new(child.stdout.take().context("stdout")?).lines();
    let (mut tool, mut result) = (None, None);
    tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(line) = lines.next_line().await? {
            let message: Value = serde_json::from_str(&line)?;
            match message["id"].as_i64() {
                Some(1) => tool = Some(message["result"]["tools"][0].clone()),
                Some(2) => result = Some(message["result"].clone()),
                _ => {}
            }
            if tool.is_some() && result.is_some() {
                return Ok(());
            }
        }
        anyhow::bail!("the server ended before it listed its tools and answered the call")
    })
    .await??;
    Ok((tool.context("no tool")?, result.context("no result")?))
}

/// The same through mcpool, with the TypeScript SDK's servers at both
/// revisions: every field a direct connection gets (the v2 SDK itself
/// leaves `execution` out at 2026-07-28), a call's `x-trace` and `_meta`
/// back, and the agent's own request `_meta` key at the server.
#[tokio::test]
async fn the_typescript_sdks_servers_fields_reach_the_agent_as_a_direct_connection_gets_them() -> anyhow::Result<()> {
    let server = |sdk: &str| {
        json!({"command": "node", "args": [
            repo_root().join("tests/js/fields_server.mjs"), "--sdk", sdk, "--node-modules", node_modules(),
        ]})
    };
    let dir = TempDir::new("unknown-fields-ts");
    let pool = Mcpool::start_connected_in(dir, json!({"mcpServers": {"v1": server("v1"), "v2": server("v2")}})).await?;
    assert_eq!(pool.server("v2").await?["protocol"], "2026-07-28");
    let probe = json!({"com.example/probe": {"n": [1, "two"]}});
    for sdk in ["v1", "v2"] {
        let revision = if sdk == "v1" { "2025-11-25" } else { "2026-07-28" };
        let (mut direct, _) = direct(ts_server(sdk), revision).await?;
        assert_eq!(direct["x-vendor"]["tier"], "gold", "{sdk} directly: {direct}");
        for (path, name) in [
            ("/mcp".to_string(), format!("{sdk}__add")),
            (format!("/servers/{sdk}/mcp"), "add".into()),
        ] {
            let at = format!("{sdk} through {path}");
            direct["name"] = json!(name);
            let session = RawSession::open(&pool, &path).await?;
            let listed = session
                .send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
                .await?
                .message
                .with_context(|| format!("{at}: no tools/list reply"))?;
            assert_eq!(item(&listed["result"], "tools", &name)?, &direct, "{at}");
            let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": name, "arguments": {"a": 1, "b": 2}, "_meta": probe}});
            let called = session.send(call).await?.message.context("no tools/call reply")?;
            let result = &called["result"];
            assert_eq!(result["x-trace"], json!({"id": "t-1"}), "{at}: {result}");
            assert_eq!(
                result["_meta"]["com.example/from"],
                format!("ts-{sdk}"),
                "{at}: {result}"
            );
            let heard: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap_or("null"))?;
            assert_eq!(
                heard["com.example/probe"], probe["com.example/probe"],
                "{at}: the server heard {heard}"
            );
            let reply = pool
                .stateless_request(&path, "tools/list", json!({}), json!({}))
                .await?;
            let listed = reply.messages.last().context("no 2026-07-28 tools/list reply")?;
            assert_eq!(item(&listed["result"], "tools", &name)?, &direct, "{at}, 2026-07-28");
        }
    }
    Ok(())
}

/// The official Python SDK 2.x's low-level server (`kept_server.py` at
/// 2026-07-28; the SDK itself leaves out the fields its types do not
/// model): its tool and a call's result reach a session agent and a
/// 2026-07-28 one through `/mcp` and its own path exactly as a direct
/// connection gets them (the embedded resource, the annotations; the SDK
/// leaves the tool's `execution` out at 2026-07-28).
#[tokio::test]
async fn a_python_sdk_2_servers_tool_and_result_reach_the_agent_as_a_direct_connection_gets_them() -> anyhow::Result<()>
{
    let script = repo_root().join("tests/py/kept_server.py");
    let mut command = Command::new(python_mcp2());
    command.arg(&script);
    let (mut direct_tool, direct_result) = direct(command, "2026-07-28").await?;
    assert_eq!(direct_tool["annotations"]["readOnlyHint"], true, "{direct_tool}");
    assert_eq!(direct_result["content"][1]["type"], "resource", "{direct_result}");
    let dir = TempDir::new("unknown-fields-py2");
    let config = json!({"mcpServers": {"py2": {"command": python_mcp2(), "args": [&script]}}});
    let pool = Mcpool::start_connected_in(dir, config).await?;
    assert_eq!(pool.server("py2").await?["protocol"], "2026-07-28");
    for (path, name) in [
        ("/mcp".to_string(), "py2__add".to_string()),
        ("/servers/py2/mcp".to_string(), "add".to_string()),
    ] {
        direct_tool["name"] = json!(name);
        let session = RawSession::open(&pool, &path).await?;
        let listed = session
            .send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
            .await?
            .message
            .with_context(|| format!("{path}: no tools/list reply"))?;
        assert_eq!(item(&listed["result"], "tools", &name)?, &direct_tool, "{path}");
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": name, "arguments": {"a": 1, "b": 2}}});
        let called = session.send(call).await?.message.context("no tools/call reply")?;
        // `resultType` is 2026-07-28's, never sent to a session agent.
        let mut session_result = direct_result.clone();
        session_result.as_object_mut().context("a result")?.remove("resultType");
        assert_eq!(called["result"], session_result, "{path}: a session agent's call");
        let reply = pool
            .stateless_request(
                &path,
                "tools/call",
                json!({"name": name, "arguments": {"a": 1, "b": 2}}),
                json!({}),
            )
            .await?;
        let called = reply.messages.last().context("no 2026-07-28 tools/call reply")?;
        assert_eq!(called["result"], direct_result, "{path}: a 2026-07-28 agent's call");
    }
    Ok(())
}
