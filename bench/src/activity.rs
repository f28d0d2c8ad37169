//! `mcpool-bench-activity`: what the activity log costs.
//!
//! * echo calls through `/mcp` with the log on against off (the config's
//!   `"activity": {"enabled": false}`), with 1 and with 16 session agents,
//!   the two alternating run by run so drift in the machine's load hits
//!   both alike: latency (median, p90, p99) and calls per second;
//! * the file's size per million logged calls (a million entries written
//!   through the real writer, as the calls above write them);
//! * the resident set of `mcpool serve` after `--million` calls through it
//!   with the log on (default one million).
//!
//! Build with `cargo build --release --workspace --bins`, then run
//! `target/release/mcpool-bench-activity --write docs/benchmarks.md`, which
//! replaces the section of its own in that file.

mod activity_queries;
#[allow(dead_code)]
mod serve;
#[allow(dead_code)]
mod stats;
#[allow(dead_code)]
mod sys;

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{bail, Context};
use clap::Parser;
use mcpool_core::activity::{Activity, Agent, Entry, Kind, Retention};
use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, RoleClient, RunningService};
use serde_json::{json, Map, Value};

use stats::Summary;

const SECTION: &str = "## Activity log: what it costs";
const STEP_LIMIT: Duration = Duration::from_secs(60);

#[derive(Debug, Parser)]
#[command(
    about = "Benchmarks the activity log: calls with it on and off, its size per million calls, memory after a million"
)]
struct Cli {
    /// Measured calls per agent per run.
    #[arg(long, default_value_t = 1000)]
    calls: usize,
    /// Runs per setting (on/off alternate).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Calls made through mcpool before its memory is read.
    #[arg(long, default_value_t = 1_000_000)]
    million: usize,
    /// Entries written straight to a file for its size.
    #[arg(long, default_value_t = 1_000_000)]
    entries: usize,
    /// Times each read this many times on the size step's file.
    #[arg(long, default_value_t = 30)]
    query_reps: usize,
    /// Only the file: its size, the writer's rate and the reads (no calls
    /// through `mcpool serve`, no memory).
    #[arg(long)]
    only_file: bool,
    #[command(flatten)]
    out: sys::Out,
}

type Client = RunningService<RoleClient, ()>;

#[derive(Default, Clone)]
struct Sample {
    ms: Vec<f64>,
    per_sec: f64,
}

struct Instance {
    child: tokio::process::Child,
    pid: u32,
    port: u16,
    token: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let (bin_dir, [mcpool, faulty]) = sys::bench_bins(cli.out.bin_dir.as_deref(), ["mcpool", "mcpool-faulty"])?;
    let tmp = sys::scratch_dir(&bin_dir, "activity")?;
    let load_before = sys::loadavg();
    let result = run_all(&cli, &mcpool, &faulty, &tmp).await;
    let _ = std::fs::remove_dir_all(&tmp);
    let (samples, size, memory) = result?;
    let section = report(&cli, &samples, &size, memory, &load_before);
    sys::publish(cli.out.write.as_deref(), SECTION, &section)
}

type Samples = Vec<((bool, usize), Vec<Sample>)>;

/// The size step: bytes on disk, entries/s, and the reads timed on it.
struct FileStep {
    bytes: u64,
    per_sec: f64,
    reads: Vec<activity_queries::Timed>,
}

