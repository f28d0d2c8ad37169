//! A peer measured side by side: supergateway (npm), which serves one stdio
//! server over Streamable HTTP. In `--stateful` mode it starts one child per
//! agent session, so each agent talks to its own mcpool-faulty.

use crate::*;
use anyhow::{bail, Context};
use rmcp::service::{RoleClient, RunningService};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::process::{Child, Command};

/// supergateway listens on every interface and has no option to change
/// that; this preload binds a bare port to loopback only.
const LOOPBACK_PRELOAD: &str = r#"
const net = require('node:net');
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === 'number' && (args.length === 1 || typeof args[1] === 'function')) {
    args.splice(1, 0, '127.0.0.1');
  }
  return listen.apply(this, args);
};
"#;

/// The version in the `package.json` next to `dist/index.js`, if found.
pub(crate) fn version(script: &Path) -> String {
    let package = script.parent().and_then(Path::parent).map(|d| d.join("package.json"));
    package
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|v| v.get("version").and_then(|v| v.as_str()).map(|v| format!("v{v}")))
        .unwrap_or_default()
}

pub(crate) struct Supergateway {
    child: Child,
    pub(crate) pid: u32,
    port: u16,
}

impl Supergateway {
    /// Starts `node SCRIPT --stdio "<faulty> stdio" --outputTransport
    /// streamableHttp --stateful` on a free loopback port.
    pub(crate) async fn start(env: &Env, script: &Path) -> anyhow::Result<Self> {
        let preload = env.tmp.join("loopback-only.cjs");
        std::fs::write(&preload, LOOPBACK_PRELOAD)?;
        // node resolves `--require` against module paths unless it is absolute.
        let preload = std::fs::canonicalize(&preload)?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let stdio = format!("{} stdio", env.faulty.display());
        let mut child = Command::new(&env.node)
            .arg("--require")
            .arg(&preload)
            .arg(script)
            .args(["--stdio", &stdio, "--outputTransport", "streamableHttp", "--stateful"])
            .args(["--port", &port.to_string(), "--logLevel", "none"])
            // It exits when its stdin ends; the pipe stays open in `child`.
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(env.tmp.join("supergateway.stderr"))?)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("cannot start {} {}", env.node, script.display()))?;
        let pid = child.id().context("supergateway has no pid")?;
        let deadline = Instant::now() + STEP_LIMIT;
        while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                let stderr = std::fs::read_to_string(env.tmp.join("supergateway.stderr")).unwrap_or_default();
                bail!("supergateway exited ({status}) before listening: {stderr}");
            }
            if Instant::now() > deadline {
                bail!("supergateway did not listen within {STEP_LIMIT:?}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(Supergateway { child, pid, port })
    }

    /// An rmcp session agent, with the same keep-alive client as mcpool's.
    pub(crate) async fn agent(&self) -> anyhow::Result<RunningService<RoleClient, ()>> {
        let url = format!("http://127.0.0.1:{}/mcp", self.port);
        mcpool_tests::keep_alive_agent(&url, None, STEP_LIMIT).await
    }

    pub(crate) async fn stop(mut self) {
        // SAFETY: signals the child this program spawned and still owns.
        unsafe { libc::kill(self.pid as libc::pid_t, libc::SIGTERM) };
        if tokio::time::timeout(Duration::from_secs(10), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}
