//! The tool cache on disk (behaviour.md rule 8): each server's last live tool list
//! in `<cache>/mcp/tools/<sha256>.json`, keyed by the server's connection
//! identity. Secrets enter the identity only as HMAC fingerprints under a
//! per-install key, so no file name or content reveals one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use rmcp::model::Tool;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::config::{ServerSpec, TransportSpec};

/// Bumped when the identity's shape changes, so old files are not trusted.
const IDENTITY_VERSION: u32 = 1;

/// Keyed fingerprints of secret values.
#[derive(Clone)]
pub struct Fingerprinter {
    key: Vec<u8>,
}

impl std::fmt::Debug for Fingerprinter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Fingerprinter(<key>)")
    }
}

impl Fingerprinter {
    pub fn new(key: Vec<u8>) -> Self {
        Fingerprinter { key }
    }

    /// A new random 32-byte key, hex encoded for storage.
    pub fn generate_key() -> String {
        crate::token::generate()
    }

    pub fn from_hex(hex_key: &str) -> Option<Self> {
        let key = hex::decode(hex_key.trim()).ok()?;
        (key.len() >= 16).then(|| Fingerprinter::new(key))
    }

    pub fn fingerprint(&self, value: &str) -> String {
        let mut mac = match Hmac::<Sha256>::new_from_slice(&self.key) {
            Ok(m) => m,
            // HMAC takes keys of any length; this arm is unreachable.
            Err(_) => return String::new(),
        };
        mac.update(value.as_bytes());
        format!("hmac-sha256:{}", hex::encode(mac.finalize().into_bytes()))
    }
}

/// The per-install fingerprint key: from the keyring, made there on first
/// use; where no keyring is reachable, a 0600 file in `data_dir`, with the
/// warning to show. Blocking (D-Bus).
pub fn load_or_create_key(
    store: &dyn crate::secrets::SecretStore,
    data_dir: &Path,
) -> std::io::Result<(Fingerprinter, Option<String>)> {
    use crate::secrets::HMAC_KEY_ENTRY;
    match store.get(HMAC_KEY_ENTRY) {
        Ok(Some(hex_key)) => {
            if let Some(fp) = Fingerprinter::from_hex(&hex_key) {
                return Ok((fp, None));
            }
            let fresh = Fingerprinter::generate_key();
            let _ = store.set(HMAC_KEY_ENTRY, &fresh);
            Ok((
                Fingerprinter::from_hex(&fresh).unwrap_or_else(|| Fingerprinter::new(vec![0; 32])),
                None,
            ))
        }
        Ok(None) => {
            let fresh = Fingerprinter::generate_key();
            if store.set(HMAC_KEY_ENTRY, &fresh).is_ok() {
                return Ok((
                    Fingerprinter::from_hex(&fresh).unwrap_or_else(|| Fingerprinter::new(vec![0; 32])),
                    None,
                ));
            }
            file_key(data_dir, "the OS keyring refused the fingerprint key".into())
        }
        Err(e) => file_key(data_dir, e.to_string()),
    }
}

fn file_key(data_dir: &Path, why: String) -> std::io::Result<(Fingerprinter, Option<String>)> {
    let path = data_dir.join("fingerprint.key");
    let existing = std::fs::read_to_string(&path)
        .ok()
        .and_then(|k| Fingerprinter::from_hex(&k));
    let fp = match existing {
        Some(fp) => fp,
        None => {
            let fresh = Fingerprinter::generate_key();
            crate::os::files::write_private(&path, fresh.as_bytes())?;
            Fingerprinter::from_hex(&fresh).unwrap_or_else(|| Fingerprinter::new(vec![0; 32]))
        }
    };
    let warning = format!(
        "{why}; the cache fingerprint key is kept in {} (mode 0600) instead",
        path.display()
    );
    Ok((fp, Some(warning)))
}

/// What the identity needs beyond the spec: resolved secret values (env and
/// header values after `${keyring:…}`), the client and the profile.
#[derive(Debug, Clone, Default)]
pub struct IdentityInputs {
    pub env: BTreeMap<String, String>,
    pub headers: BTreeMap<String, String>,
    pub oauth_secret: Option<String>,
    pub credential_id: Option<String>,
    pub profile: Option<String>,
}

