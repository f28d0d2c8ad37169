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

mod cases;
mod peer;
mod procs;
mod relay;
#[allow(dead_code)]
mod serve;
mod startup;
#[allow(dead_code)]
mod stats;
#[allow(dead_code)]
mod sys;
mod tables;

pub(crate) use cases::*;
pub(crate) use procs::*;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use rmcp::service::{Peer, RoleClient};

/// The overhead target for a sequential echo, in ms.
pub(crate) const TARGET_OVERHEAD_MS: f64 = 0.15;
/// The path label of the 2026-07-28 (stateless) agent's cases.
pub(crate) const STATELESS_PATH: &str = "mcpool /mcp, 2026-07-28 stateless";
/// The path label of the peer's cases (supergateway).
pub(crate) const PEER_PATH: &str = "supergateway --stateful /mcp";
/// The path label of the floor's case (`relay.rs`).
pub(crate) const RELAY_PATH: &str = "bare HTTP relay (floor)";
/// Upper bound for any single start-up or connection step.
pub(crate) const STEP_LIMIT: Duration = Duration::from_secs(30);
/// Upper bound for any single measured call.
pub(crate) const CALL_LIMIT: Duration = Duration::from_secs(10);

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
    /// supergateway's `dist/index.js` (npm `supergateway`): adds its
    /// Streamable HTTP gateway in front of mcpool-faulty as a peer to compare.
    #[arg(long)]
    supergateway: Option<PathBuf>,
    /// Markdown appended to the report under "Analysis" (default: bench/notes.md if present).
    #[arg(long)]
    notes: Option<PathBuf>,
}

pub(crate) struct Bench {
    pub(crate) cli: Cli,
    pub(crate) env: Env,
    pub(crate) out: String,
}

pub(crate) fn ms(us: f64) -> String {
    format!("{:.3}", us / 1000.0)
}

impl Bench {
    /// Sequential and concurrent echo latency: direct stdio vs mcpool.
    pub(crate) async fn latency(&mut self, pool: &Mcpool) -> anyhow::Result<(LatencyReport, LatencyReport)> {
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
        let mut stateless = Vec::new();
        for _ in 0..workers {
            stateless.push(pool.stateless_agent().await?);
        }
        let stateless_peers: Vec<Peer<RoleClient>> = stateless.iter().map(|a| a.peer().clone()).collect();
        let gateway = match &self.cli.supergateway {
            Some(script) => Some(peer::Supergateway::start(&self.env, script).await?),
            None => None,
        };
        let mut gateway_agents = Vec::new();
        if let Some(g) = &gateway {
            for _ in 0..workers {
                gateway_agents.push(g.agent().await?);
            }
        }
        let gateway_peers: Vec<Peer<RoleClient>> = gateway_agents.iter().map(|a| a.peer().clone()).collect();
        let relay = relay::Relay::start(&upstreams[0]).await?;
        let relay_agent = relay.agent().await?;
        call(relay_agent.peer(), &echo_op(&upstreams[0], false), 0).await?;
        if let Some(p) = gateway_peers.first() {
            call(p, &echo_op(&upstreams[0], false), 0).await?;
        }

        // Sanity: the echo answers through both paths.
        for (u, d) in upstreams.iter().zip(&directs) {
            call(d.client.peer(), &echo_op(u, false), 0).await?;
            call(&agent_peers[0], &echo_op(u, true), 0).await?;
        }
        call(&stateless_peers[0], &echo_op(&upstreams[0], true), 0).await?;

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
                if u.name == "faulty" {
                    cases.push(Case {
                        upstream: u.label,
                        path: STATELESS_PATH,
                        what: "echo",
                        op: echo_op(u, true),
                        peers: stateless_peers.clone(),
                        mcpool_pid: Some(pool.pid),
                        upstream_pid: child_pid(u),
                    });
                    if let Some(g) = &gateway {
                        cases.push(Case {
                            upstream: u.label,
                            path: PEER_PATH,
                            what: "echo",
                            op: echo_op(u, false),
                            peers: gateway_peers.clone(),
                            mcpool_pid: Some(g.pid),
                            upstream_pid: None,
                        });
                    }
                }
            }
            if !concurrent {
                // The floor: the same echo through a bare HTTP relay
                // (one child, so sequential only).
                cases.push(Case {
                    upstream: upstreams[0].label,
                    path: RELAY_PATH,
                    what: "echo",
                    op: echo_op(&upstreams[0], false),
                    peers: vec![relay_agent.peer().clone()],
                    mcpool_pid: Some(relay.pid),
                    upstream_pid: relay.upstream_pid(),
                });
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
        drop(stateless_peers);
        drop(gateway_peers);
        for agent in agents
            .into_iter()
            .chain(stateless)
            .chain(gateway_agents)
            .chain([relay_agent])
        {
            let _ = tokio::time::timeout(Duration::from_secs(5), agent.cancel()).await;
        }
        for d in directs {
            d.stop().await;
        }
        if let Some(g) = gateway {
            g.stop().await;
        }
        relay.stop().await;
        Ok(reports)
    }

