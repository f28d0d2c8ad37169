//! Secrets: the [`SecretStore`] boundary (the OS keyring in production, an
//! in-memory fake in unit tests) and `${keyring:NAME}` references in config
//! values, resolved only at connect time.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use crate::sync::lock;

/// The keyring service every mcpool entry lives under.
pub const SERVICE: &str = "mcpool";
/// Entry names that mcpool uses itself and `secret list` does not show.
pub const INDEX_ENTRY: &str = "__mcpool_names__";
pub const HMAC_KEY_ENTRY: &str = "__mcpool_fingerprint_key__";
pub const TOKEN_ENTRY: &str = "__mcpool_endpoint_token__";

#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("the OS keyring is not reachable: {0}")]
    Unavailable(String),
    #[error("the OS keyring failed: {0}")]
    Failed(String),
    #[error("'{0}' is not a valid secret name (use letters, digits, '.', '_' and '-')")]
    InvalidName(String),
}

/// A named-secret store. Calls may block (D-Bus): call from `spawn_blocking`
/// inside async code.
pub trait SecretStore: Send + Sync {
    fn get(&self, name: &str) -> Result<Option<String>, SecretError>;
    fn set(&self, name: &str, value: &str) -> Result<(), SecretError>;
    /// Returns whether the entry existed.
    fn delete(&self, name: &str) -> Result<bool, SecretError>;
}

pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && !name.starts_with("__")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// User secrets on top of a raw store: names are validated and kept in an
/// index entry (names only), so `list` works on every platform.
pub struct Secrets {
    store: Arc<dyn SecretStore>,
}

impl Secrets {
    pub fn new(store: Arc<dyn SecretStore>) -> Self {
        Secrets { store }
    }

    pub fn store(&self) -> &Arc<dyn SecretStore> {
        &self.store
    }

    pub fn get(&self, name: &str) -> Result<Option<String>, SecretError> {
        self.store.get(name)
    }

    pub fn set(&self, name: &str, value: &str) -> Result<(), SecretError> {
        set_named(self.store.as_ref(), name, value)
    }

    pub fn remove(&self, name: &str) -> Result<bool, SecretError> {
        remove_named(self.store.as_ref(), name)
    }

    pub fn list(&self) -> Result<BTreeSet<String>, SecretError> {
        list_named(self.store.as_ref())
    }
}

/// Sets a user secret and notes its name in the index.
pub fn set_named(store: &dyn SecretStore, name: &str, value: &str) -> Result<(), SecretError> {
    if !valid_name(name) {
        return Err(SecretError::InvalidName(name.to_string()));
    }
    store.set(name, value)?;
    let mut names = list_named(store)?;
    if names.insert(name.to_string()) {
        write_index(store, &names)?;
    }
    Ok(())
}

/// Removes a user secret and its name from the index; answers whether it existed.
pub fn remove_named(store: &dyn SecretStore, name: &str) -> Result<bool, SecretError> {
    let existed = store.delete(name)?;
    let mut names = list_named(store)?;
    if names.remove(name) {
        write_index(store, &names)?;
    }
    Ok(existed)
}

/// The names of the user secrets (from the index entry).
pub fn list_named(store: &dyn SecretStore) -> Result<BTreeSet<String>, SecretError> {
    Ok(match store.get(INDEX_ENTRY)? {
        Some(json) => serde_json::from_str(&json).unwrap_or_default(),
        None => BTreeSet::new(),
    })
}

fn write_index(store: &dyn SecretStore, names: &BTreeSet<String>) -> Result<(), SecretError> {
    let json = serde_json::to_string(names).map_err(|e| SecretError::Failed(e.to_string()))?;
    store.set(INDEX_ENTRY, &json)
}

/// The OS keyring (Secret Service on Linux, Keychain, Credential Manager),
/// one service name per profile.
#[derive(Debug, Clone)]
pub struct Keyring {
    service: String,
}

/// The profile of a setup that names none.
pub const DEFAULT_PROFILE: &str = "default";

