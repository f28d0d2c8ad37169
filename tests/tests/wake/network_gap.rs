//! Rule 11 on a real network gap: mcpool in a namespace of its own loses its
//! link and the server's name, gets the link back while the name is still
//! missing, and heals by itself once the name resolves again.

use std::time::Duration;

use mcpool_tests::netns::{FaultServer, NetGap, NsMcpool};
use mcpool_tests::*;
use serde_json::json;

use super::logind::FakeLogind;
use super::{error_of, tools_kept};

const NETLINK_READY: &str = "watching network changes through netlink";
const CHANGED: &str = "the network changed";

/// A network gap, the fault server in its server namespace and mcpool (no
/// keepalive, `env` added) in its client namespace with that server as `r`.
async fn gap_and_pool(dir: &std::path::Path, env: &[(&str, &str)]) -> anyhow::Result<(NetGap, FaultServer, NsMcpool)> {
    let gap = NetGap::create()?;
    let faulty = FaultServer::start(&gap, &bin("mcpool-faulty"), &dir.join("r.log")).await?;
    let env = [&[("MCPOOL_KEEPALIVE_SECS", "0")][..], env].concat();
    let config = json!({"mcpServers": {"r": {"url": faulty.url()}}});
    let pool = NsMcpool::start(&gap, &bin("mcpool"), dir, &config, &env).await?;
    Ok((gap, faulty, pool))
}

#[tokio::test]
async fn a_network_gap_waits_for_the_name_then_heals_without_a_call() -> anyhow::Result<()> {
    let dir = TempDir::new("netgap");
    let (gap, faulty, pool) = gap_and_pool(dir.path(), &[]).await?;
    let limit = Duration::from_secs(30);
    pool.wait(&gap, "r", "connected", limit, |s| s["status"] == "connected")
        .await?;
    pool.wait_log(NETLINK_READY, 1, limit).await?;
    assert_eq!(faulty.initializes(&gap).await?, 1);

    // The network goes: the name first, then the link.
    let changes = pool.logs().matches(CHANGED).count();
    gap.set_resolvable(false)?;
    gap.link(false)?;
    pool.wait_log(CHANGED, changes + 1, limit).await?;
    let s = pool
        .wait(&gap, "r", "waiting for the network", limit, |s| {
            s["waiting_for_network"] == true
        })
        .await?;
    assert_eq!(s["status"], "failed", "{s}");
    assert!(tools_kept(&s), "{s}");
    let error = error_of(&s);
    assert!(error.starts_with("waiting for the network: "), "{error}");
    assert!(error.contains("cannot resolve mcp.test"), "{error}");

    // The link returns but the name does not resolve yet: still waiting,
    // and no MCP attempt reaches the server meanwhile.
    let initializes = faulty.initializes(&gap).await?;
    let changes = pool.logs().matches(CHANGED).count();
    gap.link(true)?;
    pool.wait_log(CHANGED, changes + 1, limit).await?;
    // Several gate polls (every 500 ms) go by.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let s = pool.server(&gap, "r").await?;
    assert_eq!(s["status"], "failed", "{s}");
    assert_eq!(s["waiting_for_network"], true, "{s}");
    assert!(tools_kept(&s), "{s}");
    assert_eq!(
        faulty.initializes(&gap).await?,
        initializes,
        "dialled MCP into a DNS gap"
    );

    // The name resolves again: connected, with no call and no click.
    gap.set_resolvable(true)?;
    let s = pool
        .wait(&gap, "r", "connected", limit, |s| s["status"] == "connected")
        .await?;
    assert_eq!(s["waiting_for_network"], false, "{s}");
    assert!(s["error"].is_null(), "{s}");
    let tools = s["tools"].as_array().cloned().unwrap_or_default();
    assert!(!tools.is_empty() && tools.iter().all(|t| t["state"] == "live"), "{s}");
    assert_eq!(
        faulty.initializes(&gap).await?,
        initializes + 1,
        "one reconnect: {}",
        faulty.stats(&gap).await?
    );
    Ok(())
}

#[tokio::test]
async fn network_changes_on_the_way_into_sleep_leave_the_healing_to_the_wake() -> anyhow::Result<()> {
    let dir = TempDir::new("netsleep");
    let bus = FakeLogind::start(dir.path()).await?;
    let (gap, faulty, pool) = gap_and_pool(dir.path(), &[("DBUS_SYSTEM_BUS_ADDRESS", bus.address.as_str())]).await?;
    let limit = Duration::from_secs(30);
    pool.wait(&gap, "r", "connected", limit, |s| s["status"] == "connected")
        .await?;
    pool.wait_log(NETLINK_READY, 1, limit).await?;
    pool.wait_log("listening for logind's sleep signals", 1, limit).await?;

    // Going to sleep, the machine drops its link.
    bus.prepare_for_sleep(true).await?;
    pool.wait_log("logind: WillSleep", 1, limit).await?;
    let changes = pool.logs().matches(CHANGED).count();
    gap.link(false)?;
    pool.wait_log(CHANGED, changes + 1, limit).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let s = pool.server(&gap, "r").await?;
    assert_eq!(
        s["status"], "connected",
        "pinged and dropped on the way into sleep: {s}"
    );
    assert!(!pool.logs().contains("healing 1 servers"), "{}", pool.logs());

    // The wake heals, with the network back.
    gap.link(true)?;
    bus.prepare_for_sleep(false).await?;
    pool.wait_log("logind: DidWake", 1, limit).await?;
    pool.wait(&gap, "r", "connected", limit, |s| s["status"] == "connected")
        .await?;
    assert!(faulty.initializes(&gap).await? <= 2, "{}", faulty.stats(&gap).await?);
    Ok(())
}
