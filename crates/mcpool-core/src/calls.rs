//! The recent tool calls agents made through mcpool, for the dashboard
//! (`GET /api/calls`, the `call` event of `/api/events`; behaviour §2
//! "control API"): which tool of which server, when, how long, and how it
//! ended. Names and timings only: never the arguments, the result or the
//! text of an error, which may carry anything (rule 14).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::SystemTime;

use serde::Serialize;
use tokio::sync::broadcast;
use tokio::time::Instant;

use crate::sync::lock;

/// How many calls are kept, the oldest going first.
pub const KEPT: usize = 100;

/// How a call ended, in one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A result.
    Ok,
    /// A result the tool marked as an error (`isError`).
    ToolError,
    /// The server could not be reached (backoff, a failed reconnect, sign-in).
    Unavailable,
    /// mcpool refused it: a profile, a tool switched off or held for approval.
    Refused,
    /// A JSON-RPC error instead of a result.
    ProtocolError,
    /// The agent cancelled it or went away.
    Cancelled,
    /// The server sent neither an answer nor progress within `callTimeout`.
    Timeout,
    /// The server made it a task (a result comes later).
    Task,
    /// The server asked the agent for input first.
    InputRequired,
}

impl Outcome {
    pub fn ok(self) -> bool {
        matches!(self, Outcome::Ok | Outcome::Task | Outcome::InputRequired)
    }
}

/// One finished call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallRecord {
    /// Increases by one per call since mcpool started.
    pub id: u64,
    /// When it ended, RFC 3339 in UTC.
    pub time: String,
    /// The server's name in the config; `mcpool` for the built-in tools.
    pub server: String,
    /// The tool's name as the server names it (no `<server>__` prefix).
    pub tool: String,
    pub duration_ms: u64,
    pub ok: bool,
    pub outcome: Outcome,
}

/// The last [`KEPT`] calls, and a stream of each as it ends.
pub struct CallLog {
    next: AtomicU64,
    kept: Mutex<VecDeque<CallRecord>>,
    events: broadcast::Sender<CallRecord>,
}

impl Default for CallLog {
    fn default() -> Self {
        CallLog {
            next: AtomicU64::new(1),
            kept: Mutex::new(VecDeque::with_capacity(KEPT)),
            events: broadcast::channel(64).0,
        }
    }
}

impl CallLog {
    /// Notes a call to `tool` of `server` that began at `started`.
    pub fn record(&self, server: &str, tool: &str, started: Instant, outcome: Outcome) -> CallRecord {
        let record = CallRecord {
            id: self.next.fetch_add(1, Ordering::Relaxed),
            time: rfc3339(SystemTime::now()),
            server: server.to_string(),
            tool: tool.to_string(),
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            ok: outcome.ok(),
            outcome,
        };
        {
            let mut kept = lock(&self.kept);
            if kept.len() == KEPT {
                kept.pop_front();
            }
            kept.push_back(record.clone());
        }
        let _ = self.events.send(record.clone());
        record
    }

    /// The calls kept, newest first.
    pub fn recent(&self) -> Vec<CallRecord> {
        lock(&self.kept).iter().rev().cloned().collect()
    }

    pub fn subscribe(&self) -> broadcast::Receiver<CallRecord> {
        self.events.subscribe()
    }
}

/// A call being served: recorded when [`Recording::finish`] is called, or
/// as `cancelled` when dropped before (the agent cancelled or went away).
pub struct Recording<'a> {
    log: &'a CallLog,
    started: Instant,
    target: Option<(String, String)>,
}

impl<'a> Recording<'a> {
    pub fn start(log: &'a CallLog) -> Self {
        Recording {
            log,
            started: Instant::now(),
            target: None,
        }
    }

    /// The call is for `tool` of `server`; a call never routed to one is
    /// not recorded (an unknown tool name).
    pub fn target(&mut self, server: &str, tool: &str) {
        self.target = Some((server.to_string(), tool.to_string()));
    }

    /// The server and tool this call went to, once known.
    pub fn target_of(&self) -> Option<(&str, &str)> {
        self.target.as_ref().map(|(s, t)| (s.as_str(), t.as_str()))
    }

    pub fn finish(mut self, outcome: Outcome) {
        if let Some((server, tool)) = self.target.take() {
            self.log.record(&server, &tool, self.started, outcome);
        }
    }
}

impl Drop for Recording<'_> {
    fn drop(&mut self) {
        if let Some((server, tool)) = self.target.take() {
            self.log.record(&server, &tool, self.started, Outcome::Cancelled);
        }
    }
}

/// `t` as RFC 3339 in UTC with milliseconds, e.g. `2026-12-01T02:45:03.120Z`.
pub fn rfc3339(t: SystemTime) -> String {
    // Written for every call: chrono's fixed RFC 3339 writer, not a format
    // string parsed each time.
    chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn rfc3339_in_utc() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_796_093_103_120);
        assert_eq!(rfc3339(t), "2026-12-01T02:45:03.120Z");
        // A leap day and the end of a year.
        let t = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rfc3339(t), "2000-02-29T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_767_225_599);
        assert_eq!(rfc3339(t), "2025-12-31T23:59:59.000Z");
    }

    #[tokio::test(start_paused = true)]
    async fn keeps_the_last_calls_newest_first_and_streams_each() {
        let log = CallLog::default();
        let mut rx = log.subscribe();
        for i in 0..(KEPT + 5) {
            let started = Instant::now();
            tokio::time::advance(Duration::from_millis(i as u64)).await;
            log.record("fs", &format!("t{i}"), started, Outcome::Ok);
            if i == 0 {
                // Each call is streamed as it ends (the channel keeps 64).
                assert_eq!(rx.recv().await.map(|r| r.tool).ok().as_deref(), Some("t0"));
            }
        }
        let recent = log.recent();
        assert_eq!(recent.len(), KEPT);
        assert_eq!(recent[0].tool, format!("t{}", KEPT + 4));
        assert_eq!(recent[0].duration_ms, (KEPT + 4) as u64);
        assert_eq!(recent[KEPT - 1].tool, "t5");
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_recording_is_a_cancelled_call_and_an_unrouted_one_is_none() {
        let log = CallLog::default();
        {
            let mut r = Recording::start(&log);
            r.target("fs", "read");
            tokio::time::advance(Duration::from_millis(40)).await;
        }
        Recording::start(&log).finish(Outcome::ProtocolError);
        let mut r = Recording::start(&log);
        r.target("mcpool", "status");
        r.finish(Outcome::ToolError);
        let recent = log.recent();
        assert_eq!(recent.len(), 2);
        assert_eq!(
            (recent[1].outcome, recent[1].ok, recent[1].duration_ms),
            (Outcome::Cancelled, false, 40)
        );
        assert_eq!(
            (recent[0].tool.as_str(), recent[0].outcome, recent[0].ok),
            ("status", Outcome::ToolError, false)
        );
    }
}
