//! The harness of the Wine tests: Windows programs started under Wine
//! from Linux, a running pool's API, and the processes they leave.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context};
use mcpool_tests::*;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::{json, Value};
use tokio::process::{Child, Command};

/// How long anything a killed or stopped mcpool started may outlive it.
pub const AFTERLIFE: Duration = Duration::from_secs(10);
/// Wine starts programs slowly the first time.
pub const START: Duration = Duration::from_secs(60);

/// `/tmp/x/y` as Windows programs under Wine see it: `Z:\tmp\x\y`.
pub fn win(path: &Path) -> String {
    format!("Z:{}", path.display()).replace('/', "\\")
}

/// `wine PROGRAM.exe` in the prefix, with the test's keyring profile and a
/// config file of its own.
pub fn wine_cmd(bins: &Path, prefix: &Path, program: &str, dir: &Path) -> Command {
    let mut cmd = Command::new("wine");
    cmd.arg(bins.join(format!("{program}.exe")))
        .env("WINEPREFIX", prefix)
        .env("WINEDEBUG", "-all")
        .env("WINEDLLOVERRIDES", "mscoree,mshtml=")
        .env("MCPOOL_PROFILE", profile_for(dir))
        .env("MCPOOL_CONFIG", win(&dir.join("config.json")))
        .env_remove("MCPOOL_TOKEN")
        .env_remove("MCPOOL_LISTEN")
        .env_remove("MCPOOL_CACHE_DIR")
        .kill_on_drop(true);
    cmd
}

/// `mcpool.exe ARGS` to its end, with `stdin` fed.
pub async fn cli(bins: &Path, prefix: &Path, dir: &Path, args: &[&str], stdin: Option<&str>) -> anyhow::Result<Output> {
    use tokio::io::AsyncWriteExt;
    let mut cmd = wine_cmd(bins, prefix, "mcpool", dir);
    cmd.args(args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn()?;
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().context("stdin")?;
        pipe.write_all(input.as_bytes()).await?;
        drop(pipe);
    }
    let o = tokio::time::timeout(START, child.wait_with_output()).await??;
    Ok(Output {
        ok: o.status.success(),
        stdout: String::from_utf8_lossy(&o.stdout).replace("\r\n", "\n"),
        stderr: String::from_utf8_lossy(&o.stderr).replace("\r\n", "\n"),
    })
}

#[derive(Debug)]
pub struct Output {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

/// A running `mcpool.exe serve` (or the tray app, `mcpool-app.exe`) under
/// Wine.
pub struct WinePool {
    pub child: Child,
    pub port: u16,
    pub token: String,
    pub stderr_log: PathBuf,
}

impl WinePool {
    pub async fn start(bins: &Path, prefix: &Path, dir: &Path, config: &Value) -> anyhow::Result<Self> {
        Self::start_program(bins, prefix, dir, config, "mcpool", &["serve"], &[]).await
    }

