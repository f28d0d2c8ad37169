//! behaviour.md §4, MCP Apps on a session revision: a server on
//! 2025-11-25 that offers `io.modelcontextprotocol/ui`
//! (`tests/py/apps_session_server.py`, the Python SDK 1.x) renders its app
//! for an agent that declared MCP Apps and text for one that did not,
//! through every path and for agents at both revisions, as it would
//! directly: mcpool's own connection declares no UI support, and an agent
//! that shows apps is served over a second connection that declares it.

use mcpool_tests::raw::RawSession;
use mcpool_tests::*;
use serde_json::{json, Value};

fn ui() -> Value {
    json!({"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}})
}

/// What `clock` answered a session agent that declared `capabilities`.
async fn session_clock(pool: &Mcpool, path: &str, tool: &str, capabilities: Value) -> anyhow::Result<Value> {
    let agent = RawSession::open_declaring(pool, path, capabilities).await?;
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": {}}});
    let reply = agent.send(call).await?.message.unwrap_or_default();
    Ok(reply["result"]["content"][0]["text"].clone())
}

/// What `clock` answered a 2026-07-28 agent that declared `capabilities`.
async fn stateless_clock(pool: &Mcpool, path: &str, tool: &str, capabilities: Value) -> anyhow::Result<Value> {
    let meta = json!({"io.modelcontextprotocol/clientCapabilities": capabilities});
    let reply = pool
        .stateless_request(path, "tools/call", json!({"name": tool, "arguments": {}}), meta)
        .await?;
    let message = reply.messages.last().cloned().unwrap_or_default();
    Ok(message["result"]["content"][0]["text"].clone())
}

#[tokio::test]
async fn a_session_revision_apps_server_renders_its_app_only_for_agents_that_show_apps() -> anyhow::Result<()> {
    let dir = TempDir::new("apps-session");
    let script = repo_root().join("tests/py/apps_session_server.py");
    let config = json!({
        "mcpServers": {"apps": {"command": python(), "args": [script]}},
        "profiles": {"p": {"servers": ["apps"]}},
    });
    let pool = Mcpool::start_connected_in(dir, config).await?;
    let server = pool.server("apps").await?;
    assert_eq!(server["protocol"], "2025-11-25", "{server}");
    assert_eq!(server["extensions"], json!(["io.modelcontextprotocol/ui"]), "{server}");
    for (path, tool) in [
        ("/mcp", "apps__clock"),
        ("/profiles/p/mcp", "apps__clock"),
        ("/servers/apps/mcp", "clock"),
    ] {
        // Without UI first: the second connection must not change that.
        assert_eq!(
            session_clock(&pool, path, tool, json!({})).await?,
            "text",
            "{path}, session, no UI"
        );
        assert_eq!(
            session_clock(&pool, path, tool, json!({"extensions": ui()})).await?,
            "app",
            "{path}, session, UI"
        );
        assert_eq!(
            session_clock(&pool, path, tool, json!({})).await?,
            "text",
            "{path}, session, no UI again"
        );
        assert_eq!(
            stateless_clock(&pool, path, tool, json!({})).await?,
            "text",
            "{path}, 2026-07-28, no UI"
        );
        assert_eq!(
            stateless_clock(&pool, path, tool, json!({"extensions": ui()})).await?,
            "app",
            "{path}, 2026-07-28, UI"
        );
    }
    // The server stays connected through it all; the second connection
    // moves no status.
    assert_eq!(pool.server("apps").await?["status"], "connected");
    Ok(())
}
