//! However `mcpool serve` ends (`kill -9` or SIGTERM), nothing it started
//! outlives it by more than 2 s: not a local server, not that server's own
//! children, not mcpool's guardian.

use std::path::Path;
use std::time::Duration;

use mcpool_tests::*;
use serde_json::json;

/// How long anything mcpool started may outlive it.
const AFTERLIFE: Duration = Duration::from_secs(2);

/// A local server that first starts a child of its own (a grandchild of
/// mcpool) and writes its PID to `pid_file`, then becomes our fault server.
fn server_with_grandchild(log: &Path, pid_file: &Path) -> serde_json::Value {
    faulty_after(&format!("sleep 1000 & echo $! > '{}'", pid_file.display()), log)
}

/// The PIDs whose parent is `parent` (from /proc).
fn children_of(parent: i32) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // "pid (comm) state ppid ...": comm may hold spaces, so split after ") ".
        let ppid = stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<i32>().ok());
        if ppid == Some(parent) {
            found.push(pid);
        }
    }
    found
}

/// Starts mcpool with the server, waits until it is connected, and returns
/// the pool and every PID it started: the server, its child, and whatever
/// else is a child of mcpool (its guardian).
async fn started(tag: &str) -> anyhow::Result<(Mcpool, Vec<i32>, TempDir)> {
    let dir = TempDir::new(tag);
    let log = dir.path().join("spawns.log");
    let pid_file = dir.path().join("grandchild.pid");
    let pool = Mcpool::start_connected(json!({"mcpServers": {"g": server_with_grandchild(&log, &pid_file)}})).await?;
    let server = *spawned_pids(&log)
        .first()
        .ok_or_else(|| anyhow::anyhow!("no start line"))?;
    let grandchild: i32 = std::fs::read_to_string(&pid_file)?.trim().parse()?;
    let mcpool_pid = pool
        .child
        .id()
        .ok_or_else(|| anyhow::anyhow!("mcpool already exited"))? as i32;
    let mut pids = children_of(mcpool_pid);
    assert!(pids.contains(&server), "the server {server} is not among {pids:?}");
    pids.push(grandchild);
    for pid in &pids {
        assert!(alive(*pid), "{pid} is not running before the test");
    }
    Ok((pool, pids, dir))
}

/// Fails unless every PID is gone within [`AFTERLIFE`] of mcpool's exit.
async fn all_gone_soon(pids: &[i32]) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + AFTERLIFE;
    loop {
        let left: Vec<i32> = pids.iter().copied().filter(|p| alive(*p)).collect();
        if left.is_empty() {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            for pid in &left {
                // SAFETY: ends what this test's mcpool left behind.
                unsafe { libc::kill(*pid, libc::SIGKILL) };
            }
            anyhow::bail!("still running {AFTERLIFE:?} after mcpool ended: {left:?} (of {pids:?})");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn kill_9_of_mcpool_takes_its_servers_and_their_children_with_it() -> anyhow::Result<()> {
    let (mut pool, pids, _dir) = started("orphans-kill").await?;
    let pid = pool.child.id().ok_or_else(|| anyhow::anyhow!("mcpool exited"))? as i32;
    // SAFETY: kills the mcpool this test started.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    pool.child.wait().await?;
    all_gone_soon(&pids).await
}

#[tokio::test]
async fn a_normal_stop_takes_its_servers_and_their_children_with_it() -> anyhow::Result<()> {
    let (mut pool, pids, _dir) = started("orphans-term").await?;
    let status = pool.stop().await?;
    assert!(status.success(), "{status}");
    all_gone_soon(&pids).await
}