async fn run_all(
    cli: &Cli,
    mcpool: &Path,
    faulty: &Path,
    tmp: &Path,
) -> anyhow::Result<(Samples, FileStep, Option<(u64, u64, u64)>)> {
    let mut samples: Samples = Vec::new();
    for agents in [1usize, 16].into_iter().filter(|_| !cli.only_file) {
        let mut on = Vec::new();
        let mut off = Vec::new();
        for run in 0..cli.runs {
            for enabled in [true, false] {
                let dir = tmp.join(format!("a{agents}-r{run}-{enabled}"));
                let mut inst = start(mcpool, faulty, &dir, enabled).await?;
                let s = measure(&inst, agents, cli.calls).await;
                stop(&mut inst).await;
                let s = s?;
                eprintln!(
                    "{agents} agent(s), log {}: median {:.3} ms, {:.0} calls/s",
                    if enabled { "on" } else { "off" },
                    stats::median(&s.ms),
                    s.per_sec
                );
                if enabled {
                    on.push(s)
                } else {
                    off.push(s)
                }
            }
        }
        samples.push(((true, agents), on));
        samples.push(((false, agents), off));
    }
    let dir = tmp.join("size");
    let (bytes, per_sec, mid_ms, mid_id) = file_size(cli.entries, &dir)?;
    eprintln!("{} entries: {bytes} bytes, {per_sec:.0} entries/s", cli.entries);
    let reads = activity_queries::run(&dir.join("size.db"), mid_ms, mid_id, cli.query_reps)?;
    for r in &reads {
        eprintln!("{}: median {:.3} ms ({} items)", r.what, r.ms.median, r.items);
    }
    let size = FileStep { bytes, per_sec, reads };
    let memory = if cli.only_file {
        None
    } else {
        Some(memory_after(cli.million, mcpool, faulty, &tmp.join("million")).await?)
    };
    Ok((samples, size, memory))
}

async fn start(mcpool: &Path, faulty: &Path, dir: &Path, enabled: bool) -> anyhow::Result<Instance> {
    std::fs::create_dir_all(dir)?;
    let config = dir.join("config.json");
    let body = json!({
        "activity": {"enabled": enabled},
        "mcpServers": {"f": {"command": faulty, "args": ["stdio"]}},
    });
    std::fs::write(&config, serde_json::to_vec(&body)?)?;
    let token = format!("bench-activity-{}", std::process::id());
    let mut child = serve::spawn_serve(mcpool, &config, dir, &token, &[])?;
    let pid = child.id().context("mcpool has no pid")?;
    let line = mcpool_tests::first_line(&mut child, STEP_LIMIT).await?;
    let port = mcpool_tests::listening_port(&line)?;
    let inst = Instance {
        child,
        pid,
        port,
        token,
    };
    serve::wait_connected(inst.port, &inst.token, 1, STEP_LIMIT).await?;
    Ok(inst)
}

async fn stop(inst: &mut Instance) {
    serve::stop(&mut inst.child, inst.pid, Duration::from_secs(20)).await;
}

async fn agents(inst: &Instance, n: usize) -> anyhow::Result<Vec<Client>> {
    let url = format!("http://127.0.0.1:{}/mcp", inst.port);
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(mcpool_tests::keep_alive_agent(&url, Some(&inst.token), STEP_LIMIT).await?);
    }
    Ok(out)
}

/// `calls` echo calls per agent, all agents at once; warm-up first.
async fn calls(clients: &[Client], calls: usize) -> anyhow::Result<Sample> {
    let mut set = tokio::task::JoinSet::new();
    for a in clients {
        let peer = a.peer().clone();
        set.spawn(async move {
            let mut ms = Vec::with_capacity(calls);
            for c in 0..calls {
                let t = Instant::now();
                echo(&peer, c).await?;
                ms.push(t.elapsed().as_secs_f64() * 1000.0);
            }
            anyhow::Ok(ms)
        });
    }
    let t = Instant::now();
    let mut sample = Sample::default();
    while let Some(r) = set.join_next().await {
        sample.ms.extend(r??);
    }
    sample.per_sec = sample.ms.len() as f64 / t.elapsed().as_secs_f64();
    Ok(sample)
}

async fn measure(inst: &Instance, n: usize, per_agent: usize) -> anyhow::Result<Sample> {
    let clients = agents(inst, n).await?;
    calls(&clients, 50).await?;
    let s = calls(&clients, per_agent).await?;
    for c in clients {
        let _ = tokio::time::timeout(Duration::from_secs(5), c.cancel()).await;
    }
    Ok(s)
}

async fn echo(peer: &Peer<RoleClient>, i: usize) -> anyhow::Result<()> {
    let mut args = Map::new();
    args.insert("text".into(), Value::String(format!("hello {i}")));
    let call = peer.call_tool(CallToolRequestParams::new("f__echo").with_arguments(args));
    let result = tokio::time::timeout(STEP_LIMIT, call).await??;
    if result.is_error == Some(true) {
        bail!("echo returned an error: {:?}", result.content);
    }
    Ok(())
}

