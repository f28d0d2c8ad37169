//! behaviour.md §4, MCP Apps on a session revision: a server on
//! 2025-11-25 that offers `io.modelcontextprotocol/ui`
//! (`tests/py/apps_session_server.py`, the Python SDK 1.x) renders its app
//! for an agent that declared MCP Apps and text for one that did not,
//! through every path and for agents at both revisions, as it would
//! directly: mcpool's own connection declares no UI support, and an agent
//! that shows apps is served over a second connection that declares it.
//! The TypeScript SDK's servers (`tests/js/apps_server.mjs`, v1 at
//! 2025-11-25 and v2 at 2026-07-28) do the same through mcpool.

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

/// `tests/js/apps_server.mjs` on the TypeScript SDK `sdk` (v1, v2).
fn ts_apps(sdk: &str) -> Value {
    json!({"command": "node", "args": [
        repo_root().join("tests/js/apps_server.mjs"), "--sdk", sdk, "--node-modules", node_modules(),
    ]})
}

/// The same with the official TypeScript SDK's low-level servers
/// (`tests/js/apps_server.mjs`): v1 at 2025-11-25, which reads what the
/// client declared at `initialize`, and v2 at 2026-07-28, which reads what
/// each request says its client can do. Through every path, at both agent
/// revisions, `clock` answers "app" exactly to agents that show apps; the
/// extension is advertised with the server's settings, and the app the
/// listed tool points to (`_meta.ui.resourceUri`) is read through mcpool.
#[tokio::test]
async fn the_typescript_sdks_apps_servers_render_their_app_only_for_agents_that_show_apps() -> anyhow::Result<()> {
    let dir = TempDir::new("apps-ts");
    let config = json!({
        "mcpServers": {"ts1": ts_apps("v1"), "ts2": ts_apps("v2")},
        "profiles": {"p": {"servers": ["ts1", "ts2"]}},
    });
    let pool = Mcpool::start_connected_in(dir, config).await?;
    for (server, revision) in [("ts1", "2025-11-25"), ("ts2", "2026-07-28")] {
        let row = pool.server(server).await?;
        assert_eq!(row["protocol"], revision, "{row}");
        assert_eq!(row["extensions"], json!(["io.modelcontextprotocol/ui"]), "{row}");
        let own = format!("/servers/{server}/mcp");
        let public = format!("{server}__clock");
        for (path, tool) in [("/mcp", public.as_str()), ("/profiles/p/mcp", &public), (&own, "clock")] {
            let at = format!("{server} via {path}");
            for (ui_declared, want) in [(false, "text"), (true, "app"), (false, "text")] {
                let capabilities = if ui_declared {
                    json!({"extensions": ui()})
                } else {
                    json!({})
                };
                let said = session_clock(&pool, path, tool, capabilities.clone()).await?;
                assert_eq!(said, want, "{at}, session, UI {ui_declared}");
                let said = stateless_clock(&pool, path, tool, capabilities).await?;
                assert_eq!(said, want, "{at}, 2026-07-28, UI {ui_declared}");
            }
            let meta = json!({"io.modelcontextprotocol/clientCapabilities": {"extensions": ui()}});
            let discovered = pool
                .stateless_request(path, "server/discover", json!({}), meta.clone())
                .await?;
            let discovered = discovered.messages.last().cloned().unwrap_or_default();
            assert_eq!(
                discovered["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/ui"],
                ui()["io.modelcontextprotocol/ui"],
                "{at}: {discovered}"
            );
            let listed = pool
                .stateless_request(path, "tools/list", json!({}), meta.clone())
                .await?;
            let listed = listed.messages.last().cloned().unwrap_or_default();
            let clock = listed["result"]["tools"]
                .as_array()
                .and_then(|tools| tools.iter().find(|t| t["name"] == tool))
                .cloned()
                .unwrap_or_default();
            let uri = clock["_meta"]["ui"]["resourceUri"].clone();
            assert!(uri.is_string(), "{at}: {clock}");
            let read = pool
                .stateless_request(path, "resources/read", json!({"uri": uri}), meta)
                .await?;
            let read = read.messages.last().cloned().unwrap_or_default();
            let content = &read["result"]["contents"][0];
            assert_eq!(content["mimeType"], "text/html;profile=mcp-app", "{at}: {read}");
            assert!(
                content["text"].as_str().is_some_and(|t| t.contains("clock")),
                "{at}: {read}"
            );
        }
    }
    Ok(())
}
