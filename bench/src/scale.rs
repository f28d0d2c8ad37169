//! `mcpool-bench-scale`: mcpool with many servers and many agents.
//!
//! Each run starts a fresh `mcpool serve` with `--servers` mcpool-faulty
//! stdio servers of `--tools` tools each, waits until every one is
//! `connected`, and measures:
//! * the resident set of `mcpool serve` (and of its children together);
//! * `tools/list` through `/mcp` (every server's tools in one list), timed
//!   by an rmcp session agent on a keep-alive connection;
//! * `--agents` session agents calling echo tools at once (agent i calls
//!   server i mod N), for calls per second and the latency spread.
//!
//! Build with `cargo build --release --workspace --bins`, then run
//! `target/release/mcpool-bench-scale --write docs/benchmarks.md`, which
//! replaces the section of its own in that file.

mod serve;
#[allow(dead_code)]
mod stats;
#[allow(dead_code)]
mod sys;

use std::fmt::Write as _;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Parser;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, RoleClient, RunningService, ServiceExt};
use rmcp::transport::async_rw::AsyncRwTransport;
use serde_json::{json, Map, Value};
use tokio::process::{Child, Command};

use stats::Summary;

/// The heading of this program's section in the report.
const SECTION: &str = "## Scale: many servers, many agents";
/// Upper bound for start-up (every server connected) and any one call.
const STEP_LIMIT: Duration = Duration::from_secs(120);

#[derive(Debug, Parser)]
#[command(about = "Benchmarks mcpool with many servers (tools/list, RSS) and many concurrent agents")]
struct Cli {
    /// mcpool-faulty stdio servers in the config.
    #[arg(long, default_value_t = 100)]
    servers: usize,
    /// Tools per server (its built-in tools plus dynamic echo tools).
    #[arg(long, default_value_t = 50)]
    tools: usize,
    /// Timed `tools/list` calls per run (after 5 warm-up ones).
    #[arg(long, default_value_t = 50)]
    lists: usize,
    /// Session agents calling at once.
    #[arg(long, default_value_t = 64)]
    agents: usize,
    /// Calls per agent per run (after 10 warm-up ones).
    #[arg(long, default_value_t = 200)]
    calls: usize,
    /// Runs, each with a fresh mcpool.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    #[command(flatten)]
    out: sys::Out,
}

type Client = RunningService<RoleClient, ()>;

/// A memory row of the report: what, the KiB a run measured, and the
/// digits shown (in MiB).
type MemoryRow = (String, fn(&Run) -> u64, usize);

#[derive(Default)]
struct Run {
    connected_ms: f64,
    tool_count: usize,
    idle_rss_kib: u64,
    children_rss_kib: u64,
    list_ms: Vec<f64>,
    call_ms: Vec<f64>,
    calls_per_sec: f64,
    busy_rss_kib: u64,
    hwm_kib: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let (bin_dir, [mcpool, faulty]) = sys::bench_bins(cli.out.bin_dir.as_deref(), ["mcpool", "mcpool-faulty"])?;
    let builtin = builtin_tool_count(&faulty).await?;
    let extra = cli
        .tools
        .checked_sub(builtin)
        .with_context(|| format!("mcpool-faulty has {builtin} tools of its own; --tools must be at least that"))?;
    let tmp = sys::scratch_dir(&bin_dir, "scale")?;
    let load_before = sys::loadavg();
    let runs = sys::runs(
        cli.runs,
        &tmp,
        async |dir: &Path| one_run(&cli, &mcpool, &faulty, extra, dir).await,
        |i, run| {
            eprintln!(
                "run {}: connected in {:.0} ms, {} tools, idle {} KiB, list median {:.2} ms, {:.0} calls/s",
                i + 1,
                run.connected_ms,
                run.tool_count,
                run.idle_rss_kib,
                stats::median(&run.list_ms),
                run.calls_per_sec
            );
        },
    )
    .await?;
    let section = report(&cli, &runs, &load_before);
    sys::publish(cli.out.write.as_deref(), SECTION, &section)
}

