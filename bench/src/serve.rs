//! What the benchmarks that run `mcpool serve` share: it started on a
//! config of their own in a throwaway dir (loopback, port 0), and a
//! `tools/list` read page by page.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use rmcp::model::PaginatedRequestParams;
use rmcp::service::{Peer, RoleClient};
use tokio::process::{Child, Command};

/// `mcpool serve --config CONFIG` with its cache, config and data dirs
/// under `dir` and `token` as its bearer token; stderr goes to
/// `dir/mcpool.stderr`, stdout is piped (its first line names the port).
pub fn spawn_serve(
    mcpool: &Path,
    config: &Path,
    dir: &Path,
    token: &str,
    env: &[(&str, String)],
) -> anyhow::Result<Child> {
    let mut cmd = Command::new(mcpool);
    cmd.args(["serve", "--config"])
        .arg(config)
        .args(["--listen", "127.0.0.1:0", "--cache-dir"])
        .arg(dir.join("cache"))
        .env("MCPOOL_TOKEN", token)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .env_remove("MCPOOL_LISTEN")
        .env_remove("MCPOOL_CONFIG")
        .env_remove("MCPOOL_CACHE_DIR")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(dir.join("mcpool.stderr"))?)
        .kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    Ok(cmd.spawn()?)
}

/// Polls `GET /api/servers` of the instance on `port` every 20 ms until
/// `count` servers are there, all connected; fails after `limit`.
pub async fn wait_connected(port: u16, token: &str, count: usize, limit: Duration) -> anyhow::Result<()> {
    let http = reqwest::Client::new();
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let servers: Vec<serde_json::Value> = http
            .get(format!("http://127.0.0.1:{port}/api/servers"))
            .bearer_auth(token)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        if servers.len() == count && servers.iter().all(|s| s["status"] == "connected") {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            anyhow::bail!("{count} servers not connected within {limit:?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Stops a `mcpool serve` this program spawned: SIGTERM (so it stops its
/// children), then a kill after `grace`.
pub async fn stop(child: &mut Child, pid: u32, grace: Duration) {
    // SAFETY: signals the child this program spawned and still owns.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
    if tokio::time::timeout(grace, child.wait()).await.is_err() {
        let _ = child.kill().await;
    }
}

/// Every page of `tools/list`; the number of tools.
pub async fn list_all(peer: &Peer<RoleClient>, limit: Duration) -> anyhow::Result<usize> {
    let mut n = 0;
    let mut cursor = None;
    loop {
        let params = cursor.map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let page = tokio::time::timeout(limit, peer.list_tools(params)).await??;
        n += page.tools.len();
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => return Ok(n),
        }
    }
}
