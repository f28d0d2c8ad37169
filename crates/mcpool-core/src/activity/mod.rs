//! The activity log: every tool call, prompt get, resource read and server
//! event, kept in an SQLite file in the data dir (behaviour.md "activity").
//!
//! Recording never waits: an [`Entry`] goes into a bounded channel and a
//! writer thread of its own commits whatever has gathered, one transaction
//! at a time (`writer.rs`), so a burst of calls costs one commit. Reads open
//! their own connection (WAL: readers never block the writer). A corrupt
//! file is moved aside and replaced, a locked one retried; either is told
//! once and never stops the pool.

mod dict;
mod migrate;
pub mod query;
mod retention;
mod series;
mod store;
mod writer;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use query::{Filter, FilterError, Item, Page};
pub use retention::Retention;
pub use series::{Band, Bucket, Series, StatusSpan};

use crate::sync::lock;

/// How many entries may wait for the writer before new ones are dropped
/// (and the drop told once): a stalled disk never grows memory without end.
/// Counted by hand over an unbounded channel: std's bounded one allocates
/// and touches every slot up front, 3.5 MiB resident for a queue that is
/// nearly always empty (docs/benchmarks.md, memory).
const QUEUE: usize = 65_536;

/// What an entry is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Tool,
    Prompt,
    Resource,
    /// Something that happened to a server: a status change, a connection
    /// attempt and its cause, a sign-in, an approval, a config change.
    Server,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::Prompt => "prompt",
            Kind::Resource => "resource",
            Kind::Server => "server",
        }
    }

    /// As stored (`store.rs`).
    pub(super) fn code(self) -> i64 {
        match self {
            Kind::Tool => 0,
            Kind::Prompt => 1,
            Kind::Resource => 2,
            Kind::Server => store::KIND_SERVER,
        }
    }

    pub(super) fn from_code(code: i64) -> Kind {
        match code {
            0 => Kind::Tool,
            1 => Kind::Prompt,
            2 => Kind::Resource,
            _ => Kind::Server,
        }
    }

    fn parse(s: &str) -> Option<Kind> {
        Some(match s {
            "tool" => Kind::Tool,
            "prompt" => Kind::Prompt,
            "resource" => Kind::Resource,
            "server" => Kind::Server,
            _ => return None,
        })
    }
}

/// The agent a request came from, as far as mcpool knows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Agent {
    /// `clientInfo.name` of its `initialize` (or of a 2026-07-28 request's `_meta`).
    pub client: Option<String>,
    pub client_version: Option<String>,
    /// Its `Mcp-Session-Id`, for a session agent.
    pub session: Option<String>,
    /// The path it called: `/mcp`, `/servers/NAME/mcp`, `/profiles/NAME/mcp`.
    pub endpoint: Option<String>,
}

/// One thing to keep. Text fields are stored as given: callers redact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// When it began (a call) or happened (an event).
    pub time: SystemTime,
    pub kind: Kind,
    pub server: String,
    /// The tool or prompt as the server names it, the resource's URI, or the
    /// server event (`status`, `connect`, `signin`, `approval`, `config`).
    pub name: String,
    pub agent: Agent,
    pub duration_ms: Option<u64>,
    /// A call's outcome (`ok`, `tool_error`, `timeout`, ...: `calls::Outcome`),
    /// or what the event says (the new status, the attempt's cause, ...).
    pub outcome: String,
    /// The sentence that went with a failure.
    pub error: Option<String>,
    pub result_bytes: Option<u64>,
    /// Only for servers with `"logArguments": true`, redacted.
    pub arguments: Option<String>,
    pub result: Option<String>,
    /// The W3C trace id the request ran under, when traces are on.
    pub trace_id: Option<String>,
    /// A script run's own key (code mode): the calls it made name it.
    pub run: Option<String>,
    /// The key of the script run that made this call.
    pub parent_run: Option<String>,
}

impl Entry {
    /// An event of `server` happening now.
    pub fn server_event(server: &str, event: &str, outcome: &str, error: Option<String>) -> Entry {
        Entry {
            time: SystemTime::now(),
            kind: Kind::Server,
            server: server.to_string(),
            name: event.to_string(),
            agent: Agent::default(),
            duration_ms: None,
            outcome: outcome.to_string(),
            error,
            result_bytes: None,
            arguments: None,
            result: None,
            trace_id: None,
            run: None,
            parent_run: None,
        }
    }
}

