//! behaviour.md rules 2, 3, 5 and 13 against the real binary and our
//! fault-injecting server over stdio.

use std::time::Duration;

use mcpool_tests::*;
use serde_json::json;

const KEPT: &str = "(tools kept; reconnects when next used)";

#[tokio::test]
async fn a_drop_keeps_the_tools_shows_stderr_and_reconnects_on_the_next_call_only() -> anyhow::Result<()> {
    let (pool, log) = Mcpool::start_with_faulty("drop", "f", &[]).await?;
    let agent = pool.agent("/mcp").await?;
    assert_eq!(count_lines(&log, "start"), 1);

    // The server exits mid-call: the call fails with one clean sentence.
    let r = agent.call("f__crash", json!({"message": "disk on fire"})).await?;
    assert_eq!(r.is_error, Some(true));
    let sentence = text(&r);
    assert!(
        sentence.starts_with("Server 'f' dropped the connection during this call"),
        "{sentence}"
    );
    assert!(
        sentence.ends_with("the call was not retried and the server reconnects on the next call."),
        "{sentence}"
    );
    assert!(!sentence.contains(".."), "{sentence}");

    // Status: failed, with the reason and the stderr tail, tools kept.
    let s = pool.wait_status("f", "failed", Duration::from_secs(10)).await?;
    let error = s["error"].as_str().unwrap_or_default();
    assert!(error.contains("exited with status 3"), "{error}");
    assert!(error.contains("disk on fire"), "{error}");
    assert!(error.ends_with(KEPT), "{error}");
    let tools = s["tools"].as_array().cloned().unwrap_or_default();
    assert!(!tools.is_empty());
    assert!(tools.iter().all(|t| t["state"] == "kept"), "{tools:?}");
    assert!(agent.tool_names().await?.contains(&"f__echo".to_string()));
    assert_eq!(
        agent
            .handler
            .tool_list_changed
            .load(std::sync::atomic::Ordering::SeqCst),
        0,
        "a drop sends no list_changed"
    );

    // Nothing respawns in the background.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(count_lines(&log, "start"), 1, "respawned without a request");
    assert_eq!(pool.server("f").await?["status"], "failed");

    // The next call reconnects, once.
    let r = agent.call("f__echo", json!({"text": "back"})).await?;
    assert_eq!(text(&r), "back");
    assert_eq!(count_lines(&log, "start"), 2);
    assert_eq!(pool.server("f").await?["status"], "connected");
    Ok(())
}

async fn concurrent_calls_share_one_attempt(n: usize) -> anyhow::Result<()> {
    let (_dir, log) = TempDir::with_spawn_log("share");
    let pool =
        Mcpool::start_connected(json!({"mcpServers": {"f": faulty_stdio(&log, &["--startup-delay-ms", "400"])}}))
            .await?;
    let agent = pool.agent("/mcp").await?;
    let _ = agent.call("f__crash", json!({})).await?;
    pool.wait_status("f", "failed", Duration::from_secs(10)).await?;
    let calls = (0..n).map(|i| agent.call("f__echo", json!({"text": format!("c{i}")})));
    let results = futures::future::join_all(calls).await;
    for (i, r) in results.into_iter().enumerate() {
        assert_eq!(text(&r?), format!("c{i}"));
    }
    assert_eq!(
        count_lines(&log, "start"),
        2,
        "{n} concurrent calls must share one reconnect"
    );
    Ok(())
}

#[tokio::test]
async fn two_concurrent_calls_share_one_attempt() -> anyhow::Result<()> {
    concurrent_calls_share_one_attempt(2).await
}

#[tokio::test]
async fn ten_concurrent_calls_share_one_attempt() -> anyhow::Result<()> {
    concurrent_calls_share_one_attempt(10).await
}

/// A server that starts fine until `flag` exists, then fails at start.
fn flaky(dir: &std::path::Path, log: &std::path::Path) -> serde_json::Value {
    let flag = dir.join("fail");
    let prelude = format!(
        "if [ -e '{}' ]; then echo 'config missing: set API_KEY' >&2; exit 1; fi",
        flag.display()
    );
    faulty_after(&prelude, log)
}

#[tokio::test]
async fn a_failed_reconnect_returns_its_error_then_backs_off_and_doubles() -> anyhow::Result<()> {
    let (dir, log) = TempDir::with_spawn_log("backoff");
    let attempts = dir.path().join("attempts.log");
    // Count every attempt, including the ones that fail before the server logs.
    let mut entry = flaky(dir.path(), &log);
    let script = format!(
        "echo x >> '{}'; {}",
        attempts.display(),
        entry["args"][1].as_str().unwrap_or_default()
    );
    entry["args"][1] = json!(script);
    let pool = Mcpool::start_connected(json!({"mcpServers": {"f": entry}})).await?;
    let agent = pool.agent("/mcp").await?;
    let _ = agent.call("f__crash", json!({})).await?;
    pool.wait_status("f", "failed", Duration::from_secs(10)).await?;
    std::fs::write(dir.path().join("fail"), "")?;

    // The call that reconnects gets the real error.
    let r = agent.call("f__echo", json!({"text": "x"})).await?;
    assert_eq!(r.is_error, Some(true));
    let first = text(&r);
    assert!(first.contains("failed to connect"), "{first}");
    assert!(
        first.contains("exited with status 1: config missing: set API_KEY"),
        "{first}"
    );
    let error = pool.server("f").await?["error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        error.contains("stderr (last line):\nconfig missing: set API_KEY"),
        "{error}"
    );
    assert!(first.ends_with("retry in 1 s."), "{first}");
    assert_eq!(count_lines(&attempts, "x"), 2);

    // Within the backoff: fails at once, nothing spawned.
    let r = agent.call("f__echo", json!({"text": "x"})).await?;
    assert!(text(&r).contains("retry in 1 s"), "{}", text(&r));
    assert_eq!(count_lines(&attempts, "x"), 2, "spawned within the backoff");
    let s = pool.server("f").await?;
    assert!(s["retry_in_ms"].as_u64().is_some(), "{s}");

    // After it: one more attempt, and the backoff doubles.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let r = agent.call("f__echo", json!({"text": "x"})).await?;
    assert!(text(&r).ends_with("retry in 2 s."), "{}", text(&r));
    assert_eq!(count_lines(&attempts, "x"), 3);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let r = agent.call("f__echo", json!({"text": "x"})).await?;
    assert!(text(&r).contains("retry in 1 s"), "still backing off: {}", text(&r));
    assert_eq!(count_lines(&attempts, "x"), 3, "spawned within the doubled backoff");

    // Once the cause is gone and the backoff over, it connects and resets.
    std::fs::remove_file(dir.path().join("fail"))?;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let r = agent.call("f__echo", json!({"text": "ok"})).await?;
    assert_eq!(text(&r), "ok");
    assert_eq!(pool.server("f").await?["status"], "connected");
    Ok(())
}

