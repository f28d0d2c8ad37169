//! One server's switches: reconnect (which is also enable), disconnect, sign
//! in and out, and its tools' switches and approvals.

use super::{Control, ControlError};
use crate::editing::EditError;
use crate::pool::Pool;
use crate::supervisor::ServerSnapshot;

/// What can be done to one tool of a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolAction {
    /// Listed and callable again (removed from the entry's `disabledTools`).
    Enable,
    /// Hidden from agents (written into the entry's `disabledTools`).
    Disable,
    /// The definition listed now becomes the approved one.
    Approve,
    /// Served though the scan found it dangerous (into `scanAllow`).
    Allow,
    /// Kept out though the scan holds it back anyway: off for good (out of
    /// `scanAllow`, into `disabledTools`).
    Block,
}

impl ToolAction {
    /// `enable`, `disable`, `approve`, `allow` or `block`, as the API's path
    /// names them.
    pub fn parse(word: &str) -> Option<ToolAction> {
        match word {
            "enable" => Some(ToolAction::Enable),
            "disable" => Some(ToolAction::Disable),
            "approve" => Some(ToolAction::Approve),
            "allow" => Some(ToolAction::Allow),
            "block" => Some(ToolAction::Block),
            _ => None,
        }
    }
}

/// Connects `name` of `pool` now (a disabled or disconnected one too): its
/// snapshot once connected. [`Control::reconnect`], for an adapter that
/// holds the pool alone (an agent's `mcpool__reconnect`).
pub async fn reconnect(pool: &Pool, name: &str) -> Result<ServerSnapshot, ControlError> {
    let sup = pool
        .server(name)
        .ok_or_else(|| ControlError::UnknownServer(name.to_string()))?;
    match sup.reconnect().await {
        Ok(()) => Ok(sup.snapshot()),
        Err(u) => Err(ControlError::Unreachable {
            sentence: u.sentence,
            server: Box::new(sup.snapshot()),
        }),
    }
}

impl Control {
    /// Connects `name` now (a disabled or disconnected one too): its
    /// snapshot once connected.
    pub async fn reconnect(&self, name: &str) -> Result<ServerSnapshot, ControlError> {
        reconnect(&self.pool, name).await
    }

    /// Enabling is a reconnect of a disabled server: it starts at once.
    pub async fn enable(&self, name: &str) -> Result<ServerSnapshot, ControlError> {
        self.reconnect(name).await
    }

    /// Reconnects every failed server, each on its own; returns how many.
    pub fn reconnect_failed(&self) -> usize {
        let failed: Vec<_> = self
            .pool
            .servers()
            .into_iter()
            .filter(|s| s.status() == crate::lifecycle::Status::Failed)
            .collect();
        let count = failed.len();
        for server in failed {
            tokio::spawn(async move {
                if let Err(e) = server.reconnect().await {
                    tracing::info!("reconnect {}: {}", server.name(), e.sentence);
                }
            });
        }
        count
    }

    /// Closes `name`'s connection and holds it closed until a reconnect.
    pub fn disconnect(&self, name: &str) -> Result<ServerSnapshot, ControlError> {
        let sup = self.server(name)?;
        sup.disconnect();
        Ok(sup.snapshot())
    }

    /// Starts signing `name` in: the URL to open in the browser. The pool
    /// owns the redirect listener and the tokens; the server connects once
    /// the browser comes back.
    pub async fn sign_in(&self, name: &str) -> Result<String, ControlError> {
        self.server(name)?.login().await.map_err(ControlError::SignIn)
    }

    /// Forgets `name`'s tokens.
    pub async fn sign_out(&self, name: &str) -> Result<ServerSnapshot, ControlError> {
        let sup = self.server(name)?;
        sup.logout().await.map_err(ControlError::SignOut)?;
        Ok(sup.snapshot())
    }

    /// A tool's switch (written into the config file's `disabledTools`, then
    /// loaded at once) or its approval.
    pub async fn tool(&self, name: &str, tool: &str, action: ToolAction) -> Result<ServerSnapshot, ControlError> {
        let sup = self.server(name)?;
        match action {
            ToolAction::Approve => {
                if !self.pool.approve_tool(name, tool) {
                    return Err(ControlError::UnknownTool {
                        server: name.to_string(),
                        tool: tool.to_string(),
                    });
                }
            }
            ToolAction::Enable | ToolAction::Disable => {
                let enabled = action == ToolAction::Enable;
                let (name, tool) = (name.to_string(), tool.to_string());
                self.edits()
                    .write(move |path, _| {
                        crate::toolctl::write::set_tool_enabled(path, &name, &tool, enabled)
                            .map_err(|e| EditError::Conflict(e.to_string()))
                    })
                    .await?;
            }
            ToolAction::Allow | ToolAction::Block => {
                let allowed = action == ToolAction::Allow;
                let (name, tool) = (name.to_string(), tool.to_string());
                self.edits()
                    .write(move |path, _| {
                        crate::toolctl::write::set_scan_allowed(path, &name, &tool, allowed)
                            .map_err(|e| EditError::Conflict(e.to_string()))
                    })
                    .await?;
            }
        }
        Ok(sup.snapshot())
    }
}
