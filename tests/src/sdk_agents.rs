//! Long-lived SDK agents driven line by line: the official Python SDK
//! (`tests/py/session_agent.py`) and the official TypeScript SDK
//! (`tests/js/session_agent.mjs`). Each initializes once and keeps its client
//! object, so a test can change things under it and send the next command.

use std::process::Stdio;
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::{node_modules, python, repo_root};

const ANSWER_LIMIT: Duration = Duration::from_secs(60);

pub struct LineAgent {
    pub name: &'static str,
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    /// The session id the agent got at initialize.
    pub session_id: String,
}

impl LineAgent {
    /// The Python SDK agent on `url` with `token`.
    pub async fn python(url: &str, token: &str) -> anyhow::Result<Self> {
        let mut cmd = Command::new(python());
        cmd.arg(repo_root().join("tests/py/session_agent.py"))
            .args(["--url", url, "--token", token]);
        Self::start("python-sdk", cmd).await
    }

    /// The TypeScript SDK agent (Node) on `url` with `token`.
    pub async fn typescript(url: &str, token: &str) -> anyhow::Result<Self> {
        let modules = node_modules();
        if !modules.join("@modelcontextprotocol/sdk").exists() {
            bail!(
                "@modelcontextprotocol/sdk is missing under {}: run scripts/test-env.sh",
                modules.display()
            );
        }
        let mut cmd = Command::new("node");
        cmd.arg(repo_root().join("tests/js/session_agent.mjs"))
            .args(["--url", url, "--token", token, "--node-modules"])
            .arg(modules);
        Self::start("typescript-sdk", cmd).await
    }

    async fn start(name: &'static str, mut cmd: Command) -> anyhow::Result<Self> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("cannot start the {name} agent"))?;
        let stdin = child.stdin.take().context("stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("stdout")?).lines();
        let mut agent = LineAgent {
            name,
            child,
            stdin,
            stdout,
            session_id: String::new(),
        };
        let ready = agent.read().await?;
        if ready["ready"] != true {
            bail!("the {name} agent did not initialize: {ready}");
        }
        agent.session_id = ready["session_id"]
            .as_str()
            .ok_or_else(|| anyhow!("the {name} agent has no session id: {ready}"))?
            .to_string();
        Ok(agent)
    }

    async fn read(&mut self) -> anyhow::Result<Value> {
        let line = tokio::time::timeout(ANSWER_LIMIT, self.stdout.next_line())
            .await
            .map_err(|_| anyhow!("the {} agent did not answer within {ANSWER_LIMIT:?}", self.name))??
            .ok_or_else(|| anyhow!("the {} agent exited", self.name))?;
        serde_json::from_str(&line).with_context(|| format!("the {} agent printed: {line}", self.name))
    }

    /// Sends one command and returns the agent's answer.
    pub async fn command(&mut self, command: Value) -> anyhow::Result<Value> {
        self.stdin.write_all(format!("{command}\n").as_bytes()).await?;
        self.stdin.flush().await?;
        self.read().await
    }

    /// Ends the agent (closing stdin) and waits for it.
    pub async fn close(mut self) -> anyhow::Result<()> {
        drop(self.stdin);
        let _ = tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await;
        let _ = self.child.kill().await;
        Ok(())
    }
}

/// A one-call agent of the official SDKs: the Python SDK 2.x
/// (`tests/py/agent2026.py`, `sdk` = `py2`) or the TypeScript SDK
/// (`tests/js/bridge_agent.mjs --sdk v2` or `v1`), with `args` after the
/// script and extra environment (which a `--stdio-cmd` child inherits).
/// Its JSON report, or why it failed.
pub async fn sdk_agent_2026(sdk: &str, args: &[&str], env: &[(&str, &str)]) -> anyhow::Result<Value> {
    let mut cmd = if sdk == "py2" {
        let mut cmd = Command::new(crate::python_mcp2());
        cmd.arg(repo_root().join("tests/py/agent2026.py"));
        cmd
    } else {
        let mut cmd = Command::new("node");
        cmd.arg(repo_root().join("tests/js/bridge_agent.mjs"))
            .args(["--sdk", sdk, "--node-modules"])
            .arg(node_modules());
        cmd
    };
    cmd.args(args).stdin(Stdio::null()).kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = tokio::time::timeout(Duration::from_secs(120), cmd.output()).await??;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report: Value = serde_json::from_str(stdout.trim())
        .map_err(|e| anyhow!("the {sdk} agent printed no JSON ({e}): {stdout}\nstderr: {stderr}"))?;
    if !out.status.success() {
        bail!("the {sdk} agent failed: {report}\nstderr: {stderr}");
    }
    Ok(report)
}
