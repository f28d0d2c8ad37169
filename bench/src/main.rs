//! `mcpool-bench`: how much mcpool costs an agent, measured on a release build.
//!
//! * echo latency through mcpool's `/mcp` against the same upstream spoken to
//!   directly over stdio (our `mcpool-faulty` and the official
//!   server-everything), sequential and with many calls in flight;
//! * time from spawning `mcpool serve` to a `tools/list` that holds both
//!   servers' tools;
//! * idle RSS of `mcpool serve` and, separately, of its children.
//!
//! Build with `cargo build --release --workspace --bins`, then run
//! `target/release/mcpool-bench --write docs/benchmarks.md`. The binaries are
//! looked up next to this one. Everything runs on loopback, every loop is
//! bounded, and every process this program starts is stopped before it exits.

mod stats;
mod sys;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use clap::Parser;
use rmcp::model::{CallToolRequestParams, ClientRequest, PingRequest};
use rmcp::service::{Peer, RoleClient, RunningService, ServiceExt};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{json, Map, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use stats::Summary;

/// The overhead target for a sequential echo, in ms.
const TARGET_OVERHEAD_MS: f64 = 0.15;
/// Upper bound for any single start-up or connection step.
const STEP_LIMIT: Duration = Duration::from_secs(30);
/// Upper bound for any single measured call.
const CALL_LIMIT: Duration = Duration::from_secs(10);

#[derive(Debug, Parser)]
#[command(about = "Benchmarks mcpool against direct stdio (echo latency, startup, idle RSS)")]
struct Cli {
    /// Measured sequential calls per case.
    #[arg(long, default_value_t = 2000)]
    calls: usize,
    /// Warm-up calls per case before measuring.
    #[arg(long, default_value_t = 200)]
    warmup: usize,
    /// Cases are interleaved in blocks of this many calls, so drift in the
    /// machine's load hits every case alike.
    #[arg(long, default_value_t = 100)]
    block: usize,
    /// Clients (mcpool) or calls (direct stdio) in flight at once.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Measured calls per concurrent client.
    #[arg(long, default_value_t = 250)]
    concurrent_calls: usize,
    /// Start-up runs of `mcpool serve` (and of each upstream alone).
    #[arg(long, default_value_t = 10)]
    startup_runs: usize,
    /// Seconds `mcpool serve` idles, servers connected, before RSS is read.
    #[arg(long, default_value_t = 3)]
    idle_secs: u64,
    /// Wait (polling every 20 s, at most --max-wait-secs) until the 1-minute
    /// load average is at most this before measuring.
    #[arg(long)]
    max_load: Option<f64>,
    #[arg(long, default_value_t = 1200)]
    max_wait_secs: u64,
    /// Where mcpool and mcpool-faulty are (default: next to this binary).
    #[arg(long)]
    bin_dir: Option<PathBuf>,
    /// node_modules holding @modelcontextprotocol/server-everything.
    #[arg(long)]
    node_modules: Option<PathBuf>,
    /// The node executable.
    #[arg(long, default_value = "node")]
    node: String,
    /// Write the report (markdown) to this file, replacing it.
    #[arg(long)]
    write: Option<PathBuf>,
    /// Markdown appended to the report under "Analysis" (default: bench/notes.md if present).
    #[arg(long)]
    notes: Option<PathBuf>,
}

fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// What the benchmark runs.
struct Env {
    mcpool: PathBuf,
    faulty: PathBuf,
    node: String,
    everything_js: PathBuf,
    tmp: PathBuf,
}

/// One upstream server, as a command line.
#[derive(Clone)]
struct Upstream {
    name: &'static str,
    label: &'static str,
    command: String,
    args: Vec<String>,
    /// The echo tool's argument name.
    echo_key: &'static str,
}

impl Env {
    fn new(cli: &Cli) -> anyhow::Result<Self> {
        let bin_dir = match &cli.bin_dir {
            Some(dir) => dir.clone(),
            None => std::env::current_exe()?
                .parent()
                .context("this binary has no parent directory")?
                .to_path_buf(),
        };
        let mcpool = bin_dir.join("mcpool");
        let faulty = bin_dir.join("mcpool-faulty");
        for bin in [&mcpool, &faulty] {
            if !bin.exists() {
                bail!(
                    "{} is missing: run `cargo build --release --workspace --bins` first",
                    bin.display()
                );
            }
        }
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

    fn faulty(&self) -> Upstream {
        Upstream {
            name: "faulty",
            label: "mcpool-faulty",
            command: self.faulty.display().to_string(),
            args: vec!["stdio".into()],
            echo_key: "text",
        }
    }

    fn everything(&self) -> Upstream {
        Upstream {
            name: "everything",
            label: "server-everything",
            command: self.node.clone(),
            args: vec![self.everything_js.display().to_string(), "stdio".into()],
            echo_key: "message",
        }
    }

    fn upstreams(&self) -> [Upstream; 2] {
        [self.faulty(), self.everything()]
    }

    fn config(&self) -> Value {
        let mut servers = Map::new();
        for u in self.upstreams() {
            servers.insert(u.name.into(), json!({"command": u.command, "args": u.args}));
        }
        json!({ "mcpServers": servers })
    }
}

type Client = RunningService<RoleClient, ()>;

/// An upstream spoken to directly over its stdio, as mcpool itself does.
struct Direct {
    client: Client,
    child: Child,
}

impl Direct {
    async fn spawn(upstream: &Upstream) -> anyhow::Result<Self> {
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

    fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    async fn stop(mut self) {
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
struct Mcpool {
    child: Child,
    pid: u32,
    port: u16,
    token: String,
    /// From spawn to the "listening" line.
    listening_after: Duration,
    started: Instant,
    http: reqwest::Client,
}

impl Mcpool {
    async fn start(env: &Env, tag: &str) -> anyhow::Result<Self> {
        let dir = env.tmp.join(tag);
        std::fs::create_dir_all(&dir)?;
        let config_path = dir.join("config.json");
        std::fs::write(&config_path, serde_json::to_vec_pretty(&env.config())?)?;
        let token = format!("bench-{}-{tag}", std::process::id());
        let stderr = std::fs::File::create(dir.join("mcpool.stderr"))?;
        let mut cmd = Command::new(&env.mcpool);
        cmd.args(["serve", "--config"])
            .arg(&config_path)
            .args(["--listen", "127.0.0.1:0", "--cache-dir"])
            .arg(dir.join("cache"))
            .env("MCPOOL_TOKEN", &token)
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .env("XDG_CACHE_HOME", dir.join("cache"))
            .env("XDG_DATA_HOME", dir.join("data"))
            .env_remove("MCPOOL_LISTEN")
            .env_remove("MCPOOL_CONFIG")
            .env_remove("MCPOOL_CACHE_DIR")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true);
        let started = Instant::now();
        let mut child = cmd
            .spawn()
            .with_context(|| format!("cannot start {}", env.mcpool.display()))?;
        let pid = child.id().context("mcpool has no pid")?;
        let stdout = child.stdout.take().context("mcpool stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(STEP_LIMIT, lines.next_line())
            .await
            .map_err(|_| anyhow!("mcpool did not print its address within {STEP_LIMIT:?}"))??
            .ok_or_else(|| anyhow!("mcpool exited before listening (see {})", dir.display()))?;
        let listening_after = started.elapsed();
        let port = line
            .rsplit(':')
            .next()
            .and_then(|p| p.trim_end_matches("/mcp").parse().ok())
            .ok_or_else(|| anyhow!("unexpected first line from mcpool: {line}"))?;
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
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

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    async fn agent(&self) -> anyhow::Result<Client> {
        let config = StreamableHttpClientTransportConfig::with_uri(self.url("/mcp")).auth_header(self.token.clone());
        let transport = StreamableHttpClientTransport::from_config(config);
        tokio::time::timeout(STEP_LIMIT, ().serve(transport))
            .await
            .map_err(|_| anyhow!("agent did not initialize within {STEP_LIMIT:?}"))?
            .map_err(|e| anyhow!("agent initialize failed: {e}"))
    }

    /// Polls `/api/servers` until every server is `connected`.
    async fn wait_connected(&self) -> anyhow::Result<()> {
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

    async fn stop(mut self) -> anyhow::Result<()> {
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

/// What a measured call does.
#[derive(Clone)]
enum Op {
    Echo { tool: String, key: &'static str },
    Ping,
}

async fn call(peer: &Peer<RoleClient>, op: &Op, i: usize) -> anyhow::Result<()> {
    let fut = async {
        match op {
            Op::Echo { tool, key } => {
                let mut args = Map::new();
                args.insert((*key).to_string(), Value::String(format!("hello {i}")));
                let result = peer
                    .call_tool(CallToolRequestParams::new(tool.clone()).with_arguments(args))
                    .await?;
                if result.is_error == Some(true) {
                    bail!("{tool} returned an error: {:?}", result.content);
                }
            }
            Op::Ping => {
                peer.send_request(ClientRequest::PingRequest(PingRequest::default()))
                    .await?;
            }
        }
        Ok(())
    };
    tokio::time::timeout(CALL_LIMIT, fut)
        .await
        .map_err(|_| anyhow!("a call took more than {CALL_LIMIT:?}"))?
}

/// One latency case: the peers its workers use and the processes whose CPU
/// time is charged to it.
struct Case {
    upstream: &'static str,
    path: &'static str,
    what: &'static str,
    op: Op,
    /// One per worker; sequential runs use the first.
    peers: Vec<Peer<RoleClient>>,
    mcpool_pid: Option<u32>,
    upstream_pid: Option<u32>,
}

#[derive(Default)]
struct CaseResult {
    micros: Vec<f64>,
    block_medians: Vec<f64>,
    wall: Duration,
    cpu_self_ns: u64,
    cpu_mcpool_ns: u64,
    cpu_upstream_ns: u64,
}

struct CpuMark {
    me: u64,
    mcpool: u64,
    upstream: u64,
}

impl Case {
    fn cpu_mark(&self) -> CpuMark {
        CpuMark {
            me: sys::cpu_ns(None),
            mcpool: self.mcpool_pid.map(|p| sys::cpu_ns(Some(p))).unwrap_or(0),
            upstream: self.upstream_pid.map(|p| sys::cpu_ns(Some(p))).unwrap_or(0),
        }
    }

    /// Runs `per_worker` calls on each of `workers` peers at once; returns
    /// every call's latency in µs.
    async fn run_block(
        &self,
        workers: usize,
        per_worker: usize,
        result: Option<&mut CaseResult>,
    ) -> anyhow::Result<()> {
        let before = self.cpu_mark();
        let started = Instant::now();
        let mut set = tokio::task::JoinSet::new();
        for peer in self.peers.iter().take(workers) {
            let peer = peer.clone();
            let op = self.op.clone();
            set.spawn(async move {
                let mut micros = Vec::with_capacity(per_worker);
                for i in 0..per_worker {
                    let t = Instant::now();
                    call(&peer, &op, i).await?;
                    micros.push(t.elapsed().as_secs_f64() * 1e6);
                }
                anyhow::Ok(micros)
            });
        }
        let mut block = Vec::with_capacity(workers * per_worker);
        while let Some(joined) = set.join_next().await {
            block.extend(joined??);
        }
        let wall = started.elapsed();
        let after = self.cpu_mark();
        if let Some(r) = result {
            r.wall += wall;
            r.cpu_self_ns += after.me.saturating_sub(before.me);
            r.cpu_mcpool_ns += after.mcpool.saturating_sub(before.mcpool);
            r.cpu_upstream_ns += after.upstream.saturating_sub(before.upstream);
            r.block_medians.push(stats::median(&block));
            r.micros.extend(block);
        }
        Ok(())
    }
}

/// Runs every case `total` calls per worker, interleaved in blocks of `block`.
async fn run_interleaved(
    cases: &[Case],
    workers: usize,
    warmup: usize,
    total: usize,
    block: usize,
) -> anyhow::Result<Vec<CaseResult>> {
    for case in cases {
        case.run_block(workers, warmup, None).await?;
    }
    let mut results: Vec<CaseResult> = cases.iter().map(|_| CaseResult::default()).collect();
    let block = block.max(1);
    let mut done = 0;
    while done < total {
        let n = block.min(total - done);
        for (case, result) in cases.iter().zip(results.iter_mut()) {
            case.run_block(workers, n, Some(result)).await?;
        }
        done += n;
    }
    Ok(results)
}

struct LatencyReport {
    cases: Vec<(String, String, String)>,
    results: Vec<CaseResult>,
}

struct Bench {
    cli: Cli,
    env: Env,
    out: String,
}

fn ms(us: f64) -> String {
    format!("{:.3}", us / 1000.0)
}

impl Bench {
    /// Sequential and concurrent echo latency: direct stdio vs mcpool.
    async fn latency(&mut self, pool: &Mcpool) -> anyhow::Result<(LatencyReport, LatencyReport)> {
        let upstreams = self.env.upstreams();
        let mut directs = Vec::new();
        for u in &upstreams {
            directs.push(Direct::spawn(u).await?);
        }
        let workers = self.cli.concurrency.max(1);
        let mut agents = Vec::new();
        for _ in 0..workers {
            agents.push(pool.agent().await?);
        }
        let children = sys::descendants(pool.pid);
        let child_pid = |u: &Upstream| -> Option<u32> {
            let needle = if u.name == "faulty" {
                "mcpool-faulty"
            } else {
                "server-everything"
            };
            children.iter().find(|c| c.cmdline.contains(needle)).map(|c| c.pid)
        };
        let agent_peers: Vec<Peer<RoleClient>> = agents.iter().map(|a| a.peer().clone()).collect();

        // Sanity: the echo answers through both paths.
        for (u, d) in upstreams.iter().zip(&directs) {
            call(d.client.peer(), &echo_op(u, false), 0).await?;
            call(&agent_peers[0], &echo_op(u, true), 0).await?;
        }

        let make_cases = |concurrent: bool| {
            let mut cases = Vec::new();
            for (u, d) in upstreams.iter().zip(&directs) {
                let direct_peers = vec![d.client.peer().clone(); workers];
                cases.push(Case {
                    upstream: u.label,
                    path: "direct stdio",
                    what: "echo",
                    op: echo_op(u, false),
                    peers: direct_peers,
                    mcpool_pid: None,
                    upstream_pid: d.pid(),
                });
                cases.push(Case {
                    upstream: u.label,
                    path: "mcpool /mcp",
                    what: "echo",
                    op: echo_op(u, true),
                    peers: agent_peers.clone(),
                    mcpool_pid: Some(pool.pid),
                    upstream_pid: child_pid(u),
                });
            }
            if !concurrent {
                // Decomposition: a ping answered by the upstream over stdio,
                // and one answered by mcpool itself over HTTP.
                cases.push(Case {
                    upstream: "mcpool-faulty",
                    path: "direct stdio",
                    what: "ping",
                    op: Op::Ping,
                    peers: vec![directs[0].client.peer().clone()],
                    mcpool_pid: None,
                    upstream_pid: directs[0].pid(),
                });
                cases.push(Case {
                    upstream: "(none: mcpool answers)",
                    path: "mcpool /mcp",
                    what: "ping",
                    op: Op::Ping,
                    peers: agent_peers.clone(),
                    mcpool_pid: Some(pool.pid),
                    upstream_pid: None,
                });
            }
            cases
        };

        let sequential_cases = make_cases(false);
        eprintln!(
            "sequential: {} cases x {} calls (+{} warm-up), blocks of {}",
            sequential_cases.len(),
            self.cli.calls,
            self.cli.warmup,
            self.cli.block
        );
        let sequential = run_interleaved(&sequential_cases, 1, self.cli.warmup, self.cli.calls, self.cli.block).await?;

        let concurrent_cases = make_cases(true);
        let per_worker_block = (self.cli.block / 4).max(1);
        eprintln!(
            "concurrent: {} cases x {workers} in flight x {} calls, blocks of {per_worker_block} per worker",
            concurrent_cases.len(),
            self.cli.concurrent_calls
        );
        let concurrent = run_interleaved(
            &concurrent_cases,
            workers,
            (self.cli.warmup / workers).max(5),
            self.cli.concurrent_calls,
            per_worker_block,
        )
        .await?;

        let describe = |cases: &[Case]| {
            cases
                .iter()
                .map(|c| (c.upstream.to_string(), c.path.to_string(), c.what.to_string()))
                .collect()
        };
        let reports = (
            LatencyReport {
                cases: describe(&sequential_cases),
                results: sequential,
            },
            LatencyReport {
                cases: describe(&concurrent_cases),
                results: concurrent,
            },
        );
        drop(sequential_cases);
        drop(concurrent_cases);
        drop(agent_peers);
        for agent in agents {
            let _ = tokio::time::timeout(Duration::from_secs(5), agent.cancel()).await;
        }
        for d in directs {
            d.stop().await;
        }
        Ok(reports)
    }

    fn latency_table(&mut self, title: &str, report: &LatencyReport, concurrent: bool) {
        let _ = writeln!(self.out, "### {title}\n");
        let _ = writeln!(
            self.out,
            "| upstream | path | call | n | median ms | p10–p90 ms | p99 ms |{} CPU µs/call: bench client / mcpool / upstream |",
            if concurrent { " calls/s |" } else { "" }
        );
        let _ = writeln!(
            self.out,
            "| --- | --- | --- | ---: | ---: | ---: | ---: |{} --- |",
            if concurrent { " ---: |" } else { "" }
        );
        for ((upstream, path, what), r) in report.cases.iter().zip(&report.results) {
            let s = Summary::of(&r.micros);
            let n = r.micros.len().max(1) as f64;
            let throughput = if concurrent {
                format!(" {:.0} |", r.micros.len() as f64 / r.wall.as_secs_f64().max(1e-9))
            } else {
                String::new()
            };
            let cpu = |ns: u64| format!("{:.0}", ns as f64 / 1000.0 / n);
            let mcpool_cpu = if path.starts_with("mcpool") {
                cpu(r.cpu_mcpool_ns)
            } else {
                "–".into()
            };
            let upstream_cpu = if upstream.starts_with("(none") {
                "–".into()
            } else {
                cpu(r.cpu_upstream_ns)
            };
            let _ = writeln!(
                self.out,
                "| {upstream} | {path} | {what} | {} | {} | {}–{} | {} |{throughput} {} / {mcpool_cpu} / {upstream_cpu} |",
                r.micros.len(),
                ms(s.median),
                ms(s.p10),
                ms(s.p90),
                ms(s.p99),
                cpu(r.cpu_self_ns),
            );
        }
        let _ = writeln!(self.out);
    }

    /// Median overhead per upstream: mcpool minus direct, overall and per block.
    fn overhead_rows(&mut self, report: &LatencyReport, label: &str, check_target: bool) -> Vec<(String, f64, bool)> {
        let mut verdicts = Vec::new();
        for upstream in ["mcpool-faulty", "server-everything"] {
            let find = |path: &str| {
                report
                    .cases
                    .iter()
                    .position(|(u, p, w)| u == upstream && p == path && w == "echo")
                    .map(|i| &report.results[i])
            };
            let (Some(direct), Some(via)) = (find("direct stdio"), find("mcpool /mcp")) else {
                continue;
            };
            let overhead = (stats::median(&via.micros) - stats::median(&direct.micros)) / 1000.0;
            let per_block: Vec<f64> = via
                .block_medians
                .iter()
                .zip(&direct.block_medians)
                .map(|(v, d)| (v - d) / 1000.0)
                .collect();
            let b = Summary::of(&per_block);
            let met = overhead <= TARGET_OVERHEAD_MS;
            let verdict = if check_target {
                if met {
                    format!("met (≤ {TARGET_OVERHEAD_MS} ms)")
                } else {
                    format!("**missed** (target ≤ {TARGET_OVERHEAD_MS} ms)")
                }
            } else {
                "(no target)".into()
            };
            let _ = writeln!(
                self.out,
                "| {label} | {upstream} | {:.3} | {:.3} ({:.3}–{:.3}) | {verdict} |",
                overhead, b.median, b.min, b.max
            );
            verdicts.push((format!("{label}, {upstream}"), overhead, met));
        }
        verdicts
    }

    async fn startup(&mut self) -> anyhow::Result<()> {
        let runs = self.cli.startup_runs.max(1);
        // Each upstream alone: spawn → initialize → tools/list.
        let mut alone = Vec::new();
        for u in self.env.upstreams() {
            let mut samples = Vec::new();
            for _ in 0..runs {
                let t = Instant::now();
                let d = Direct::spawn(&u).await?;
                let tools = tokio::time::timeout(STEP_LIMIT, d.client.peer().list_all_tools()).await??;
                samples.push(t.elapsed().as_secs_f64() * 1e6);
                if !tools.iter().any(|t| t.name == "echo") {
                    bail!("{} lists no echo tool", u.label);
                }
                d.stop().await;
            }
            alone.push((u.label, samples));
        }
        // mcpool with both: spawn → listening, and spawn → tools/list with both.
        let mut listening = Vec::new();
        let mut complete = Vec::new();
        let mut polls = Vec::new();
        for run in 0..runs {
            let pool = Mcpool::start(&self.env, &format!("startup-{run}")).await?;
            let agent = pool.agent().await?;
            let mut n = 0;
            let total = loop {
                n += 1;
                let tools = tokio::time::timeout(STEP_LIMIT, agent.peer().list_all_tools()).await??;
                let has = |name: &str| tools.iter().any(|t| t.name == name);
                if has("faulty__echo") && has("everything__echo") {
                    break pool.started.elapsed();
                }
                if pool.started.elapsed() > STEP_LIMIT {
                    bail!("tools/list lacked a server's tools {STEP_LIMIT:?} after start");
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            };
            listening.push(pool.listening_after.as_secs_f64() * 1e6);
            complete.push(total.as_secs_f64() * 1e6);
            polls.push(n as f64);
            let _ = tokio::time::timeout(Duration::from_secs(5), agent.cancel()).await;
            pool.stop().await?;
        }

        let _ = writeln!(self.out, "## Start-up\n");
        let _ = writeln!(
            self.out,
            "{runs} runs each, every run a fresh process with a fresh (empty) cache dir. \
             For mcpool the clock starts just before `spawn` of `mcpool serve` (both servers configured) and stops when \
             an agent, connected as soon as the address is printed, gets a `tools/list` holding both `faulty__echo` and \
             `everything__echo` (re-listing every 2 ms until it does; median {:.0} listings).\n",
            stats::median(&polls)
        );
        let _ = writeln!(self.out, "| what | median ms | p10–p90 ms | min–max ms |");
        let _ = writeln!(self.out, "| --- | ---: | ---: | ---: |");
        let mut row = |what: &str, samples: &[f64]| {
            let s = Summary::of(samples);
            let _ = writeln!(
                self.out,
                "| {what} | {:.1} | {:.1}–{:.1} | {:.1}–{:.1} |",
                s.median / 1000.0,
                s.p10 / 1000.0,
                s.p90 / 1000.0,
                s.min / 1000.0,
                s.max / 1000.0
            );
        };
        row("`mcpool serve` spawn → “listening” printed", &listening);
        row(
            "`mcpool serve` spawn → `tools/list` with both servers' tools",
            &complete,
        );
        for (label, samples) in &alone {
            row(
                &format!("{label} alone, direct stdio: spawn → initialize → tools/list"),
                samples,
            );
        }
        let _ = writeln!(self.out);
        Ok(())
    }

    fn rss_table(&mut self, title: &str, pool: &Mcpool) -> anyhow::Result<()> {
        let own = sys::status_kb(pool.pid, "VmRSS")?;
        let hwm = sys::status_kb(pool.pid, "VmHWM")?;
        let threads = sys::status_kb(pool.pid, "Threads").unwrap_or(0);
        let children = sys::descendants(pool.pid);
        let _ = writeln!(self.out, "{title}\n");
        let _ = writeln!(self.out, "| process | VmRSS MiB | VmHWM (peak) MiB |");
        let _ = writeln!(self.out, "| --- | ---: | ---: |");
        let mib = |kb: u64| format!("{:.1}", kb as f64 / 1024.0);
        let _ = writeln!(
            self.out,
            "| `mcpool serve` alone ({threads} threads) | {} | {} |",
            mib(own),
            mib(hwm)
        );
        let mut sum = 0;
        for c in &children {
            sum += c.rss_kb;
            let _ = writeln!(
                self.out,
                "| child: `{}` | {} | {} |",
                c.short_name(),
                mib(c.rss_kb),
                mib(c.hwm_kb)
            );
        }
        let _ = writeln!(self.out, "| children together | {} | |", mib(sum));
        let _ = writeln!(self.out);
        Ok(())
    }

    async fn run(&mut self) -> anyhow::Result<String> {
        let load_before = sys::loadavg();
        let date = sys::command_line("date", &["-u", "+%Y-%m-%d %H:%M UTC"]);
        eprintln!("load average before: {load_before}");

        eprintln!("start-up runs...");
        let mut body = std::mem::take(&mut self.out);
        self.startup().await?;
        let startup = std::mem::take(&mut self.out);

        eprintln!("idle RSS...");
        let pool = Mcpool::start(&self.env, "latency").await?;
        pool.wait_connected().await?;
        tokio::time::sleep(Duration::from_secs(self.cli.idle_secs)).await;
        let _ = writeln!(self.out, "## Memory\n");
        self.rss_table(
            &format!(
                "Idle: `mcpool serve` with both servers `connected`, no agent session yet, after {} s idle \
                 (`/proc/PID/status`; children are the upstream processes mcpool spawned).",
                self.cli.idle_secs
            ),
            &pool,
        )?;

        eprintln!("latency...");
        let (sequential, concurrent) = self.latency(&pool).await?;
        self.rss_table(
            &format!(
                "The same `mcpool serve` right after the latency runs below ({} agent sessions opened and closed, \
                 ~{} calls through it).",
                self.cli.concurrency,
                (self.cli.calls + self.cli.warmup) * 3 + self.cli.concurrent_calls * self.cli.concurrency * 2
            ),
            &pool,
        )?;
        let memory = std::mem::take(&mut self.out);
        pool.stop().await?;

        let _ = writeln!(self.out, "## Echo latency: mcpool vs direct stdio\n");
        let _ = writeln!(
            self.out,
            "Each case is an rmcp 3.11 client. *direct stdio*: the bench spawns the upstream and speaks MCP over its \
             stdin/stdout (rmcp `AsyncRwTransport`, as mcpool itself does). *mcpool /mcp*: an rmcp Streamable HTTP \
             client with the bearer token against `mcpool serve`, calling `faulty__echo` / `everything__echo`, which \
             mcpool forwards to its own stdio connection to the same kind of upstream. Cases run interleaved in blocks \
             (sequential: {} calls per case per block) so load drift hits all of them alike. CPU µs/call is the CPU \
             time (all threads, `/proc/PID/task/*/schedstat`) each process used during the case, divided by calls.\n",
            self.cli.block
        );
        let _ = writeln!(
            self.out,
            "The `ping` rows split mcpool's share: a ping through mcpool is answered by mcpool itself, so it is the \
             agent ↔ mcpool HTTP hop alone (rmcp client, TCP, POST + SSE response, rmcp server session); the direct \
             ping is one stdio round trip.\n"
        );
        self.latency_table(
            &format!(
                "Sequential: 1 call in flight, {} calls after {} warm-up",
                self.cli.calls, self.cli.warmup
            ),
            &sequential,
            false,
        );
        self.latency_table(
            &format!(
                "Concurrent: {} in flight ({} mcpool agent sessions, or {} concurrent calls on one direct stdio \
                 connection), {} calls per case",
                self.cli.concurrency,
                self.cli.concurrency,
                self.cli.concurrency,
                self.cli.concurrency * self.cli.concurrent_calls
            ),
            &concurrent,
            true,
        );
        let _ = writeln!(self.out, "### Overhead (mcpool median − direct median)\n");
        let _ = writeln!(
            self.out,
            "| load | upstream | overhead ms | per-block overhead ms: median (min–max) | target |"
        );
        let _ = writeln!(self.out, "| --- | --- | ---: | ---: | --- |");
        let verdicts = self.overhead_rows(&sequential, "sequential", true);
        self.overhead_rows(&concurrent, &format!("{} in flight", self.cli.concurrency), false);
        let _ = writeln!(self.out);
        let ping = |report: &LatencyReport, path: &str| {
            report
                .cases
                .iter()
                .position(|(_, p, w)| p == path && w == "ping")
                .map(|i| stats::median(&report.results[i].micros) / 1000.0)
        };
        if let (Some(http), Some(stdio)) = (ping(&sequential, "mcpool /mcp"), ping(&sequential, "direct stdio")) {
            let _ = writeln!(
                self.out,
                "Split (medians, sequential): agent ↔ mcpool HTTP hop alone (ping answered by mcpool) = **{http:.3} ms**; \
                 one stdio round trip to mcpool-faulty (direct ping) = {stdio:.3} ms. The mcpool echo overhead minus \
                 the HTTP hop is what routing through the pool and the upstream connection inside mcpool adds:"
            );
            for (label, overhead, _) in &verdicts {
                let _ = writeln!(
                    self.out,
                    "- {label}: overhead {overhead:.3} ms = HTTP hop {http:.3} ms + pool/forwarding {:.3} ms",
                    overhead - http
                );
            }
            let _ = writeln!(self.out);
        }
        let latency = std::mem::take(&mut self.out);

        let load_after = sys::loadavg();
        let target_met = !verdicts.is_empty() && verdicts.iter().all(|(_, _, met)| *met);

        // Assemble.
        let _ = writeln!(body, "# mcpool benchmarks\n");
        let _ = writeln!(
            body,
            "Generated by `mcpool-bench` (crate `bench/`) on {date}. Overwritten on every run with `--write`.\n"
        );
        let _ = writeln!(body, "## Summary\n");
        for (label, overhead, met) in &verdicts {
            let _ = writeln!(
                body,
                "- Median echo overhead of mcpool over direct stdio ({label}): **{overhead:.3} ms** — target ≤ \
                 {TARGET_OVERHEAD_MS} ms **{}**.",
                if *met { "met" } else { "missed" }
            );
        }
        let _ = writeln!(
            body,
            "- Overall: the {TARGET_OVERHEAD_MS} ms median-overhead target is **{}**.\n",
            if target_met { "met" } else { "not met" }
        );
        let _ = writeln!(body, "## How it was run\n");
        let _ = writeln!(body, "```sh");
        let _ = writeln!(body, "cargo build --release --workspace --bins");
        let _ = writeln!(body, "{}", sys::invocation());
        let _ = writeln!(body, "```\n");
        let _ = writeln!(body, "| | |\n| --- | --- |");
        let _ = writeln!(body, "| date | {date} |");
        let _ = writeln!(body, "| commit | {} |", sys::git_describe(&repo_root()));
        let _ = writeln!(body, "| CPUs (nproc) | {} |", sys::nproc());
        let _ = writeln!(body, "| CPU model | {} |", sys::cpu_model());
        let _ = writeln!(body, "| RAM | {} |", sys::mem_total());
        let _ = writeln!(body, "| kernel | {} |", sys::kernel());
        let _ = writeln!(body, "| rustc | {} |", sys::command_line("rustc", &["--version"]));
        let _ = writeln!(body, "| node | {} |", sys::command_line(&self.env.node, &["--version"]));
        let _ = writeln!(body, "| build | release profile (`opt-level 3`, `debug = 1`) |");
        let _ = writeln!(
            body,
            "| load average (1/5/15 min) | before: {load_before}; after: {load_after} |"
        );
        let _ = writeln!(body);
        let _ = writeln!(
            body,
            "The machine is shared: other jobs may run at the same time. Numbers are medians with their spread; \
             compare cases within one run rather than across runs.\n"
        );
        body.push_str(&latency);
        body.push_str(&startup);
        body.push_str(&memory);
        let notes = self
            .cli
            .notes
            .clone()
            .unwrap_or_else(|| repo_root().join("bench/notes.md"));
        if let Ok(text) = std::fs::read_to_string(&notes) {
            let _ = writeln!(body, "## Analysis\n");
            body.push_str(text.trim());
            body.push('\n');
        }
        Ok(body)
    }
}

fn echo_op(u: &Upstream, through_mcpool: bool) -> Op {
    Op::Echo {
        tool: if through_mcpool {
            format!("{}__echo", u.name)
        } else {
            "echo".into()
        },
        key: u.echo_key,
    }
}

async fn wait_for_low_load(max: f64, max_wait: Duration) {
    let deadline = Instant::now() + max_wait;
    loop {
        let load = sys::load1();
        if load <= max {
            eprintln!("1-minute load {load:.2} ≤ {max}: measuring");
            return;
        }
        if Instant::now() >= deadline {
            eprintln!("1-minute load still {load:.2} > {max} after {max_wait:?}: measuring anyway");
            return;
        }
        eprintln!("1-minute load {load:.2} > {max}: waiting 20 s");
        tokio::time::sleep(Duration::from_secs(20)).await;
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let env = Env::new(&cli)?;
    if let Some(max) = cli.max_load {
        wait_for_low_load(max, Duration::from_secs(cli.max_wait_secs)).await;
    }
    let tmp = env.tmp.clone();
    let write = cli.write.clone();
    let mut bench = Bench {
        cli,
        env,
        out: String::new(),
    };
    let result = bench.run().await;
    let _ = std::fs::remove_dir_all(&tmp);
    let report = result?;
    println!("{report}");
    if let Some(path) = write {
        std::fs::write(&path, &report).with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}
