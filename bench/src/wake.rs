//! `mcpool-bench-wake`: how fast mcpool heals after a network gap, and how
//! many MCP attempts it makes while the network is away (behaviour.md rule 11).
//!
//! mcpool runs in a network namespace of its own and reaches our fault server
//! in a second one through a veth pair, by a name from the namespace's hosts
//! file (see `mcpool_tests::netns`; needs root). Each run takes the link and
//! the name away, waits until mcpool shows the server waiting for the
//! network, then restores both and times the way back to `connected`,
//! polling `/api/servers`. One longer gap (60 s by default, with the link up
//! but the name missing) counts the requests that reach the server and the
//! attempts mcpool logs meanwhile.
//!
//! Build with `cargo build --release --workspace --bins`, then run
//! `target/release/mcpool-bench-wake --write docs/benchmarks.md`, which
//! replaces the section of its own in that file. Nothing leaves the two
//! namespaces, and both are removed before exit.

#[allow(dead_code)]
mod stats;
#[allow(dead_code)]
mod sys;

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use clap::Parser;
use mcpool_tests::netns::{FaultServer, NetGap, NsMcpool};
use serde_json::{json, Value};

use stats::Summary;

/// The heading of this program's section in the report.
const SECTION: &str = "## Heal after a network gap";
/// The heal target, in ms.
const TARGET_HEAL_MS: f64 = 1000.0;
/// Upper bound for any wait on a state.
const STEP_LIMIT: Duration = Duration::from_secs(60);

#[derive(Debug, Parser)]
#[command(about = "Benchmarks mcpool's healing after a network gap (needs root for network namespaces)")]
struct Cli {
    /// Measured gaps, each timed from network return to `connected`.
    #[arg(long, default_value_t = 15)]
    runs: usize,
    /// Seconds of the one long gap whose attempts are counted.
    #[arg(long, default_value_t = 60)]
    gap_secs: u64,
    #[command(flatten)]
    out: sys::Out,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let (bin_dir, [mcpool, faulty]) = sys::bench_bins(cli.out.bin_dir.as_deref(), ["mcpool", "mcpool-faulty"])?;
    let tmp = sys::scratch_dir(&bin_dir, "wake")?;
    let result = run(&cli, &mcpool, &faulty, &tmp).await;
    let _ = std::fs::remove_dir_all(&tmp);
    let section = result?;
    sys::publish(cli.out.write.as_deref(), SECTION, &section)
}

struct Setup<'a> {
    gap: &'a NetGap,
    pool: &'a NsMcpool,
}

impl Setup<'_> {
    async fn wait(&self, what: &str, check: impl Fn(&Value) -> bool) -> anyhow::Result<Value> {
        self.pool.wait(self.gap, "r", what, STEP_LIMIT, check).await
    }

    /// Takes the link and the name away and waits until mcpool waits for the network.
    async fn lose_network(&self) -> anyhow::Result<()> {
        self.gap.set_resolvable(false)?;
        self.gap.link(false)?;
        self.wait("waiting for the network", |s| s["waiting_for_network"] == true)
            .await?;
        Ok(())
    }

    /// Restores link and name; returns the time to `connected`.
    async fn restore_network(&self) -> anyhow::Result<Duration> {
        self.gap.link(true)?;
        self.gap.set_resolvable(true)?;
        let t0 = Instant::now();
        self.wait("connected", |s| s["status"] == "connected").await?;
        Ok(t0.elapsed())
    }
}