/// The canonical JSON identity of a connection. Every secret-bearing value
/// is a fingerprint; `serde_json` with `BTreeMap`s keeps keys sorted.
pub fn identity(spec: &ServerSpec, inputs: &IdentityInputs, fp: &Fingerprinter) -> Value {
    let fps = |m: &BTreeMap<String, String>| -> BTreeMap<String, String> {
        m.iter().map(|(k, v)| (k.clone(), fp.fingerprint(v))).collect()
    };
    let mut id = BTreeMap::<&str, Value>::new();
    id.insert("version", json!(IDENTITY_VERSION));
    id.insert("transport", json!(spec.transport.kind()));
    id.insert("timeout_ms", json!(spec.timeout.as_millis() as u64));
    // Only when set, so caches written before the setting existed still match.
    if spec.max_message_bytes != crate::config::DEFAULT_MAX_MESSAGE_BYTES {
        id.insert("max_message_bytes", json!(spec.max_message_bytes));
    }
    id.insert(
        "protocol_version",
        json!(rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE.as_str()),
    );
    id.insert(
        "client",
        json!({"name": "mcpool", "version": env!("CARGO_PKG_VERSION")}),
    );
    id.insert(
        "profile",
        json!(inputs.profile.clone().unwrap_or_else(|| "default".into())),
    );
    id.insert("credential", json!(inputs.credential_id));
    id.insert(
        "oauth_secret",
        json!(inputs.oauth_secret.as_deref().map(|s| fp.fingerprint(s))),
    );
    match &spec.transport {
        TransportSpec::Stdio { command, args, cwd, .. } => {
            id.insert("command", json!(command));
            id.insert("args", json!(args));
            let cwd = cwd
                .as_ref()
                .map(|c| std::fs::canonicalize(c).unwrap_or_else(|_| c.clone()));
            id.insert("cwd", json!(cwd.map(|c| c.display().to_string())));
            id.insert("env", json!(fps(&inputs.env)));
        }
        TransportSpec::Http { url, .. } | TransportSpec::Sse { url, .. } => {
            id.insert("url", json!(url_identity(url, fp)));
            let headers: BTreeMap<String, String> = inputs
                .headers
                .iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), v.clone()))
                .collect();
            id.insert("headers", json!(fps(&headers)));
        }
    }
    json!(id)
}

/// The URL with its password and query values replaced by fingerprints.
pub fn url_identity(url: &str, fp: &Fingerprinter) -> String {
    let Ok(mut parsed) = url::Url::parse(url) else {
        return fp.fingerprint(url);
    };
    if let Some(password) = parsed.password().map(str::to_string) {
        let _ = parsed.set_password(Some(&fp.fingerprint(&password)));
    }
    let user = parsed.username().to_string();
    if !user.is_empty() {
        let _ = parsed.set_username(&fp.fingerprint(&user));
    }
    let pairs: Vec<(String, String)> = parsed
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), fp.fingerprint(&v)))
        .collect();
    if !pairs.is_empty() {
        parsed.query_pairs_mut().clear().extend_pairs(pairs);
    }
    parsed.to_string()
}

/// The cache key: sha256 of the canonical identity.
pub fn key(identity: &Value) -> String {
    hex::encode(Sha256::digest(identity.to_string().as_bytes()))
}

#[derive(Serialize, Deserialize)]
struct CacheFile {
    key: String,
    server: String,
    tools: Vec<Tool>,
}

#[derive(Debug, Clone)]
pub struct ToolCache {
    dir: PathBuf,
}

/// Why a cache file was not used.
#[derive(Debug, thiserror::Error)]
pub enum CacheMiss {
    #[error("no cache file")]
    Absent,
    #[error("the cache file {path} is unreadable or corrupt ({reason}); ignoring it")]
    Corrupt { path: PathBuf, reason: String },
}

impl ToolCache {
    /// `<cache>/mcp/tools`.
    pub fn new(cache_dir: &Path) -> Self {
        ToolCache {
            dir: cache_dir.join("mcp").join("tools"),
        }
    }

