//! Servers from the registries: search every configured registry at once
//! (when none answers, the last results this instance had for the same
//! query, marked offline), one server's add form with the runtime it needs
//! and whether this machine has it, and the form filled in and added
//! through [`Edits::add`](super::Edits::add), as `mcpool registry add` does.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::sync::Mutex;

use serde_json::Value;

use super::Control;
use crate::editing::{EditError, ServerChange, Written};
use crate::registry::{self, view, Choice, RegistryClient, RegistryError};
use crate::sync::lock;

/// Queries whose last results are kept for when the registries are offline.
const REMEMBERED: usize = 64;

/// The client, per query the last results a registry gave, and the `PATH`
/// whose runtimes a form says are there or missing (read once, when the
/// pool's control is made).
pub(super) struct Registries {
    client: RegistryClient,
    last: Mutex<BTreeMap<String, Vec<Value>>>,
    path: Option<OsString>,
}

impl Default for Registries {
    fn default() -> Self {
        Registries {
            client: RegistryClient::default(),
            last: Mutex::default(),
            path: std::env::var_os("PATH"),
        }
    }
}

/// A search's answer: the servers found (or remembered, when offline).
#[derive(Debug, Clone)]
pub struct RegistrySearch {
    pub servers: Vec<Value>,
    /// No registry answered; `servers` are the last results for the query.
    pub offline: bool,
    /// What each registry that failed said.
    pub error: Option<String>,
}

/// A registry server added: what was written, and the runtime it needs when
/// this machine lacks it.
#[derive(Debug)]
pub struct RegistryAdded {
    pub written: Written,
    pub missing_runtime: Option<String>,
}

/// Why a registry operation did nothing.
#[derive(Debug, thiserror::Error)]
pub enum RegistryFailure {
    /// The request itself is wrong (a choice that is not one, no name).
    #[error("{0}")]
    Request(String),
    #[error("{0}")]
    NotFound(String),
    /// No registry could be asked.
    #[error("{0}")]
    Offline(String),
    /// The server's form cannot be made or filled in.
    #[error("{0}")]
    Form(String),
    #[error(transparent)]
    Edit(#[from] EditError),
}

impl Control {
    fn registry_bases(&self) -> Vec<String> {
        registry::bases(self.pool.config_state().borrow().registries.as_deref())
    }

    /// Searches every configured registry for `query`.
    pub async fn registry_search(&self, query: &str, limit: usize) -> RegistrySearch {
        let registries = &self.registries;
        let q = query.trim();
        let searched = registries.client.search(&self.registry_bases(), q, limit).await;
        let key = q.to_lowercase();
        let offline = searched.offline();
        let servers = if offline {
            lock(&registries.last).get(&key).cloned().unwrap_or_default()
        } else {
            let servers: Vec<Value> = searched.servers.iter().map(view::summary).collect();
            let mut last = lock(&registries.last);
            if last.len() >= REMEMBERED && !last.contains_key(&key) {
                last.pop_first();
            }
            last.insert(key, servers.clone());
            servers
        };
        RegistrySearch {
            servers,
            offline,
            error: searched.error_sentence(),
        }
    }

    /// The add form of `name` at `version` (else the latest), for the
    /// package or remote `choice` names (else the first).
    pub async fn registry_form(
        &self,
        name: &str,
        version: Option<&str>,
        choice: Option<&str>,
    ) -> Result<Value, RegistryFailure> {
        if name.trim().is_empty() {
            return Err(RegistryFailure::Request("name a server: ?name=NAME".into()));
        }
        let (found, choice) = self.registry_fetch(name, version, choice).await?;
        view::form_view(&found, choice, self.registries.path.as_deref())
            .map_err(|e| RegistryFailure::Form(e.to_string()))
    }

    /// Adds `name` from its registry with the form's `values`, as `local`
    /// (else the name the form suggests).
    pub async fn registry_add(
        &self,
        name: &str,
        version: Option<&str>,
        choice: Option<&str>,
        local: Option<String>,
        values: &BTreeMap<String, String>,
    ) -> Result<RegistryAdded, RegistryFailure> {
        let (found, choice) = self.registry_fetch(name, version, choice).await?;
        let (form, filled) = registry::form(&found.server, choice)
            .and_then(|form| {
                let filled = registry::apply(&form, values)?;
                Ok((form, filled))
            })
            .map_err(|e| RegistryFailure::Form(e.to_string()))?;
        let runtime = registry::runtime_for(&filled.entry, self.registries.path.as_deref());
        let change = ServerChange {
            name: local.filter(|l| !l.trim().is_empty()).unwrap_or(form.suggested_name),
            entry: filled.entry,
            secret_env: filled.secret_env,
            secret_headers: filled.secret_headers,
            ..Default::default()
        };
        let written = self.edits().add(change).await?;
        Ok(RegistryAdded {
            written,
            missing_runtime: runtime.and_then(|r| r.missing_sentence()),
        })
    }

    /// The server `name` at `version` from the first registry that has it,
    /// and the package or remote `choice` names.
    async fn registry_fetch(
        &self,
        name: &str,
        version: Option<&str>,
        choice: Option<&str>,
    ) -> Result<(registry::Found, Option<Choice>), RegistryFailure> {
        let choice = match choice.filter(|c| !c.is_empty()) {
            None => None,
            Some(text) => Some(Choice::parse(text).ok_or_else(|| {
                RegistryFailure::Request(format!("'{text}' is not a choice (package:N or remote:N)"))
            })?),
        };
        let version = version.filter(|v| !v.is_empty());
        match self
            .registries
            .client
            .server(&self.registry_bases(), name.trim(), version)
            .await
        {
            Ok(found) => Ok((found, choice)),
            Err(e @ RegistryError::NotFound { .. }) => Err(RegistryFailure::NotFound(e.to_string())),
            Err(e) => Err(RegistryFailure::Offline(e.to_string())),
        }
    }
}
