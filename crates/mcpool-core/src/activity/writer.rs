//! The writer thread: takes whatever entries have gathered, commits them in
//! one transaction, trims by age and size now and then, and keeps going
//! through a corrupt file (moved aside, replaced), a locked one or a full
//! disk (retried; told once).

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::dict::{self, Dictionary};
use super::store::{self, Failure};
use super::{now_ms, Entry, Message, Retention, QUEUE};
use crate::sync::lock;

/// The most entries one transaction takes.
const BATCH: usize = 4096;
/// How long the writer gathers entries after the first before it commits.
const GATHER: Duration = Duration::from_millis(50);
/// How often the file is trimmed by age and size.
const TRIM_EVERY: Duration = Duration::from_secs(600);
/// After this many entries the size is looked at again before the timer.
const TRIM_AFTER: u64 = 50_000;
/// Names no entry refers to any more are pruned at most this often (it
/// reads the whole table), after a trim that removed entries.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);
/// A file that could not be opened or written is tried again after this.
const RETRY: Duration = Duration::from_secs(5);

struct Writer {
    path: std::path::PathBuf,
    retention: Retention,
    conn: Option<Connection>,
    /// The ids `conn`'s file holds, cached; cleared whenever they may not.
    dict: Dictionary,
    /// Received and not yet committed (kept across a failed commit, bounded).
    pending: Vec<Entry>,
    problem: Arc<Mutex<Option<String>>>,
    committed: Arc<AtomicI64>,
    changed: tokio::sync::watch::Sender<i64>,
    next_trim: Instant,
    since_trim: u64,
    retry_at: Option<Instant>,
    last_prune: Option<Instant>,
}

pub(super) fn run(
    path: std::path::PathBuf,
    retention: Retention,
    (inbox, waiting): (mpsc::Receiver<Message>, Arc<AtomicUsize>),
    committed: Arc<AtomicI64>,
    changed: tokio::sync::watch::Sender<i64>,
    problem: Arc<Mutex<Option<String>>>,
) {
    let mut w = Writer {
        path,
        retention,
        conn: None,
        dict: Dictionary::default(),
        pending: Vec::new(),
        problem,
        committed,
        changed,
        next_trim: Instant::now(),
        since_trim: 0,
        retry_at: None,
        last_prune: None,
    };
    w.connect();
    loop {
        let wait = w
            .retry_at
            .unwrap_or(w.next_trim)
            .min(w.next_trim)
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(10));
        let mut flushes = Vec::new();
        let first = match inbox.recv_timeout(wait) {
            Ok(m) => Some(m),
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                w.commit();
                return;
            }
        };
        // What arrives within GATHER of the first entry goes in the same
        // transaction: one commit for a burst, not one per call. A flush
        // (shutdown, tests) commits at once.
        let until = Instant::now() + GATHER;
        let mut next = first;
        while let Some(message) = next.take() {
            match message {
                Message::Entry(e) => {
                    waiting.fetch_sub(1, Ordering::AcqRel);
                    w.pending.push(*e)
                }
                Message::Flush(done) => flushes.push(done),
                Message::Settings(r) => w.retention = r,
            }
            if w.pending.len() >= BATCH {
                break;
            }
            next = match inbox.try_recv() {
                Ok(m) => Some(m),
                Err(_) if !flushes.is_empty() => None,
                Err(_) => {
                    // The rest of the window is slept out, not waited on the
                    // queue: a caller that finds no one waiting wakes no
                    // thread, so a burst costs one wake-up, not one per call
                    // (a futex wake and a switch on every tool call).
                    let left = until.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        None
                    } else {
                        std::thread::sleep(left);
                        inbox.try_recv().ok()
                    }
                }
            };
        }
        w.commit();
        if w.pending.is_empty() {
            for done in flushes {
                let _ = done.send(());
            }
        }
        w.maybe_trim();
    }
}

impl Writer {
    fn connect(&mut self) -> bool {
        if self.conn.is_some() {
            return true;
        }
        self.dict.clear();
        match store::open_writer(&self.path) {
            Ok(conn) => {
                let last: i64 = conn
                    .query_row("SELECT coalesce(max(id), 0) FROM activity", [], |r| r.get(0))
                    .unwrap_or(0);
                self.committed.store(last, Ordering::Release);
                self.conn = Some(conn);
                self.retry_at = None;
                true
            }
            Err(e) if store::classify(&e) == Failure::Corrupt => {
                self.replace_corrupt(&e);
                match store::open_writer(&self.path) {
                    Ok(conn) => {
                        self.committed.store(0, Ordering::Release);
                        self.conn = Some(conn);
                        self.retry_at = None;
                        true
                    }
                    Err(e) => {
                        self.fail(&e);
                        false
                    }
                }
            }
            Err(e) => {
                self.fail(&e);
                false
            }
        }
    }

