//! Test harness for mcpool's end-to-end tests: start the real `mcpool serve`
//! binary on port 0 with a config written per test, talk to it as an agent
//! (rmcp client or the official Python SDK), and read the fault-injecting
//! server's spawn log and stats.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use rmcp::service::ServiceExt;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::Value;
use tokio::process::{Child, Command};

pub mod agent;
pub mod browser;
pub mod dirs;
pub mod events;
pub mod faulty;
pub mod http;
pub mod netns;
pub mod output;
pub mod process;
pub mod proxy;
pub mod raw;
pub mod sdk_agents;
pub mod secrets;
pub mod setup;
pub mod started;
pub mod stateless;
pub use stateless::STATELESS_ONLY;

pub use agent::*;
pub use dirs::{give_to, TempDir};
pub use faulty::{
    control, count_lines, faulty_after, faulty_http, faulty_stdio, live_pids_naming, spawned_pids, stats,
};
pub use http::{get_json_with, get_unfollowed, initialize_request};
pub use output::{assert_failed_saying, assert_said, stderr, stdout};
pub use process::{announced, first_line, listening_port, python_sse_server, spawn_quiet};
pub use setup::{files_under, free_listen, free_port, names_in, write_config};

/// The directory holding the workspace's built binaries.
/// Where the programs under test are: `MCPOOL_TEST_BIN_DIR` when set (two
/// worktrees that share one target dir keep their programs apart so),
/// else the target dir the test runs from.
pub fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("MCPOOL_TEST_BIN_DIR") {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().expect("test executable path");
    // target/debug/deps/<test> -> target/debug
    exe.parent().and_then(Path::parent).expect("target dir").to_path_buf()
}

pub fn bin(name: &str) -> PathBuf {
    let path = bin_dir().join(name);
    assert!(
        path.exists(),
        "{} is missing: run `cargo build --workspace --bins` first",
        path.display()
    );
    path
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("repo root")
        .to_path_buf()
}

/// A path of the test environment: `$var`, or `default` under the repo;
/// there, or the test says how to make it.
fn test_env_path(var: &str, default: &str) -> PathBuf {
    let path = std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(default));
    assert!(path.exists(), "{} is missing: run scripts/test-env.sh", path.display());
    path
}

/// The Python of the test venv (`scripts/test-env.sh` makes it).
pub fn python() -> PathBuf {
    test_env_path("MCPOOL_TEST_PYTHON", ".venv/bin/python")
}

/// The Python of the 2.x SDK's venv (`.venv-mcp2`, for tests/py/agent2026.py).
pub fn python_mcp2() -> PathBuf {
    test_env_path("MCPOOL_TEST_PYTHON_MCP2", ".venv-mcp2/bin/python")
}

pub fn node_modules() -> PathBuf {
    let path = std::env::var_os("MCPOOL_TEST_NODE_MODULES")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("node_modules"));
    assert!(
        path.join("@modelcontextprotocol/server-everything").exists(),
        "server-everything is missing under {}: run scripts/test-env.sh",
        path.display()
    );
    path
}

pub fn everything_js() -> PathBuf {
    node_modules().join("@modelcontextprotocol/server-everything/dist/index.js")
}

pub(crate) static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A keyring profile of the test's own, so tests sharing one Secret Service
/// never see each other's entries.
pub fn profile_for(dir: &Path) -> String {
    let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("test");
    format!("test-{name}")
}

/// `mcpool stdio` pointed at a loopback address nothing listens on (the
/// address comes back too), waiting 1 s for an instance (`MCPOOL_STDIO_WAIT`),
/// its profile and folders under `dir`, with stdin, stdout and stderr piped.
pub fn stdio_bridge_to_nothing(dir: &Path) -> anyhow::Result<(tokio::process::Child, String)> {
    let listen = free_listen()?;
    let child = tokio::process::Command::new(bin("mcpool"))
        .arg("stdio")
        .env("MCPOOL_LISTEN", &listen)
        .env("MCPOOL_TOKEN", "some-token")
        .env("MCPOOL_STDIO_WAIT", "1")
        .env("MCPOOL_PROFILE", profile_for(dir))
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    Ok((child, listen))
}

