//! Changes to the server list as edits of the config file: an entry added,
//! changed or removed in place (comments and key order kept, a `.bak` of the
//! previous version first), its secret values in the keyring and only
//! `${keyring:NAME}` references in the file.
//!
//! The file stays the source of truth: the running pool picks every write up
//! through its config watcher. A write holds the config's lock (shared by
//! every program of mcpool's that writes it), reads the file, edits the
//! text and, just before replacing it, reads it again; a hand edit in
//! between (an editor takes no lock) makes the edit start over on the new
//! text, so neither is lost.

mod check;
#[cfg(test)]
mod tests;
mod text;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{json, Map, Value};

use crate::config::ConfigProblem;
use crate::secrets::{reference, secret_name, SecretStore};

/// One add or change: the entry as the config holds it, and the secret
/// values that go to the keyring instead of the file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerChange {
    pub name: String,
    pub entry: Map<String, Value>,
    pub secret_env: BTreeMap<String, String>,
    pub secret_headers: BTreeMap<String, String>,
    /// `oauth.clientSecret`, kept in the keyring.
    pub secret_oauth_client_secret: Option<String>,
    /// The entry's revision when the change was begun (see
    /// [`EntryView::revision`]); a change of an entry edited meanwhile is
    /// refused.
    pub revision: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum EditError {
    /// Bad input: the sentence names the file, server and field.
    #[error("{message}")]
    Field { field: Option<String>, message: String },
    /// The file changed under the edit in a way it cannot merge.
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    NotFound(String),
    /// The file or the keyring could not be read or written.
    #[error("{0}")]
    Failed(String),
}

impl EditError {
    pub(crate) fn from_problem(p: ConfigProblem) -> Self {
        EditError::Field {
            field: p.field.clone(),
            message: p.to_string(),
        }
    }

    fn field(field: &str, message: String) -> Self {
        EditError::Field {
            field: Some(field.to_string()),
            message,
        }
    }
}

/// What a write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub name: String,
    /// The copy of the previous file, `None` when there was none.
    pub backup: Option<PathBuf>,
    /// Keyring entries written.
    pub secrets: Vec<String>,
}

/// What a removal did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removed {
    pub backup: Option<PathBuf>,
    /// Keyring entries removed with it (only when asked, and only those no
    /// other entry uses).
    pub removed_secrets: Vec<String>,
}

/// One entry as the file has it, for an edit form: references stay
/// references, and each says whether the keyring holds it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct EntryView {
    pub name: String,
    pub entry: Value,
    /// `{"env": {K: {"reference", "set"}}, "headers": {...}, "oauth": {...}}`.
    pub secrets: Value,
    /// A short hash of the entry: a change carrying it is refused once the
    /// entry was changed by someone else.
    pub revision: String,
}

