//! The latency tables of the report: one row per case, and the overhead
//! of each agent kind over direct stdio.

use crate::*;
use std::fmt::Write as _;

use stats::Summary;

impl Bench {
    pub(crate) fn latency_table(&mut self, title: &str, report: &LatencyReport, concurrent: bool) {
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
            let mcpool_cpu = if path.starts_with("mcpool") || path == PEER_PATH || path == RELAY_PATH {
                cpu(r.cpu_mcpool_ns)
            } else {
                "–".into()
            };
            let upstream_cpu = if upstream.starts_with("(none") || path == PEER_PATH {
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
    pub(crate) fn overhead_rows(
        &mut self,
        report: &LatencyReport,
        label: &str,
        check_target: bool,
    ) -> Vec<(String, f64, bool)> {
        let mut verdicts = Vec::new();
        for (upstream, agent_path) in [
            ("mcpool-faulty", "mcpool /mcp"),
            ("server-everything", "mcpool /mcp"),
            ("mcpool-faulty", STATELESS_PATH),
            ("mcpool-faulty", RELAY_PATH),
        ] {
            let find = |path: &str| {
                report
                    .cases
                    .iter()
                    .position(|(u, p, w)| u == upstream && p == path && w == "echo")
                    .map(|i| &report.results[i])
            };
            let (Some(direct), Some(via)) = (find("direct stdio"), find(agent_path)) else {
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
            let floor = agent_path == RELAY_PATH;
            let verdict = if floor {
                "the floor: no target".into()
            } else if check_target {
                if met {
                    format!("met (≤ {TARGET_OVERHEAD_MS} ms)")
                } else {
                    format!("**missed** (target ≤ {TARGET_OVERHEAD_MS} ms)")
                }
            } else {
                "(no target)".into()
            };
            let agent = if agent_path == STATELESS_PATH {
                "2026-07-28 stateless"
            } else if floor {
                "bare HTTP relay, no mcpool"
            } else {
                "session"
            };
            let _ = writeln!(
                self.out,
                "| {label} | {upstream} | {agent} | {:.3} | {:.3} ({:.3}–{:.3}) | {verdict} |",
                overhead, b.median, b.min, b.max
            );
            if !floor {
                verdicts.push((format!("{label}, {upstream}, {agent} agent"), overhead, met));
            }
        }
        verdicts
    }

    /// The floor (relay − direct) and mcpool's share above it (mcpool −
    /// relay), in ms, for the session agent's sequential echo.
    pub(crate) fn floor(report: &LatencyReport) -> Option<(f64, f64, f64)> {
        let case = |path: &str| echo_case(report, path);
        let median = |path: &str| case(path).map(|r| stats::median(&r.micros) / 1000.0);
        // The gateway's own CPU per call (the relay's process, or mcpool's).
        let cpu = |path: &str| case(path).map(|r| r.cpu_mcpool_ns as f64 / r.micros.len().max(1) as f64);
        let (direct, relay, via) = (median("direct stdio")?, median(RELAY_PATH)?, median("mcpool /mcp")?);
        let ratio = cpu("mcpool /mcp")? / cpu(RELAY_PATH)?.max(1.0);
        Some((relay - direct, via - relay, ratio))
    }

    /// mcpool next to the peer on the same upstream: median and calls/s.
    pub(crate) fn peer_rows(&mut self, report: &LatencyReport, label: &str) {
        let (Some(via), Some(peer)) = (echo_case(report, "mcpool /mcp"), echo_case(report, PEER_PATH)) else {
            return;
        };
        let rate = |r: &CaseResult| r.micros.len() as f64 / r.wall.as_secs_f64().max(1e-9);
        let (m, p) = (stats::median(&via.micros), stats::median(&peer.micros));
        let _ = writeln!(
            self.out,
            "| {label} | {} | {} | {:.2}× | {:.0} | {:.0} | {:.2}× |",
            ms(m),
            ms(p),
            m / p,
            rate(via),
            rate(peer),
            rate(via) / rate(peer)
        );
    }
}

/// The result of the fault server's sequential echo through `path`.
fn echo_case<'a>(report: &'a LatencyReport, path: &str) -> Option<&'a CaseResult> {
    report
        .cases
        .iter()
        .position(|(u, p, w)| u == "mcpool-faulty" && p == path && w == "echo")
        .map(|i| &report.results[i])
}
