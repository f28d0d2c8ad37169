//! behaviour.md rule 16 with the official TypeScript SDKs on both sides: a
//! server's question during a call reaches an agent of the other revision
//! in the agent's own way, and the answer goes back.
//! - A 2026-07-28 agent (SDK v2, `@modelcontextprotocol/client`) calls a
//!   session server (our fault server's `elicit`, which sends
//!   `elicitation/create`): it gets `InputRequiredResult` rounds.
//! - A session agent (SDK v1, `@modelcontextprotocol/sdk`) calls a
//!   2026-07-28-only server (SDK v2, `@modelcontextprotocol/server`, whose
//!   `ask` answers `InputRequiredResult`): it gets `elicitation/create`.
//!
//! - A 2026-07-28 agent on the Python SDK v2 (`mcp` 2.x) calls the session
//!   server too.
//!
//! Each agent answers, and the tool's result carries the answer.

use mcpool_tests::sdk_agents::sdk_agent_2026;
use mcpool_tests::*;
use serde_json::{json, Value};

/// One call through `tests/js/bridge_agent.mjs` on SDK line `sdk` (`v1`,
/// `v2`), or `tests/py/agent2026.py` (`py2`).
async fn agent_call(pool: &Mcpool, sdk: &str, tool: &str, message: &str, answer: &str) -> anyhow::Result<Value> {
    let url = pool.url("/mcp");
    let args = [
        "--url",
        &url,
        "--token",
        &pool.token,
        "--tool",
        tool,
        "--message",
        message,
        "--answer",
        answer,
    ];
    sdk_agent_2026(sdk, &args, &[])
        .await
        .map_err(|e| anyhow::anyhow!("{sdk} agent calling {tool}: {e:#}"))
}

#[tokio::test]
async fn a_question_crosses_revisions_between_the_typescript_sdks() -> anyhow::Result<()> {
    let dir = TempDir::new("sdk-bridges");
    let ts_server = json!({
        "command": "node",
        "args": [repo_root().join("tests/js/v2_server.mjs"), "--node-modules", node_modules()],
    });
    let pool = Mcpool::start_connected(json!({"mcpServers": {
        "f": faulty_stdio(&dir.path().join("f.log"), &[]),
        "ts": ts_server,
    }}))
    .await?;
    let servers = pool.servers().await?;
    let protocol = |name: &str| {
        servers
            .iter()
            .find(|s| s["name"] == name)
            .map(|s| s["protocol"].clone())
            .unwrap_or_default()
    };
    assert_eq!(protocol("ts"), "2026-07-28", "{servers:?}");
    assert_eq!(protocol("f"), "2025-11-25", "{servers:?}");

    // New agent, old server: InputRequiredResult rounds.
    let r = agent_call(&pool, "v2", "f__elicit", "Pick a colour", "teal").await?;
    assert_eq!(r["protocol"], "2026-07-28", "{r}");
    assert_eq!(r["elicited"], json!(["Pick a colour"]), "{r}");
    let said: Value = serde_json::from_str(r["text"].as_str().unwrap_or_default())?;
    assert_eq!(said["content"]["answer"], "teal", "{r}");
    let r = agent_call(&pool, "py2", "f__elicit", "Pick a fruit", "fig").await?;
    assert_eq!(r["protocol"], "2026-07-28", "{r}");
    assert_eq!(r["elicited"], json!(["Pick a fruit"]), "{r}");
    let said: Value = serde_json::from_str(r["text"].as_str().unwrap_or_default())?;
    assert_eq!(said["content"]["answer"], "fig", "{r}");

    // Old agent, new server: an elicitation/create on the call's stream.
    let r = agent_call(&pool, "v1", "ts__ask", "Pick a number", "9").await?;
    assert_eq!(r["elicited"], json!(["Pick a number"]), "{r}");
    assert_eq!(r["text"], "answered: 9", "{r}");
    assert_eq!(r["is_error"], false, "{r}");

    // Same revision on both sides still works: passed through.
    let r = agent_call(&pool, "v2", "ts__ask", "Pick again", "10").await?;
    assert_eq!(r["elicited"], json!(["Pick again"]), "{r}");
    assert_eq!(r["text"], "answered: 10", "{r}");
    let r = agent_call(&pool, "v1", "f__elicit", "Pick once more", "11").await?;
    assert_eq!(r["elicited"], json!(["Pick once more"]), "{r}");
    Ok(())
}
