//! What the activity log keeps of an agent's request: who asked (client,
//! session, endpoint), when, how long and how it ended; the arguments and
//! the result only for a server with `"logArguments": true`, redacted of
//! every resolved secret and cut at [`KEPT_TEXT`] bytes.

use std::time::SystemTime;

use rmcp::model::{ErrorData as McpError, JsonObject};
use rmcp::service::{RequestContext, RoleServer};
use tokio::time::Instant;

use crate::activity::{Agent, Entry, Kind};
use crate::pool::Pool;
use crate::supervisor::RequestError;

/// The most of an argument list or result the log keeps.
pub const KEPT_TEXT: usize = 64 * 1024;

/// The agent behind a request: its `initialize` (or a 2026-07-28
/// request's `_meta`), its session id and the path it called.
pub(super) fn agent_of(context: &RequestContext<RoleServer>) -> Agent {
    let parts = context.extensions.get::<http::request::Parts>();
    // `/mcp` is nested: the path the agent called is the original one.
    let endpoint = parts.map(|p| match p.extensions.get::<axum::extract::OriginalUri>() {
        Some(original) => original.path().to_string(),
        None => p.uri.path().to_string(),
    });
    let session = parts
        .and_then(|p| p.headers.get("mcp-session-id"))
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let (client, client_version) = match context.peer.peer_info() {
        Some(info) => (
            Some(info.client_info.name.clone()),
            Some(info.client_info.version.clone()),
        ),
        None => match context.meta.client_info() {
            Some(c) => (Some(c.name), Some(c.version)),
            None => (None, None),
        },
    };
    Agent {
        client,
        client_version,
        session,
        endpoint,
    }
}

/// JSON text as the log keeps it: redacted, and cut (at a character
/// boundary) past [`KEPT_TEXT`].
pub fn kept_text(json: &str) -> String {
    let redacted = crate::secrets::redact_resolved(json);
    if redacted.len() <= KEPT_TEXT {
        return redacted;
    }
    let mut end = KEPT_TEXT;
    while !redacted.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes in all)", &redacted[..end], redacted.len())
}

/// One request's entry, begun when it arrived.
pub(super) struct Pending {
    pub at: SystemTime,
    pub started: Instant,
    pub agent: Agent,
    /// The trace it runs under, when traces are on.
    pub trace_id: Option<String>,
    /// The script run that made this call (its key), for a call from code mode.
    pub parent: Option<String>,
}

impl Pending {
    pub fn now(context: &RequestContext<RoleServer>) -> Pending {
        Pending {
            at: SystemTime::now(),
            started: Instant::now(),
            agent: agent_of(context),
            trace_id: None,
            parent: None,
        }
    }

    pub fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// The entry for a request to `server` that ended with `outcome`.
    #[allow(clippy::too_many_arguments)]
    pub fn entry(
        self,
        kind: Kind,
        server: &str,
        name: &str,
        outcome: &str,
        error: Option<String>,
        result_bytes: Option<u64>,
        kept: Option<(Option<String>, Option<String>)>,
    ) -> Entry {
        let duration_ms = Some(self.elapsed_ms());
        let (arguments, result) = kept.unwrap_or((None, None));
        Entry {
            time: self.at,
            kind,
            server: server.to_string(),
            name: crate::secrets::redact_resolved(name),
            agent: self.agent,
            duration_ms,
            outcome: outcome.to_string(),
            error: error.map(|e| crate::secrets::redact_resolved(&e)),
            result_bytes,
            arguments,
            result,
            trace_id: self.trace_id,
            run: None,
            parent_run: self.parent,
        }
    }
}

/// `calls::Outcome` as the log and the metrics say it (`tool_error`, ...).
pub(super) fn outcome_word(outcome: crate::calls::Outcome) -> String {
    serde_json::to_value(outcome)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// A result as JSON text when `keep`, and its length in bytes.
fn result_text(result: &impl serde::Serialize, keep: bool) -> (Option<String>, Option<u64>) {
    if keep {
        let text = serde_json::to_string(result).ok();
        let bytes = text.as_ref().map(|t| t.len() as u64);
        return (text, bytes);
    }
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let bytes = serde_json::to_writer(&mut count, result).ok().map(|()| count.0);
    (None, bytes)
}

/// The outcome word of a request that did not come back with a result.
pub(super) fn failure_outcome(e: &RequestError) -> &'static str {
    match e {
        RequestError::Unavailable(_) => "unavailable",
        RequestError::TimedOut(_) => "timeout",
        RequestError::Mcp(_) => "protocol_error",
        RequestError::Cancelled => "cancelled",
    }
}

/// What the log may say of a failure without `logArguments`: mcpool's own
/// sentences, and only the code of a server's JSON-RPC error (whose
/// message may quote the arguments).
pub(super) fn failure_text(e: &RequestError, log_arguments: bool) -> String {
    match e {
        RequestError::Unavailable(u) | RequestError::TimedOut(u) => u.sentence.clone(),
        RequestError::Mcp(m) if log_arguments => format!("JSON-RPC error {}: {}", m.code.0, m.message),
        RequestError::Mcp(m) => format!("JSON-RPC error {}", m.code.0),
        RequestError::Cancelled => "The request was cancelled.".into(),
    }
}

impl Pending {
    /// Notes this finished tool call in the pool's activity log (`outcome`
    /// as `calls::Outcome` says it).
    #[allow(clippy::too_many_arguments)]
    pub fn note_call(
        self,
        pool: &Pool,
        server: &str,
        tool: &str,
        arguments: Option<&JsonObject>,
        result: &Result<rmcp::model::CallToolResponse, McpError>,
        outcome: crate::calls::Outcome,
    ) {
        use crate::calls::Outcome;
        let activity = pool.activity();
        let log_arguments = pool.server(server).is_some_and(|s| s.log_arguments());
        use rmcp::model::CallToolResponse as R;
        // The result's text only when the log keeps it; else only its
        // length, counted without building it (a large result would be
        // serialised twice per call, once here for nothing).
        let (text, bytes) = match result {
            Ok(R::Complete(r)) => result_text(r, log_arguments),
            Ok(R::Task(t)) => result_text(t, log_arguments),
            Ok(R::InputRequired(i)) => result_text(i, log_arguments),
            _ => (None, None),
        };
        // mcpool's own sentences are safe to keep; a server's words only
        // with logArguments.
        let error = match (outcome, result) {
            (
                Outcome::Unavailable | Outcome::Timeout | Outcome::Refused,
                Ok(rmcp::model::CallToolResponse::Complete(r)),
            ) => r.content.first().and_then(|c| c.as_text()).map(|t| t.text.clone()),
            (Outcome::ProtocolError, Err(e)) if log_arguments => {
                Some(format!("JSON-RPC error {}: {}", e.code.0, e.message))
            }
            (Outcome::ProtocolError, Err(e)) => Some(format!("JSON-RPC error {}", e.code.0)),
            (Outcome::Cancelled, _) => Some("The request was cancelled.".into()),
            _ => None,
        };
        let kept = log_arguments.then(|| {
            (
                arguments
                    .and_then(|a| serde_json::to_string(a).ok())
                    .map(|t| kept_text(&t)),
                text.as_deref().map(kept_text),
            )
        });
        let outcome_word = outcome_word(outcome);
        activity.record(self.entry(Kind::Tool, server, tool, &outcome_word, error, bytes, kept));
    }
}