async fn run(cli: &Cli, mcpool: &Path, faulty: &Path, tmp: &Path) -> anyhow::Result<String> {
    let gap = NetGap::create()?;
    let server = FaultServer::start(&gap, faulty, &tmp.join("spawns.log")).await?;
    let pool = NsMcpool::start(
        &gap,
        mcpool,
        tmp,
        &json!({"mcpServers": {"r": {"url": server.url()}}}),
        &[("MCPOOL_KEEPALIVE_SECS", "0")],
    )
    .await?;
    let setup = Setup { gap: &gap, pool: &pool };
    setup.wait("connected", |s| s["status"] == "connected").await?;
    pool.wait_log("watching network changes through netlink", 1, STEP_LIMIT)
        .await?;

    // Short gaps, timed.
    let mut heal_ms = Vec::new();
    for i in 0..cli.runs {
        setup.lose_network().await?;
        // Let the burst of link-down messages settle into its own event.
        tokio::time::sleep(Duration::from_millis(700)).await;
        let took = setup.restore_network().await?;
        eprintln!("run {}: healed in {:.0} ms", i + 1, took.as_secs_f64() * 1e3);
        heal_ms.push(took.as_secs_f64() * 1e3);
    }

    // One long gap: the link comes back at once, the name only at the end.
    setup.lose_network().await?;
    gap.link(true)?;
    let stats_before = server.stats(&gap).await?;
    let attempts_before = pool.logs().matches("connection attempt failed").count();
    eprintln!("a {} s gap with the link up and the name missing...", cli.gap_secs);
    tokio::time::sleep(Duration::from_secs(cli.gap_secs)).await;
    let stats_after = server.stats(&gap).await?;
    let attempts = pool.logs().matches("connection attempt failed").count() - attempts_before;
    let still_waiting = pool.server(&gap, "r").await?["waiting_for_network"] == true;
    gap.set_resolvable(true)?;
    let t0 = Instant::now();
    setup.wait("connected", |s| s["status"] == "connected").await?;
    let long_heal_ms = t0.elapsed().as_secs_f64() * 1e3;
    let count = |s: &Value, k: &str| s[k].as_u64().unwrap_or(0);
    let initializes = count(&stats_after, "initialize") - count(&stats_before, "initialize");
    let requests = count(&stats_after, "requests") - count(&stats_before, "requests");

    Ok(report(
        cli,
        &heal_ms,
        long_heal_ms,
        initializes,
        requests,
        attempts,
        still_waiting,
    ))
}

fn report(
    cli: &Cli,
    heal_ms: &[f64],
    long_heal_ms: f64,
    initializes: u64,
    requests: u64,
    attempts: usize,
    still_waiting: bool,
) -> String {
    let s = Summary::of(heal_ms);
    let mut out = String::new();
    let _ = writeln!(out, "{SECTION}\n");
    let _ = writeln!(
        out,
        "Generated by `mcpool-bench-wake` on {}, a release build, {} CPUs ({}), load average before: {}.\n",
        date(),
        sys::nproc(),
        sys::cpu_model(),
        sys::loadavg().trim()
    );
    let _ = writeln!(
        out,
        "mcpool (`MCPOOL_KEEPALIVE_SECS=0`, default wake window) runs in a network namespace of its own and reaches \
         mcpool-faulty in a second one over a veth pair, by a name from its hosts file; nothing leaves the two \
         namespaces. A gap takes the link down and the name out; mcpool shows the server waiting for the network. \
         The heal time runs from restoring both to `/api/servers` showing `connected`, polled through `curl` \
         inside the namespace (about 10 ms per poll, which is the resolution).\n"
    );
    let _ = writeln!(
        out,
        "```sh\ncargo build --release --workspace --bins\nsudo target/release/mcpool-bench-wake --runs {} --gap-secs {} --write docs/benchmarks.md\n```\n",
        cli.runs, cli.gap_secs
    );
    let _ = writeln!(out, "| what | runs | median ms | p10–p90 ms | min–max ms | target |");
    let _ = writeln!(out, "| --- | ---: | ---: | ---: | ---: | --- |");
    let _ = writeln!(
        out,
        "| network back → `connected` | {} | {:.0} | {:.0}–{:.0} | {:.0}–{:.0} | ≤ {:.0} ms: **{}** |",
        heal_ms.len(),
        s.median,
        s.p10,
        s.p90,
        s.min,
        s.max,
        TARGET_HEAL_MS,
        if s.median <= TARGET_HEAL_MS { "met" } else { "missed" }
    );
    let _ = writeln!(
        out,
        "| name back after a {} s gap → `connected` | 1 | {long_heal_ms:.0} | | | |\n",
        cli.gap_secs
    );
    let _ = writeln!(
        out,
        "During the {} s gap (link up, name missing): **{initializes}** `initialize` and **{requests}** HTTP requests \
         reached the server, and mcpool logged **{attempts}** failed connection attempts (it probes DNS and TCP \
         every 500 ms and dials MCP only once the host is reachable, so the backoff schedule allows none). Still \
         waiting for the network at the end: {still_waiting}.\n",
        cli.gap_secs
    );
    out
}

fn date() -> String {
    std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}