    /// Moves the file aside and says so, once per file.
    fn replace_corrupt(&mut self, e: &rusqlite::Error) {
        self.conn = None;
        let aside = store::move_aside(&self.path);
        let kept = aside
            .map(|p| format!("; the old file is kept as {}", p.display()))
            .unwrap_or_default();
        let sentence = format!(
            "The activity log {} was damaged ({e}) and has been replaced by a new one{kept}.",
            self.path.display()
        );
        tracing::error!("{sentence}");
        *lock(&self.problem) = Some(sentence);
    }

    /// A failure to open or write, told once until it changes or clears.
    fn fail(&mut self, e: &rusqlite::Error) {
        let what = match store::classify(e) {
            Failure::Locked => "is locked by another program",
            _ => "cannot be written",
        };
        let sentence = format!(
            "The activity log {} {what} ({e}); mcpool keeps running and tries again.",
            self.path.display()
        );
        let mut problem = lock(&self.problem);
        if problem.as_deref() != Some(sentence.as_str()) {
            tracing::error!("{sentence}");
            *problem = Some(sentence);
        }
        self.retry_at = Some(Instant::now() + RETRY);
    }

    fn commit(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        if self.retry_at.is_some_and(|at| Instant::now() < at) {
            self.bound_pending();
            return;
        }
        if !self.connect() {
            self.bound_pending();
            return;
        }
        let Some(conn) = self.conn.as_mut() else { return };
        match store::insert(conn, &mut self.dict, &self.pending) {
            Ok(last) => self.committed_to(last),
            Err(e) if store::classify(&e) == Failure::Corrupt => {
                self.replace_corrupt(&e);
                if self.connect() {
                    if let Some(conn) = self.conn.as_mut() {
                        match store::insert(conn, &mut self.dict, &self.pending) {
                            Ok(last) => self.committed_to(last),
                            Err(e) => {
                                self.dict.clear();
                                self.fail(&e);
                            }
                        }
                    }
                }
            }
            Err(e) => {
                self.conn = None;
                self.dict.clear();
                self.fail(&e);
            }
        }
        self.bound_pending();
    }

    fn committed_to(&mut self, last: i64) {
        self.since_trim += self.pending.len() as u64;
        self.pending.clear();
        // A burst's batch (up to 4096 entries of ~300 bytes) need not stay
        // allocated between bursts.
        if self.pending.capacity() > 256 {
            self.pending.shrink_to(64);
        }
        self.committed.store(last, Ordering::Release);
        self.changed.send_replace(last);
        let mut problem = lock(&self.problem);
        // A damaged file stays reported (the user may want the old one);
        // a lock or write failure is over once a commit succeeds.
        if problem.as_deref().is_some_and(|p| !p.contains("damaged")) {
            tracing::info!("the activity log {} is written again", self.path.display());
            *problem = None;
        }
    }

    /// While the file cannot be written, keeps at most a queue's worth.
    fn bound_pending(&mut self) {
        if self.pending.len() > QUEUE {
            let over = self.pending.len() - QUEUE;
            self.pending.drain(..over);
        }
    }

    fn maybe_trim(&mut self) {
        let now = Instant::now();
        if now < self.next_trim && self.since_trim < TRIM_AFTER {
            return;
        }
        self.next_trim = now + TRIM_EVERY;
        self.since_trim = 0;
        let Some(conn) = &self.conn else { return };
        let max_age = i64::try_from(self.retention.max_age.as_millis()).unwrap_or(i64::MAX);
        match store::trim(conn, now_ms().saturating_sub(max_age), self.retention.max_bytes) {
            Ok(0) => {}
            Ok(n) => {
                tracing::info!("activity log: {n} old entries trimmed");
                if self.last_prune.is_none_or(|at| now.duration_since(at) >= PRUNE_EVERY) {
                    self.last_prune = Some(now);
                    // The cache may name what is pruned: start it over.
                    self.dict.clear();
                    if let Err(e) = dict::prune(conn) {
                        tracing::warn!("activity log {}: pruning names failed: {e}", self.path.display());
                    }
                }
            }
            Err(e) => tracing::warn!("activity log {}: trimming failed: {e}", self.path.display()),
        }
    }
}
