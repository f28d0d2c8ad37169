//! Agent sessions on the HTTP endpoint: rmcp's in-memory sessions, a limit on
//! how many are open across `/mcp` and every `/servers/NAME/mcp` (reaching
//! it closes the longest idle first, and says so in the log), their idle
//! expiry, and the profile's session file kept in step (saved sessions are
//! forgotten when they end, except at shutdown, so they can carry on after a
//! restart).
//!
//! Idle means no request of the session open and none for the idle time
//! (`--session-idle-secs`). rmcp's own keep-alive is off: its timer counts
//! only messages, so it ended a session whose one call took longer than it
//! (and answered that call's stream with nothing). The book sweeps instead,
//! and a session with a request in flight is never idle.
//!
//! An ended session leaves nothing behind; the memory it freed goes back to
//! the system once the burst is over (ended sessions count as work for
//! [`crate::os::heap`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::{Stream, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
};
use rmcp::transport::streamable_http_server::session::{RestoreOutcome, ServerSseMessage, SessionId, SessionManager};
use rmcp::transport::WorkerTransport;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use super::session_store::ScopedStore;
use crate::sync::lock;

/// Open sessions allowed when nothing else is set (`MCPOOL_MAX_SESSIONS`).
pub const DEFAULT_MAX_SESSIONS: usize = 256;
pub use crate::pool::DEFAULT_SESSION_IDLE;
/// The sweep for idle sessions runs this often at most (an eighth of the
/// idle time when that is shorter), so a session outlives its idle time by
/// at most this much.
const SWEEP_AT_MOST_EVERY: Duration = Duration::from_secs(30);
/// At most one log line per this long about closed sessions; the others are
/// counted into the next one.
const LOG_EVERY: Duration = Duration::from_secs(60);

/// Every open agent session of the endpoint, for the limit.
pub struct SessionBook {
    max: usize,
    idle: Duration,
    /// Cancelled at shutdown: sessions that end then stay saved.
    shutdown: CancellationToken,
    state: Mutex<BookState>,
}

#[derive(Default)]
struct BookState {
    open: HashMap<SessionId, Open>,
    closed_for_limit: u64,
    unlogged: u64,
    last_log: Option<Instant>,
    /// The idle sweep, started with the first session; aborted with the book.
    sweep: Option<AbortOnDropHandle<()>>,
}

struct Open {
    last_used: Instant,
    /// Requests whose response stream is open: such a session is not idle.
    busy: usize,
    owner: Weak<PoolSessionManager>,
}

impl SessionBook {
    pub fn new(max: usize, idle: Duration, shutdown: CancellationToken) -> Self {
        SessionBook {
            max: max.max(1),
            idle: idle.max(Duration::from_millis(1)),
            shutdown,
            state: Mutex::default(),
        }
    }

    pub fn max(&self) -> usize {
        self.max
    }

    pub fn open_count(&self) -> usize {
        lock(&self.state).open.len()
    }

    #[cfg(test)]
    fn is_open(&self, id: &SessionId) -> bool {
        lock(&self.state).open.contains_key(id)
    }

    /// Sessions closed so far to stay within the limit.
    pub fn closed_for_limit(&self) -> u64 {
        lock(&self.state).closed_for_limit
    }

