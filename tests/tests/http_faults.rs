//! behaviour.md rules 1, 4, 6, 9 and 10 against the real binary and our
//! fault-injecting server as a remote (Streamable HTTP) upstream, plus the
//! per-server endpoint and the output faults of a local server.

use std::sync::atomic::Ordering;
use std::time::Duration;

use mcpool_tests::*;
use serde_json::{json, Value};

/// The whole of `/stats` of a fault server, for messages.
async fn requests(url: &str) -> anyhow::Result<u64> {
    let s = stats(url).await?;
    s["requests"]
        .as_u64()
        .ok_or_else(|| anyhow::anyhow!("no requests count in /stats: {s}"))
}

async fn echo_calls(url: &str) -> anyhow::Result<u64> {
    Ok(stats(url).await?["calls"]["echo"].as_u64().unwrap_or(0))
}

async fn initializes(url: &str) -> anyhow::Result<u64> {
    Ok(stats(url).await?["initialize"].as_u64().unwrap_or(0))
}

fn remote(url: &str) -> Value {
    json!({"url": url})
}

fn error_of(server: &Value) -> String {
    server["error"].as_str().unwrap_or_default().to_string()
}

/// A fault server already answering `mode` before mcpool first dials it,
/// as the remote server `r` of an instance in a fresh dir `tag`, once `r`
/// is `status`: the instance, `r`'s snapshot then, the fault server and
/// its URL.
async fn remote_in_mode(
    tag: &str,
    mode: Value,
    status: &str,
) -> anyhow::Result<(Mcpool, Value, tokio::process::Child, String)> {
    let dir = TempDir::new(tag);
    let (child, url) = faulty_http(&dir.path().join("r.log"), &[]).await?;
    control(&url, mode).await?;
    let pool = Mcpool::start_in(dir, json!({"mcpServers": {"r": remote(&url)}}), &[]).await?;
    let s = pool.wait_status("r", status, Duration::from_secs(20)).await?;
    Ok((pool, s, child, url))
}

/// Calls `tool` `n` times; every call must fail with a sentence containing `needle`.
async fn calls_fail_with(agent: &Agent, tool: &str, n: usize, needle: &str) -> anyhow::Result<()> {
    for _ in 0..n {
        let r = agent.call(tool, json!({"text": "x"})).await?;
        assert_eq!(r.is_error, Some(true), "{}", text(&r));
        let sentence = text(&r);
        assert!(sentence.contains(needle), "{sentence}");
        assert!(!sentence.contains(".."), "{sentence}");
        assert!(sentence.ends_with('.'), "{sentence}");
    }
    Ok(())
}

#[tokio::test]
async fn an_expired_session_is_renewed_and_the_call_runs_exactly_once_more() -> anyhow::Result<()> {
    let (pool, _faulty, url) = Mcpool::start_with_faulty_remote("expired", "r", &[]).await?;
    let agent = pool.agent("/mcp").await?;
    let r = agent.call("r__echo", json!({"text": "one"})).await?;
    assert_eq!(text(&r), "one");
    assert_eq!(initializes(&url).await?, 1);
    assert_eq!(echo_calls(&url).await?, 1);

    control(&url, json!({"expire_sessions": true})).await?;

    // The call meets a 404 on its old session, the client opens a new one
    // and sends the call once more: the agent sees only the answer.
    let r = agent.call("r__echo", json!({"text": "two"})).await?;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    assert_eq!(text(&r), "two");
    assert_eq!(initializes(&url).await?, 2, "one new session: {}", stats(&url).await?);
    assert_eq!(echo_calls(&url).await?, 2, "a call ran twice: {}", stats(&url).await?);

    // The renewal happened inside the connection, not as a drop and reconnect.
    let s = pool.server("r").await?;
    assert_eq!(s["status"], "connected", "{s}");
    assert!(!pool.logs().contains("connection dropped"), "{}", pool.logs());
    let r = agent.call("r__echo", json!({"text": "three"})).await?;
    assert_eq!(text(&r), "three");
    assert_eq!(initializes(&url).await?, 2);
    assert_eq!(echo_calls(&url).await?, 3);
    assert_eq!(agent.handler.tool_list_changed.load(Ordering::SeqCst), 0);
    Ok(())
}

