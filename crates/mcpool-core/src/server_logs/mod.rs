//! Each local server's log: its stderr and mcpool's own lines about it, on disk (bounded per server), searched and streamed live.
//!
//! Lines enter through [`ServerLogs::append`], which never blocks: it puts
//! the line on a bounded queue (a full queue drops it, counted) read by one
//! writer thread, which appends to `<dir>/<server>.log` ([`file`]) and then
//! broadcasts the line to the dashboard's streams. Text arrives redacted:
//! stderr by `StderrTail::push`, mcpool's lines by [`layer`].

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde::Serialize;
use tokio::sync::broadcast;

pub mod file;
mod layer;

pub use file::{Line, Source};
pub use layer::{install, layer, ServerLogLayer};

/// Lines waiting for the writer before new ones are dropped.
pub const QUEUE: usize = 16 * 1024;

/// The API's default and largest `limit`.
pub const DEFAULT_LIMIT: usize = 500;
pub const MAX_LIMIT: usize = 5000;

/// A line just written, for the live streams.
#[derive(Debug, Clone, Serialize)]
pub struct Written {
    pub server: String,
    pub line: Line,
}

/// The server logs of one profile: a handle on the writer thread, cheap to
/// clone. The thread ends once every handle is gone.
#[derive(Clone)]
pub struct ServerLogs {
    inner: Arc<Inner>,
}

struct Inner {
    dir: PathBuf,
    queue: SyncSender<Msg>,
    written: broadcast::Sender<Written>,
    dropped: AtomicU64,
}

enum Msg {
    Line(String, Line),
    /// Answered once every line queued before it is written.
    Flush(mpsc::Sender<()>),
}

impl ServerLogs {
    /// Logs under `dir` (see [`file::dir_for`]); nothing is created until
    /// the first line.
    pub fn open(dir: PathBuf) -> ServerLogs {
        let (queue, rx) = mpsc::sync_channel(QUEUE);
        let (written, _) = broadcast::channel(1024);
        let writer = Writer {
            dir: dir.clone(),
            appenders: Default::default(),
            written: written.clone(),
        };
        let spawned = std::thread::Builder::new()
            .name("mcpool-server-logs".into())
            .spawn(move || writer.run(rx));
        if let Err(e) = spawned {
            tracing::warn!("cannot start the server log writer; server logs are off: {e}");
        }
        ServerLogs {
            inner: Arc::new(Inner {
                dir,
                queue,
                written,
                dropped: AtomicU64::new(0),
            }),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// `server`'s file.
    pub fn file(&self, server: &str) -> PathBuf {
        file::file_for(&self.inner.dir, server)
    }

    /// One handle for one server's stderr.
    pub fn for_server(&self, server: &str) -> ServerLog {
        ServerLog {
            logs: self.clone(),
            server: server.into(),
        }
    }

    /// Queues `text` (already redacted) as lines of `server`'s log, one per
    /// line of text, stamped now. Never blocks.
    pub fn append(&self, server: &str, source: Source, level: Option<&str>, text: &str) {
        let time = crate::calls::rfc3339(SystemTime::now());
        for part in text.lines() {
            let part = part.trim_end();
            if part.is_empty() {
                continue;
            }
            let line = Line {
                time: time.clone(),
                source,
                level: level.map(str::to_lowercase),
                text: file::cut(part),
            };
            match self.inner.queue.try_send(Msg::Line(server.to_string(), line)) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                    self.inner.dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    /// Lines dropped because the writer was behind (or gone).
    pub fn dropped(&self) -> u64 {
        self.inner.dropped.load(Ordering::Relaxed)
    }

    /// Every line as it is written, of every server.
    pub fn subscribe(&self) -> broadcast::Receiver<Written> {
        self.inner.written.subscribe()
    }

    /// Waits (blocking, up to `limit`) until every line queued so far is
    /// written: at shutdown, and in tests.
    pub fn flush(&self, limit: Duration) -> bool {
        let (tx, rx) = mpsc::channel();
        if self.inner.queue.send(Msg::Flush(tx)).is_err() {
            return false;
        }
        rx.recv_timeout(limit).is_ok()
    }

    /// The last `limit` lines of `server` containing `q`, oldest first, and
    /// whether more matched. Reads files: call from blocking code.
    pub fn search(&self, server: &str, q: &str, limit: usize) -> std::io::Result<(Vec<Line>, bool)> {
        file::search(&self.file(server), q, limit.min(MAX_LIMIT))
    }

    /// The whole retained log of `server`, as written. Reads files.
    pub fn download(&self, server: &str) -> std::io::Result<Vec<u8>> {
        file::read_all(&self.file(server))
    }
}

/// One server's handle, given to its stderr drain.
#[derive(Clone)]
pub struct ServerLog {
    logs: ServerLogs,
    server: Arc<str>,
}

impl ServerLog {
    /// One stderr line, already redacted.
    pub fn stderr(&self, line: &str) {
        self.logs.append(&self.server, Source::Stderr, None, line);
    }
}

impl std::fmt::Debug for ServerLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ServerLog({})", self.server)
    }
}

/// The thread that owns the files.
struct Writer {
    dir: PathBuf,
    appenders: std::collections::BTreeMap<String, (file::Appender, bool)>,
    written: broadcast::Sender<Written>,
}

impl Writer {
    fn run(mut self, rx: mpsc::Receiver<Msg>) {
        while let Ok(first) = rx.recv() {
            // A burst is written as one batch, flushed once it is all out.
            let mut next = Some(first);
            let mut done = Vec::new();
            while let Some(msg) = next {
                match msg {
                    Msg::Line(server, line) => self.write(server, line),
                    Msg::Flush(ack) => done.push(ack),
                }
                next = rx.try_recv().ok();
            }
            self.flush();
            for ack in done {
                let _ = ack.send(());
            }
        }
        self.flush();
    }

    fn flush(&mut self) {
        for (server, (appender, warned)) in &mut self.appenders {
            if let Err(e) = appender.flush() {
                Writer::warn_once_in(&self.dir, server, warned, &e);
            }
        }
    }

    /// A disk error is told once, until the server's log works again.
    fn warn_once_in(dir: &Path, server: &str, warned: &mut bool, e: &std::io::Error) {
        if !*warned {
            *warned = true;
            // No `server` field: this line must not come back here.
            tracing::warn!(
                "cannot write the log of server '{server}' in {}: {e}; its lines are dropped until it can",
                dir.display()
            );
        }
    }

    fn write(&mut self, server: String, line: Line) {
        let (appender, warned) = self
            .appenders
            .entry(server.clone())
            .or_insert_with(|| (file::Appender::new(file::file_for(&self.dir, &server)), false));
        if let Err(e) = appender.append(&line.to_file_line()) {
            Writer::warn_once_in(&self.dir, &server, warned, &e);
            return;
        }
        *warned = false;
        let _ = self.written.send(Written { server, line });
    }
}

#[cfg(test)]
mod tests;