pub fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    if r != 0 {
        return false;
    }
    // A zombie is not alive for our purposes.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    !stat.split(") ").nth(1).is_some_and(|rest| rest.starts_with('Z'))
}

/// A running `mcpool serve`, stopped with SIGTERM on drop.
pub struct Mcpool {
    pub child: Child,
    pub port: u16,
    pub token: String,
    pub dir: TempDir,
    pub stderr_log: PathBuf,
    /// The extra environment it was started with, for [`Mcpool::restart`].
    extra_env: Vec<(String, String)>,
    /// The user it runs as, when not the test's own ([`Mcpool::start_as`]).
    run_as: Option<u32>,
}

/// The environment `mcpool serve` gets in `dir`, which every `mcpool`
/// command run for the same instance shares: XDG dirs inside `dir` (the
/// runtime dir too, where the control credential is) and the test's own
/// keyring profile.
pub fn instance_env(dir: &Path) -> Vec<(String, PathBuf)> {
    vec![
        ("XDG_CONFIG_HOME".into(), dir.join("config")),
        ("XDG_CACHE_HOME".into(), dir.join("cache")),
        ("XDG_DATA_HOME".into(), dir.join("data")),
        ("XDG_RUNTIME_DIR".into(), dir.join("run")),
        ("MCPOOL_PROFILE".into(), PathBuf::from(profile_for(dir))),
    ]
}

/// `cmd` with the environment of an instance in `dir` ([`instance_env`]),
/// none of the caller's `MCPOOL_LISTEN`, `MCPOOL_CONFIG`, `MCPOOL_CACHE_DIR`,
/// and `extra_env` last.
fn with_instance_env<'a, K: AsRef<std::ffi::OsStr>, V: AsRef<std::ffi::OsStr>>(
    cmd: &'a mut Command,
    dir: &Path,
    extra_env: &[(K, V)],
) -> &'a mut Command {
    cmd.env_remove("MCPOOL_LISTEN")
        .env_remove("MCPOOL_CONFIG")
        .env_remove("MCPOOL_CACHE_DIR")
        .envs(instance_env(dir))
        .envs(extra_env.iter().map(|(k, v)| (k, v)))
}

/// Runs `mcpool ARGS` with the environment of an instance in `dir` (see
/// [`instance_env`]) plus `extra_env`, feeding `stdin` when given.
pub async fn mcpool_cli(
    dir: &Path,
    args: &[&str],
    stdin: Option<&str>,
    extra_env: &[(&str, &str)],
) -> anyhow::Result<std::process::Output> {
    use tokio::io::AsyncWriteExt;
    let mut cmd = Command::new(bin("mcpool"));
    cmd.args(args)
        .env_remove("MCPOOL_TOKEN")
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = with_instance_env(&mut cmd, dir, extra_env).spawn()?;
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().context("stdin")?;
        pipe.write_all(input.as_bytes()).await?;
        drop(pipe);
    }
    Ok(tokio::time::timeout(Duration::from_secs(60), child.wait_with_output()).await??)
}

/// Stores `value` in the keyring as `name` for the instance in `dir`,
/// through `mcpool secret set` (the value on stdin, as a user types it).
pub async fn store_secret(dir: &Path, name: &str, value: &str) -> anyhow::Result<()> {
    let o = mcpool_cli(dir, &["secret", "set", name], Some(&format!("{value}\n")), &[]).await?;
    anyhow::ensure!(o.status.success(), "mcpool secret set {name}: {}", stderr(&o));
    Ok(())
}

impl Mcpool {
    pub async fn start(config: Value) -> anyhow::Result<Self> {
        Self::start_with(config, &[]).await
    }

    pub async fn start_with(config: Value, extra_env: &[(&str, &str)]) -> anyhow::Result<Self> {
        Self::launch(Some(config), extra_env).await
    }

    /// Starts with `config_path()` absent.
    pub async fn start_without_config() -> anyhow::Result<Self> {
        Self::launch(None, &[]).await
    }