fn keyring_error(e: keyring::Error) -> SecretError {
    match e {
        keyring::Error::NoStorageAccess(p) => SecretError::Unavailable(p.to_string()),
        keyring::Error::PlatformFailure(p) => SecretError::Unavailable(p.to_string()),
        keyring::Error::NoDefaultStore => SecretError::Unavailable("no default credential store".into()),
        other => SecretError::Failed(other.to_string()),
    }
}

impl Keyring {
    pub fn for_profile(profile: &str) -> Self {
        let service = if profile == "default" {
            SERVICE.to_string()
        } else {
            format!("{SERVICE}.{profile}")
        };
        Keyring { service }
    }

    fn entry(&self, name: &str) -> Result<keyring::Entry, SecretError> {
        keyring::Entry::new(&self.service, name).map_err(keyring_error)
    }
}

impl SecretStore for Keyring {
    fn get(&self, name: &str) -> Result<Option<String>, SecretError> {
        match self.entry(name)?.get_password() {
            Ok(v) => Ok(Some(v)),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(keyring_error(e)),
        }
    }

    fn set(&self, name: &str, value: &str) -> Result<(), SecretError> {
        self.entry(name)?.set_password(value).map_err(keyring_error)
    }

    fn delete(&self, name: &str) -> Result<bool, SecretError> {
        match self.entry(name)?.delete_credential() {
            Ok(()) => Ok(true),
            Err(keyring::Error::NoEntry) => Ok(false),
            Err(e) => Err(keyring_error(e)),
        }
    }
}

/// Ends this process's use of the OS keyring, for a command about to exit:
/// one last lookup the keyring must answer (so it has finished with every
/// earlier call), then the store let go, which closes the Secret Service
/// session with its D-Bus connection. gnome-keyring can abort when a client
/// vanishes while it still handles the client's calls (GNOME
/// gnome-keyring #190, #196, #199). Blocking; the keyring is unusable in
/// this process afterwards.
pub fn close_keyring() {
    // Never opened: nothing to close (and no session opened to close it).
    if keyring_core::get_default_store().is_none() {
        return;
    }
    if let Ok(entry) = keyring::Entry::new(SERVICE, CLOSING_ENTRY) {
        let _ = entry.get_password();
    }
    drop(keyring_core::unset_default_store());
}

/// Looked up, never stored: the last call before [`close_keyring`] lets go.
const CLOSING_ENTRY: &str = "__mcpool_closing__";

/// A hand-written in-memory store for unit tests.
#[derive(Debug, Default, Clone)]
pub struct MemoryStore {
    entries: Arc<Mutex<BTreeMap<String, String>>>,
    unavailable: bool,
}

impl MemoryStore {
    /// A store that fails like a machine without a keyring.
    pub fn unavailable() -> Self {
        MemoryStore {
            unavailable: true,
            ..Default::default()
        }
    }

    pub fn dump(&self) -> BTreeMap<String, String> {
        lock(&self.entries).clone()
    }
}

impl SecretStore for MemoryStore {
    fn get(&self, name: &str) -> Result<Option<String>, SecretError> {
        if self.unavailable {
            return Err(SecretError::Unavailable("no keyring in this test".into()));
        }
        Ok(lock(&self.entries).get(name).cloned())
    }

    fn set(&self, name: &str, value: &str) -> Result<(), SecretError> {
        if self.unavailable {
            return Err(SecretError::Unavailable("no keyring in this test".into()));
        }
        lock(&self.entries).insert(name.to_string(), value.to_string());
        Ok(())
    }

    fn delete(&self, name: &str) -> Result<bool, SecretError> {
        if self.unavailable {
            return Err(SecretError::Unavailable("no keyring in this test".into()));
        }
        Ok(lock(&self.entries).remove(name).is_some())
    }
}

