//! behaviour.md rule 16 for progress: a session agent sees every progress
//! step of a call, in order and before the result, whatever revision mcpool
//! speaks upstream. The server is our fault server's `progress` with
//! `values` 0, 50, 100, sent back to back just before the result (as the
//! conformance suite's reference server sends them on 2026-07-28), serving
//! both revisions (over stdio, where mcpool speaks 2026-07-28 to it) or
//! 2026-07-28 only (over Streamable HTTP). The agents are the official
//! Python and TypeScript SDK clients and rmcp, on `/servers/NAME/mcp` and
//! `/mcp`.

use std::time::Duration;

use mcpool_tests::sdk_agents::LineAgent;
use mcpool_tests::*;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(30);
const STEPS: [f64; 3] = [0.0, 50.0, 100.0];
const BOTH_REVISIONS: [&str; 2] = ["--max-protocol-version", "2026-07-28"];

fn values(report: &Value) -> Vec<f64> {
    report["progress"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default()
}

/// The public name of `server`'s `tool` on `path`.
fn tool_on(path: &str, server: &str, tool: &str) -> String {
    if path == "/mcp" {
        format!("{server}__{tool}")
    } else {
        tool.to_string()
    }
}

#[tokio::test]
async fn every_progress_step_reaches_a_session_agent_before_the_result() -> anyhow::Result<()> {
    let dir = TempDir::new("revprogress");
    let (_http, url) = faulty_http(&dir.path().join("http.log"), &STATELESS_ONLY).await?;
    let pool = Mcpool::start(json!({"mcpServers": {
        "dual": faulty_stdio(&dir.path().join("stdio.log"), &BOTH_REVISIONS),
        "only": {"url": url},
    }}))
    .await?;
    let args = json!({"values": STEPS});
    for server in ["dual", "only"] {
        let row = pool.wait_status(server, "connected", LIMIT).await?;
        assert_eq!(row["protocol"], "2026-07-28", "{row}");
        for path in [format!("/servers/{server}/mcp"), "/mcp".to_string()] {
            let tool = tool_on(&path, server, "progress");
            let url = pool.url(&path);
            for mut agent in [
                LineAgent::python(&url, &pool.token).await?,
                LineAgent::typescript(&url, &pool.token).await?,
            ] {
                let report = agent
                    .command(json!({"op": "call", "tool": tool, "args": args, "progress": true}))
                    .await?;
                assert_eq!(report["text"], "done", "{} on {path}: {report}", agent.name);
                assert_eq!(values(&report), STEPS, "{} on {path}: {report}", agent.name);
                agent.close().await?;
            }

            // rmcp's client runs each notification's handler on a task of
            // its own, so it may record them in any order and after the
            // result: all of them, then.
            let agent = pool.agent(&path).await?;
            let r = agent.call(&tool, args.clone()).await?;
            assert_eq!(text(&r), "done", "rmcp on {path}");
            let h = agent.handler.clone();
            wait_for("three progress steps at the rmcp agent", LIMIT, || {
                h.progress().len() >= 3
            })
            .await?;
            let mut seen = agent.handler.progress();
            seen.sort_by(f64::total_cmp);
            assert_eq!(seen, STEPS, "rmcp on {path}");
        }
    }
    Ok(())
}
