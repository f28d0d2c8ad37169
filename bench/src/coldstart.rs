//! `mcpool-bench-coldstart`: hundreds of local servers from a cold start.
//!
//! Each run starts a fresh `mcpool serve` whose config holds `--servers`
//! mcpool-faulty stdio servers that each spend `--busy-start-ms` of CPU
//! before they answer (as a Node or Python server does loading its code),
//! and nobody asks for any of them: they must all connect by themselves.
//! While they start, an agent on `/mcp?toolListing=all` lists every tool and
//! another on `/mcp` (search) searches, each every `--probe-ms`, so the
//! report shows whether the endpoint answers at once throughout. Measured:
//! time until every server is `connected`, how many were seen `failed` on
//! the way, `mcpool serve`'s peak memory and CPU time, the servers' memory
//! together, and the probes' latencies.
//!
//! Build with `cargo build --release -p mcpool -p mcpool-faulty -p
//! mcpool-bench --bins`, then run `target/release/mcpool-bench-coldstart
//! --write docs/benchmarks.md`, which replaces the section of its own.

#[allow(dead_code)]
mod serve;
#[allow(dead_code)]
mod stats;
#[allow(dead_code)]
mod sys;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Parser;
use rmcp::model::CallToolRequestParams;
use serde_json::{json, Map, Value};

use stats::Summary;

const SECTION: &str = "## Cold start: hundreds of servers at once";
/// How long one probe may take before it counts as not answered.
const PROBE_LIMIT: Duration = Duration::from_secs(30);

/// Raised by the measuring loop to stop the probes.
type Done = Arc<AtomicBool>;
/// Raised when every server is connected: later probes are the baseline.
type Settled = Arc<AtomicBool>;
/// Probes of each kind made once every server is connected, the baseline
/// the probes while they start are read against.
const AT_REST: usize = 10;

#[derive(Debug, Parser)]
#[command(
    about = "Benchmarks a cold start of hundreds of local servers: time to all connected, memory, CPU, \
                   and the endpoint answering throughout"
)]
struct Cli {
    /// mcpool-faulty stdio servers in the config.
    #[arg(long, default_value_t = 500)]
    servers: usize,
    /// Extra echo tools per server (besides its own).
    #[arg(long, default_value_t = 20)]
    extra_tools: usize,
    /// CPU time each server spends before it answers.
    #[arg(long, default_value_t = 300)]
    busy_start_ms: u64,
    /// How often each probe (a full `tools/list`, a search) runs.
    #[arg(long, default_value_t = 500)]
    probe_ms: u64,
    /// Give up on a run after this long.
    #[arg(long, default_value_t = 900)]
    limit_secs: u64,
    /// Runs, each with a fresh mcpool.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    #[command(flatten)]
    out: sys::Out,
}

#[derive(Default)]
struct Run {
    all_connected_ms: f64,
    ever_failed: usize,
    hwm_kib: u64,
    cpu_ms: f64,
    servers_rss_kib: u64,
    probes: Probes,
}

/// What the two probing agents saw while the servers started.
#[derive(Default, Clone)]
struct Probes {
    list_ms: Vec<f64>,
    search_ms: Vec<f64>,
    /// The same, once every server is connected.
    rest_list_ms: Vec<f64>,
    rest_search_ms: Vec<f64>,
    /// Probes that failed or took longer than [`PROBE_LIMIT`].
    unanswered: usize,
    /// Why an agent could not connect, when it could not.
    errors: Vec<String>,
    /// The tools the listing held, first and last.
    first_tools: Option<usize>,
    last_tools: usize,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let (bin_dir, [mcpool, faulty]) = sys::bench_bins(cli.out.bin_dir.as_deref(), ["mcpool", "mcpool-faulty"])?;
    let tmp = sys::scratch_dir(&bin_dir, "coldstart")?;
    let load_before = sys::loadavg();
    let runs = sys::runs(
        cli.runs,
        &tmp,
        async |dir: &Path| one_run(&cli, &mcpool, &faulty, dir).await,
        |i, run| {
            eprintln!(
                "run {}: all connected in {:.1} s, {} seen failed, peak {} KiB, CPU {:.1} s, {} lists / {} searches \
                 ({} unanswered)",
                i + 1,
                run.all_connected_ms / 1000.0,
                run.ever_failed,
                run.hwm_kib,
                run.cpu_ms / 1000.0,
                run.probes.list_ms.len(),
                run.probes.search_ms.len(),
                run.probes.unanswered
            );
        },
    )
    .await?;
    let section = report(&cli, &runs, &load_before);
    sys::publish(cli.out.write.as_deref(), SECTION, &section)
}