/// How many tools mcpool-faulty serves without `--extra-tools`.
async fn builtin_tool_count(faulty: &Path) -> anyhow::Result<usize> {
    let mut child = Command::new(faulty)
        .arg("stdio")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let transport = AsyncRwTransport::new_client(
        child.stdout.take().context("stdout")?,
        child.stdin.take().context("stdin")?,
    );
    let client = tokio::time::timeout(STEP_LIMIT, ().serve(transport)).await??;
    let n = client.peer().list_all_tools().await?.len();
    let _ = client.cancel().await;
    let _ = child.kill().await;
    Ok(n)
}

async fn one_run(cli: &Cli, mcpool: &Path, faulty: &Path, extra: usize, dir: &Path) -> anyhow::Result<Run> {
    std::fs::create_dir_all(dir)?;
    let mut servers = Map::new();
    for i in 0..cli.servers {
        let args = json!(["stdio", "--extra-tools", extra.to_string()]);
        servers.insert(format!("s{i:03}"), json!({"command": faulty, "args": args}));
    }
    let config = dir.join("config.json");
    std::fs::write(&config, serde_json::to_vec(&json!({ "mcpServers": servers }))?)?;
    let token = format!("bench-scale-{}", std::process::id());
    let started = Instant::now();
    let mut child = serve::spawn_serve(
        mcpool,
        &config,
        dir,
        &token,
        &[("MCPOOL_MAX_SESSIONS", (cli.agents + 8).to_string())],
    )?;
    let pid = child.id().context("mcpool has no pid")?;
    let result = measure(cli, &mut child, pid, &token, started).await;
    serve::stop(&mut child, pid, Duration::from_secs(20)).await;
    result
}

async fn measure(cli: &Cli, child: &mut Child, pid: u32, token: &str, started: Instant) -> anyhow::Result<Run> {
    let line = mcpool_tests::first_line(child, STEP_LIMIT).await?;
    let port = mcpool_tests::listening_port(&line)?;
    let url = |path: &str| format!("http://127.0.0.1:{port}{path}");
    serve::wait_connected(port, token, cli.servers, STEP_LIMIT).await?;
    let mut run = Run {
        connected_ms: started.elapsed().as_secs_f64() * 1000.0,
        ..Run::default()
    };
    tokio::time::sleep(Duration::from_secs(2)).await;
    run.idle_rss_kib = sys::status_kb(pid, "VmRSS")?;
    run.children_rss_kib = sys::descendants(pid)
        .iter()
        .filter_map(|c| sys::status_kb(c.pid, "VmRSS").ok())
        .sum();

    // The full listing: past its budget, `/mcp` alone lists by search.
    let agent = connect(&url("/mcp?toolListing=all"), token).await?;
    for i in 0..cli.lists + 5 {
        let t = Instant::now();
        let n = serve::list_all(agent.peer(), STEP_LIMIT).await?;
        if i >= 5 {
            run.list_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        run.tool_count = n;
    }
    let want = cli.servers * cli.tools;
    if run.tool_count < want {
        bail!("tools/list through /mcp held {} tools, not {want}", run.tool_count);
    }

    let mut agents = Vec::new();
    for _ in 0..cli.agents {
        agents.push(connect(&url("/mcp"), token).await?);
    }
    let work = |calls: usize| {
        let mut set = tokio::task::JoinSet::new();
        for (i, a) in agents.iter().enumerate() {
            let peer = a.peer().clone();
            let tool = format!("s{:03}__echo", i % cli.servers);
            set.spawn(async move {
                let mut ms = Vec::with_capacity(calls);
                for c in 0..calls {
                    let t = Instant::now();
                    call_echo(&peer, &tool, c).await?;
                    ms.push(t.elapsed().as_secs_f64() * 1000.0);
                }
                anyhow::Ok(ms)
            });
        }
        set
    };
    let mut warm = work(10);
    while let Some(r) = warm.join_next().await {
        r??;
    }
    let t = Instant::now();
    let mut set = work(cli.calls);
    while let Some(r) = set.join_next().await {
        run.call_ms.extend(r??);
    }
    run.calls_per_sec = run.call_ms.len() as f64 / t.elapsed().as_secs_f64();
    run.busy_rss_kib = sys::status_kb(pid, "VmRSS")?;
    run.hwm_kib = sys::status_kb(pid, "VmHWM")?;
    for a in agents.into_iter().chain([agent]) {
        let _ = tokio::time::timeout(Duration::from_secs(5), a.cancel()).await;
    }
    Ok(run)
}

async fn connect(url: &str, token: &str) -> anyhow::Result<Client> {
    mcpool_tests::keep_alive_agent(url, Some(token), STEP_LIMIT).await
}

async fn call_echo(peer: &Peer<RoleClient>, tool: &str, i: usize) -> anyhow::Result<()> {
    let mut args = Map::new();
    args.insert("text".into(), Value::String(format!("hello {i}")));
    let call = peer.call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args));
    let result = tokio::time::timeout(STEP_LIMIT, call).await??;
    if result.is_error == Some(true) {
        bail!("{tool} returned an error: {:?}", result.content);
    }
    Ok(())
}

