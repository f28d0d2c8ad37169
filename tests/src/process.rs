//! Processes the tests and benchmarks start: the first line one prints on
//! stdout (its address, mostly), the address after its prefix, the port in
//! mcpool's `mcpool listening on http://127.0.0.1:PORT/mcp` line, and the
//! Python SDK's server.

use std::time::Duration;

use anyhow::{anyhow, Context};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Spawns `cmd` quiet (stdin and stderr null, stdout piped, killed on
/// drop) and answers it with its first line, read within `limit`.
pub async fn spawn_quiet(cmd: &mut Command, limit: Duration) -> anyhow::Result<(Child, String)> {
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let line = first_line(&mut child, limit).await?;
    Ok((child, line))
}

/// Waits up to `limit` for the first line `child` prints on its stdout
/// (which must be piped). The rest of its output is read and dropped in the
/// background, so the process never blocks on a full pipe nor dies of a
/// closed one.
pub async fn first_line(child: &mut Child, limit: Duration) -> anyhow::Result<String> {
    let stdout = child.stdout.take().context("the process's stdout is not piped")?;
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(limit, lines.next_line())
        .await
        .map_err(|_| anyhow!("the process printed nothing within {limit:?}"))??
        .context("the process exited before printing a line")?;
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok(line)
}

/// The port of `mcpool listening on http://127.0.0.1:PORT/mcp`.
pub fn listening_port(line: &str) -> anyhow::Result<u16> {
    line.rsplit(':')
        .next()
        .and_then(|p| p.trim_end_matches("/mcp").parse().ok())
        .ok_or_else(|| anyhow!("unexpected first line: {line}"))
}

/// What a first line says after `prefix` (`LISTENING `, `mcpool listening
/// on `): the address a program announced; an error naming the line when
/// it says something else.
pub fn announced(line: &str, prefix: &str) -> anyhow::Result<String> {
    line.strip_prefix(prefix)
        .map(str::to_string)
        .with_context(|| format!("unexpected first line: {line:?}"))
}

/// Starts `tests/py/sse_server.py` (the Python SDK's server; SSE unless
/// `extra` says `--transport http`) on a free loopback port: it and its URL.
pub async fn python_sse_server(extra: &[&str]) -> anyhow::Result<(Child, String)> {
    let mut cmd = Command::new(crate::python());
    cmd.arg(crate::repo_root().join("tests/py/sse_server.py"))
        .args(["--port", "0"])
        .args(extra);
    let (child, line) = spawn_quiet(&mut cmd, Duration::from_secs(30))
        .await
        .context("sse_server.py printed no LISTENING line")?;
    Ok((child, announced(&line, "LISTENING ")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_port_of_the_listening_line() {
        assert_eq!(
            listening_port("mcpool listening on http://127.0.0.1:7410/mcp").unwrap(),
            7410
        );
        assert!(listening_port("something else").is_err());
    }

    #[tokio::test]
    async fn the_first_line_and_not_the_rest() {
        let mut child = tokio::process::Command::new("sh")
            .args(["-c", "echo first; echo second; sleep 5"])
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        assert_eq!(first_line(&mut child, Duration::from_secs(10)).await.unwrap(), "first");
        let mut silent = tokio::process::Command::new("true")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        assert!(first_line(&mut silent, Duration::from_secs(10)).await.is_err());
    }
}