    async fn launch(config: Option<Value>, extra_env: &[(&str, &str)]) -> anyhow::Result<Self> {
        Self::launch_in(TempDir::new("mcpool"), config, extra_env).await
    }

    /// Starts in `dir`, which the test prepared (secrets set with
    /// [`mcpool_cli`] in the same dir share the instance's keyring profile).
    pub async fn start_in(dir: TempDir, config: Value, extra_env: &[(&str, &str)]) -> anyhow::Result<Self> {
        Self::launch_in(dir, Some(config), extra_env).await
    }

    /// Starts in `dir`, whose `config.json` the test wrote itself (text a
    /// JSON value cannot hold, such as a repeated key).
    pub async fn start_in_dir(dir: TempDir, extra_env: &[(&str, &str)]) -> anyhow::Result<Self> {
        Self::launch_in(dir, None, extra_env).await
    }

    async fn launch_in(dir: TempDir, config: Option<Value>, extra_env: &[(&str, &str)]) -> anyhow::Result<Self> {
        if let Some(config) = config {
            write_config(dir.path(), &config)?;
        }
        Self::launch_as(dir, extra_env, None).await
    }

    /// Starts `mcpool serve` in `dir` (its config already there) as the
    /// test's own user or `run_as`.
    async fn launch_as(dir: TempDir, extra_env: &[(&str, &str)], run_as: Option<u32>) -> anyhow::Result<Self> {
        let token = format!("test-token-{}", NEXT.fetch_add(1, Ordering::Relaxed));
        let extra_env: Vec<(String, String)> = extra_env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let (child, port) = Self::spawn_serve(dir.path(), &token, &extra_env, 0, run_as).await?;
        Ok(Mcpool {
            child,
            port,
            token,
            stderr_log: dir.path().join("mcpool.stderr"),
            dir,
            extra_env,
            run_as,
        })
    }

    /// [`Mcpool::start_in`] as the user `uid` (through `setpriv`, so the
    /// test must run as root): `dir` becomes that user's, and the instance
    /// runs a copy of `mcpool` in it (the checkout may be where that user
    /// cannot go).
    pub async fn start_as(dir: TempDir, config: Value, extra_env: &[(&str, &str)], uid: u32) -> anyhow::Result<Self> {
        write_config(dir.path(), &config)?;
        std::fs::copy(bin("mcpool"), dir.path().join("mcpool"))?;
        give_to(dir.path(), uid)?;
        Self::launch_as(dir, extra_env, Some(uid)).await
    }

    /// Stops the instance and starts it again in the same dir, with the
    /// config file as it is now (same profile, cache and data dirs). The
    /// log starts afresh.
    pub async fn restart(&mut self) -> anyhow::Result<()> {
        self.stop().await?;
        let (child, port) = Self::spawn_serve(self.dir.path(), &self.token, &self.extra_env, 0, self.run_as).await?;
        self.child = child;
        self.port = port;
        Ok(())
    }