async fn one_run(cli: &Cli, mcpool: &Path, faulty: &Path, dir: &Path) -> anyhow::Result<Run> {
    std::fs::create_dir_all(dir)?;
    let mut servers = Map::new();
    for i in 0..cli.servers {
        let args = json!([
            "stdio",
            "--extra-tools",
            cli.extra_tools.to_string(),
            "--busy-start-ms",
            cli.busy_start_ms.to_string()
        ]);
        servers.insert(format!("s{i:03}"), json!({"command": faulty, "args": args}));
    }
    let config = dir.join("config.json");
    std::fs::write(&config, serde_json::to_vec(&json!({ "mcpServers": servers }))?)?;
    let token = format!("bench-coldstart-{}", std::process::id());
    let started = Instant::now();
    let mut child = serve::spawn_serve(mcpool, &config, dir, &token, &[])?;
    let pid = child.id().context("mcpool has no pid")?;
    let result = async {
        let line = mcpool_tests::first_line(&mut child, PROBE_LIMIT).await?;
        let port = mcpool_tests::listening_port(&line)?;
        measure(cli, pid, port, &token, started).await
    }
    .await;
    serve::stop(&mut child, pid, Duration::from_secs(30)).await;
    result
}

async fn measure(cli: &Cli, pid: u32, port: u16, token: &str, started: Instant) -> anyhow::Result<Run> {
    let url = |path: &str| format!("http://127.0.0.1:{port}{path}");
    let probes = Arc::new(Mutex::new(Probes::default()));
    let done = Done::default();
    let settled = Settled::default();
    let lister = tokio::spawn(probe(
        Probe::List,
        url("/mcp?toolListing=all"),
        token.to_string(),
        cli.probe_ms,
        probes.clone(),
        (done.clone(), settled.clone()),
    ));
    let searcher = tokio::spawn(probe(
        Probe::Search,
        url("/mcp?toolListing=search"),
        token.to_string(),
        cli.probe_ms,
        probes.clone(),
        (done.clone(), settled.clone()),
    ));

    let http = reqwest::Client::new();
    let deadline = started + Duration::from_secs(cli.limit_secs);
    let mut ever_failed = BTreeSet::new();
    let all_connected_ms = loop {
        let servers: Vec<Value> = http
            .get(url("/api/servers"))
            .bearer_auth(token)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let mut connected = 0;
        for s in &servers {
            match s["status"].as_str() {
                Some("connected") => connected += 1,
                Some("failed") => {
                    ever_failed.insert(s["name"].as_str().unwrap_or_default().to_string());
                }
                _ => {}
            }
        }
        if servers.len() == cli.servers && connected == cli.servers {
            break started.elapsed().as_secs_f64() * 1000.0;
        }
        if Instant::now() > deadline {
            done.store(true, Ordering::SeqCst);
            bail!(
                "{connected} of {} servers connected after {} s ({} seen failed)",
                cli.servers,
                cli.limit_secs,
                ever_failed.len()
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    // What the start cost, before the baseline probes add to it.
    let (hwm_kib, cpu_ms) = (sys::status_kb(pid, "VmHWM")?, sys::cpu_ns(Some(pid)) as f64 / 1e6);
    settled.store(true, Ordering::SeqCst);
    let rest_deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < rest_deadline {
        {
            let p = probes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if p.rest_list_ms.len() >= AT_REST && p.rest_search_ms.len() >= AT_REST {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    done.store(true, Ordering::SeqCst);
    lister.await??;
    searcher.await??;
    let servers_rss_kib = sys::descendants(pid)
        .iter()
        .filter_map(|c| sys::status_kb(c.pid, "VmRSS").ok())
        .sum();
    let probes = probes.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    Ok(Run {
        all_connected_ms,
        ever_failed: ever_failed.len(),
        hwm_kib,
        cpu_ms,
        servers_rss_kib,
        probes,
    })
}

/// What a probe measures: a full `tools/list`, or one search.
#[derive(Clone, Copy)]
enum Probe {
    List,
    Search,
}

/// `probe` every `every` until `done`, by an agent of its own on `url`;
/// the agents connect first, so their first probe comes before any server
/// answered.
async fn probe(
    probe: Probe,
    url: String,
    token: String,
    every: u64,
    probes: Arc<Mutex<Probes>>,
    (done, settled): (Done, Settled),
) -> anyhow::Result<()> {
    let Some(agent) = connect(&url, &token, every, &probes, &done).await else {
        return Ok(());
    };
    let queries = [
        "echo a message back",
        "add two numbers",
        "print an environment variable",
    ];
    let mut i = 0;
    while !done.load(Ordering::SeqCst) {
        let at_rest = settled.load(Ordering::SeqCst);
        let t = Instant::now();
        let outcome = match probe {
            Probe::List => serve::list_all(agent.peer(), PROBE_LIMIT).await.map(Some),
            Probe::Search => search(agent.peer(), queries[i % queries.len()]).await.map(|()| None),
        };
        i += 1;
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        {
            let mut p = probes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            match outcome {
                Ok(Some(_)) if at_rest => p.rest_list_ms.push(ms),
                Ok(None) if at_rest => p.rest_search_ms.push(ms),
                Ok(Some(tools)) => {
                    p.list_ms.push(ms);
                    p.first_tools.get_or_insert(tools);
                    p.last_tools = tools;
                }
                Ok(None) => p.search_ms.push(ms),
                Err(e) => {
                    p.unanswered += 1;
                    p.errors.push(e.to_string());
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(every)).await;
    }
    let _ = tokio::time::timeout(Duration::from_secs(5), agent.cancel()).await;
    Ok(())
}

/// One `mcpool__search_tools` call, answered without an error in time.
async fn search(peer: &rmcp::service::Peer<rmcp::service::RoleClient>, query: &str) -> anyhow::Result<()> {
    let mut args = Map::new();
    args.insert("query".into(), Value::String(query.into()));
    let call = peer.call_tool(CallToolRequestParams::new("mcpool__search_tools").with_arguments(args));
    let result = tokio::time::timeout(PROBE_LIMIT, call).await??;
    if result.is_error == Some(true) {
        bail!("the search answered an error: {:?}", result.content);
    }
    Ok(())
}

/// An agent on `url`, tried again every `every` while the pool starts: a
/// failed try counts as an unanswered probe, its error kept for the report.
async fn connect(
    url: &str,
    token: &str,
    every: u64,
    probes: &Mutex<Probes>,
    done: &AtomicBool,
) -> Option<rmcp::service::RunningService<rmcp::service::RoleClient, ()>> {
    while !done.load(Ordering::SeqCst) {
        match mcpool_tests::keep_alive_agent(url, Some(token), PROBE_LIMIT).await {
            Ok(agent) => return Some(agent),
            Err(e) => {
                let mut p = probes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                p.unanswered += 1;
                p.errors.push(e.to_string());
            }
        }
        tokio::time::sleep(Duration::from_millis(every)).await;
    }
    None
}

fn report(cli: &Cli, runs: &[Run], load_before: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{SECTION}\n");
    let _ = writeln!(out, "{}\n", sys::generated_by("mcpool-bench-coldstart", load_before));
    let _ = writeln!(
        out,
        "Each run starts a fresh `mcpool serve` on a config of {} mcpool-faulty stdio servers, each with {} extra \
         tools and spending {} ms of CPU before it answers (as loading a Node or Python server's code does); \
         nobody asks for any of them, so they must connect by themselves. Meanwhile one agent lists every tool \
         (`/mcp?toolListing=all`) and another calls `mcpool__search_tools` (`/mcp`), each every {} ms, and \
         {AT_REST} more of each once every server is connected, as a baseline. The servers' own start-up \
         costs {:.0} CPU-seconds per run on {} cores.\n",
        cli.servers,
        cli.extra_tools,
        cli.busy_start_ms,
        cli.probe_ms,
        cli.servers as f64 * cli.busy_start_ms as f64 / 1000.0,
        sys::nproc()
    );
    let _ = writeln!(
        out,
        "```sh\ncargo build --release -p mcpool -p mcpool-faulty -p mcpool-bench --bins\n\
         target/release/mcpool-bench-coldstart --servers {} --extra-tools {} --busy-start-ms {} --runs {} \
         --write docs/benchmarks.md\n```\n",
        cli.servers,
        cli.extra_tools,
        cli.busy_start_ms,
        runs.len()
    );
    let per_run = |f: &dyn Fn(&Run) -> f64| Summary::of(&runs.iter().map(f).collect::<Vec<_>>());
    let all = |f: &dyn Fn(&Run) -> &Vec<f64>| {
        Summary::of(&runs.iter().flat_map(|r| f(r).iter().copied()).collect::<Vec<_>>())
    };
    stats::summary_header(&mut out, runs.len());
    let row = stats::summary_row;
    let mib = |kib: u64| kib as f64 / 1024.0;
    row(
        &mut out,
        "spawn → every server `connected`",
        per_run(&|r| r.all_connected_ms / 1000.0),
        "s",
        1,
    );
    row(
        &mut out,
        "servers seen `failed` on the way",
        per_run(&|r| r.ever_failed as f64),
        "",
        0,
    );
    row(
        &mut out,
        "full `tools/list` while they start",
        all(&|r| &r.probes.list_ms),
        "ms",
        1,
    );
    row(
        &mut out,
        "`mcpool__search_tools` while they start",
        all(&|r| &r.probes.search_ms),
        "ms",
        1,
    );
    row(
        &mut out,
        "full `tools/list`, every server connected (baseline)",
        all(&|r| &r.probes.rest_list_ms),
        "ms",
        1,
    );
    row(
        &mut out,
        "`mcpool__search_tools`, every server connected (baseline)",
        all(&|r| &r.probes.rest_search_ms),
        "ms",
        1,
    );
    row(
        &mut out,
        "probes not answered within 30 s",
        per_run(&|r| r.probes.unanswered as f64),
        "",
        0,
    );
    row(
        &mut out,
        "`mcpool serve` peak RSS (VmHWM)",
        per_run(&|r| mib(r.hwm_kib)),
        "MiB",
        1,
    );
    row(
        &mut out,
        "`mcpool serve` CPU time, start to all connected",
        per_run(&|r| r.cpu_ms / 1000.0),
        "s",
        1,
    );
    row(
        &mut out,
        &format!("the {} servers' RSS together", cli.servers),
        per_run(&|r| mib(r.servers_rss_kib)),
        "MiB",
        0,
    );
    let tools = |r: &Run| format!("{}→{}", r.probes.first_tools.unwrap_or(0), r.probes.last_tools);
    let _ = writeln!(
        out,
        "\nTools in the full listing, first probe → last, per run: {}.\n",
        runs.iter().map(tools).collect::<Vec<_>>().join(", ")
    );
    let errors: BTreeSet<&str> = runs
        .iter()
        .flat_map(|r| r.probes.errors.iter().map(String::as_str))
        .collect();
    if !errors.is_empty() {
        let _ = writeln!(out, "Unanswered probes said:\n");
        for e in errors {
            let _ = writeln!(out, "- `{}`", e.lines().next().unwrap_or_default());
        }
        let _ = writeln!(out);
    }
    out
}
