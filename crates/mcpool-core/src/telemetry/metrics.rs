//! The Prometheus metrics of `GET /metrics`: an activity [`Watcher`]
//! counting tool calls and connection attempts as they are recorded, and
//! what is read at scrape time (status per server, agent sessions, tool
//! cache hits), in OpenMetrics text by the Prometheus project's
//! `prometheus-client`.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Metric, Registry, Unit};

use crate::activity::{Entry, Kind, Watcher};
use crate::lifecycle::Status;
use crate::pool::Pool;
use crate::sync::lock;

/// What `GET /metrics` answers with (OpenMetrics 1.0, which Prometheus asks
/// for first and every client of the Prometheus project parses).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// How many (server, tool) pairs get series of their own; calls of tools
/// past it are counted under [`OTHER_TOOL`], so a server with thousands
/// of tools cannot grow a scrape without end.
pub const MAX_TOOL_SERIES: usize = 2000;

/// The tool label of calls past [`MAX_TOOL_SERIES`].
pub const OTHER_TOOL: &str = "_other";

/// Upper bounds of the call duration buckets, in seconds: from a cached
/// answer to a minutes-long tool.
pub(super) const DURATION_BUCKETS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
];

/// Every status a server can be in, each a series of `mcpool_server_status`.
const STATUSES: [Status; 5] = [
    Status::Pending,
    Status::Connected,
    Status::Failed,
    Status::NeedsAuth,
    Status::Disabled,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    server: String,
    tool: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    server: String,
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CauseLabels {
    server: String,
    cause: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabels {
    server: String,
    status: String,
}

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// The metrics of one pool. Label values are server and tool names (and
/// mcpool's own outcome and cause words), never arguments or results.
pub struct Metrics {
    pool: Pool,
    registry: Registry,
    calls: Family<CallLabels, Counter>,
    errors: Family<ToolLabels, Counter>,
    durations: Family<ToolLabels, Histogram, fn() -> Histogram>,
    reconnects: Family<CauseLabels, Counter>,
    runs: Family<OutcomeLabels, Counter>,
    status: Family<StatusLabels, Gauge>,
    sessions: Gauge,
    cache_hits: Counter,
    tools: ToolSeries,
    /// One scrape at a time: the status family is cleared and refilled.
    scrape: Mutex<()>,
}

/// The registry being filled: each metric made and registered in one step.
struct Registrar(Registry);

impl Registrar {
    /// A new metric registered as `name` with `help`; the handle that updates it.
    fn add<M: Metric + Clone + Default>(&mut self, name: &str, help: &str) -> M {
        let metric = M::default();
        self.0.register(name, help, metric.clone());
        metric
    }
}

impl Metrics {
    /// The metrics of `pool`, watching its activity from now on.
    pub fn watch(pool: &Pool) -> Arc<Metrics> {
        let mut reg = Registrar(Registry::default());
        let calls = reg.add(
            "mcpool_tool_calls",
            "Tool calls agents made, by server, tool and outcome",
        );
        let errors = reg.add(
            "mcpool_tool_call_errors",
            "Tool calls that failed (every outcome but ok, task, input_required and cancelled)",
        );
        let durations: Family<ToolLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(duration_histogram);
        reg.0.register_with_unit(
            "mcpool_tool_call_duration",
            "How long tool calls took, from the agent's request to mcpool's answer",
            Unit::Seconds,
            durations.clone(),
        );
        let reconnects = reg.add(
            "mcpool_reconnects",
            "Connection attempts after the first, by cause (demand, user, wake)",
        );
        let runs = reg.add(
            "mcpool_script_runs",
            "Code mode's script runs (mcpool__run_script), by outcome (ok or the error code in lower case)",
        );
        let status = reg.add(
            "mcpool_server_status",
            "1 for each server's current status, 0 for the others",
        );
        let sessions = reg.add("mcpool_agent_sessions", "Agent sessions open now");
        let cache_hits = reg.add(
            "mcpool_tool_cache_hits",
            "Tool lists offered from the disk cache before their server answered",
        );
        let metrics = Arc::new(Metrics {
            pool: pool.clone(),
            registry: reg.0,
            calls,
            errors,
            durations,
            reconnects,
            runs,
            status,
            sessions,
            cache_hits,
            tools: ToolSeries::new(MAX_TOOL_SERIES),
            scrape: Mutex::new(()),
        });
        pool.activity().add_watcher(metrics.clone());
        metrics
    }

    /// The OpenMetrics text of a scrape.
    pub fn render(&self) -> String {
        let _one = lock(&self.scrape);
        self.status.clear();
        for server in self.pool.servers() {
            let now = server.status();
            for status in STATUSES {
                let labels = StatusLabels {
                    server: server.name().to_string(),
                    status: status.as_str().to_string(),
                };
                self.status.get_or_create(&labels).set(i64::from(status == now));
            }
        }
        let sessions = self.pool.hub().agent_count();
        self.sessions.set(i64::try_from(sessions).unwrap_or(i64::MAX));
        let hits = self.pool.cache_hits();
        self.cache_hits
            .inner()
            .store(hits, std::sync::atomic::Ordering::Relaxed);
        let mut text = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut text, &self.registry) {
            // Writing to a String fails only on a broken Display impl.
            tracing::error!("the metrics could not be written: {e}");
        }
        text
    }
}

/// Whether a call that ended with `outcome` counts as an error.
pub fn is_error(outcome: &str) -> bool {
    !matches!(outcome, "ok" | "task" | "input_required" | "cancelled")
}

impl Watcher for Metrics {
    fn seen(&self, entry: &Entry) {
        match entry.kind {
            Kind::Tool => {
                if entry.run.is_some() {
                    self.runs
                        .get_or_create(&OutcomeLabels {
                            outcome: entry.outcome.clone(),
                        })
                        .inc();
                }
                let tool = self.tools.label(&entry.server, &entry.name);
                let labels = ToolLabels {
                    server: entry.server.clone(),
                    tool: tool.to_string(),
                };
                self.calls
                    .get_or_create(&CallLabels {
                        server: entry.server.clone(),
                        tool: tool.to_string(),
                        outcome: entry.outcome.clone(),
                    })
                    .inc();
                if is_error(&entry.outcome) {
                    self.errors.get_or_create(&labels).inc();
                }
                let seconds = entry.duration_ms.unwrap_or(0) as f64 / 1000.0;
                self.durations.get_or_create(&labels).observe(seconds);
                super::otel::tool_call(&entry.server, tool, &entry.outcome, seconds);
            }
            Kind::Server if entry.name == "connect" && entry.outcome != "start" => {
                self.reconnects
                    .get_or_create(&CauseLabels {
                        server: entry.server.clone(),
                        cause: entry.outcome.clone(),
                    })
                    .inc();
                super::otel::reconnect(&entry.server, &entry.outcome);
            }
            _ => {}
        }
    }
}

/// Which (server, tool) pairs have series of their own: the first `max`
/// seen, for as long as the process runs.
pub struct ToolSeries {
    max: usize,
    seen: Mutex<HashSet<(String, String)>>,
}

impl ToolSeries {
    pub fn new(max: usize) -> ToolSeries {
        ToolSeries {
            max,
            seen: Mutex::default(),
        }
    }

    /// The tool label of a call of `tool` on `server`.
    pub fn label<'a>(&self, server: &str, tool: &'a str) -> &'a str {
        let mut seen = lock(&self.seen);
        let key = (server.to_string(), tool.to_string());
        if seen.contains(&key) {
            return tool;
        }
        if seen.len() >= self.max {
            return OTHER_TOOL;
        }
        seen.insert(key);
        tool
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_past_the_cap_share_one_label_and_the_first_keep_theirs() {
        let series = ToolSeries::new(2);
        assert_eq!(series.label("a", "one"), "one");
        assert_eq!(series.label("b", "one"), "one");
        assert_eq!(series.label("a", "two"), OTHER_TOOL);
        assert_eq!(series.label("a", "one"), "one", "a pair seen before keeps its label");
        assert_eq!(series.label("b", "one"), "one");
    }

    #[test]
    fn errors_are_the_failures_not_tasks_or_cancels() {
        for failed in ["tool_error", "unavailable", "refused", "protocol_error", "timeout"] {
            assert!(is_error(failed), "{failed}");
        }
        for fine in ["ok", "task", "input_required", "cancelled"] {
            assert!(!is_error(fine), "{fine}");
        }
    }

    fn entry(kind: Kind, server: &str, name: &str, outcome: &str, ms: u64) -> Entry {
        let mut e = Entry::server_event(server, name, outcome, None);
        e.kind = kind;
        e.duration_ms = Some(ms);
        e
    }

    #[tokio::test]
    async fn calls_and_reconnects_are_counted_and_rendered() {
        let pool = Pool::default();
        let metrics = Metrics::watch(&pool);
        let activity = pool.activity();
        activity.record(entry(Kind::Tool, "files", "read", "ok", 3));
        activity.record(entry(Kind::Tool, "files", "read", "tool_error", 700));
        activity.record(entry(Kind::Server, "files", "connect", "start", 0));
        activity.record(entry(Kind::Server, "files", "connect", "wake", 0));
        activity.record(entry(Kind::Prompt, "files", "p", "ok", 1));
        let text = metrics.render();
        for line in [
            r#"mcpool_tool_calls_total{server="files",tool="read",outcome="ok"} 1"#,
            r#"mcpool_tool_calls_total{server="files",tool="read",outcome="tool_error"} 1"#,
            r#"mcpool_tool_call_errors_total{server="files",tool="read"} 1"#,
            r#"mcpool_tool_call_duration_seconds_count{server="files",tool="read"} 2"#,
            r#"mcpool_tool_call_duration_seconds_bucket{le="0.005",server="files",tool="read"} 1"#,
            r#"mcpool_tool_call_duration_seconds_bucket{le="1.0",server="files",tool="read"} 2"#,
            r#"mcpool_reconnects_total{server="files",cause="wake"} 1"#,
            "mcpool_agent_sessions 0",
            "mcpool_tool_cache_hits_total 0",
            "# EOF",
        ] {
            assert!(text.contains(line), "{line} missing in\n{text}");
        }
        assert!(!text.contains("cause=\"start\""), "{text}");
    }
}
