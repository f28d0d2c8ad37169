//! A local server that never answers `server/discover` (as servers on SDKs
//! that drop unknown requests before `initialize` do) connects without
//! waiting out rmcp's 10 s probe, at start and at every reconnect; a
//! 2026-07-28-only server too slow to answer the probe in time is still
//! found and spoken to in its revision.

use std::time::{Duration, Instant};

use mcpool_tests::*;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(30);
/// rmcp's probe alone waits 10 s; a connect must take well under that.
const QUICK: Duration = Duration::from_secs(8);

fn protocol(servers: &[Value], name: &str) -> Value {
    servers
        .iter()
        .find(|s| s["name"] == name)
        .map(|s| s["protocol"].clone())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_server_silent_to_discover_connects_without_the_10_s_probe() -> anyhow::Result<()> {
    let (_dir, log) = TempDir::with_spawn_log("discover-silent");
    let started = Instant::now();
    let pool = Mcpool::start_connected(json!({"mcpServers": {
        "quiet": faulty_stdio(&log, &["--ignore-discover"]),
    }}))
    .await?;
    let took = started.elapsed();
    println!("silent to server/discover: connected {took:?} after start");
    assert!(took < QUICK, "the first connect took {took:?}");
    assert_eq!(protocol(&pool.servers().await?, "quiet"), "2025-11-25");

    // Every connect, not only the first.
    let (status, body) = pool.post("/api/servers/quiet/disconnect").await?;
    assert!(status < 300, "{status} {body}");
    pool.wait_status("quiet", "disabled", LIMIT).await?;
    let started = Instant::now();
    let (status, body) = pool.post("/api/servers/quiet/reconnect").await?;
    assert!(status < 300, "{status} {body}");
    pool.wait_status("quiet", "connected", LIMIT).await?;
    let took = started.elapsed();
    println!("silent to server/discover: reconnected in {took:?}");
    assert!(took < QUICK, "the reconnect took {took:?}");
    assert_eq!(count_lines(&log, "initialize"), 2, "one initialize per connect");
    Ok(())
}

#[tokio::test]
async fn a_stateless_only_server_slower_than_the_probe_is_still_found() -> anyhow::Result<()> {
    let (_dir, log) = TempDir::with_spawn_log("discover-slow");
    // It reads nothing for 3 s: the probe goes unanswered past the 2 s the
    // bridge waits, and `initialize`, sent next, is refused.
    let mut args = STATELESS_ONLY.to_vec();
    args.extend(["--startup-delay-ms", "3000"]);
    let pool = Mcpool::start_connected(json!({"mcpServers": {"slow": faulty_stdio(&log, &args)}})).await?;
    assert_eq!(protocol(&pool.servers().await?, "slow"), "2026-07-28");
    let agent = pool.agent("/mcp").await?;
    let result = agent.call("slow__echo", json!({"text": "found"})).await?;
    assert_eq!(text(&result), "found");
    assert_eq!(count_lines(&log, "start"), 2, "one spawn gave up on, one connected");
    Ok(())
}