#[tokio::test]
async fn explicit_disconnect_clears_tools_at_once_and_enable_brings_them_back() -> anyhow::Result<()> {
    let (pool, log) = Mcpool::start_with_faulty("disc", "f", &[]).await?;
    let agent = pool.agent("/mcp").await?;
    assert!(agent.tool_names().await?.contains(&"f__echo".to_string()));
    let pid = spawned_pids(&log)[0];

    let (code, body) = pool.post("/api/servers/f/disconnect").await?;
    assert_eq!(code, 200);
    assert_eq!(body["server"]["status"], "disabled");
    assert!(!agent.tool_names().await?.iter().any(|t| t.starts_with("f__")));
    let r = agent.call("f__echo", json!({"text": "x"})).await?;
    assert_error_starts(&r, "Server 'f' is disconnected in mcpool");
    // The agent heard about it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        agent
            .handler
            .tool_list_changed
            .load(std::sync::atomic::Ordering::SeqCst)
            >= 1
    );
    // The process is gone.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(!alive(pid), "disconnected server's process {pid} still runs");

    let (code, body) = pool.post("/api/servers/f/enable").await?;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["server"]["status"], "connected");
    assert!(agent.tool_names().await?.contains(&"f__echo".to_string()));
    Ok(())
}

#[tokio::test]
async fn no_child_process_outlives_a_stop() -> anyhow::Result<()> {
    let dir = TempDir::new("orphans");
    let log_a = dir.path().join("a.log");
    let log_b = dir.path().join("b.log");
    // b runs under a shell that forks the server, so a grandchild is in the group.
    let b_script = format!(
        "exec 3<&0; '{}' stdio --spawn-log '{}' <&3 & wait",
        bin("mcpool-faulty").display(),
        log_b.display()
    );
    let mut pool = Mcpool::start_connected(json!({"mcpServers": {
        "a": faulty_stdio(&log_a, &[]),
        "b": {"command": "sh", "args": ["-c", b_script]},
    }}))
    .await?;
    let pids: Vec<i32> = spawned_pids(&log_a).into_iter().chain(spawned_pids(&log_b)).collect();
    assert_eq!(pids.len(), 2);
    assert!(pids.iter().all(|p| alive(*p)));
    let status = pool.stop().await?;
    assert!(status.success(), "mcpool serve exited with {status}");
    for pid in pids {
        assert!(!alive(pid), "process {pid} outlived the stop");
    }
    Ok(())
}

/// Rule 3's exception: a server that never connected has no tools, so no
/// call would ever reconnect it; it is retried in the background with the
/// backoff until it connects. One that connected once is not (rule 3).
#[tokio::test]
async fn a_server_that_never_connected_is_retried_until_it_does() -> anyhow::Result<()> {
    let (dir, log) = TempDir::with_spawn_log("never-connected");
    let ready = dir.path().join("ready");
    let ready_arg = ready.display().to_string();
    let pool = Mcpool::start(json!({"mcpServers": {
        "late": faulty_stdio(&log, &["--fail-until", &ready_arg]),
    }}))
    .await?;
    let failed = pool.wait_status("late", "failed", Duration::from_secs(10)).await?;
    let error = failed["error"].as_str().unwrap_or_default();
    assert!(error.contains("is not there yet"), "{failed}");
    assert!(failed["retry_in_ms"].as_u64().is_some(), "{failed}");
    // Nothing asks for it; it comes up on its own once it can.
    std::fs::write(&ready, "")?;
    let up = pool.wait_status("late", "connected", Duration::from_secs(40)).await?;
    assert!(up["tools"].as_array().is_some_and(|t| !t.is_empty()), "{up}");
    let starts = count_lines(&log, "start");
    assert!(starts >= 2, "{starts} starts");

    // Once it has connected, a drop waits for a request (rule 3).
    let agent = pool.agent("/mcp").await?;
    let _ = agent.call("late__crash", json!({"message": "bye"})).await?;
    pool.wait_status("late", "failed", Duration::from_secs(10)).await?;
    let after_drop = count_lines(&log, "start");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(count_lines(&log, "start"), after_drop, "respawned without a request");
    Ok(())
}
