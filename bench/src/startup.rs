//! Start-to-tools/list time and idle memory.

use crate::*;
use anyhow::bail;
use stats::Summary;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

impl Bench {
    pub(crate) async fn startup(&mut self) -> anyhow::Result<()> {
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

    pub(crate) fn rss_table(&mut self, title: &str, pool: &Mcpool) -> anyhow::Result<()> {
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
}