fn report(cli: &Cli, runs: &[Run], load_before: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{SECTION}\n");
    let _ = writeln!(out, "{}\n", sys::generated_by("mcpool-bench-scale", load_before));
    let _ = writeln!(
        out,
        "Each run starts a fresh `mcpool serve` with {} mcpool-faulty stdio servers of {} tools each (its own tools \
         plus `--extra-tools`), {} tools in all, and waits until `/api/servers` shows every one `connected`. Then: \
         `tools/list` through `/mcp` by an rmcp session agent on a keep-alive connection ({} timed lists after 5), \
         and {} session agents at once, each calling `sNNN__echo` of server i mod {} ({} calls each after 10).\n",
        cli.servers,
        cli.tools,
        cli.servers * cli.tools,
        cli.lists,
        cli.agents,
        cli.servers,
        cli.calls
    );
    let _ = writeln!(
        out,
        "```sh\ncargo build --release --workspace --bins\ntarget/release/mcpool-bench-scale --servers {} --tools {} \
         --agents {} --runs {} --write docs/benchmarks.md\n```\n",
        cli.servers,
        cli.tools,
        cli.agents,
        runs.len()
    );
    let per_run = |f: &dyn Fn(&Run) -> f64| -> Summary { Summary::of(&runs.iter().map(f).collect::<Vec<_>>()) };
    let all = |f: &dyn Fn(&Run) -> &Vec<f64>| -> Summary {
        Summary::of(&runs.iter().flat_map(|r| f(r).iter().copied()).collect::<Vec<_>>())
    };
    let mib = |kib: f64| kib / 1024.0;
    stats::summary_header(&mut out, runs.len());
    let row = stats::summary_row;
    row(
        &mut out,
        "spawn → every server `connected`",
        per_run(&|r| r.connected_ms),
        "ms",
        0,
    );
    row(
        &mut out,
        &format!(
            "`tools/list` through `/mcp` ({} tools)",
            runs.first().map_or(0, |r| r.tool_count)
        ),
        all(&|r| &r.list_ms),
        "ms",
        2,
    );
    row(
        &mut out,
        &format!("echo call, {} agents at once", cli.agents),
        all(&|r| &r.call_ms),
        "ms",
        2,
    );
    row(
        &mut out,
        &format!("calls/s, {} agents at once", cli.agents),
        per_run(&|r| r.calls_per_sec),
        "",
        0,
    );
    let memory: [MemoryRow; 4] = [
        (
            "`mcpool serve` RSS, idle, every server connected".into(),
            |r| r.idle_rss_kib,
            1,
        ),
        (
            format!("`mcpool serve` RSS after the {} agents' calls", cli.agents),
            |r| r.busy_rss_kib,
            1,
        ),
        ("`mcpool serve` peak RSS (VmHWM)".into(), |r| r.hwm_kib, 1),
        (
            format!("the {} servers' RSS together (idle)", cli.servers),
            |r| r.children_rss_kib,
            0,
        ),
    ];
    for (what, kib, digits) in memory {
        row(&mut out, &what, per_run(&|r| mib(kib(r) as f64)), "MiB", digits);
    }
    let _ = writeln!(out);
    out
}