enum Message {
    Entry(Box<Entry>),
    /// Answered once everything sent before it is committed.
    Flush(mpsc::SyncSender<()>),
    Settings(Retention),
}

/// Something else that sees every entry as it is recorded, whether or not
/// the file keeps it (the metrics): called on the recording task, so it
/// must be quick and never block.
pub trait Watcher: Send + Sync {
    fn seen(&self, entry: &Entry);
}

/// The activity log of one profile, cheap to clone. [`Activity::off`] keeps
/// nothing on disk (tests of other parts, `"activity": {"enabled": false}`);
/// its watchers still see every entry.
#[derive(Clone, Default)]
pub struct Activity {
    shared: Option<Arc<Shared>>,
    watchers: Arc<std::sync::RwLock<Vec<Arc<dyn Watcher>>>>,
}

struct Shared {
    path: PathBuf,
    queue: mpsc::Sender<Message>,
    /// Entries sent and not yet taken by the writer (at most [`QUEUE`]).
    waiting: Arc<AtomicUsize>,
    /// `activity.enabled`; while false nothing new is kept.
    enabled: AtomicBool,
    /// Entries dropped because the writer fell behind.
    dropped: AtomicU64,
    /// The newest committed entry's id: the live views follow it.
    committed: Arc<AtomicI64>,
    changed: tokio::sync::watch::Sender<i64>,
    /// What went wrong with the file, told once and shown until it is fixed.
    problem: Arc<Mutex<Option<String>>>,
}

/// One page from the file at `path` without a writer (`mcpool activity`,
/// which reads the file itself, whether or not an instance runs).
pub fn query_file(path: &Path, filter: &Filter) -> Result<Page, String> {
    if !path.exists() {
        return Ok(Page::default());
    }
    let conn = store::open_reader(path).map_err(|e| store::sentence(path, &e))?;
    query::run(&conn, filter).map_err(|e| store::sentence(path, &e))
}

/// `<data dir>/activity/<profile>.db`.
pub fn file_for(data_dir: &Path, profile: &str) -> PathBuf {
    data_dir.join("activity").join(format!("{profile}.db"))
}

impl Activity {
    /// Keeps nothing.
    pub fn off() -> Activity {
        Activity::default()
    }

    /// Opens (or makes) the file and starts its writer. Never fails: a file
    /// that cannot be opened is reported and retried by the writer.
    pub fn open(path: PathBuf, retention: Retention) -> Activity {
        let (queue, inbox) = mpsc::channel();
        let waiting = Arc::new(AtomicUsize::new(0));
        let committed = Arc::new(AtomicI64::new(0));
        let problem = Arc::new(Mutex::new(None));
        let (changed, _) = tokio::sync::watch::channel(0);
        let shared = Arc::new(Shared {
            path: path.clone(),
            queue,
            waiting: waiting.clone(),
            enabled: AtomicBool::new(retention.enabled),
            dropped: AtomicU64::new(0),
            committed: committed.clone(),
            changed: changed.clone(),
            problem: problem.clone(),
        });
        let spawned = std::thread::Builder::new()
            .name("mcpool-activity".into())
            .spawn(move || writer::run(path, retention, (inbox, waiting), committed, changed, problem));
        if let Err(e) = spawned {
            tracing::error!("the activity log could not start its writer: {e}; nothing is recorded");
            return Activity::off();
        }
        Activity {
            shared: Some(shared),
            watchers: Arc::default(),
        }
    }

    /// Shows every entry from now on to `watcher` too.
    pub fn add_watcher(&self, watcher: Arc<dyn Watcher>) {
        crate::sync::write(&self.watchers).push(watcher);
    }

    pub fn is_on(&self) -> bool {
        self.shared.is_some()
    }

    /// The database file, when on.
    pub fn path(&self) -> Option<&Path> {
        self.shared.as_deref().map(|s| s.path.as_path())
    }