#[tokio::test]
async fn a_401_mid_session_moves_to_needs_auth_drops_the_tools_and_stops_calling() -> anyhow::Result<()> {
    let (pool, _faulty, url) = Mcpool::start_with_faulty_remote("401", "r", &[]).await?;
    let agent = pool.agent("/mcp").await?;
    assert!(agent.tool_names().await?.contains(&"r__echo".to_string()));

    control(&url, json!({"mode": "401"})).await?;
    let r = agent.call("r__echo", json!({"text": "x"})).await?;
    assert_eq!(r.is_error, Some(true), "{}", text(&r));
    let sentence = text(&r);
    assert!(sentence.starts_with("Server 'r' needs sign-in"), "{sentence}");

    let s = pool.wait_status("r", "needs_auth", Duration::from_secs(10)).await?;
    assert_eq!(s["tools"], json!([]), "{s}");
    let names = agent.tool_names().await?;
    assert!(!names.iter().any(|n| n.starts_with("r__")), "{names:?}");
    assert!(names.contains(&"mcpool__status".to_string()), "{names:?}");
    wait_for_list_changed(&agent).await?;

    // From here nothing reaches the server on its own or for a call.
    let before = requests(&url).await?;
    calls_fail_with(&agent, "r__echo", 3, "sign-in").await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    calls_fail_with(&agent, "r__echo", 1, "sign-in").await?;
    assert_eq!(requests(&url).await?, before, "needs_auth server was contacted");
    assert_eq!(pool.server("r").await?["status"], "needs_auth");
    Ok(())
}

/// Calls to `r__echo` fail, saying `first` at once and `later` after a
/// pause, at a server already reached: how many requests it had before them.
async fn calls_fail_for_a_while(agent: &Agent, url: &str, first: &str, later: &str) -> anyhow::Result<u64> {
    let before = requests(url).await?;
    assert!(before >= 1);
    calls_fail_with(agent, "r__echo", 3, first).await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    calls_fail_with(agent, "r__echo", 1, later).await?;
    Ok(before)
}

