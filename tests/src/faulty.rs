//! Our fault-injecting server (`mcpool-faulty`) as a test's upstream: the
//! config entries that run it, its HTTP mode and its control and stats
//! endpoints, and what its spawn log recorded.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::process::{Child, Command};

use crate::{announced, bin, spawn_quiet};

/// A config entry that runs our fault-injecting server over stdio, logging
/// its spawns to `log`.
pub fn faulty_stdio(log: &Path, extra: &[&str]) -> Value {
    let mut args = vec![
        "stdio".to_string(),
        "--spawn-log".to_string(),
        log.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    json!({"command": bin("mcpool-faulty"), "args": args})
}

/// A config entry that runs the shell commands `prelude` and then, in the
/// shell's place, our fault server over stdio logging its spawns to `log`.
pub fn faulty_after(prelude: &str, log: &Path) -> Value {
    let script = format!(
        "{prelude}; exec '{}' stdio --spawn-log '{}'",
        bin("mcpool-faulty").display(),
        log.display()
    );
    json!({"command": "/bin/sh", "args": ["-c", script]})
}

/// Number of lines in a spawn log that start with `prefix`.
pub fn count_lines(log: &Path, prefix: &str) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with(prefix))
        .count()
}

/// PIDs a spawn log recorded.
pub fn spawned_pids(log: &Path) -> Vec<i32> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("start ").and_then(|p| p.trim().parse().ok()))
        .collect()
}

/// The pids, as this test sees them, of the live processes whose command
/// line names `arg` (a fault server's spawn log, say). A sandboxed server
/// logs the pid it has inside its own PID namespace; this is its pid here.
pub fn live_pids_naming(arg: &Path) -> Vec<i32> {
    let needle = arg.as_os_str().as_encoded_bytes();
    let mut pids: Vec<i32> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            cmdline.split(|b| *b == 0).any(|word| word == needle).then_some(pid)
        })
        .collect();
    pids.sort_unstable();
    pids
}

/// Starts the fault-injecting server over HTTP; returns it and its MCP URL.
pub async fn faulty_http(log: &Path, extra: &[&str]) -> anyhow::Result<(Child, String)> {
    let mut cmd = Command::new(bin("mcpool-faulty"));
    cmd.args(["http", "--listen", "127.0.0.1:0", "--spawn-log"])
        .arg(log)
        .args(extra);
    let (child, line) = spawn_quiet(&mut cmd, Duration::from_secs(20)).await?;
    Ok((child, announced(&line, "LISTENING ")?))
}

/// POSTs a fault mode to the HTTP fault server (`/control` beside `/mcp`).
pub async fn control(mcp_url: &str, body: Value) -> anyhow::Result<()> {
    let url = mcp_url.replace("/mcp", "/control");
    reqwest::Client::new()
        .post(url)
        .json(&body)
        .send()
        .await?
        .error_for_status()?;
    Ok(())
}

/// The HTTP fault server's `/stats` (its counts of requests and calls).
pub async fn stats(mcp_url: &str) -> anyhow::Result<Value> {
    let url = mcp_url.replace("/mcp", "/stats");
    Ok(reqwest::Client::new().get(url).send().await?.json().await?)
}
