//! What a server did last that its status does not keep: [`Recent`], for
//! `/api/servers` (snapshot.rs).

use std::time::SystemTime;

use crate::errors::ConnectError;
use crate::stderr_tail::StderrTail;
use crate::tool_check::ToolWarning;

/// What a server did last that its status does not keep.
#[derive(Default)]
pub(super) struct Recent {
    pub(super) last_connected: Option<SystemTime>,
    pub(super) stderr: Option<StderrTail>,
    pub(super) tool_warnings: Vec<ToolWarning>,
    /// How the process ended, when the last attempt ended with it exiting
    /// before it answered (cleared once it connects).
    pub(super) exited_at_start: Option<String>,
}

impl Recent {
    pub(super) fn connected(&mut self, stderr: Option<StderrTail>) {
        self.last_connected = Some(SystemTime::now());
        self.stderr = stderr;
        self.exited_at_start = None;
    }

    /// The check of a new listing; a warning is logged when it is new.
    pub(super) fn listed(&mut self, server: &str, warnings: Vec<ToolWarning>) {
        for warning in warnings.iter().filter(|w| !self.tool_warnings.contains(w)) {
            tracing::warn!(server = %server, "{}", crate::secrets::redact_resolved(&warning.sentence(server)));
        }
        self.tool_warnings = warnings;
    }

    /// A process that ended while connecting leaves its last words.
    pub(super) fn failed(&mut self, err: &ConnectError) {
        if let ConnectError::Exited { reason, stderr } = err {
            self.stderr = Some(StderrTail::of_lines(stderr));
            self.exited_at_start = Some(reason.clone());
        }
    }
}
