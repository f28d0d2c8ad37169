//! A stand-in for the lead's `mcpool_core::editing` (same names and
//! signatures: `ServerChange`, `check_add`, `add`, `Written`) until it is
//! on this branch; `registry_cmd.rs` switches with its one `use` line.
//! Secrets go to the keyring as `NAME.env.KEY` / `NAME.headers.KEY` (the
//! names `mcpool import` gives), the entry refers to them, and the file is
//! rewritten whole (comments are not kept here; `editing` keeps them).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use mcpool_core::secrets::{valid_name, SecretStore, Secrets};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Default)]
pub struct ServerChange {
    pub name: String,
    pub entry: Map<String, Value>,
    pub secret_env: BTreeMap<String, String>,
    pub secret_headers: BTreeMap<String, String>,
}

#[derive(Debug)]
pub struct Written {
    pub name: String,
}

/// A sentence saying what went wrong.
#[derive(Debug)]
pub struct EditError(String);

impl std::fmt::Display for EditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EditError {}

fn fail(what: &str, path: &Path, why: impl std::fmt::Display) -> EditError {
    EditError(format!("cannot {what} {}: {why}", path.display()))
}

fn read(path: &Path) -> Result<Map<String, Value>, EditError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(fail("read", path, e)),
    };
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str(&mcpool_core::import::strip_jsonc(&text)) {
        Ok(Value::Object(root)) => Ok(root),
        Ok(_) => Err(fail("read", path, "expected a JSON object")),
        Err(e) => Err(fail("read", path, e)),
    }
}

/// `servers` (VS Code's key) when the file uses it alone, else `mcpServers`.
fn section(root: &Map<String, Value>) -> &'static str {
    if root.contains_key("servers") && !root.contains_key("mcpServers") {
        "servers"
    } else {
        "mcpServers"
    }
}

pub fn check_add(path: &Path, change: &ServerChange) -> Result<(), EditError> {
    let root = read(path)?;
    let taken = ["mcpServers", "servers"].iter().any(|k| {
        root.get(*k)
            .and_then(Value::as_object)
            .is_some_and(|m| m.contains_key(&change.name))
    });
    if taken {
        return Err(EditError(format!(
            "{} already has a server named '{}'; choose another name with --as NAME",
            path.display(),
            change.name
        )));
    }
    Ok(())
}

fn secret_name(server: &str, field: &str) -> String {
    let name: String = format!("{server}.{field}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let name = name.trim_start_matches('_').to_string();
    if valid_name(&name) {
        name
    } else {
        format!("s{name}")
    }
}

/// Unlike `editing::add` (`&dyn SecretStore`), the store comes shared:
/// `Secrets` keeps the index of names `mcpool secret list` shows.
pub fn add(path: &Path, change: ServerChange, secrets: Arc<dyn SecretStore>) -> Result<Written, EditError> {
    check_add(path, &change)?;
    let mut root = read(path)?;
    let mut entry = change.entry;
    let store = Secrets::new(secrets);
    for (section_key, values) in [("env", &change.secret_env), ("headers", &change.secret_headers)] {
        for (key, value) in values {
            let name = secret_name(&change.name, &format!("{section_key}.{key}"));
            store
                .set(&name, value)
                .map_err(|e| EditError(format!("cannot store the secret '{name}' in the keyring: {e}")))?;
            let map = entry.entry(section_key).or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(map) = map {
                map.insert(key.clone(), Value::String(format!("${{keyring:{name}}}")));
            }
        }
    }
    let key = section(&root);
    let servers = root.entry(key).or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(servers) = servers {
        servers.insert(change.name.clone(), Value::Object(entry));
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| fail("write", path, e))?;
    }
    let text = serde_json::to_string_pretty(&Value::Object(root)).map_err(|e| fail("write", path, e))?;
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text + "\n").map_err(|e| fail("write", path, e))?;
    std::fs::rename(&tmp, path).map_err(|e| fail("write", path, e))?;
    Ok(Written { name: change.name })
}