    /// Records a new (or restored) session and picks the sessions to close
    /// so that at most `max` stay open.
    fn admit(
        self: &Arc<Self>,
        id: &SessionId,
        owner: Weak<PoolSessionManager>,
    ) -> Vec<(SessionId, Weak<PoolSessionManager>)> {
        let mut state = lock(&self.state);
        let now = Instant::now();
        if state.sweep.is_none() {
            let every = (self.idle / 8).clamp(Duration::from_millis(10), SWEEP_AT_MOST_EVERY);
            state.sweep = Some(AbortOnDropHandle::new(tokio::spawn(sweep(Arc::downgrade(self), every))));
        }
        state.open.insert(
            id.clone(),
            Open {
                last_used: now,
                busy: 0,
                owner,
            },
        );
        let ranked: Vec<(SessionId, bool, Instant)> = state
            .open
            .iter()
            .filter(|(other, _)| *other != id)
            .map(|(other, o)| (other.clone(), o.busy > 0, o.last_used))
            .collect();
        let victims = pick_victims(ranked, state.open.len().saturating_sub(self.max));
        let mut closing = Vec::new();
        for victim in victims {
            if let Some(o) = state.open.remove(&victim) {
                closing.push((victim, o.owner));
            }
        }
        if !closing.is_empty() {
            state.closed_for_limit += closing.len() as u64;
            crate::os::memory::note_work(closing.len() as u64);
            state.unlogged += closing.len() as u64;
            let due = state.last_log.is_none_or(|t| now.duration_since(t) >= LOG_EVERY);
            if due {
                tracing::warn!(
                    "closed {} agent session(s), the longest idle first, to stay within the limit of {} open sessions (set MCPOOL_MAX_SESSIONS to change it); their agents get 404 and must initialize again",
                    state.unlogged,
                    self.max
                );
                state.unlogged = 0;
                state.last_log = Some(now);
            }
        }
        closing
    }

    fn touch(&self, id: &SessionId) {
        if let Some(o) = lock(&self.state).open.get_mut(id) {
            o.last_used = Instant::now();
        }
    }

    fn busy(self: &Arc<Self>, id: &SessionId) -> BusyGuard {
        if let Some(o) = lock(&self.state).open.get_mut(id) {
            o.busy += 1;
            o.last_used = Instant::now();
        }
        BusyGuard {
            book: self.clone(),
            id: id.clone(),
        }
    }

    /// Takes the sessions idle for the idle time out of the book, for the
    /// caller to close.
    fn take_idle(&self) -> Vec<(SessionId, Weak<PoolSessionManager>)> {
        let mut state = lock(&self.state);
        let now = Instant::now();
        let ranked = state.open.iter().map(|(id, o)| (id.clone(), o.busy > 0, o.last_used));
        let expired = idle_sessions(ranked, now, self.idle);
        let mut closing = Vec::new();
        for id in expired {
            if let Some(o) = state.open.remove(&id) {
                closing.push((id, o.owner));
            }
        }
        if !closing.is_empty() {
            crate::os::memory::note_work(closing.len() as u64);
            tracing::info!(
                "closed {} agent session(s) idle for {} s (MCPOOL_SESSION_IDLE_SECS); their agents get 404 and initialize again",
                closing.len(),
                self.idle.as_secs_f64()
            );
        }
        closing
    }

    /// Forgets a session; once enough have ended, schedules a trim.
    fn remove(&self, id: &SessionId) {
        let mut state = lock(&self.state);
        if state.open.remove(id).is_some() {
            crate::os::memory::note_work(1);
        }
    }
}

/// Closes idle sessions every `every`, as long as the book exists.
async fn sweep(book: Weak<SessionBook>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(book) = book.upgrade() else { return };
        for (id, owner) in book.take_idle() {
            if let Some(owner) = owner.upgrade() {
                let _ = owner.close_session(&id).await;
            }
        }
    }
}

/// The sessions to expire at `now`: none of their requests open, and none
/// for `idle`.
fn idle_sessions(
    ranked: impl Iterator<Item = (SessionId, bool, Instant)>,
    now: Instant,
    idle: Duration,
) -> Vec<SessionId> {
    ranked
        .filter(|(_, busy, last_used)| !busy && now.duration_since(*last_used) >= idle)
        .map(|(id, _, _)| id)
        .collect()
}

/// The `excess` sessions to close: idle ones before busy ones, the longest
/// unused first.
fn pick_victims(mut ranked: Vec<(SessionId, bool, Instant)>, excess: usize) -> Vec<SessionId> {
    ranked.sort_by_key(|(_, busy, last_used)| (*busy, *last_used));
    ranked.into_iter().take(excess).map(|(id, _, _)| id).collect()
}