/// A `${keyring:NAME}` reference in a config value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part<'a> {
    Text(&'a str),
    Secret(&'a str),
}

/// Splits a value into literal text and `${keyring:NAME}` references.
pub fn parse_value(value: &str) -> Vec<Part<'_>> {
    let mut parts = Vec::new();
    let mut rest = value;
    while let Some(start) = rest.find("${keyring:") {
        let after = &rest[start + "${keyring:".len()..];
        let Some(end) = after.find('}') else { break };
        if start > 0 {
            parts.push(Part::Text(&rest[..start]));
        }
        parts.push(Part::Secret(&after[..end]));
        rest = &after[end + 1..];
    }
    if !rest.is_empty() || parts.is_empty() {
        parts.push(Part::Text(rest));
    }
    parts
}

pub fn references(value: &str) -> Vec<&str> {
    parse_value(value)
        .into_iter()
        .filter_map(|p| match p {
            Part::Secret(n) => Some(n),
            Part::Text(_) => None,
        })
        .collect()
}

/// Why a reference could not be resolved; names the secret and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("the secret '{name}' is not in the keyring; set it with `mcpool secret set {name}`")]
    Missing { name: String },
    #[error("the secret '{name}' could not be read: {reason}")]
    Unreadable { name: String, reason: String },
}

const SECRET_WORDS: &[&str] = &[
    "token",
    "key",
    "secret",
    "password",
    "passwd",
    "pass",
    "auth",
    "credential",
    "cookie",
    "session",
    "pat",
    "bearer",
    "sig",
];

/// Whether a variable, header or query name says it holds a secret
/// (`GITHUB_TOKEN`, `apiKey`, `PGPASSWORD`, `access_token`...).
pub fn sensitive_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.split(|c: char| !c.is_ascii_alphanumeric()).any(|part| {
        SECRET_WORDS.contains(&part)
            || ["token", "key", "secret", "password", "passwd"]
                .iter()
                .any(|end| part.ends_with(end))
    })
}

/// A spec with every `${keyring:…}` replaced, for the connection only.
pub struct Resolved {
    pub spec: crate::config::ServerSpec,
    /// The values that came from the keyring, to keep them out of errors.
    pub secret_values: Vec<String>,
}

/// Resolves `${keyring:NAME}` in env values, header values and the URL.
pub fn resolve_spec(spec: &crate::config::ServerSpec, store: &dyn SecretStore) -> Result<Resolved, ResolveError> {
    use crate::config::TransportSpec;
    let mut secret_values = Vec::new();
    let mut one = |value: &str| -> Result<String, ResolveError> {
        for name in references(value) {
            if let Ok(Some(v)) = store.get(name) {
                secret_values.push(v);
            }
        }
        resolve_value(value, store)
    };
    let mut resolved = spec.clone();
    match &mut resolved.transport {
        TransportSpec::Stdio { env, .. } => {
            for v in env.values_mut() {
                *v = one(v)?;
            }
        }
        TransportSpec::Http { url, headers } | TransportSpec::Sse { url, headers } => {
            *url = one(url)?;
            for v in headers.values_mut() {
                *v = one(v)?;
            }
        }
    }
    secret_values.extend(literal_secrets(&resolved.transport));
    secret_values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    secret_values.dedup();
    remember_resolved(&secret_values);
    Ok(Resolved {
        spec: resolved,
        secret_values,
    })
}

/// Values written in the config itself that are secrets all the same: env
/// values and header values under a secret-sounding name, credentials after
/// an auth scheme, a URL's password and its secret query values. Errors and
/// logs quote server output, URLs and requests, so these are kept out of
/// them exactly as keyring values are.
pub fn literal_secrets(transport: &crate::config::TransportSpec) -> Vec<String> {
    use crate::config::TransportSpec;
    let mut out = Vec::new();
    match transport {
        TransportSpec::Stdio { env, .. } => {
            out.extend(env.iter().filter(|(k, _)| sensitive_name(k)).map(|(_, v)| v.clone()));
        }
        TransportSpec::Http { url, headers } | TransportSpec::Sse { url, headers } => {
            for (name, value) in headers {
                let credentials = value
                    .split_once(' ')
                    .filter(|(scheme, _)| AUTH_SCHEMES.contains(&scheme.to_ascii_lowercase().as_str()));
                if let Some((_, credentials)) = credentials {
                    out.push(credentials.trim().to_string());
                    out.push(value.clone());
                } else if sensitive_name(name) || AUTH_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
                    out.push(value.clone());
                }
            }
            if let Ok(parsed) = url::Url::parse(url) {
                if let Some(password) = parsed.password() {
                    out.push(password.to_string());
                    out.extend(percent_decoded(password));
                }
                out.extend(
                    parsed
                        .query_pairs()
                        .filter(|(k, _)| sensitive_name(k))
                        .map(|(_, v)| v.into_owned()),
                );
            }
        }
    }
    out.retain(|v| v.len() >= 4);
    out
}