/// The agent heard `tools/list_changed` (bounded wait: notifications are async).
async fn wait_for_list_changed(agent: &Agent) -> anyhow::Result<()> {
    for _ in 0..100 {
        if agent.handler.tool_list_changed.load(Ordering::SeqCst) >= 1 {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    anyhow::bail!("the agent got no tools/list_changed")
}

#[tokio::test]
async fn a_401_at_start_lands_in_needs_auth_and_is_not_retried() -> anyhow::Result<()> {
    let (pool, s, _faulty, url) = remote_in_mode("401-start", json!({"mode": "401"}), "needs_auth").await?;
    assert!(error_of(&s).contains("401"), "{s}");
    assert_eq!(s["tools"], json!([]), "{s}");
    let agent = pool.agent("/mcp").await?;
    let before = calls_fail_for_a_while(&agent, &url, "needs sign-in in the mcpool tray", "needs sign-in").await?;
    assert_eq!(requests(&url).await?, before, "needs_auth server was retried");
    assert_eq!(initializes(&url).await?, 0);
    Ok(())
}

/// A server that answers `mode` from the start fails for good: the sentence
/// says so and no request reaches it again, for calls or on its own.
async fn permanent_at_start(mode: &str) -> anyhow::Result<()> {
    let (pool, s, _faulty, url) = remote_in_mode(&format!("perm-{mode}"), json!({"mode": mode}), "failed").await?;
    assert!(error_of(&s).contains(mode), "{s}");
    assert!(s["retry_in_ms"].is_null(), "a permanent failure has no retry time: {s}");
    let agent = pool.agent("/mcp").await?;
    let before = calls_fail_for_a_while(&agent, &url, "it will not be retried", "it will not be retried").await?;
    let r = agent.call("r__echo", json!({"text": "x"})).await?;
    assert!(text(&r).starts_with("Server 'r' cannot start ("), "{}", text(&r));
    assert_eq!(requests(&url).await?, before, "a permanent failure was retried");
    assert_eq!(pool.server("r").await?["status"], "failed");
    Ok(())
}

#[tokio::test]
async fn a_403_at_start_is_permanent_and_never_retried() -> anyhow::Result<()> {
    permanent_at_start("403").await
}

#[tokio::test]
async fn a_404_at_initialize_is_permanent_and_never_retried() -> anyhow::Result<()> {
    permanent_at_start("404").await
}

#[tokio::test]
async fn a_429_waits_at_least_retry_after_without_dialling() -> anyhow::Result<()> {
    let (pool, s, _faulty, url) = remote_in_mode("429", json!({"mode": "429", "retry_after": 5}), "failed").await?;
    assert!(error_of(&s).contains("429"), "{s}");
    let retry_in = s["retry_in_ms"].as_u64().unwrap_or(0);
    assert!(retry_in >= 4000, "Retry-After: 5 must floor the 1 s backoff: {s}");
    let before = requests(&url).await?;

    // Within the window the call fails at once and nothing is dialled.
    let agent = pool.agent("/mcp").await?;
    let r = agent.call("r__echo", json!({"text": "x"})).await?;
    assert_eq!(r.is_error, Some(true));
    let sentence = text(&r);
    assert!(sentence.starts_with("Server 'r' is unavailable ("), "{sentence}");
    let secs: u64 = sentence
        .rsplit("retry in ")
        .next()
        .and_then(|t| t.strip_suffix(" s."))
        .and_then(|t| t.parse().ok())
        .unwrap_or(0);
    assert!(secs >= 2, "{sentence}");
    assert_eq!(requests(&url).await?, before, "dialled within Retry-After");
    Ok(())
}

#[tokio::test]
async fn a_500_at_start_is_transient_and_retried_by_itself_until_it_connects() -> anyhow::Result<()> {
    let (pool, s, _faulty, url) = remote_in_mode("500", json!({"mode": "500"}), "failed").await?;
    assert!(error_of(&s).contains("500"), "{s}");
    let retry_in = s["retry_in_ms"].as_u64();
    assert!(retry_in.is_some_and(|ms| ms <= 1000), "1 s backoff expected: {s}");
    // It never connected, so no call would come for it: it is retried in
    // the background as the backoff allows (rule 3's exception).
    let before = requests(&url).await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while requests(&url).await? == before {
        anyhow::ensure!(tokio::time::Instant::now() < deadline, "not retried by itself");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Healed: it connects without anyone asking.
    control(&url, json!({"mode": "ok"})).await?;
    pool.wait_status("r", "connected", Duration::from_secs(40)).await?;
    let agent = pool.agent("/mcp").await?;
    let r = agent.call("r__echo", json!({"text": "healed"})).await?;
    assert_eq!(text(&r), "healed");
    assert_eq!(pool.server("r").await?["status"], "connected");
    assert_eq!(initializes(&url).await?, 1);
    assert_eq!(echo_calls(&url).await?, 1);
    Ok(())
}

#[tokio::test]
async fn hanging_and_slow_servers_never_delay_the_endpoint_or_a_fast_server() -> anyhow::Result<()> {
    let dir = TempDir::new("hang");
    let (_hang_http, hang_url) = faulty_http(&dir.path().join("h.log"), &["--hang-at-start"]).await?;
    let mut hang_stdio = faulty_stdio(&dir.path().join("hs.log"), &["--hang-at-start"]);
    hang_stdio["timeout"] = json!(1000);
    let pool = Mcpool::start(json!({"mcpServers": {
        "hang": {"url": hang_url, "timeout": 1000},
        "hangs": hang_stdio,
        "fast": faulty_stdio(&dir.path().join("fast.log"), &[]),
        "late": faulty_stdio(&dir.path().join("late.log"), &["--startup-delay-ms", "4000"]),
    }}))
    .await?;

    // The endpoint answers while the others are still starting.
    let agent = pool.agent("/mcp").await?;
    let names = agent.tool_names().await?;
    assert!(names.contains(&"mcpool__status".to_string()), "{names:?}");
    assert!(names.contains(&"mcpool__reconnect".to_string()), "{names:?}");
    let status = agent.call("mcpool__status", json!({})).await?;
    assert_ne!(status.is_error, Some(true), "{}", text(&status));
    assert_eq!(pool.server("late").await?["status"], "pending", "late started too soon");

    pool.wait_status("fast", "connected", Duration::from_secs(20)).await?;
    assert_eq!(
        pool.server("late").await?["status"],
        "pending",
        "the fast server waited for the slow one"
    );
    let r = agent.call("fast__echo", json!({"text": "quick"})).await?;
    assert_eq!(text(&r), "quick");

    for name in ["hang", "hangs"] {
        let s = pool.wait_status(name, "failed", Duration::from_secs(20)).await?;
        assert!(error_of(&s).contains("1000 ms"), "{s}");
    }
    pool.wait_status("late", "connected", Duration::from_secs(20)).await?;
    let names = agent.tool_names().await?;
    assert!(names.contains(&"late__echo".to_string()), "{names:?}");
    Ok(())
}

#[tokio::test]
async fn malformed_output_does_not_break_a_local_connection() -> anyhow::Result<()> {
    let dir = TempDir::new("malformed");
    let log = dir.path().join("f.log");
    let pool = Mcpool::start(json!({"mcpServers": {"f": faulty_stdio(&log, &["--malformed-at-start"])}})).await?;
    pool.wait_status("f", "connected", Duration::from_secs(20)).await?;
    let agent = pool.agent("/mcp").await?;
    let r = agent.call("f__malformed", json!({})).await?;
    assert_eq!(text(&r), "sent a malformed line");
    let r = agent.call("f__echo", json!({"text": "still here"})).await?;
    assert_eq!(text(&r), "still here");
    assert_eq!(pool.server("f").await?["status"], "connected");
    assert_eq!(count_lines(&log, "start"), 1, "the server was restarted");
    Ok(())
}

fn assert_big(r: &rmcp::model::CallToolResult) {
    let body = text(r);
    assert_eq!(body.len(), 10 * 1024 * 1024, "reply cut short");
    assert!(body.bytes().all(|b| b == b'x'), "reply corrupted");
}

#[tokio::test]
async fn a_10_mb_reply_arrives_whole_from_remote_and_local_servers() -> anyhow::Result<()> {
    let dir = TempDir::new("big");
    let (_faulty, url) = faulty_http(&dir.path().join("r.log"), &[]).await?;
    let pool = Mcpool::start_connected(json!({"mcpServers": {
        "r": remote(&url),
        "f": faulty_stdio(&dir.path().join("f.log"), &[]),
    }}))
    .await?;
    let agent = pool.agent("/mcp").await?;
    assert_big(&agent.call("r__big", json!({})).await?);
    assert_big(&agent.call("f__big", json!({})).await?);
    assert_eq!(text(&agent.call("r__echo", json!({"text": "after"})).await?), "after");
    assert_eq!(pool.server("r").await?["status"], "connected");
    Ok(())
}

#[tokio::test]
async fn the_per_server_endpoint_is_the_upstream_with_names_unchanged() -> anyhow::Result<()> {
    let (pool, _faulty, url) =
        Mcpool::start_with_faulty_remote("per-server", "r", &["--name", "upstream-faulty"]).await?;
    let agent = pool.agent("/servers/r/mcp").await?;
    assert_eq!(agent.server_name().as_deref(), Some("upstream-faulty"));
    let names = agent.tool_names().await?;
    assert!(names.contains(&"echo".to_string()), "{names:?}");
    assert!(names.contains(&"big".to_string()), "{names:?}");
    assert!(!names.iter().any(|n| n.contains("__")), "{names:?}");
    let r = agent.call("echo", json!({"text": "direct"})).await?;
    assert_eq!(text(&r), "direct");
    assert_eq!(echo_calls(&url).await?, 1);

    let response = pool.post_mcp("/servers/nope/mcp", &initialize_request()).await?;
    assert_eq!(response.status().as_u16(), 404);
    Ok(())
}