impl ServerChange {
    /// The API's body: `{"name", "entry", "secretEnv", "secretHeaders",
    /// "secretOauthClientSecret", "revision"}`.
    pub fn from_body(body: &Value) -> Result<Self, EditError> {
        let Value::Object(obj) = body else {
            return Err(EditError::Field {
                field: None,
                message: "expected a JSON object with \"name\" and \"entry\"".into(),
            });
        };
        let name = match obj.get("name") {
            Some(Value::String(s)) => s.trim().to_string(),
            None | Some(Value::Null) => String::new(),
            Some(_) => return Err(EditError::field("name", "\"name\" must be a string".into())),
        };
        let entry = match obj.get("entry") {
            Some(Value::Object(e)) => e.clone(),
            _ => {
                return Err(EditError::field(
                    "entry",
                    "\"entry\" must be an object (the config entry)".into(),
                ))
            }
        };
        let strings = |key: &str, prefix: &str| -> Result<BTreeMap<String, String>, EditError> {
            match obj.get(key) {
                None | Some(Value::Null) => Ok(BTreeMap::new()),
                Some(Value::Object(map)) => map
                    .iter()
                    .map(|(k, v)| match v {
                        Value::String(s) => Ok((k.clone(), s.clone())),
                        _ => Err(EditError::field(
                            &format!("{prefix}.{k}"),
                            format!("\"{key}\".{k} must be a string"),
                        )),
                    })
                    .collect(),
                Some(_) => Err(EditError::field(
                    prefix,
                    format!("\"{key}\" must be an object of strings"),
                )),
            }
        };
        let text = |key: &str, field: &str| match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(EditError::field(field, format!("\"{key}\" must be a string"))),
        };
        Ok(ServerChange {
            name,
            entry,
            secret_env: strings("secretEnv", "env")?,
            secret_headers: strings("secretHeaders", "headers")?,
            secret_oauth_client_secret: text("secretOauthClientSecret", "oauth.clientSecret")?,
            revision: text("revision", "revision")?,
        })
    }

    /// The keyring entries this change writes, with their values.
    fn secrets(&self) -> Vec<(String, &str)> {
        let mut out = Vec::new();
        for (k, v) in &self.secret_env {
            out.push((secret_name(&self.name, &format!("env.{k}")), v.as_str()));
        }
        for (k, v) in &self.secret_headers {
            out.push((secret_name(&self.name, &format!("headers.{k}")), v.as_str()));
        }
        if let Some(v) = &self.secret_oauth_client_secret {
            out.push((secret_name(&self.name, "oauth.clientSecret"), v.as_str()));
        }
        out
    }

    /// The entry as the file will hold it: each secret as its reference.
    pub fn stored_entry(&self) -> Map<String, Value> {
        let mut entry = self.entry.clone();
        let mut put = |section: &str, key: &str, name: String| {
            let slot = entry.entry(section.to_string()).or_insert_with(|| json!({}));
            if !slot.is_object() {
                *slot = json!({});
            }
            if let Value::Object(map) = slot {
                map.insert(key.to_string(), Value::String(reference(&name)));
            }
        };
        for k in self.secret_env.keys() {
            put("env", k, secret_name(&self.name, &format!("env.{k}")));
        }
        for k in self.secret_headers.keys() {
            put("headers", k, secret_name(&self.name, &format!("headers.{k}")));
        }
        if self.secret_oauth_client_secret.is_some() {
            put("oauth", "clientSecret", secret_name(&self.name, "oauth.clientSecret"));
        }
        entry
    }

    /// The entry with the typed secret values in place of their references,
    /// for one test connection that stores nothing.
    pub fn entry_with_values(&self) -> Map<String, Value> {
        let mut entry = self.entry.clone();
        let mut put = |section: &str, key: &str, value: &str| {
            let slot = entry.entry(section.to_string()).or_insert_with(|| json!({}));
            if !slot.is_object() {
                *slot = json!({});
            }
            if let Value::Object(map) = slot {
                map.insert(key.to_string(), Value::String(value.to_string()));
            }
        };
        for (k, v) in &self.secret_env {
            put("env", k, v);
        }
        for (k, v) in &self.secret_headers {
            put("headers", k, v);
        }
        if let Some(v) = &self.secret_oauth_client_secret {
            put("oauth", "clientSecret", v);
        }
        entry
    }

    /// Every typed secret value, to keep out of what a test answers.
    pub fn secret_values(&self) -> Vec<String> {
        self.secrets().into_iter().map(|(_, v)| v.to_string()).collect()
    }

    /// Checks the change as an entry of the config at `path` (nothing read
    /// or written): name, fields, secrets. The spec it would run.
    pub fn spec(&self, path: &Path) -> Result<crate::config::ServerSpec, EditError> {
        check::name(path, &self.name, &BTreeSet::new())?;
        let entry = self.entry_with_values();
        check::entry(path, self, &self.stored_entry())?;
        let doc = json!({ "mcpServers": { self.name.as_str(): Value::Object(entry) } });
        let config = crate::config::parse(path, &doc.to_string()).map_err(EditError::from_problem)?;
        config
            .servers
            .get(&self.name)
            .cloned()
            .ok_or_else(|| EditError::Failed(format!("server '{}' did not parse", self.name)))
    }
}

/// One write at a time in this process: each is a read, an edit and a write.
static WRITING: Mutex<()> = Mutex::new(());

/// How often an edit starts over when the file keeps changing under it.
const ATTEMPTS: usize = 3;

fn read(path: &Path) -> Result<Option<String>, EditError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(EditError::Failed(format!("cannot read {}: {e}", path.display()))),
    }
}

/// The names of the servers in `text`, parsed as the config.
fn names_in(path: &Path, text: &str) -> Result<BTreeSet<String>, EditError> {
    let config = crate::config::parse(path, text)
        .map_err(|p| EditError::Failed(format!("{p}; fix the file before changing servers")))?;
    let mut names: BTreeSet<String> = config.servers.keys().cloned().collect();
    // An entry left out for a problem still holds its name.
    names.extend(config.problems.iter().filter_map(|p| p.server.clone()));
    Ok(names)
}

/// `<file>.bak`, beside the file.
pub fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".bak");
    path.with_file_name(name)
}

