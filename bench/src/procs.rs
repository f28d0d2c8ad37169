//! The processes a benchmark drives: the upstreams, direct stdio clients and `mcpool serve`.

use crate::*;
use anyhow::{anyhow, bail, Context};
use rmcp::model::ProtocolVersion;
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService, ServiceExt};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{json, Map, Value};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::process::{Child, Command};

pub(crate) use mcpool_tests::repo_root;

/// What the benchmark runs.
pub(crate) struct Env {
    pub(crate) mcpool: PathBuf,
    pub(crate) faulty: PathBuf,
    pub(crate) node: String,
    pub(crate) everything_js: PathBuf,
    pub(crate) tmp: PathBuf,
}

/// One upstream server, as a command line.
#[derive(Clone)]
pub(crate) struct Upstream {
    pub(crate) name: &'static str,
    pub(crate) label: &'static str,
    pub(crate) command: String,
    pub(crate) args: Vec<String>,
    /// The echo tool's argument name.
    pub(crate) echo_key: &'static str,
}

impl Env {
    pub(crate) fn new(cli: &Cli) -> anyhow::Result<Self> {
        let (bin_dir, [mcpool, faulty]) = crate::sys::bench_bins(cli.bin_dir.as_deref(), ["mcpool", "mcpool-faulty"])?;
        let node_modules = cli
            .node_modules
            .clone()
            .unwrap_or_else(|| repo_root().join("node_modules"));
        let everything_js = node_modules.join("@modelcontextprotocol/server-everything/dist/index.js");
        if !everything_js.exists() {
            bail!("{} is missing: run scripts/test-env.sh", everything_js.display());
        }
        let tmp = bin_dir.join("bench-tmp").join(std::process::id().to_string());
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
        Ok(Env {
            mcpool,
            faulty,
            node: cli.node.clone(),
            everything_js,
            tmp,
        })
    }

    pub(crate) fn faulty(&self) -> Upstream {
        Upstream {
            name: "faulty",
            label: "mcpool-faulty",
            command: self.faulty.display().to_string(),
            args: vec!["stdio".into()],
            echo_key: "text",
        }
    }

    pub(crate) fn everything(&self) -> Upstream {
        Upstream {
            name: "everything",
            label: "server-everything",
            command: self.node.clone(),
            args: vec![self.everything_js.display().to_string(), "stdio".into()],
            echo_key: "message",
        }
    }

    pub(crate) fn upstreams(&self) -> [Upstream; 2] {
        [self.faulty(), self.everything()]
    }

    pub(crate) fn config(&self) -> Value {
        let mut servers = Map::new();
        for u in self.upstreams() {
            servers.insert(u.name.into(), json!({"command": u.command, "args": u.args}));
        }
        json!({ "mcpServers": servers })
    }
}

type Client = RunningService<RoleClient, ()>;

/// An upstream spoken to directly over its stdio, as mcpool itself does.
pub(crate) struct Direct {
    pub(crate) client: Client,
    pub(crate) child: Child,
}

