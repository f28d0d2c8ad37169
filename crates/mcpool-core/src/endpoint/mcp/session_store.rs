//! The profile's saved agent sessions: what each open session on the HTTP
//! endpoint needs to carry on after mcpool restarts (its id, the endpoint it
//! was opened on, and its `initialize`: protocol version, client info and
//! capabilities), in one 0600 JSON file per profile in the data dir.
//!
//! Nothing secret goes in: no token, no header, no `_meta`. The file carries
//! a stamp keyed by the profile's fingerprint key (kept in the keyring), so a
//! file of another profile, or of a profile that was deleted and made again,
//! is not accepted: its sessions are forgotten and the file removed.

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use rmcp::model::InitializeRequestParams;
use rmcp::transport::streamable_http_server::session::{SessionState, SessionStore, SessionStoreError};
use serde::{Deserialize, Serialize};

use crate::cache::Fingerprinter;
use crate::sync::lock;

const VERSION: u32 = 1;

/// The profile's session file, held in memory and written whole on change.
pub struct SessionFile {
    path: PathBuf,
    /// How many sessions the file keeps at most (the open-session limit).
    max: usize,
    state: Mutex<State>,
}

struct State {
    profile: String,
    stamp: String,
    sessions: HashMap<String, Entry>,
    /// Orders entries by when they were saved (ties within one second).
    next_seq: u64,
    /// A failed write is logged once, not on every session.
    write_failed: bool,
}

struct Entry {
    endpoint: String,
    saved_at: u64,
    seq: u64,
    initialize: InitializeRequestParams,
    /// Open in this process (saved or restored here); the others are
    /// sessions of an earlier run whose agent has not come back yet.
    live: bool,
}

#[derive(Serialize, Deserialize)]
struct Disk {
    version: u32,
    profile: String,
    stamp: String,
    #[serde(default)]
    sessions: HashMap<String, DiskEntry>,
}

#[derive(Serialize, Deserialize)]
struct DiskEntry {
    endpoint: String,
    saved_at: u64,
    initialize: serde_json::Value,
}

/// `<data dir>/sessions/<profile>.json`; a profile name that is not a plain
/// file name is hashed.
pub fn file_for(data_dir: &Path, profile: &str) -> PathBuf {
    let plain = !profile.is_empty()
        && profile.len() <= 64
        && profile
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        && !profile.starts_with('.');
    let name = if plain {
        profile.to_string()
    } else {
        use sha2::Digest;
        format!(
            "profile-{}",
            &hex::encode(sha2::Sha256::digest(profile.as_bytes()))[..16]
        )
    };
    data_dir.join("sessions").join(format!("{name}.json"))
}

/// The stamp a profile's session file must carry: a keyed hash of the
/// profile name, so only the same profile with the same key accepts it.
pub fn stamp(fingerprinter: &Fingerprinter, profile: &str) -> String {
    fingerprinter.fingerprint(&format!("mcpool agent sessions\u{0}{profile}"))
}