    /// Keeps `entry`, later: never blocks, never fails the caller.
    pub fn record(&self, entry: Entry) {
        for w in crate::sync::read(&self.watchers).iter() {
            w.seen(&entry);
        }
        let Some(shared) = &self.shared else { return };
        if !shared.enabled.load(Ordering::Relaxed) {
            return;
        }
        if shared.waiting.fetch_add(1, Ordering::AcqRel) >= QUEUE {
            shared.waiting.fetch_sub(1, Ordering::AcqRel);
            if shared.dropped.fetch_add(1, Ordering::Relaxed) == 0 {
                tracing::warn!(
                    "the activity log falls behind ({QUEUE} entries waiting for {}); newer entries are dropped until it catches up",
                    shared.path.display()
                );
            }
        } else if shared.queue.send(Message::Entry(Box::new(entry))).is_err() {
            // The writer is gone (it never stops while the sender lives).
            shared.waiting.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// New retention settings (a config reload); applied at the next trim.
    pub fn set_retention(&self, retention: Retention) {
        if let Some(shared) = &self.shared {
            shared.enabled.store(retention.enabled, Ordering::Relaxed);
            let _ = shared.queue.send(Message::Settings(retention));
        }
    }

    /// Waits (blocking, at most `within`) until everything recorded so far
    /// is committed. For shutdown and tests.
    pub fn flush(&self, within: Duration) -> bool {
        let Some(shared) = &self.shared else { return true };
        let (done, wait) = mpsc::sync_channel(1);
        if shared.queue.send(Message::Flush(done)).is_err() {
            return false;
        }
        wait.recv_timeout(within).is_ok()
    }

    /// What is wrong with the file, if anything (shown by `/api/activity`
    /// and `mcpool doctor`).
    pub fn problem(&self) -> Option<String> {
        let shared = self.shared.as_ref()?;
        lock(&shared.problem).clone()
    }

    /// Resolves whenever new entries are committed (the live views).
    pub fn watch(&self) -> Option<tokio::sync::watch::Receiver<i64>> {
        self.shared.as_ref().map(|s| s.changed.subscribe())
    }

    /// The newest committed id.
    pub fn last_id(&self) -> i64 {
        self.shared
            .as_ref()
            .map(|s| s.committed.load(Ordering::Acquire))
            .unwrap_or(0)
    }

    /// One page of entries (blocking: call from `spawn_blocking`).
    pub fn query(&self, filter: &Filter) -> Result<Page, String> {
        let Some(shared) = &self.shared else {
            return Ok(Page::default());
        };
        if !shared.path.exists() {
            return Ok(Page::default());
        }
        let conn = store::open_reader(&shared.path).map_err(|e| store::sentence(&shared.path, &e))?;
        query::run(&conn, filter).map_err(|e| store::sentence(&shared.path, &e))
    }

    /// Calls per minute and latency percentiles (blocking).
    pub fn series(&self, server: Option<&str>, tool: Option<&str>, minutes: u32) -> Result<Series, String> {
        let Some(shared) = &self.shared else {
            return Ok(Series::empty(now_ms(), minutes));
        };
        if !shared.path.exists() {
            return Ok(Series::empty(now_ms(), minutes));
        }
        let conn = store::open_reader(&shared.path).map_err(|e| store::sentence(&shared.path, &e))?;
        series::calls(&conn, server, tool, now_ms(), minutes).map_err(|e| store::sentence(&shared.path, &e))
    }

    /// One series per server (`by_tool` false) or per server and tool
    /// (blocking).
    pub fn each(&self, minutes: u32, by_tool: bool) -> Result<Vec<Series>, String> {
        let Some(shared) = &self.shared else {
            return Ok(Vec::new());
        };
        if !shared.path.exists() {
            return Ok(Vec::new());
        }
        let conn = store::open_reader(&shared.path).map_err(|e| store::sentence(&shared.path, &e))?;
        series::each(&conn, now_ms(), minutes, by_tool).map_err(|e| store::sentence(&shared.path, &e))
    }

    /// Each server's statuses over the last `hours` (blocking).
    pub fn bands(&self, server: Option<&str>, hours: u32) -> Result<Vec<Band>, String> {
        let Some(shared) = &self.shared else {
            return Ok(Vec::new());
        };
        if !shared.path.exists() {
            return Ok(Vec::new());
        }
        let conn = store::open_reader(&shared.path).map_err(|e| store::sentence(&shared.path, &e))?;
        series::bands(&conn, server, now_ms(), hours).map_err(|e| store::sentence(&shared.path, &e))
    }
}

pub(crate) fn now_ms() -> i64 {
    to_ms(SystemTime::now())
}

pub(crate) fn to_ms(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