/// Marks a session busy while a request's response stream is open.
struct BusyGuard {
    book: Arc<SessionBook>,
    id: SessionId,
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        if let Some(o) = lock(&self.book.state).open.get_mut(&self.id) {
            o.busy = o.busy.saturating_sub(1);
            o.last_used = Instant::now();
        }
    }
}

/// One endpoint's sessions: rmcp's [`LocalSessionManager`], counted in the
/// shared [`SessionBook`] and kept in step with the session file.
pub struct PoolSessionManager {
    me: Weak<PoolSessionManager>,
    inner: LocalSessionManager,
    book: Arc<SessionBook>,
    store: Option<ScopedStore>,
}

impl PoolSessionManager {
    pub fn new(book: Arc<SessionBook>, store: Option<ScopedStore>) -> Arc<Self> {
        let mut inner = LocalSessionManager::default();
        // The book expires idle sessions (see the module doc).
        inner.session_config.keep_alive = None;
        Arc::new_cyclic(|me| PoolSessionManager {
            me: me.clone(),
            inner,
            book,
            store,
        })
    }

    /// Whether `id` is a session of this endpoint: open, or saved by an
    /// earlier run and not yet restored.
    pub async fn knows(&self, id: &SessionId) -> bool {
        if self.inner.has_session(id).await.unwrap_or(false) {
            return true;
        }
        self.store.as_ref().is_some_and(|store| store.has(id))
    }

    /// Notes a request of session `id` answered without rmcp.
    pub(super) fn touch(&self, id: &SessionId) {
        self.book.touch(id);
    }

    async fn admit(&self, id: &SessionId) {
        for (victim, owner) in self.book.admit(id, self.me.clone()) {
            if let Some(owner) = owner.upgrade() {
                let _ = owner.close_session(&victim).await;
            }
        }
    }
}