    /// Stops the instance (SIGTERM, or SIGKILL when `kill`) and starts it
    /// again in the same dir on the SAME port, as agents expect after a
    /// restart; `env` is added to (or overrides) its extra environment for
    /// this start. Retries for a while if the port is briefly taken.
    pub async fn restart_on_same_port(&mut self, kill: bool, env: &[(&str, &str)]) -> anyhow::Result<()> {
        if kill {
            self.child.kill().await?;
        } else {
            self.stop().await?;
        }
        let mut extra_env = self.extra_env.clone();
        extra_env.extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            match Self::spawn_serve(self.dir.path(), &self.token, &extra_env, self.port, self.run_as).await {
                Ok((child, _)) => {
                    self.child = child;
                    return Ok(());
                }
                Err(e) if tokio::time::Instant::now() < deadline && self.logs().contains("in use") => {
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// `mcpool ARGS` talking to this instance (its listen address and token,
    /// its keyring profile and dirs).
    pub async fn cli(&self, args: &[&str], stdin: Option<&str>) -> anyhow::Result<std::process::Output> {
        let listen = format!("127.0.0.1:{}", self.port);
        let mut env: Vec<(&str, &str)> = vec![("MCPOOL_LISTEN", &listen), ("MCPOOL_TOKEN", &self.token)];
        env.extend(self.extra_env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        mcpool_cli(self.dir.path(), args, stdin, &env).await
    }

    /// The cache dir `serve` uses by default here: `<dir>/cache/mcpool`.
    pub fn cache_dir(&self) -> PathBuf {
        self.dir.path().join("cache").join("mcpool")
    }

    /// The file of this instance's control credential:
    /// `<dir>/run/mcpool/control-PORT`.
    pub fn control_file(&self) -> PathBuf {
        self.dir
            .path()
            .join("run")
            .join("mcpool")
            .join(format!("control-{}", self.port))
    }

    /// The control credential mcpool's own CLI reads (every change through
    /// `/api` needs it).
    pub fn control(&self) -> anyhow::Result<String> {
        let path = self.control_file();
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        Ok(text.trim().to_string())
    }

    /// The data dir `serve` uses here: `<dir>/data/mcpool`.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data").join("mcpool")
    }

    async fn spawn_serve(
        dir: &Path,
        token: &str,
        extra_env: &[(String, String)],
        port: u16,
        run_as: Option<u32>,
    ) -> anyhow::Result<(Child, u16)> {
        let config_path = dir.join("config.json");
        let stderr_log = dir.join("mcpool.stderr");
        let mut cmd = match run_as {
            Some(uid) => {
                let mut cmd = Command::new("setpriv");
                let id = uid.to_string();
                cmd.args(["--reuid", &id, "--regid", &id, "--clear-groups", "--"])
                    .arg(dir.join("mcpool"));
                cmd
            }
            None => Command::new(bin("mcpool")),
        };
        cmd.args(["serve", "--config"])
            .arg(&config_path)
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .env("MCPOOL_TOKEN", token)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr_log)?)
            .kill_on_drop(true);
        let mut child = with_instance_env(&mut cmd, dir, extra_env).spawn()?;
        let line = first_line(&mut child, Duration::from_secs(20)).await.with_context(|| {
            format!(
                "mcpool did not start listening: {}",
                std::fs::read_to_string(&stderr_log).unwrap_or_default()
            )
        })?;
        Ok((child, listening_port(&line)?))
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn config_path(&self) -> PathBuf {
        self.dir.path().join("config.json")
    }

    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.stderr_log).unwrap_or_default()
    }

    pub async fn servers(&self) -> anyhow::Result<Vec<Value>> {
        Ok(serde_json::from_value(self.get_json("/api/servers").await?)?)
    }

    /// `GET path` with the token; the JSON of a 2xx answer.
    pub async fn get_json(&self, path: &str) -> anyhow::Result<Value> {
        get_json_with(&self.url(path), &self.token).await
    }

    pub async fn server(&self, name: &str) -> anyhow::Result<Value> {
        self.servers()
            .await?
            .into_iter()
            .find(|s| s["name"] == name)
            .ok_or_else(|| anyhow!("no server {name} in /api/servers"))
    }

    /// `POST path` with the control credential; the status and the JSON answer.
    pub async fn post(&self, path: &str) -> anyhow::Result<(u16, Value)> {
        self.api(reqwest::Method::POST, path, None).await
    }

