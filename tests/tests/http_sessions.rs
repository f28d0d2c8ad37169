//! Agent sessions on the HTTP endpoint against the real binary: an ended
//! session leaves nothing behind (counted through `GET /api/sessions`, the
//! hub's own count included), the open-session limit closes the longest
//! idle session first, says so in the log, and that session's agent gets
//! 404; a call longer than the idle time keeps its session, and an idle
//! session expires (on a short `MCPOOL_SESSION_IDLE_SECS`).

use std::time::Duration;

use mcpool_tests::raw::RawSession;
use mcpool_tests::*;
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(20);

#[tokio::test]
async fn ended_sessions_leave_nothing_behind() -> anyhow::Result<()> {
    let log = TempDir::new("sessions-log");
    let pool =
        Mcpool::start_connected(json!({"mcpServers": {"f": faulty_stdio(&log.path().join("spawns"), &[])}})).await?;

    // Open and end many, on /mcp and on one server's own endpoint.
    for i in 0..60 {
        let path = if i % 2 == 0 { "/mcp" } else { "/servers/f/mcp" };
        let s = RawSession::open(&pool, path).await?;
        assert_eq!(s.ping().await?, 200);
        assert_eq!(s.delete().await?, 204);
        assert_eq!(s.ping().await?, 404, "a deleted session is gone");
    }
    pool.wait_sessions("open", 0, LIMIT).await?;
    pool.wait_sessions("hub_agents", 0, LIMIT).await?;

    // Open ones are counted, and freed when they end.
    let open: Vec<_> = futures::future::try_join_all((0..5).map(|_| RawSession::open(&pool, "/mcp"))).await?;
    pool.wait_sessions("hub_agents", 5, LIMIT).await?;
    assert_eq!(pool.sessions().await?["open"], 5);
    for s in &open {
        assert_eq!(s.delete().await?, 204);
    }
    pool.wait_sessions("open", 0, LIMIT).await?;
    pool.wait_sessions("hub_agents", 0, LIMIT).await?;

    // An SDK client that ends its session the usual way.
    let out = python_agent(&["--url", &pool.url("/mcp"), "--token", &pool.token, "--scenario", "list"]).await?;
    assert!(out.get("error").is_none(), "{out}");
    pool.wait_sessions("open", 0, LIMIT).await?;
    pool.wait_sessions("hub_agents", 0, LIMIT).await?;
    Ok(())
}

#[tokio::test]
async fn the_limit_closes_the_longest_idle_session_and_says_so() -> anyhow::Result<()> {
    let pool = Mcpool::start_with(json!({"mcpServers": {}}), &[("MCPOOL_MAX_SESSIONS", "3")]).await?;
    let a = RawSession::open(&pool, "/mcp").await?;
    let b = RawSession::open(&pool, "/mcp").await?;
    let c = RawSession::open(&pool, "/mcp").await?;
    // `a` is used again, so `b` is now the one idle the longest.
    assert_eq!(a.ping().await?, 200);
    let d = RawSession::open(&pool, "/mcp").await?;

    assert_eq!(b.ping().await?, 404, "the longest idle session was closed");
    for s in [&a, &c, &d] {
        assert_eq!(s.ping().await?, 200);
    }
    let counts = pool.sessions().await?;
    assert_eq!(counts["open"], 3, "{counts}");
    assert_eq!(counts["limit"], 3, "{counts}");
    assert_eq!(counts["closed_for_limit"], 1, "{counts}");
    pool.wait_sessions("hub_agents", 3, LIMIT).await?;
    let logs = pool.logs();
    assert!(
        logs.contains("closed 1 agent session(s), the longest idle first, to stay within the limit of 3 open sessions"),
        "{logs}"
    );
    Ok(())
}

#[tokio::test]
async fn a_call_longer_than_the_idle_time_keeps_its_session_and_idle_sessions_expire() -> anyhow::Result<()> {
    let log = TempDir::new("idle-log");
    let pool = Mcpool::start_with(
        json!({"mcpServers": {"f": faulty_stdio(&log.path().join("spawns"), &[])}}),
        &[("MCPOOL_SESSION_IDLE_SECS", "1")],
    )
    .await?;
    pool.wait_status("f", "connected", LIMIT).await?;
    let calling = RawSession::open(&pool, "/mcp").await?;
    let quiet = RawSession::open(&pool, "/servers/f/mcp").await?;

    // Four times the idle time, with nothing else sent meanwhile.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "f__slow", "arguments": {"ms": 4000}}});
    let reply = calling.send(call).await?;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let result = reply.message.unwrap_or_default();
    assert_eq!(result["result"]["content"][0]["text"], "slept 4000", "{result}");
    assert_eq!(calling.ping().await?, 200, "the session outlived its long call");
    assert_eq!(quiet.ping().await?, 404, "the idle one expired meanwhile");

    // Left alone, it expires too (counted without touching it).
    pool.wait_sessions("open", 0, LIMIT).await?;
    pool.wait_sessions("saved", 0, LIMIT).await?;
    assert_eq!(calling.ping().await?, 404);
    assert_eq!(calling.delete().await?, 404);
    let logs = pool.logs();
    assert!(logs.contains("idle for 1 s"), "{logs}");
    Ok(())
}

/// An agent that opens a server's own endpoint while that server still
/// starts waits in `initialize` (the answer carries the server's
/// identity). A reply that slow still carries the new session's id, so the
/// agent's next messages belong to its session: rmcp's client, given none,
/// had its `initialized` refused with HTTP 400 "Session ID is required".
#[tokio::test]
async fn an_initialize_answered_slowly_still_opens_a_session() -> anyhow::Result<()> {
    let log = TempDir::new("slow-initialize");
    let slow = faulty_stdio(&log.path().join("spawns"), &["--startup-delay-ms", "1500"]);
    let pool = Mcpool::start(json!({"mcpServers": {"slow": slow}})).await?;
    let asked = tokio::time::Instant::now();
    let agent = pool.agent("/servers/slow/mcp").await?;
    // The case at hand: the answer came after the 50 ms within which a
    // reply is sent whole.
    let waited = asked.elapsed();
    assert!(waited > Duration::from_millis(200), "initialize took only {waited:?}");
    let names = agent.tool_names().await?;
    assert!(names.contains(&"echo".to_string()), "{names:?}");
    Ok(())
}