/// Replaces the file with `edited` unless it changed since `original` was
/// read (then `Ok(false)`: start over); the previous version goes to `.bak`.
fn replace(path: &Path, original: Option<&str>, edited: &str) -> Result<Option<Option<PathBuf>>, EditError> {
    if read(path)?.as_deref() != original {
        return Ok(None);
    }
    let failed = |e: std::io::Error| EditError::Failed(format!("cannot write {}: {e}", path.display()));
    let backup = match original {
        Some(text) => {
            let bak = backup_path(path);
            crate::os::files::write_private(&bak, text.as_bytes()).map_err(failed)?;
            crate::os::files::replace_keeping_mode(path, edited.as_bytes()).map_err(failed)?;
            Some(bak)
        }
        None => {
            crate::os::files::write_private(path, edited.as_bytes()).map_err(failed)?;
            None
        }
    };
    Ok(Some(backup))
}

/// Runs `edit` on the file's current text and writes the result, starting
/// over when the file changed in between. Every write of the config goes
/// through here (the dashboard's tool switches too), holding the config's
/// lock (os/files/lock.rs) from the read to the replace, so that two of
/// mcpool's programs never write over each other's edit.
pub(crate) fn write_with<T>(
    path: &Path,
    mut edit: impl FnMut(Option<&str>) -> Result<(String, T), EditError>,
) -> Result<(Option<PathBuf>, T), EditError> {
    let _turn = crate::sync::lock(&WRITING);
    let _held = crate::os::files::lock::FileLock::acquire(path, crate::os::files::lock::WAIT).map_err(|e| match e {
        crate::os::files::lock::LockError::Busy { .. } => EditError::Conflict(e.to_string()),
        crate::os::files::lock::LockError::Io { .. } => EditError::Failed(e.to_string()),
    })?;
    for _ in 0..ATTEMPTS {
        let original = read(path)?;
        let (edited, extra) = edit(original.as_deref())?;
        if original.as_deref() == Some(edited.as_str()) {
            return Ok((None, extra));
        }
        if let Some(backup) = replace(path, original.as_deref(), &edited)? {
            return Ok((backup, extra));
        }
    }
    Err(EditError::Conflict(format!(
        "{} kept changing while mcpool was writing it; nothing was written, try again",
        path.display()
    )))
}

fn store_secrets(change: &ServerChange, store: &dyn SecretStore) -> Result<Vec<String>, EditError> {
    let mut names = Vec::new();
    for (name, value) in change.secrets() {
        crate::secrets::set_named(store, &name, value)
            .map_err(|e| EditError::Failed(format!("cannot keep the secret '{name}': {e}")))?;
        crate::secrets::remember_secrets(&[value.to_string()]);
        names.push(name);
    }
    Ok(names)
}

/// Checks `change` as an addition to the file at `path`, writing nothing.
pub fn check_add(path: &Path, change: &ServerChange) -> Result<(), EditError> {
    let text = read(path)?.unwrap_or_default();
    check::name(path, &change.name, &names_in(path, &text)?)?;
    check::entry(path, change, &change.stored_entry())
}

/// Adds server `change.name`; refuses a name already in the file.
pub fn add(path: &Path, change: ServerChange, store: &dyn SecretStore) -> Result<Written, EditError> {
    write_change(path, &change, store, |text, entry| {
        let text = text.unwrap_or_default();
        check::name(path, &change.name, &names_in(path, text)?)?;
        check::entry(path, &change, entry)?;
        text::add(path, text, &change.name, entry)
    })
}

/// Writes what `edit` makes of the file's text with the change's stored
/// entry; the change's secrets go to the keyring once the first edit
/// passed its checks (before the file names them).
fn write_change(
    path: &Path,
    change: &ServerChange,
    store: &dyn SecretStore,
    mut edit: impl FnMut(Option<&str>, &Map<String, Value>) -> Result<String, EditError>,
) -> Result<Written, EditError> {
    let entry = change.stored_entry();
    let mut stored = None;
    let (backup, ()) = write_with(path, |text| {
        let edited = edit(text, &entry)?;
        if stored.is_none() {
            stored = Some(store_secrets(change, store)?);
        }
        Ok((edited, ()))
    })?;
    Ok(Written {
        name: change.name.clone(),
        backup,
        secrets: stored.unwrap_or_default(),
    })
}

/// Adds entries as they are (an import, planned and checked by its
/// caller), skipping names the file already has; answers how many were
/// added and the backup.
pub fn add_entries(
    path: &Path,
    entries: &[(String, Map<String, Value>)],
) -> Result<(usize, Option<PathBuf>), EditError> {
    let (backup, added) = write_with(path, |text| {
        let mut text = text.unwrap_or_default().to_string();
        let taken = names_in(path, &text)?;
        let mut added = 0;
        for (name, entry) in entries.iter().filter(|(n, _)| !taken.contains(n)) {
            text = text::add(path, &text, name, entry)?;
            added += 1;
        }
        Ok((text, added))
    })?;
    Ok((added, backup))
}