    pub fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.json"))
    }

    /// The cached tools for `key`; an empty, corrupt or foreign file is a miss.
    pub fn load(&self, key: &str) -> Result<Vec<Tool>, CacheMiss> {
        let path = self.path(key);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(CacheMiss::Absent),
            Err(e) => {
                return Err(CacheMiss::Corrupt {
                    path,
                    reason: e.to_string(),
                })
            }
        };
        let file: CacheFile = serde_json::from_slice(&bytes).map_err(|e| CacheMiss::Corrupt {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        if file.key != key {
            return Err(CacheMiss::Corrupt {
                path,
                reason: "written for another server".into(),
            });
        }
        if file.tools.is_empty() {
            return Err(CacheMiss::Corrupt {
                path,
                reason: "empty tool list".into(),
            });
        }
        Ok(file.tools)
    }

    /// Writes atomically (temp file, fsync, rename), mode 0600. Empty lists
    /// are never written.
    pub fn store(&self, key: &str, server: &str, tools: &[Tool]) -> std::io::Result<()> {
        if tools.is_empty() {
            return Ok(());
        }
        let body = serde_json::to_vec(&CacheFile {
            key: key.to_string(),
            server: server.to_string(),
            tools: tools.to_vec(),
        })?;
        crate::os::files::write_private(&self.path(key), &body)
    }

    pub fn remove(&self, key: &str) {
        let _ = std::fs::remove_file(self.path(key));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::time::Duration;

    fn spec(env_value: &str) -> ServerSpec {
        ServerSpec {
            name: "s".into(),
            disabled: false,
            timeout: Duration::from_secs(30),
            max_message_bytes: crate::config::DEFAULT_MAX_MESSAGE_BYTES,
            call_timeout: Some(crate::config::DEFAULT_CALL_TIMEOUT),
            log_arguments: false,
            transport: TransportSpec::Stdio {
                command: "srv".into(),
                args: vec!["--x".into()],
                env: BTreeMap::from([("TOKEN".into(), env_value.into())]),
                cwd: None,
            },
            oauth: None,
            sandbox: Default::default(),
        }
    }

    fn inputs(spec: &ServerSpec) -> IdentityInputs {
        match &spec.transport {
            TransportSpec::Stdio { env, .. } => IdentityInputs {
                env: env.clone(),
                ..Default::default()
            },
            TransportSpec::Http { headers, .. } | TransportSpec::Sse { headers, .. } => IdentityInputs {
                headers: headers.clone(),
                ..Default::default()
            },
        }
    }

    #[test]
    fn secrets_enter_only_as_keyed_fingerprints() {
        let fp = Fingerprinter::new(vec![7; 32]);
        let s = spec("hunter2");
        let id = identity(&s, &inputs(&s), &fp).to_string();
        assert!(!id.contains("hunter2"));
        let plain_digest = hex::encode(Sha256::digest(b"hunter2"));
        assert!(!id.contains(&plain_digest));
        let other_key = Fingerprinter::new(vec![8; 32]);
        assert_ne!(fp.fingerprint("hunter2"), other_key.fingerprint("hunter2"));
        let url = url_identity("https://user:pw123@h.example/mcp?api_key=abc123&x=1", &fp);
        assert!(!url.contains("pw123") && !url.contains("abc123"), "{url}");
    }

    #[test]
    fn every_part_of_the_identity_changes_the_key() {
        let fp = Fingerprinter::new(vec![1; 32]);
        let base = spec("a");
        let k = |s: &ServerSpec| key(&identity(s, &inputs(s), &fp));
        let mut changed_env = base.clone();
        if let TransportSpec::Stdio { env, .. } = &mut changed_env.transport {
            env.insert("TOKEN".into(), "b".into());
        }
        let mut changed_cwd = base.clone();
        if let TransportSpec::Stdio { cwd, .. } = &mut changed_cwd.transport {
            *cwd = Some("/tmp".into());
        }
        let mut changed_timeout = base.clone();
        changed_timeout.timeout = Duration::from_secs(5);
        let keys = [k(&base), k(&changed_env), k(&changed_cwd), k(&changed_timeout)];
        let distinct: std::collections::BTreeSet<_> = keys.iter().collect();
        assert_eq!(distinct.len(), keys.len());
        assert_eq!(k(&base), k(&base.clone()), "stable");
    }

    #[test]
    fn store_load_and_reject_bad_files() {
        let dir = crate::scratch::scratch_dir("cache");
        let cache = ToolCache::new(&dir);
        let tool: Tool = serde_json::from_value(json!({"name": "echo", "inputSchema": {"type": "object"}})).unwrap();
        cache.store("k1", "s", std::slice::from_ref(&tool)).unwrap();
        assert_eq!(cache.load("k1").unwrap(), vec![tool.clone()]);
        // 0600 on Unix, the user-only DACL on Windows.
        crate::os::files::assert_private(&cache.path("k1"));
        cache.store("k2", "s", &[]).unwrap();
        assert!(matches!(cache.load("k2"), Err(CacheMiss::Absent)));
        std::fs::write(cache.path("k3"), "{\"key\":\"k3\",\"server\":\"s\",\"tools\":[{\"na").unwrap();
        assert!(matches!(cache.load("k3"), Err(CacheMiss::Corrupt { .. })));
        std::fs::copy(cache.path("k1"), cache.path("k4")).unwrap();
        assert!(
            matches!(cache.load("k4"), Err(CacheMiss::Corrupt { .. })),
            "foreign file"
        );
        std::fs::write(cache.path("k5"), "").unwrap();
        assert!(matches!(cache.load("k5"), Err(CacheMiss::Corrupt { .. })));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    proptest! {
        #[test]
        fn key_is_stable_and_hex(value in ".{0,40}") {
            let fp = Fingerprinter::new(vec![3; 32]);
            let s = spec(&value);
            let a = key(&identity(&s, &inputs(&s), &fp));
            prop_assert_eq!(&a, &key(&identity(&s, &inputs(&s), &fp)));
            prop_assert_eq!(a.len(), 64);
        }
    }
}
