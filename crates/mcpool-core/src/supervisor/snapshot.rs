//! What `/api/servers` shows of one server.

use std::time::SystemTime;

use serde::Serialize;
use tokio::time::Instant;

use super::Inner;
use crate::calls::rfc3339;
use crate::lifecycle::{Source, Status};
use crate::oauth::AuthSnapshot;
use crate::secrets::redact;
use crate::tool_check::ToolWarning;
use crate::toolctl::{Definition, ToolControl, Verdict};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolState {
    Live,
    Kept,
    Cached,
    /// Its description or input schema differs from what the user
    /// approved: held back from agents until approved.
    Changed,
    /// The scan of its definition found it dangerous: held back from
    /// agents until the user allows it.
    Quarantined,
}

impl From<Source> for ToolState {
    fn from(source: Source) -> Self {
        match source {
            Source::Live => ToolState::Live,
            Source::Kept => ToolState::Kept,
            Source::Cached => ToolState::Cached,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ServerSnapshot {
    pub name: String,
    pub status: Status,
    pub error: Option<String>,
    /// The error in one line: its reason and the stderr excerpt's most
    /// telling line (`stderr_tail::cause`), as `status` and the card show it.
    pub cause: Option<String>,
    pub transport: &'static str,
    /// The MCP revision agreed with the server at its last connection, e.g.
    /// "2026-07-28" or "2025-06-18"; `None` before it first connected.
    pub protocol: Option<String>,
    /// The extensions the server offered at its last connection, by id
    /// (`io.modelcontextprotocol/ui` for MCP Apps), sorted; empty before
    /// the first.
    pub extensions: Vec<String>,
    pub tools: Vec<ToolSnapshot>,
    pub tool_count: usize,
    /// The estimated tokens its listed tools add to a full `tools/list`
    /// (enabled and approved ones; see `search::compact`).
    pub tool_tokens: usize,
    pub connecting: bool,
    /// Milliseconds until the next attempt is allowed, during a backoff.
    pub retry_in_ms: Option<u64>,
    /// The same moment as RFC 3339 (UTC), for a countdown that ticks on
    /// its own; `None` outside a backoff.
    pub retry_at: Option<String>,
    /// When the last connection was made (RFC 3339, UTC); `None` before
    /// the first.
    pub last_connected: Option<String>,
    /// A local server's last stderr lines (at most 20, each cut at 400
    /// bytes), of the running process or else the last one; redacted of
    /// every secret like the error (rule 14). Empty for a remote server.
    pub stderr_tail: Vec<String>,
    /// After a wake or network change: the network cannot reach it yet.
    pub waiting_for_network: bool,
    /// The sign-in (OAuth), when it is signed in or needs it; never a token.
    pub auth: Option<crate::oauth::AuthSnapshot>,
    /// What the last listing's check repaired or left out, tool by tool
    /// (behaviour.md rule 18); empty when every tool was fine.
    pub tool_warnings: Vec<ToolWarning>,
    /// A local server's sandbox: its mode, grants and what this system
    /// enforces of it; `None` for a remote server.
    pub sandbox: Option<crate::sandbox::Status>,
    /// Prompts and resource templates the scan holds back (found
    /// dangerous; behaviour.md rule 20), with what it found; empty when
    /// none or the server is not scanned.
    pub held_back: Vec<crate::toolctl::scan_more::HeldDefinition>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ToolSnapshot {
    pub name: String,
    /// `changed` (held back for approval) wins over where the list came from.
    pub state: ToolState,
    /// `false` when the config's `disabledTools`/`enabledTools` hide it.
    pub enabled: bool,
    /// The estimated tokens of its definition in a listing.
    pub tokens: usize,
    /// For a `changed` tool: the definition the user approved (`null` when
    /// never approved) and the one the server gives now, to compare.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approved: Option<Option<crate::toolctl::Definition>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current: Option<crate::toolctl::Definition>,
    /// The scan's verdict on its definition as listed now (`clean`,
    /// `review`, `dangerous`); `None` when its server is not scanned.
    pub scan: Option<crate::scan::Verdict>,
    /// What the scan found, worst first; empty when nothing.
    pub findings: Vec<crate::scan::Finding>,
}

impl ServerSnapshot {
    /// Server `name` as its driver's state `inner` has it; `auth` is its
    /// sign-in, read before (it takes the same lock).
    pub(super) fn of(name: &str, inner: &Inner, control: &ToolControl, auth: Option<AuthSnapshot>) -> Self {
        let now = Instant::now();
        let retry_in = inner.machine.retry_at().filter(|at| *at > now).map(|at| at - now);
        let tools: Vec<ToolSnapshot> = match inner.machine.lists() {
            Some((lists, source)) => lists
                .tools
                .iter()
                .map(|t| {
                    let report = control.scans.report(name, t);
                    let mut snapshot = ToolSnapshot {
                        name: t.name.to_string(),
                        state: source.into(),
                        enabled: control.enabled(name, &t.name),
                        tokens: crate::search::compact::tool_tokens(t),
                        approved: None,
                        current: None,
                        scan: report.as_ref().map(|r| r.verdict),
                        findings: report.map(|r| r.findings).unwrap_or_default(),
                    };
                    match control.verdict(name, t) {
                        Verdict::Approved => {}
                        Verdict::Changed { approved } => {
                            snapshot.state = ToolState::Changed;
                            snapshot.approved = Some(approved);
                            snapshot.current = Some(Definition::of(t));
                        }
                        Verdict::Quarantined => snapshot.state = ToolState::Quarantined,
                    }
                    snapshot
                })
                .collect(),
            None => Vec::new(),
        };
        // Each line was redacted as it was read; again with this
        // connection's own values, as every error is.
        let stderr_tail: Vec<String> = inner
            .recent
            .stderr
            .as_ref()
            .map(|t| t.tail().iter().map(|l| redact(l, &inner.secret_values)).collect())
            .unwrap_or_default();
        let sandbox = (inner.spec.transport.kind() == "stdio").then(|| {
            crate::sandbox::status(&inner.spec.sandbox).noting(&stderr_tail, inner.recent.exited_at_start.as_deref())
        });
        ServerSnapshot {
            name: name.to_string(),
            status: inner.machine.status(),
            error: inner.machine.error().map(str::to_string),
            cause: inner.machine.error().map(crate::stderr_tail::cause),
            transport: inner.spec.transport.kind(),
            sandbox,
            held_back: if control.scan_off(name) {
                Vec::new()
            } else {
                control.more_scans.dangerous_of(name)
            },
            protocol: inner.info.as_ref().map(|i| i.protocol_version.to_string()),
            extensions: inner
                .info
                .as_ref()
                .and_then(|i| i.capabilities.extensions.as_ref())
                .map(|e| e.keys().cloned().collect())
                .unwrap_or_default(),
            tool_tokens: tools
                .iter()
                .filter(|t| t.enabled && t.state != ToolState::Changed)
                .map(|t| t.tokens)
                .sum(),
            tool_count: tools.len(),
            tools,
            connecting: inner.machine.attempting(),
            auth,
            tool_warnings: inner
                .recent
                .tool_warnings
                .iter()
                .map(|w| ToolWarning {
                    tool: redact(&w.tool, &inner.secret_values),
                    problem: redact(&w.problem, &inner.secret_values),
                    ..w.clone()
                })
                .collect(),
            waiting_for_network: inner.machine.status() == Status::Failed
                && inner
                    .machine
                    .error()
                    .is_some_and(|e| e.starts_with(super::WAITING_PREFIX)),
            retry_in_ms: retry_in.map(|d| d.as_millis() as u64),
            retry_at: retry_in.map(|d| rfc3339(SystemTime::now() + d)),
            last_connected: inner.recent.last_connected.map(rfc3339),
            stderr_tail,
        }
    }
}