/// Writes `n` entries like a real call's through the real writer, with a
/// status event every 1000; the file's bytes, the entries per second the
/// writer took, and the middle entry's time and id (for the reads).
fn file_size(n: usize, dir: &Path) -> anyhow::Result<(u64, f64, i64, i64)> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join("size.db");
    let activity = Activity::open(path.clone(), Retention::default());
    let t = Instant::now();
    let mut mid_ms = 0;
    for i in 0..n {
        if i == n / 2 {
            mid_ms = i64::try_from(SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_millis())?;
        }
        if i % 1000 == 999 {
            let status = if i % 2000 == 999 { "failed" } else { "connected" };
            activity.record(Entry::server_event(
                &format!("server-{}", i % 8),
                "status",
                status,
                None,
            ));
        }
        activity.record(Entry {
            time: SystemTime::now(),
            kind: Kind::Tool,
            server: format!("server-{}", i % 8),
            name: format!("tool_{}", i % 40),
            agent: Agent {
                client: Some("claude-code".into()),
                client_version: Some("2.1.3".into()),
                session: Some(format!("{:032x}", i / 500)),
                endpoint: Some("/mcp".into()),
            },
            duration_ms: Some((i % 300) as u64),
            outcome: if i % 50 == 0 { "tool_error" } else { "ok" }.into(),
            error: None,
            result_bytes: Some(180 + (i % 700) as u64),
            arguments: None,
            result: None,
            trace_id: None,
            run: None,
            parent_run: None,
        });
        // The queue holds 65 536: let the writer keep up, as calls would.
        if i % 20_000 == 19_999 && !activity.flush(Duration::from_secs(60)) {
            bail!("the writer did not keep up");
        }
    }
    if !activity.flush(Duration::from_secs(120)) {
        bail!("the writer did not finish");
    }
    let per_sec = n as f64 / t.elapsed().as_secs_f64();
    let mid_id = activity.last_id() / 2;
    drop(activity);
    std::thread::sleep(Duration::from_millis(500));
    let mut bytes = 0;
    for e in std::fs::read_dir(dir)?.flatten() {
        bytes += e.metadata()?.len();
    }
    Ok((bytes, per_sec, mid_ms, mid_id))
}

/// `mcpool serve`'s RSS (KiB) before and after `n` calls from 16 agents,
/// and its peak.
async fn memory_after(n: usize, mcpool: &Path, faulty: &Path, dir: &Path) -> anyhow::Result<(u64, u64, u64)> {
    let mut inst = start(mcpool, faulty, dir, true).await?;
    let result = async {
        let clients = agents(&inst, 16).await?;
        calls(&clients, 50).await?;
        let before = sys::status_kb(inst.pid, "VmRSS")?;
        let per_agent = n.div_ceil(16);
        let t = Instant::now();
        calls(&clients, per_agent).await?;
        eprintln!("{} calls in {:.0} s", per_agent * 16, t.elapsed().as_secs_f64());
        tokio::time::sleep(Duration::from_secs(2)).await;
        let after = sys::status_kb(inst.pid, "VmRSS")?;
        let peak = sys::status_kb(inst.pid, "VmHWM")?;
        for c in clients {
            let _ = tokio::time::timeout(Duration::from_secs(5), c.cancel()).await;
        }
        anyhow::Ok((before, after, peak))
    }
    .await;
    stop(&mut inst).await;
    result
}

