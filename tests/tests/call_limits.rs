//! Every call ends (behaviour.md rule 17): a server that prints JSON log
//! lines on stdout still has its reply read; one that never answers, or
//! answers another id, hits its `callTimeout`, the agent gets one sentence
//! and the server `notifications/cancelled`; progress keeps a long call
//! alive past the limit.

use std::time::Duration;

use mcpool_tests::*;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(20);

/// A local fault server whose calls may go `call_timeout_ms` without an answer.
fn limited(log: &std::path::Path, call_timeout_ms: u64) -> Value {
    let mut entry = faulty_stdio(log, &[]);
    entry["callTimeout"] = json!(call_timeout_ms);
    entry
}

#[tokio::test]
async fn a_reply_behind_stray_json_lines_is_read_and_the_first_line_is_told() -> anyhow::Result<()> {
    let (pool, _) = Mcpool::start_with_faulty("stray-lines", "noisy", &[]).await?;
    let agent = pool.agent("/mcp").await?;
    for lines in [1, 2, 5] {
        let call = agent.call("noisy__stray", json!({"lines": lines}));
        let r = tokio::time::timeout(LIMIT, call).await??;
        assert_eq!(text(&r), format!("answered after {lines} stray lines"));
    }
    let r = agent.call("noisy__echo", json!({"text": "after"})).await?;
    assert_eq!(text(&r), "after");
    let status = pool.server("noisy").await?;
    assert_eq!(status["status"], "connected", "{status}");
    let tail: Vec<&str> = status["stderr_tail"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let told: Vec<&&str> = tail.iter().filter(|l| l.contains("not JSON-RPC")).collect();
    assert_eq!(told.len(), 1, "told once per connection: {tail:?}");
    assert!(
        told[0].contains(r#"{"level":"info","msg":"stray line 1","id":1}"#),
        "{told:?}"
    );
    Ok(())
}

#[tokio::test]
async fn a_call_the_server_never_answers_ends_at_its_call_timeout() -> anyhow::Result<()> {
    let (_dir, log) = TempDir::with_spawn_log("call-timeout");
    let pool = Mcpool::start_connected(json!({"mcpServers": {"slow": limited(&log, 1500)}})).await?;
    for path in ["/mcp", "/servers/slow/mcp"] {
        let agent = pool.agent(path).await?;
        let prefix = if path == "/mcp" { "slow__" } else { "" };
        for tool in ["hang", "wrong_id"] {
            let started = std::time::Instant::now();
            let name = format!("{prefix}{tool}");
            let r = tokio::time::timeout(LIMIT, agent.call(&name, json!({}))).await??;
            eprintln!("{tool} through {path} ended after {:?}", started.elapsed());
            assert_eq!(r.is_error, Some(true), "{r:?}");
            assert_eq!(
                text(&r),
                format!("Server 'slow' did not answer `{tool}` within 1.5 s; the call was cancelled.")
            );
            assert!(started.elapsed() >= Duration::from_millis(1500));
            // The server was told, and the connection goes on.
            wait_for(&format!("{tool} cancelled upstream"), LIMIT, || {
                count_lines(&log, &format!("cancelled {tool}")) >= 1
            })
            .await?;
            let r = agent.call(&format!("{prefix}echo"), json!({"text": "next"})).await?;
            assert_eq!(text(&r), "next");
        }
        std::fs::write(&log, "")?;
    }
    assert_eq!(pool.server("slow").await?["status"], "connected");
    let calls = pool.get_json("/api/calls").await?;
    let outcomes: Vec<&str> = calls
        .as_array()
        .map(|a| a.iter().filter_map(|c| c["outcome"].as_str()).collect())
        .unwrap_or_default();
    assert!(outcomes.contains(&"timeout"), "{calls}");
    Ok(())
}

#[tokio::test]
async fn progress_keeps_a_call_alive_past_its_call_timeout() -> anyhow::Result<()> {
    let (_dir, log) = TempDir::with_spawn_log("call-timeout-progress");
    let pool = Mcpool::start_connected(json!({"mcpServers": {"busy": limited(&log, 1000)}})).await?;
    let agent = pool.agent("/mcp").await?;
    let started = std::time::Instant::now();
    // Five steps 600 ms apart: 2.4 s in all, never 1 s without a sign of life.
    let args = json!({"steps": 5, "interval_ms": 600});
    let r = tokio::time::timeout(LIMIT, agent.call("busy__progress", args)).await??;
    assert_eq!(text(&r), "done", "{r:?}");
    assert!(started.elapsed() >= Duration::from_millis(2400));
    // Without progress, the same wait is over the limit.
    let r = tokio::time::timeout(LIMIT, agent.call("busy__slow", json!({"ms": 2400}))).await??;
    assert_eq!(
        text(&r),
        "Server 'busy' did not answer `slow` within 1 s; the call was cancelled."
    );
    Ok(())
}