impl SessionManager for PoolSessionManager {
    type Error = LocalSessionManagerError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.inner.create_session().await?;
        self.admit(&id).await;
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.book.touch(id);
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    /// Ends a session however it ends (DELETE, idle expiry, the limit, the
    /// agent's worker stopping) and forgets it, except at shutdown.
    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.book.remove(id);
        let closed = self.inner.close_session(id).await;
        if !self.book.shutdown.is_cancelled() {
            if let Some(store) = &self.store {
                store.forget(id).await;
            }
        }
        closed
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let guard = self.book.busy(id);
        let stream = self.inner.create_stream(id, message).await?;
        Ok(stream.map(move |m| {
            let _busy = &guard;
            m
        }))
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        self.book.touch(id);
        self.inner.accept_message(id, message).await
    }

    /// The agent's listening stream (`GET`) is an open request too: it
    /// keeps the session from idling out until the agent hangs up.
    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let guard = self.book.busy(id);
        let stream = self.inner.create_standalone_stream(id).await?;
        Ok(stream.map(move |m| {
            let _busy = &guard;
            m
        }))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.book.touch(id);
        self.inner.resume(id, last_event_id).await
    }

    /// A session saved by an earlier run, made again under its id; it counts
    /// toward the limit like any other.
    async fn restore_session(&self, id: SessionId) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        let outcome = self.inner.restore_session(id.clone()).await?;
        if let RestoreOutcome::Restored(_) = &outcome {
            if let Some(store) = &self.store {
                store.mark_live(&id);
            }
            tracing::info!("agent session restored after a restart");
            self.admit(&id).await;
        }
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn idle_sessions_go_first_longest_unused_first() {
        let t0 = Instant::now();
        let id = |s: &str| SessionId::from(s);
        let ranked = vec![
            (id("busy-old"), true, t0),
            (id("idle-new"), false, t0 + Duration::from_secs(30)),
            (id("idle-old"), false, t0 + Duration::from_secs(10)),
        ];
        assert_eq!(pick_victims(ranked.clone(), 1), vec![id("idle-old")]);
        assert_eq!(pick_victims(ranked.clone(), 2), vec![id("idle-old"), id("idle-new")]);
        assert_eq!(
            pick_victims(ranked.clone(), 3),
            vec![id("idle-old"), id("idle-new"), id("busy-old")]
        );
        assert!(pick_victims(ranked, 0).is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn the_book_keeps_at_most_max_open() {
        let book = Arc::new(SessionBook::new(2, DEFAULT_SESSION_IDLE, CancellationToken::new()));
        let none = Weak::new();
        assert!(book.admit(&"a".into(), none.clone()).is_empty());
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(book.admit(&"b".into(), none.clone()).is_empty());
        tokio::time::advance(Duration::from_secs(1)).await;
        // "a" is the longest idle, but a request on it is in flight.
        let busy = book.busy(&"a".into());
        tokio::time::advance(Duration::from_secs(1)).await;
        let closed: Vec<_> = book
            .admit(&"c".into(), none.clone())
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert_eq!(closed, vec![SessionId::from("b")]);
        drop(busy);
        assert_eq!(book.open_count(), 2);
        assert_eq!(book.closed_for_limit(), 1);
        book.remove(&"a".into());
        assert_eq!(book.open_count(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn only_sessions_without_an_open_request_idle_out() {
        let t0 = Instant::now();
        let idle = Duration::from_secs(60);
        let id = |s: &str| SessionId::from(s);
        let ranked = || {
            vec![
                (id("busy-for-ages"), true, t0),
                (id("quiet"), false, t0),
                (id("recent"), false, t0 + Duration::from_secs(30)),
            ]
            .into_iter()
        };
        assert!(idle_sessions(ranked(), t0 + Duration::from_secs(59), idle).is_empty());
        assert_eq!(
            idle_sessions(ranked(), t0 + Duration::from_secs(60), idle),
            vec![id("quiet")]
        );
        let mut late = idle_sessions(ranked(), t0 + Duration::from_secs(3600), idle);
        late.sort();
        assert_eq!(late, vec![id("quiet"), id("recent")], "busy is never idle");
    }

    #[tokio::test(start_paused = true)]
    async fn a_long_request_keeps_its_session_and_the_idle_clock_starts_when_it_ends() {
        let idle = Duration::from_secs(10);
        let book = Arc::new(SessionBook::new(8, idle, CancellationToken::new()));
        let none = Weak::new();
        let (calling, quiet) = (SessionId::from("calling"), SessionId::from("quiet"));
        book.admit(&calling, none.clone());
        book.admit(&quiet, none.clone());
        let call = book.busy(&calling);
        // The sweep runs every 1.25 s here: `sleep` lets it.
        tokio::time::sleep(Duration::from_secs(9)).await;
        assert!(book.is_open(&calling) && book.is_open(&quiet));
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert!(!book.is_open(&quiet), "idle for its idle time");
        // A call far longer than the idle time.
        tokio::time::sleep(Duration::from_secs(300)).await;
        assert!(book.is_open(&calling), "a session with a call open is not idle");
        drop(call);
        tokio::time::sleep(Duration::from_secs(9)).await;
        assert!(book.is_open(&calling), "idle counts from the end of the call");
        book.touch(&calling);
        tokio::time::sleep(Duration::from_secs(9)).await;
        assert!(book.is_open(&calling), "any message counts as use");
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert_eq!(book.open_count(), 0);
        assert_eq!(book.closed_for_limit(), 0, "idle expiry is not the limit");
    }

    #[tokio::test(start_paused = true)]
    async fn the_sweep_closes_an_idle_session_in_rmcp_too() {
        let idle = Duration::from_secs(10);
        let book = Arc::new(SessionBook::new(8, idle, CancellationToken::new()));
        let manager = PoolSessionManager::new(book.clone(), None);
        let (id, _transport) = manager.create_session().await.unwrap();
        assert!(manager.knows(&id).await);
        tokio::time::sleep(Duration::from_secs(9)).await;
        assert!(manager.has_session(&id).await.unwrap());
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert!(
            !manager.has_session(&id).await.unwrap(),
            "expired a little after its idle time"
        );
        assert!(!manager.knows(&id).await);
        assert_eq!(book.open_count(), 0);
    }
}