impl SessionFile {
    /// Reads the file at `path` (absent, unreadable or foreign: no sessions).
    pub fn open(path: PathBuf, profile: &str, stamp: String, max: usize) -> Self {
        let mut state = State {
            profile: profile.to_string(),
            stamp,
            sessions: HashMap::new(),
            next_seq: 0,
            write_failed: false,
        };
        match std::fs::read(&path) {
            Ok(bytes) => match serde_json::from_slice::<Disk>(&bytes) {
                Ok(disk) if disk.version == VERSION && disk.profile == profile && disk.stamp == state.stamp => {
                    let mut entries: Vec<_> = disk.sessions.into_iter().collect();
                    entries.sort_by_key(|(_, e)| e.saved_at);
                    for (id, e) in entries {
                        let Ok(initialize) = serde_json::from_value(e.initialize) else {
                            continue;
                        };
                        let seq = state.next_seq;
                        state.next_seq += 1;
                        state.sessions.insert(
                            id,
                            Entry {
                                endpoint: e.endpoint,
                                saved_at: e.saved_at,
                                seq,
                                initialize,
                                live: false,
                            },
                        );
                    }
                    if !state.sessions.is_empty() {
                        tracing::info!(
                            "{} agent sessions from the last run can carry on ({})",
                            state.sessions.len(),
                            path.display()
                        );
                    }
                }
                Ok(_) => {
                    tracing::info!(
                        "the agent sessions in {} belong to another profile or to a deleted one; they are not restored",
                        path.display()
                    );
                    let _ = std::fs::remove_file(&path);
                }
                Err(e) => tracing::warn!(
                    "ignoring the agent sessions in {}: {e}; agents of the last run will have to reconnect",
                    path.display()
                ),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!("cannot read the agent sessions in {}: {e}", path.display()),
        }
        SessionFile {
            path,
            max: max.max(1),
            state: Mutex::new(state),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The saved `initialize` of session `id` opened on `endpoint`.
    pub fn load(&self, id: &str, endpoint: &str) -> Option<InitializeRequestParams> {
        let state = lock(&self.state);
        let entry = state.sessions.get(id)?;
        (entry.endpoint == endpoint).then(|| entry.initialize.clone())
    }

    /// Whether session `id` opened on `endpoint` is saved.
    pub fn contains(&self, id: &str, endpoint: &str) -> bool {
        lock(&self.state)
            .sessions
            .get(id)
            .is_some_and(|e| e.endpoint == endpoint)
    }

    /// Marks a session restored from the file as open in this process.
    pub fn mark_live(&self, id: &str) {
        if let Some(e) = lock(&self.state).sessions.get_mut(id) {
            e.live = true;
        }
    }

    pub fn len(&self) -> usize {
        lock(&self.state).sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Saves a session (blocking: call from a blocking thread).
    pub fn save(&self, id: &str, endpoint: &str, mut initialize: InitializeRequestParams) {
        // Only what the session needs: `_meta` may carry anything.
        initialize.meta = None;
        let mut state = lock(&self.state);
        let seq = state.next_seq;
        state.next_seq += 1;
        state.sessions.insert(
            id.to_string(),
            Entry {
                endpoint: endpoint.to_string(),
                saved_at: now_secs(),
                seq,
                initialize,
                live: true,
            },
        );
        trim(&mut state.sessions, self.max);
        self.write(&mut state);
    }

    /// Forgets a session (blocking: call from a blocking thread).
    pub fn remove(&self, id: &str) {
        let mut state = lock(&self.state);
        if state.sessions.remove(id).is_some() {
            self.write(&mut state);
        }
    }

    fn write(&self, state: &mut State) {
        let disk = Disk {
            version: VERSION,
            profile: state.profile.clone(),
            stamp: state.stamp.clone(),
            sessions: state
                .sessions
                .iter()
                .map(|(id, e)| {
                    (
                        id.clone(),
                        DiskEntry {
                            endpoint: e.endpoint.clone(),
                            saved_at: e.saved_at,
                            initialize: serde_json::to_value(&e.initialize).unwrap_or_default(),
                        },
                    )
                })
                .collect(),
        };
        match write_private(&self.path, &disk) {
            Ok(()) => state.write_failed = false,
            Err(e) if !state.write_failed => {
                state.write_failed = true;
                tracing::warn!(
                    "cannot save agent sessions to {}: {e}; they will not survive a restart",
                    self.path.display()
                );
            }
            Err(_) => {}
        }
    }
}

/// Keeps at most `max` sessions: those of an earlier run whose agent has not
/// come back go first, then the oldest saved.
fn trim(sessions: &mut HashMap<String, Entry>, max: usize) {
    while sessions.len() > max {
        let victim = sessions
            .iter()
            .min_by_key(|(_, e)| (e.live, e.seq))
            .map(|(id, _)| id.clone());
        match victim {
            Some(id) => sessions.remove(&id),
            None => return,
        };
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Temp file (0600) then rename, in a 0700 directory. No fsync: the file is
/// rewritten on every session and a process crash keeps what was written; a
/// torn file after a power loss reads as no sessions.
fn write_private(path: &Path, disk: &Disk) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    crate::os::files::create_private_dir(dir)?;
    let bytes = serde_json::to_vec_pretty(disk).map_err(std::io::Error::other)?;
    crate::os::files::write_private_unsynced(path, &bytes)
}

/// The view of the session file that one endpoint (`/mcp` or
/// `/servers/NAME/mcp`) gives rmcp: a session opened on one endpoint is not
/// restored on another.
#[derive(Clone)]
pub struct ScopedStore {
    file: Arc<SessionFile>,
    endpoint: String,
}

type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, SessionStoreError>> + Send + 'a>>;

impl ScopedStore {
    pub fn new(file: Arc<SessionFile>, endpoint: String) -> Self {
        ScopedStore { file, endpoint }
    }

    pub fn mark_live(&self, id: &str) {
        self.file.mark_live(id);
    }

    /// Whether session `id` of this endpoint is saved.
    pub fn has(&self, id: &str) -> bool {
        self.file.contains(id, &self.endpoint)
    }

    /// Forgets a session, off the async threads.
    pub async fn forget(&self, id: &str) {
        let file = self.file.clone();
        let id = id.to_string();
        let _ = tokio::task::spawn_blocking(move || file.remove(&id)).await;
    }
}

// rmcp declares `SessionStore` with `async_trait`; these are the signatures
// that macro expands to.
impl SessionStore for ScopedStore {
    fn load<'life0, 'life1, 'async_trait>(
        &'life0 self,
        session_id: &'life1 str,
    ) -> StoreFuture<'async_trait, Option<SessionState>>
    where
        'life0: 'async_trait,
        'life1: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move { Ok(self.file.load(session_id, &self.endpoint).map(SessionState::new)) })
    }

    fn store<'life0, 'life1, 'life2, 'async_trait>(
        &'life0 self,
        session_id: &'life1 str,
        state: &'life2 SessionState,
    ) -> StoreFuture<'async_trait, ()>
    where
        'life0: 'async_trait,
        'life1: 'async_trait,
        'life2: 'async_trait,
        Self: 'async_trait,
    {
        let file = self.file.clone();
        let (id, endpoint, params) = (
            session_id.to_string(),
            self.endpoint.clone(),
            state.initialize_params.clone(),
        );
        Box::pin(async move {
            tokio::task::spawn_blocking(move || file.save(&id, &endpoint, params))
                .await
                .map_err(|e| Box::new(e) as SessionStoreError)
        })
    }

    fn delete<'life0, 'life1, 'async_trait>(&'life0 self, session_id: &'life1 str) -> StoreFuture<'async_trait, ()>
    where
        'life0: 'async_trait,
        'life1: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            self.forget(session_id).await;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ClientCapabilities, Implementation, ProtocolVersion};

    fn params(name: &str) -> InitializeRequestParams {
        let mut p = InitializeRequestParams::new(ClientCapabilities::default(), Implementation::new(name, "1.0"));
        p.protocol_version = ProtocolVersion::V_2025_06_18;
        p
    }

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("mcpool-session-store-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn survives_reopen_only_with_the_same_profile_and_stamp() {
        let d = dir("reopen");
        let path = file_for(&d, "work");
        let file = SessionFile::open(path.clone(), "work", "stamp-a".into(), 8);
        file.save("id-1", "/mcp", params("agent"));
        file.save("id-2", "/servers/x/mcp", params("other"));
        file.remove("id-2");
        crate::os::files::assert_private(&path);

        let again = SessionFile::open(path.clone(), "work", "stamp-a".into(), 8);
        assert_eq!(again.load("id-1", "/mcp").unwrap().client_info.name, "agent");
        assert!(again.load("id-1", "/servers/x/mcp").is_none(), "another endpoint");
        assert!(again.load("id-2", "/servers/x/mcp").is_none(), "removed");
        assert!(again.contains("id-1", "/mcp"));
        assert!(!again.contains("id-1", "/servers/x/mcp"));
        assert!(!again.contains("id-2", "/servers/x/mcp"));

        // Another key (a deleted and re-made profile) or another profile's
        // name: nothing is accepted, and the file goes.
        let foreign = SessionFile::open(path.clone(), "work", "stamp-b".into(), 8);
        assert!(foreign.load("id-1", "/mcp").is_none());
        assert!(!path.exists());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn keeps_no_meta_and_at_most_max_sessions_dormant_first() {
        let d = dir("trim");
        let path = file_for(&d, "p");
        let file = SessionFile::open(path.clone(), "p", "s".into(), 2);
        let mut with_meta = params("a");
        with_meta.meta = Some(serde_json::from_value(serde_json::json!({"secret": "x"})).unwrap());
        file.save("old", "/mcp", with_meta);
        assert!(!std::fs::read_to_string(&path).unwrap().contains("secret"));
        file.save("mid", "/mcp", params("b"));
        // A new run: both are dormant until their agents come back.
        let file = SessionFile::open(path.clone(), "p", "s".into(), 2);
        file.mark_live("old");
        file.save("new", "/mcp", params("c"));
        assert!(file.load("old", "/mcp").is_some(), "live, though oldest");
        assert!(file.load("mid", "/mcp").is_none(), "dormant goes first");
        assert!(file.load("new", "/mcp").is_some());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn profile_names_become_safe_file_names() {
        let d = Path::new("/data");
        assert_eq!(file_for(d, "default"), Path::new("/data/sessions/default.json"));
        let odd = file_for(d, "../../etc/passwd");
        assert_eq!(odd.parent(), Some(Path::new("/data/sessions")));
        assert!(odd.file_name().unwrap().to_str().unwrap().starts_with("profile-"));
    }
}