    pub(crate) async fn run(&mut self) -> anyhow::Result<String> {
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
                 as many stateless agents, ~{} calls through it).",
                self.cli.concurrency,
                (self.cli.calls + self.cli.warmup) * 4 + self.cli.concurrent_calls * self.cli.concurrency * 3
            ),
            &pool,
        )?;
        // What it holds at rest: freed memory goes back to the system once
        // the agents are quiet (2 s, `os/memory/`).
        let rest = self.cli.idle_secs.max(3);
        tokio::time::sleep(Duration::from_secs(rest)).await;
        self.rss_table(
            &format!("The same `mcpool serve` {rest} s later, at rest (no agent connected)."),
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
             mcpool forwards to its own stdio connection to the same kind of upstream. *2026-07-28 stateless*: the \
             same rmcp client and HTTP connection settings, pinned to MCP 2026-07-28: no `initialize` and no \
             session (one `server/discover` before the run), every request carrying the revision, client info and \
             capabilities in its `_meta`. *bare HTTP relay (floor)*: the same session agent against a few lines of axum that \
             write each POSTed message to one mcpool-faulty's stdin and answer with its reply line as JSON \
             (`bench/src/relay.rs`: no MCP stack, sessions, token or names), the least any HTTP → stdio gateway does. \
             Cases run interleaved in blocks \
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
            "| load | upstream | agent | overhead ms | per-block overhead ms: median (min–max) | target |"
        );
        let _ = writeln!(self.out, "| --- | --- | --- | ---: | ---: | --- |");
        let verdicts = self.overhead_rows(&sequential, "sequential", true);
        self.overhead_rows(&concurrent, &format!("{} in flight", self.cli.concurrency), false);
        let _ = writeln!(self.out);
        if let Some(script) = &self.cli.supergateway {
            let _ = writeln!(
                self.out,
                "### Side by side: supergateway {}\n\nThe same rmcp agent and keep-alive client against supergateway's \
                 Streamable HTTP gateway (`--stateful`: one mcpool-faulty per agent session, spawned by it) in front \
                 of mcpool-faulty, interleaved with the cases above. Ratios below 1 (medians) and above 1 (calls/s) \
                 favour mcpool.\n",
                peer::version(script)
            );
            let _ = writeln!(
                self.out,
                "| load | mcpool median ms | supergateway median ms | mcpool ÷ supergateway | mcpool calls/s | \
                 supergateway calls/s | mcpool ÷ supergateway |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
            );
            self.peer_rows(&sequential, "sequential");
            self.peer_rows(&concurrent, &format!("{} in flight", self.cli.concurrency));
            let _ = writeln!(self.out);
        }
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
            "- Overall: the {TARGET_OVERHEAD_MS} ms median-overhead target is **{}**.",
            if target_met { "met" } else { "not met" }
        );
        if let Some((floor, above, cpu_ratio)) = Bench::floor(&sequential) {
            let _ = writeln!(
                body,
                "- The floor on this machine: a bare HTTP → stdio relay (no MCP stack, no sessions, no token) with the \
                 same agent adds **{floor:.3} ms** over direct stdio{}; mcpool adds **{above:.3} ms** on top of \
                 that floor and spends **{cpu_ratio:.1}×** the relay's CPU per call.",
                if floor > TARGET_OVERHEAD_MS {
                    format!(", already more than the {TARGET_OVERHEAD_MS} ms target")
                } else {
                    String::new()
                }
            );
        }
        let _ = writeln!(body);
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

pub(crate) fn echo_op(u: &Upstream, through_mcpool: bool) -> Op {
    Op::Echo {
        tool: if through_mcpool {
            format!("{}__echo", u.name)
        } else {
            "echo".into()
        },
        key: u.echo_key,
    }
}

pub(crate) async fn wait_for_low_load(max: f64, max_wait: Duration) {
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
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(relay::SUBCOMMAND) {
        let program = args.get(2).context("usage: mcpool-bench relay PROGRAM [ARGS...]")?;
        return relay::serve(program, &args[3..]).await;
    }
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