/// Changes server `old` to `change` (renamed when `change.name` differs).
pub fn replace_server(
    path: &Path,
    old: &str,
    change: ServerChange,
    store: &dyn SecretStore,
) -> Result<Written, EditError> {
    write_change(path, &change, store, |text, entry| {
        let text = text.ok_or_else(|| text::not_found(path, old))?;
        let current = text::entry(path, text, old)?.ok_or_else(|| text::not_found(path, old))?;
        if change.revision.as_ref().is_some_and(|rev| *rev != revision(&current)) {
            return Err(EditError::Conflict(format!(
                "server '{old}' was changed in {} after it was opened for editing; reload it and edit again",
                path.display()
            )));
        }
        if change.name != old {
            check::name(path, &change.name, &names_in(path, text)?)?;
        }
        check::entry(path, &change, entry)?;
        text::replace(path, text, old, &change.name, entry)
    })
}

/// Removes server `name`; with `remove_secrets`, also the keyring entries
/// it referenced that no other entry still uses.
pub fn remove(path: &Path, name: &str, remove_secrets: bool, store: &dyn SecretStore) -> Result<Removed, EditError> {
    let (backup, unused) = write_with(path, |text| {
        let text = text.ok_or_else(|| text::not_found(path, name))?;
        let entry = text::entry(path, text, name)?.ok_or_else(|| text::not_found(path, name))?;
        let edited = text::remove(path, text, name)?;
        let still_used = all_references(path, &edited);
        let unused: Vec<String> = references_of(&entry)
            .into_iter()
            .filter(|r| !still_used.contains(r))
            .collect();
        Ok((edited, unused))
    })?;
    let mut removed_secrets = Vec::new();
    if remove_secrets {
        for name in unused {
            if crate::secrets::remove_named(store, &name)
                .map_err(|e| EditError::Failed(format!("cannot remove the secret '{name}': {e}")))?
            {
                removed_secrets.push(name);
            }
        }
    }
    Ok(Removed {
        backup,
        removed_secrets,
    })
}

/// The entry of `name` for an edit form.
pub fn entry_view(path: &Path, name: &str, store: &dyn SecretStore) -> Result<EntryView, EditError> {
    let text = read(path)?.ok_or_else(|| text::not_found(path, name))?;
    let entry = text::entry(path, &text, name)?.ok_or_else(|| text::not_found(path, name))?;
    let mut secrets = json!({"env": {}, "headers": {}, "oauth": {}});
    let mut note = |section: &str, key: &str, value: &Value| {
        let Some(value) = value.as_str() else { return };
        let Some(first) = crate::secrets::references(value).first().map(|r| r.to_string()) else {
            return;
        };
        let set = matches!(store.get(&first), Ok(Some(_)));
        secrets[section][key] = json!({"reference": first, "set": set});
    };
    for section in ["env", "headers"] {
        if let Some(Value::Object(map)) = entry.get(section) {
            for (k, v) in map {
                note(section, k, v);
            }
        }
    }
    if let Some(v) = entry.get("oauth").and_then(|o| o.get("clientSecret")) {
        note("oauth", "clientSecret", v);
    }
    Ok(EntryView {
        name: name.to_string(),
        revision: revision(&entry),
        entry,
        secrets,
    })
}

/// A short, stable hash of an entry's JSON.
fn revision(entry: &Value) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(entry.to_string().as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The keyring names an entry's env, headers and OAuth secret refer to.
fn references_of(entry: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut add = |v: &Value| {
        if let Some(s) = v.as_str() {
            out.extend(crate::secrets::references(s).into_iter().map(str::to_string));
        }
    };
    for section in ["env", "headers"] {
        if let Some(Value::Object(map)) = entry.get(section) {
            map.values().for_each(&mut add);
        }
    }
    if let Some(v) = entry.get("oauth").and_then(|o| o.get("clientSecret")) {
        add(v);
    }
    if let Some(v) = entry.get("url") {
        add(v);
    }
    out
}

/// Every keyring name any entry of `text` refers to.
fn all_references(path: &Path, text: &str) -> BTreeSet<String> {
    let Ok(Some(root)) = text::root_value(path, text) else {
        return BTreeSet::new();
    };
    ["mcpServers", "servers"]
        .iter()
        .filter_map(|k| root.get(k).and_then(Value::as_object))
        .flat_map(|section| section.values())
        .flat_map(references_of)
        .collect()
}