    /// `method path` with the control credential (as mcpool's own CLI
    /// sends it) and a JSON body; the status and the JSON answer (`null`
    /// when it has none).
    pub async fn api(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> anyhow::Result<(u16, Value)> {
        self.api_with(&self.control()?, method, path, body).await
    }

    /// [`Mcpool::api`] with the agents' token, which may only read (and
    /// reconnect or disconnect).
    pub async fn api_as_agent(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> anyhow::Result<(u16, Value)> {
        self.api_with(&self.token, method, path, body).await
    }

    async fn api_with(
        &self,
        credential: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> anyhow::Result<(u16, Value)> {
        let mut r = reqwest::Client::new()
            .request(method, self.url(path))
            .bearer_auth(credential);
        if let Some(body) = body {
            r = r.json(&body);
        }
        let r = r.send().await?;
        let status = r.status().as_u16();
        Ok((status, r.json().await.unwrap_or(Value::Null)))
    }

    /// Polls `/api/servers` until `name` is there and `done` holds for its
    /// snapshot, or fails after `limit` saying it never got `what`.
    pub async fn wait_server(
        &self,
        name: &str,
        limit: Duration,
        what: &str,
        done: impl Fn(&Value) -> bool,
    ) -> anyhow::Result<Value> {
        eventually(
            limit,
            &format!("{name}: {what}"),
            async || self.server(name).await,
            done,
        )
        .await
    }

    /// Polls `/api/servers` until `name` is gone from it, or fails after `limit`.
    pub async fn wait_gone(&self, name: &str, limit: Duration) -> anyhow::Result<()> {
        let listed = async || Ok(Value::from(self.servers().await?));
        let gone = |all: &Value| !all.as_array().is_some_and(|a| a.iter().any(|s| s["name"] == name));
        eventually(limit, &format!("{name} gone from /api/servers"), listed, gone).await?;
        Ok(())
    }

    /// Polls `/api/servers` until `name` is there with `status`, or fails after `limit`.
    pub async fn wait_status(&self, name: &str, status: &str, limit: Duration) -> anyhow::Result<Value> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            // A server the config adds while running shows up after a poll.
            let s = match self.server(name).await {
                Ok(s) if s["status"] == status => return Ok(s),
                Ok(s) => s,
                Err(_) => Value::Null,
            };
            if tokio::time::Instant::now() > deadline {
                bail!(
                    "server {name} did not reach {status} within {limit:?}; last: {s}\nlogs:\n{}",
                    self.logs()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Connects an rmcp client as an agent to `path` (`/mcp` or `/servers/NAME/mcp`).
    pub async fn agent(&self, path: &str) -> anyhow::Result<Agent> {
        self.agent_with(path, AgentHandler::default()).await
    }

    /// [`Self::agent`] with a handler of the caller's (an elicitation answer).
    pub async fn agent_with(&self, path: &str, handler: AgentHandler) -> anyhow::Result<Agent> {
        let counters = handler.clone();
        let service = handler.serve(self.client_transport(path)).await?;
        Ok(Agent {
            service,
            handler: counters,
        })
    }

    /// The rmcp client transport to `path` here, with the token.
    pub fn client_transport(&self, path: &str) -> StreamableHttpClientTransport<reqwest::Client> {
        let config = StreamableHttpClientTransportConfig::with_uri(self.url(path)).auth_header(self.token.clone());
        StreamableHttpClientTransport::from_config(config)
    }

    /// Sends SIGTERM and waits for the exit (bounded).
    pub async fn stop(&mut self) -> anyhow::Result<std::process::ExitStatus> {
        if let Some(pid) = self.child.id() {
            // SAFETY: signals the child we spawned.
            unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        }
        Ok(tokio::time::timeout(Duration::from_secs(15), self.child.wait()).await??)
    }
}

impl Drop for Mcpool {
    fn drop(&mut self) {
        if let Some(pid) = self.child.id() {
            // SAFETY: signals the child we spawned; a graceful stop lets it
            // stop its own children.
            unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        }
    }
}

/// Writes an executable script (mode 755) at `path`.
pub fn write_script(path: &Path, text: impl AsRef<[u8]>) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
}

/// Asks `look` until `done` holds for its answer; fails after `limit` with
/// `what` (what never came) and the last answer.
pub async fn eventually<T: std::fmt::Display>(
    limit: Duration,
    what: &str,
    mut look: impl AsyncFnMut() -> anyhow::Result<T>,
    done: impl Fn(&T) -> bool,
) -> anyhow::Result<T> {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let answer = look().await?;
        if done(&answer) {
            return Ok(answer);
        }
        if tokio::time::Instant::now() > deadline {
            bail!("never {what} within {limit:?}; last: {answer}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
