//! What a person or a program does to the pool: reconnect, disconnect and
//! enable a server, sign in and out, switch or approve a tool, add, change,
//! remove or test a server, add one from a registry, store or remove a
//! secret. Each operation is one
//! typed function that does the whole of it (the file edit, the reload, the
//! connection) and answers a typed outcome or a [`ControlError`]; the
//! dashboard's API (`endpoint/api`) translates HTTP to these and back, and
//! the tray calls them directly, in the same process.

mod edits;
mod registry;
mod secrets;
mod servers;

/// What an edit takes and gives, as the adapters and the tray see it.
pub use crate::editing::{EditError, EntryView, Removed, ServerChange, Written};
pub use edits::Edits;
pub use registry::{RegistryAdded, RegistryFailure, RegistrySearch};
pub use servers::{reconnect, ToolAction};

use crate::pool::Pool;
use crate::supervisor::ServerSnapshot;

/// Why an operation did nothing, or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error("mcpool has no server named '{0}'")]
    UnknownServer(String),
    #[error("server '{server}' lists no tool named '{tool}'")]
    UnknownTool { server: String, tool: String },
    /// The server could not be reached; `server` is how it stands now.
    #[error("{sentence}")]
    Unreachable {
        sentence: String,
        server: Box<ServerSnapshot>,
    },
    /// Signing in could not start (no sign-in for this server, or its
    /// authorization server did not answer).
    #[error("{0}")]
    SignIn(String),
    /// Signing out failed (nothing to sign out of, or the keyring refused).
    #[error("{0}")]
    SignOut(String),
    /// The config file could not be edited; the field when one is to blame.
    #[error(transparent)]
    Edit(#[from] EditError),
    /// The keyring refused, or the secret's name is not one.
    #[error(transparent)]
    Secret(#[from] crate::secrets::SecretError),
}

/// The operations on one running pool. Cheap to clone: every clone works
/// on the same pool.
#[derive(Clone)]
pub struct Control {
    pool: Pool,
    registries: std::sync::Arc<registry::Registries>,
}

impl Control {
    pub fn new(pool: Pool) -> Control {
        Control {
            pool,
            registries: Default::default(),
        }
    }

    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The config file's edits (add, change, remove, test).
    pub fn edits(&self) -> Edits<'_> {
        Edits { pool: &self.pool }
    }

    fn server(&self, name: &str) -> Result<std::sync::Arc<crate::supervisor::Supervisor>, ControlError> {
        self.pool
            .server(name)
            .ok_or_else(|| ControlError::UnknownServer(name.to_string()))
    }
}

#[cfg(test)]
mod tests;