const AUTH_SCHEMES: &[&str] = &["bearer", "basic", "token", "digest", "apikey"];
const AUTH_HEADERS: &[&str] = &["authorization", "proxy-authorization", "cookie"];

/// `%XX` escapes decoded, as a userinfo password is written in a URL.
fn percent_decoded(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Every value this process has resolved from the keyring, longest first,
/// so text that mcpool does not build itself (a library's log line quoting
/// a URL or a request) can be redacted too: see [`redact_resolved`].
static RESOLVED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Adds values (OAuth tokens, client secrets) to what [`redact_resolved`]
/// keeps out of every log line.
pub fn remember_secrets(values: &[String]) {
    remember_resolved(values)
}

fn remember_resolved(values: &[String]) {
    let mut known = lock(&RESOLVED);
    let mut added = false;
    for v in values {
        if !known.contains(v) {
            known.push(v.clone());
            added = true;
        }
    }
    if added {
        // Longest first, so a secret that contains another goes whole.
        known.sort_by_key(|v| std::cmp::Reverse(v.len()));
    }
}

/// [`redact`] with every value resolved so far in this process; for log
/// output, where the connection a line belongs to is unknown.
pub fn redact_resolved(text: &str) -> String {
    let known = lock(&RESOLVED);
    if known.is_empty() {
        text.to_string()
    } else {
        redact(text, &known)
    }
}

/// Replaces every known secret value in `text` (errors quote URLs and
/// server output, which may carry them), also as URL-encoded and as
/// `Debug`-escaped text.
pub fn redact(text: &str, secret_values: &[String]) -> String {
    let mut out = text.to_string();
    for v in secret_values {
        if v.len() >= 4 {
            out = out.replace(v.as_str(), "[secret]");
            let encoded: String = url::form_urlencoded::byte_serialize(v.as_bytes()).collect();
            if encoded != *v {
                out = out.replace(&encoded, "[secret]");
            }
            let escaped = v.escape_debug().to_string();
            if escaped != *v {
                out = out.replace(&escaped, "[secret]");
            }
        }
    }
    out
}

/// Replaces every `${keyring:NAME}` in `value` with the secret's value.
pub fn resolve_value(value: &str, store: &dyn SecretStore) -> Result<String, ResolveError> {
    let mut out = String::with_capacity(value.len());
    for part in parse_value(value) {
        match part {
            Part::Text(t) => out.push_str(t),
            Part::Secret(name) => match store.get(name) {
                Ok(Some(v)) => out.push_str(&v),
                Ok(None) => return Err(ResolveError::Missing { name: name.to_string() }),
                Err(e) => {
                    return Err(ResolveError::Unreadable {
                        name: name.to_string(),
                        reason: e.to_string(),
                    })
                }
            },
        }
    }
    Ok(out)
}

/// `raw` in the characters of a keyring name.
pub fn clean_name(raw: &str) -> String {
    let cleaned: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let trimmed = cleaned.trim_start_matches('_').to_string();
    if valid_name(&trimmed) {
        trimmed
    } else {
        format!("s{trimmed}")
    }
}

/// The keyring entry for a server's secret field (`notes.env.TOKEN`), in
/// the characters a keyring name may hold.
pub fn secret_name(server: &str, field: &str) -> String {
    clean_name(&format!("{server}.{field}"))
}

/// `${keyring:NAME}`: how the config refers to a keyring entry.
pub fn reference(name: &str) -> String {
    format!("${{keyring:{name}}}")
}

#[cfg(test)]
#[path = "secrets_tests.rs"]
mod tests;