impl Direct {
    pub(crate) async fn spawn(upstream: &Upstream) -> anyhow::Result<Self> {
        let mut child = Command::new(&upstream.command)
            .args(&upstream.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("cannot start {}", upstream.command))?;
        let stdout = child.stdout.take().context("child stdout")?;
        let stdin = child.stdin.take().context("child stdin")?;
        let transport = AsyncRwTransport::new_client(stdout, stdin);
        let client = tokio::time::timeout(STEP_LIMIT, ().serve(transport))
            .await
            .map_err(|_| anyhow!("{} did not initialize within {STEP_LIMIT:?}", upstream.label))??;
        Ok(Direct { client, child })
    }

    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    pub(crate) async fn stop(mut self) {
        let _ = tokio::time::timeout(Duration::from_secs(5), self.client.cancel()).await;
        if tokio::time::timeout(Duration::from_secs(5), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}

/// A running `mcpool serve`, stopped with SIGTERM so it stops its children.
pub(crate) struct Mcpool {
    pub(crate) child: Child,
    pub(crate) pid: u32,
    pub(crate) port: u16,
    pub(crate) token: String,
    /// From spawn to the "listening" line.
    pub(crate) listening_after: Duration,
    pub(crate) started: Instant,
    pub(crate) http: reqwest::Client,
}

impl Mcpool {
    pub(crate) async fn start(env: &Env, tag: &str) -> anyhow::Result<Self> {
        let dir = env.tmp.join(tag);
        std::fs::create_dir_all(&dir)?;
        let config_path = dir.join("config.json");
        std::fs::write(&config_path, serde_json::to_vec_pretty(&env.config())?)?;
        let token = format!("bench-{}-{tag}", std::process::id());
        let started = Instant::now();
        let mut child = crate::serve::spawn_serve(&env.mcpool, &config_path, &dir, &token, &[])
            .with_context(|| format!("cannot start {}", env.mcpool.display()))?;
        let pid = child.id().context("mcpool has no pid")?;
        let line = mcpool_tests::first_line(&mut child, STEP_LIMIT)
            .await
            .with_context(|| format!("mcpool did not start listening (see {})", dir.display()))?;
        let listening_after = started.elapsed();
        let port = mcpool_tests::listening_port(&line)?;
        Ok(Mcpool {
            child,
            pid,
            port,
            token,
            listening_after,
            started,
            http: reqwest::Client::new(),
        })
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub(crate) async fn agent(&self) -> anyhow::Result<Client> {
        mcpool_tests::keep_alive_agent(&self.url("/mcp"), Some(&self.token), STEP_LIMIT).await
    }

    /// An agent that speaks 2026-07-28 only: no `initialize` and no
    /// session; rmcp sends `server/discover` once, then every request
    /// carries the revision, client info and capabilities in its `_meta`.
    /// Same keep-alive HTTP client as [`Self::agent`].
    pub(crate) async fn stateless_agent(&self) -> anyhow::Result<Client> {
        let config = StreamableHttpClientTransportConfig::with_uri(self.url("/mcp")).auth_header(self.token.clone());
        let client = reqwest::Client::builder().tcp_nodelay(true).build()?;
        let transport = StreamableHttpClientTransport::with_client(client, config);
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        let client = tokio::time::timeout(STEP_LIMIT, ().serve_with_lifecycle(transport, lifecycle))
            .await
            .map_err(|_| anyhow!("stateless agent did not discover within {STEP_LIMIT:?}"))?
            .map_err(|e| anyhow!("stateless agent discover failed: {e}"))?;
        let revision = client.peer().peer_info().map(|i| i.protocol_version.to_string());
        if revision.as_deref() != Some(ProtocolVersion::V_2026_07_28.as_str()) {
            bail!("the stateless agent negotiated {revision:?}, not 2026-07-28");
        }
        Ok(client)
    }

    /// Polls `/api/servers` until every server is `connected`.
    pub(crate) async fn wait_connected(&self) -> anyhow::Result<()> {
        let deadline = Instant::now() + STEP_LIMIT;
        loop {
            let servers: Vec<Value> = self
                .http
                .get(self.url("/api/servers"))
                .bearer_auth(&self.token)
                .send()
                .await?
                .error_for_status()?
                .json()
                .await?;
            if !servers.is_empty() && servers.iter().all(|s| s["status"] == "connected") {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("servers not connected within {STEP_LIMIT:?}: {servers:?}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub(crate) async fn stop(mut self) -> anyhow::Result<()> {
        // SAFETY: signals the child this program spawned and still owns.
        unsafe { libc::kill(self.pid as libc::pid_t, libc::SIGTERM) };
        if tokio::time::timeout(Duration::from_secs(15), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
            bail!("mcpool did not stop within 15 s of SIGTERM");
        }
        Ok(())
    }
}
