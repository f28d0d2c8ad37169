//! The config file's edits: add, change and remove a server, read one entry
//! for an edit form, and test what was typed without keeping it. Every
//! write goes through [`Edits::write`]: the edit (file and keyring) off the
//! runtime, then the file loaded so the pool follows at once instead of at
//! its next poll.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::editing::{self, EditError, EntryView, Removed, ServerChange, Written};
use crate::pool::Pool;
use crate::secrets::SecretStore;
use crate::supervisor::probe::Probe;

/// The edits of one pool's config file.
pub struct Edits<'a> {
    pub(super) pool: &'a Pool,
}

impl Edits<'_> {
    /// The file writes go to, or why there is none.
    pub fn config_path(&self) -> Result<PathBuf, EditError> {
        self.pool
            .config_state()
            .borrow()
            .path
            .clone()
            .ok_or_else(|| EditError::Conflict("mcpool has no config file to write to".into()))
    }

    /// Runs a blocking edit (file and keyring) off the runtime, then loads
    /// the file so the pool follows at once.
    pub async fn write<T: Send + 'static>(
        &self,
        edit: impl FnOnce(&Path, &dyn SecretStore) -> Result<T, EditError> + Send + 'static,
    ) -> Result<T, EditError> {
        let path = self.config_path()?;
        let store: Arc<dyn SecretStore> = self.pool.secrets();
        let p = path.clone();
        let (result, loaded) = tokio::task::spawn_blocking(move || {
            let result = edit(&p, store.as_ref());
            let loaded = result.is_ok().then(|| crate::config::load(&p));
            (result, loaded)
        })
        .await
        .map_err(|e| EditError::Failed(format!("the edit did not finish: {e}")))?;
        if let Some(loaded) = loaded {
            self.pool.config_loaded(&path, loaded.as_ref());
        }
        result
    }

    /// Adds a server (its secrets to the keyring).
    pub async fn add(&self, change: ServerChange) -> Result<Written, EditError> {
        self.write(move |path, store| editing::add(path, change, store)).await
    }

    /// Replaces the entry `name` (a rename when the change names another).
    pub async fn replace(&self, name: &str, change: ServerChange) -> Result<Written, EditError> {
        let name = name.to_string();
        self.write(move |path, store| editing::replace_server(path, &name, change, store))
            .await
    }

    /// Removes the entry `name`; with `secrets`, the keyring entries only it
    /// used go too.
    pub async fn remove(&self, name: &str, secrets: bool) -> Result<Removed, EditError> {
        let name = name.to_string();
        self.write(move |path, store| editing::remove(path, &name, secrets, store))
            .await
    }

    /// Grants the sandboxed server `name` what it was refused (an "Allow"
    /// on its card): the grant is written into its entry's `sandbox`
    /// through the same locked, comment-keeping write as every edit, and
    /// the changed entry restarts the server.
    pub async fn allow(&self, name: &str, allowance: crate::sandbox::Allowance) -> Result<Written, EditError> {
        let view = self.entry(name).await?;
        let serde_json::Value::Object(mut entry) = view.entry else {
            return Err(EditError::Failed(format!("the entry of '{name}' is not an object")));
        };
        let effective = self
            .pool
            .server(name)
            .map(|s| s.spec().sandbox.mode)
            .unwrap_or_default();
        let sandbox = allowance.into_sandbox(entry.remove("sandbox"), effective);
        entry.insert("sandbox".into(), sandbox);
        let change = ServerChange {
            name: name.to_string(),
            entry,
            revision: Some(view.revision),
            ..ServerChange::default()
        };
        self.replace(name, change).await
    }

    /// The entry `name` as the file has it, for an edit form.
    pub async fn entry(&self, name: &str) -> Result<EntryView, EditError> {
        let path = self.config_path()?;
        let store = self.pool.secrets();
        let name = name.to_string();
        tokio::task::spawn_blocking(move || editing::entry_view(&path, &name, store.as_ref()))
            .await
            .unwrap_or_else(|e| Err(EditError::Failed(e.to_string())))
    }

    /// One connection with exactly what was typed; nothing is written or
    /// kept. An unnamed change is tested as `untitled`.
    pub async fn test(&self, mut change: ServerChange) -> Result<Probe, EditError> {
        if change.name.is_empty() {
            change.name = "untitled".into();
        }
        let path = self.config_path().unwrap_or_else(|_| PathBuf::from("config.json"));
        let spec = change.spec(&path)?;
        Ok(self.pool.probe(spec, &change.secret_values()).await)
    }
}