    /// `PROGRAM.exe ARGS --listen 127.0.0.1:0 --cache-dir …` with `env`
    /// added, started once it says where it listens.
    pub async fn start_program(
        bins: &Path,
        prefix: &Path,
        dir: &Path,
        config: &Value,
        program: &str,
        args: &[&str],
        env: &[(&str, String)],
    ) -> anyhow::Result<Self> {
        write_config(dir, config)?;
        let token = format!("wine-token-{}", std::process::id());
        let stderr_log = dir.join(format!("{program}.stderr"));
        let mut cmd = wine_cmd(bins, prefix, program, dir);
        cmd.args(args)
            .args(["--listen", "127.0.0.1:0", "--cache-dir"])
            .arg(win(&dir.join("cache")))
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env("MCPOOL_TOKEN", &token)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr_log)?);
        let mut child = cmd.spawn()?;
        let line = first_line(&mut child, START).await.with_context(|| {
            format!(
                "{program}.exe did not start listening: {}",
                std::fs::read_to_string(&stderr_log).unwrap_or_default()
            )
        })?;
        let port = listening_port(line.trim_end())?;
        Ok(WinePool {
            child,
            port,
            token,
            stderr_log,
        })
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.stderr_log).unwrap_or_default()
    }

    pub async fn agent(&self) -> anyhow::Result<Agent> {
        let config = StreamableHttpClientTransportConfig::with_uri(self.url("/mcp")).auth_header(self.token.clone());
        let handler = AgentHandler::default();
        let service = handler
            .clone()
            .serve(StreamableHttpClientTransport::from_config(config))
            .await
            .with_context(|| format!("the agent did not connect; log:\n{}", self.logs()))?;
        Ok(Agent { service, handler })
    }

    pub async fn post(&self, path: &str) -> anyhow::Result<u16> {
        let r = reqwest::Client::new()
            .post(self.url(path))
            .bearer_auth(&self.token)
            .send()
            .await?;
        let status = r.status();
        if !status.is_success() {
            // What the test then fails on says why: the answer, and the
            // pool's log (its folder goes with the test).
            eprintln!(
                "POST {path}: {status}: {}\nlog:\n{}",
                r.text().await.unwrap_or_default(),
                self.logs()
            );
        }
        Ok(status.as_u16())
    }

    pub async fn status(&self, name: &str) -> anyhow::Result<String> {
        let servers: Vec<Value> = serde_json::from_value(get_json_with(&self.url("/api/servers"), &self.token).await?)?;
        Ok(servers
            .iter()
            .find(|s| s["name"] == name)
            .and_then(|s| s["status"].as_str())
            .unwrap_or("absent")
            .to_string())
    }

    pub async fn wait_status(&self, name: &str, status: &str) -> anyhow::Result<()> {
        let deadline = tokio::time::Instant::now() + START;
        loop {
            let now = self.status(name).await.unwrap_or_default();
            if now == status {
                return Ok(());
            }
            if tokio::time::Instant::now() > deadline {
                bail!("{name} is {now}, not {status}; logs:\n{}", self.logs());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Ctrl-C, as a console's user stops it: the pool stops every server.
    pub async fn interrupt(&mut self) -> anyhow::Result<()> {
        if let Some(pid) = self.child.id() {
            // SAFETY: signals the wine process we spawned.
            unsafe { libc::kill(pid as i32, libc::SIGINT) };
        }
        tokio::time::timeout(START, self.child.wait()).await??;
        Ok(())
    }
}

/// The Linux processes (Wine runs each Windows process as one) whose
/// command line holds `tag`.
pub fn processes_with(tag: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&cmdline).replace('\0', " ").contains(tag) && alive(pid) {
            found.push(pid);
        }
    }
    found
}

pub async fn none_left(tag: &str) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + AFTERLIFE;
    loop {
        let left = processes_with(tag);
        if left.is_empty() {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            let named: Vec<String> = left
                .iter()
                .map(|pid| {
                    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                    format!(
                        "{pid} {}",
                        String::from_utf8_lossy(&cmdline).replace('\0', " ").trim_end()
                    )
                })
                .collect();
            bail!("processes of {tag} outlived mcpool: {named:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A Windows stdio upstream: `mcpool-faulty.exe stdio --name TAG`.
pub fn faulty(bins: &Path, tag: &str, env: Value) -> Value {
    json!({
        "command": win(&bins.join("mcpool-faulty.exe")),
        "args": ["stdio", "--name", tag],
        "env": env,
    })
}

/// A tag unique to this test run, carried in the upstream's command line
/// and in no other: not in the test's folder's name (`wine-TEST-PID-N`),
/// which mcpool's own command line holds (`--cache-dir`).
pub fn tag(test: &str) -> String {
    format!("upstream-{test}-{}", std::process::id())
}

/// `C:\…` as a file of the prefix on Linux.
pub fn in_prefix(prefix: &Path, windows_path: &str) -> PathBuf {
    prefix.join("drive_c").join(windows_path[3..].replace('\\', "/"))
}