fn report(cli: &Cli, samples: &Samples, size: &FileStep, memory: Option<(u64, u64, u64)>, load: &str) -> String {
    let mut out = String::new();
    let date = sys::command_line("date", &["-u", "+%Y-%m-%d %H:%M UTC"]);
    let _ = writeln!(out, "{SECTION}\n");
    let _ = writeln!(
        out,
        "Generated by `mcpool-bench-activity` on {date}, commit {}, a release build, {} CPUs ({}), {} RAM, load \
         average before: {load}. `{}`\n",
        sys::git_describe(&mcpool_tests::repo_root()),
        sys::nproc(),
        sys::cpu_model(),
        sys::mem_total(),
        sys::invocation(),
    );
    let _ = writeln!(
        out,
        "Each run is a fresh `mcpool serve` with one mcpool-faulty stdio server, its session agents on keep-alive \
         connections calling `f__echo`, {} calls per agent after 50 warm-up ones; log on and off alternate run by \
         run, {} runs each. Median, p90 and p99 are over every call of the runs; calls/s is the median of the runs \
         (min–max).\n",
        cli.calls, cli.runs
    );
    let _ = writeln!(
        out,
        "| agents | activity log | median ms | p90 ms | p99 ms | calls/s (min–max) |"
    );
    let _ = writeln!(out, "| ---: | --- | ---: | ---: | ---: | ---: |");
    let mut medians = std::collections::BTreeMap::new();
    for ((enabled, agents), runs) in samples {
        let all: Vec<f64> = runs.iter().flat_map(|s| s.ms.iter().copied()).collect();
        let summary = Summary::of(&all);
        let rates: Vec<f64> = runs.iter().map(|s| s.per_sec).collect();
        let rate = stats::median(&rates);
        let min = rates.iter().copied().fold(f64::INFINITY, f64::min);
        let max = rates.iter().copied().fold(0.0, f64::max);
        medians.insert((*agents, *enabled), (summary.median, rate));
        let _ = writeln!(
            out,
            "| {agents} | {} | {:.3} | {:.3} | {:.3} | {rate:.0} ({min:.0}–{max:.0}) |",
            if *enabled { "on" } else { "off" },
            summary.median,
            summary.p90,
            summary.p99,
        );
    }
    let _ = writeln!(out);
    for agents in [1usize, 16] {
        if let (Some(on), Some(off)) = (medians.get(&(agents, true)), medians.get(&(agents, false))) {
            let _ = writeln!(
                out,
                "- {agents} agent{}: median latency {:+.1} %, calls/s {:+.1} % with the log on.",
                if agents == 1 { "" } else { "s" },
                (on.0 / off.0 - 1.0) * 100.0,
                (on.1 / off.1 - 1.0) * 100.0,
            );
        }
    }
    let per_million = size.bytes as f64 * 1_000_000.0 / cli.entries.max(1) as f64;
    let _ = writeln!(
        out,
        "- Size: {} entries (8 servers, 40 tools, no arguments kept) took {:.1} MB on disk (the file with its WAL), \
         {:.0} MB per million calls; the writer took {:.0} entries/s. The default 200 MB limit holds about {:.1} \
         million calls.",
        cli.entries,
        size.bytes as f64 / 1e6,
        per_million / 1e6,
        size.per_sec,
        200e6 / per_million,
    );
    let Some(memory) = memory else {
        reads(&mut out, cli, size);
        return out;
    };
    let _ = writeln!(
        out,
        "- Memory: `mcpool serve` had {:.1} MiB resident after warm-up and {:.1} MiB after {} more calls from 16 \
         agents with the log on (peak {:.1} MiB). The log itself holds at most its queue (65 536 entries) in memory; \
         this run does not separate that from the allocator's high-water mark of 16 agents at once.",
        memory.0 as f64 / 1024.0,
        memory.1 as f64 / 1024.0,
        cli.million,
        memory.2 as f64 / 1024.0,
    );
    reads(&mut out, cli, size);
    out
}

/// The reads' table.
fn reads(out: &mut String, cli: &Cli, size: &FileStep) {
    let _ = writeln!(
        out,
        "\nReads on that file (a million entries, one status event per 1000), each timed {} times after one \
         warm-up, through the calls the API makes (`Activity::query`, `series`, `each`, `bands`):\n",
        cli.query_reps
    );
    let _ = writeln!(out, "| read | median ms | p10–p90 ms | max ms | items |");
    let _ = writeln!(out, "| --- | ---: | ---: | ---: | ---: |");
    for r in &size.reads {
        let _ = writeln!(
            out,
            "| {} | {:.3} | {:.3}–{:.3} | {:.3} | {} |",
            r.what, r.ms.median, r.ms.p10, r.ms.p90, r.ms.max, r.items
        );
    }
}
