//! One upstream server's driver: it owns the server's [`Lifecycle`], performs
//! its effects (dial, close, drop tools), shares one attempt between
//! concurrent requests, and turns a connection that ends on its own into a
//! drop with the tools kept.

use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use rmcp::model::ServerPeerInfo;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::cache::{Fingerprinter, ToolCache};
use crate::config::ServerSpec;
use crate::errors::{attempt_failed_sentence, refusal_sentence, ConnectError};
use crate::hub::Hub;
use crate::lifecycle::{Admission, Effect, Event, Lifecycle, Status};
use crate::os::process::ProcessTree;
use crate::secrets::{redact, SecretStore};
use crate::upstream::ledger::ProgressLedger;
use crate::upstream::{self, UpstreamHandler};

/// What every supervisor of a pool shares.
pub struct Context {
    pub hub: Arc<Hub>,
    /// Every request and server event, on disk (and to the metrics).
    pub activity: crate::activity::Activity,
    /// Tool lists offered from the disk cache (`mcpool_tool_cache_hits_total`).
    pub cache_hits: std::sync::atomic::AtomicU64,
    pub backoff: crate::backoff::Backoff,
    /// Where `${keyring:NAME}` values come from.
    pub secrets: Arc<dyn SecretStore>,
    /// The disk cache and the key of its fingerprints, when enabled.
    pub cache: Option<(ToolCache, Fingerprinter)>,
    pub profile: String,
    /// Ping a remote connection after this long without a request; `None`
    /// turns keepalive off.
    pub keepalive: Option<Duration>,
    /// Set between a sleep and the following wake: no keepalive probes.
    pub asleep: std::sync::atomic::AtomicBool,
    /// Remote servers' sign-ins (OAuth).
    pub oauth: Arc<crate::oauth::OAuth>,
    /// Which tools agents may see: the config's filters and the approvals.
    pub tools: Arc<crate::toolctl::ToolControl>,
    /// Where local servers' stderr lines are kept; `None`: nowhere.
    pub logs: Option<crate::server_logs::ServerLogs>,
    /// A server's session connection closes after this long unused
    /// (session_upstream.rs): as long as an agent session may be idle.
    pub session_idle: Duration,
}

/// The exact end of a dropped server's error (behaviour.md rule 2).
pub const KEPT_SUFFIX: &str = "(tools kept; reconnects when next used)";

/// How long after `initialize` the tools are listed once more: some servers
/// announce `list_changed` before a client's stream is open.
pub const RELIST_AFTER: Duration = Duration::from_millis(500);

/// The longest a result waits for progress notifications sent before it.
pub const PROGRESS_SETTLE: Duration = Duration::from_secs(1);

mod bridge;
/// Where a server's listed tools come from.
mod cache;
mod forward;
mod heal;
mod listen;
mod live;
pub mod probe;
mod questions;
mod session_upstream;
mod signin;
mod snapshot;
mod watch;

pub use crate::lifecycle::Lists;
pub use heal::{SupervisorPatient, WAITING_PREFIX};
pub use live::Link;
use live::{close, list_all, Live};
pub use snapshot::{ServerSnapshot, ToolSnapshot, ToolState};

/// The pool side a supervisor reports to.
pub trait Observer: Send + Sync {
    fn status_changed(&self, server: &str);
    fn lists_changed(&self, server: &str);
}

/// Why a request could not be served, with the sentence for the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable {
    pub sentence: String,
}

/// A request that reached the server but did not come back as a result.
#[derive(Debug)]
pub enum RequestError {
    Unavailable(Unavailable),
    /// The server answered with a JSON-RPC error.
    Mcp(rmcp::model::ErrorData),
    Cancelled,
    /// No answer nor progress within the server's `callTimeout`; the call
    /// was cancelled upstream.
    TimedOut(Unavailable),
}

/// The driver's part of one server. Its state, error, backoff and lists
/// are `machine`'s alone; the rest is what performing the effects needs.
struct Inner {
    spec: ServerSpec,
    machine: Lifecycle,
    /// The connection itself: there exactly while `machine` is connected
    /// (every way out of that state closes it).
    live: Option<Live>,
    /// What the server said of itself at its last connection.
    info: Option<Arc<ServerPeerInfo>>,
    /// Numbers the connections, so the watchers of an old one change nothing.
    generation: u64,
    attempts: Attempts,
    /// The disk cache file of the current identity, once known.
    cache_key: Option<String>,
    /// Values resolved from the keyring for the current connection; kept
    /// out of every error text.
    secret_values: Vec<String>,
    /// The level an agent set with `logging/setLevel`, which a stateless
    /// server gets in each request's `_meta` instead.
    #[allow(deprecated)] // SEP-2577; agents in use still set levels.
    log_level: Option<rmcp::model::LoggingLevel>,
    recent: snapshot::Recent,
    /// Why the next attempt is made (`start`, `user`, `wake`), for the
    /// activity log and the metrics; none means a request needed it
    /// (`demand`).
    next_cause: Option<&'static str>,
}

/// The one attempt concurrent requests share (under `attempt_lock`).
#[derive(Default)]
struct Attempts {
    /// Cancels the attempt in flight; set exactly while the machine is attempting.
    cancel: Option<CancellationToken>,
    /// Attempts finished so far: a request that waited sees it move.
    done: u64,
    /// What the last attempt's failure told its request, for those that waited.
    failure: Option<String>,
}

/// What applying an event leaves to the caller.
#[derive(Debug, Default, Clone, Copy)]
struct Applied {
    /// Start an attempt.
    dial: bool,
    /// Tell the pool (and so agents) the lists changed.
    lists_changed: bool,
}

pub struct Supervisor {
    name: String,
    hub: Arc<Hub>,
    ctx: Arc<Context>,
    observer: Weak<dyn Observer>,
    inner: Mutex<Inner>,
    /// Held by the attempt in flight (on its own task): one at a time.
    attempt_lock: Arc<tokio::sync::Mutex<()>>,
    /// 2026-07-28 agents' calls waiting for their next round (questions.rs).
    parked: questions::ParkedCalls,
    /// The connection on a session revision for session agents, beside a
    /// 2026-07-28 one (session_upstream.rs).
    session: session_upstream::SessionUpstream,
}

/// A point-in-time view of one server, as `/api/servers` shows it.
impl Supervisor {
    pub fn new(spec: ServerSpec, ctx: Arc<Context>, observer: Weak<dyn Observer>) -> Arc<Self> {
        let machine = Lifecycle::new(spec.disabled, ctx.backoff);
        Arc::new(Supervisor {
            name: spec.name.clone(),
            hub: ctx.hub.clone(),
            ctx,
            observer,
            inner: Mutex::new(Inner {
                spec,
                machine,
                live: None,
                info: None,
                generation: 0,
                attempts: Attempts::default(),
                cache_key: None,
                secret_values: Vec::new(),
                log_level: None,
                recent: Default::default(),
                next_cause: None,
            }),
            attempt_lock: Arc::default(),
            parked: Default::default(),
            session: Default::default(),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        crate::sync::lock(&self.inner)
    }

    pub fn spec(&self) -> ServerSpec {
        self.lock().spec.clone()
    }

    /// `logArguments`: whether the activity log keeps this server's
    /// arguments and results.
    pub fn log_arguments(&self) -> bool {
        self.lock().spec.log_arguments
    }

    /// A config change of `logArguments` alone: no reconnect for that.
    pub fn set_log_arguments(&self, on: bool) {
        self.lock().spec.log_arguments = on;
    }

    /// Values resolved from the keyring for the current connection (to
    /// redact what the activity log keeps).
    pub fn secret_values(&self) -> Vec<String> {
        self.lock().secret_values.clone()
    }

    pub fn status(&self) -> Status {
        self.lock().machine.status()
    }

    /// The server's lists as agents see them (live, kept or cached).
    pub fn lists(&self) -> Lists {
        self.lock()
            .machine
            .lists()
            .map(|(lists, _)| lists.clone())
            .unwrap_or_default()
    }

    /// One tool of [`Self::lists`], without copying the others.
    pub fn tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        let inner = self.lock();
        let (lists, _) = inner.machine.lists()?;
        lists.tools.iter().find(|t| t.name == name).cloned()
    }

    /// One tool of [`Self::lists`] and where the list came from.
    pub fn tool_and_source(&self, name: &str) -> Option<(rmcp::model::Tool, crate::lifecycle::Source)> {
        let inner = self.lock();
        let (lists, source) = inner.machine.lists()?;
        lists
            .tools
            .iter()
            .find(|t| t.name == name)
            .cloned()
            .map(|t| (t, source))
    }

    pub fn info(&self) -> Option<Arc<ServerPeerInfo>> {
        self.lock().info.clone()
    }

    fn notify_status(&self) {
        if let Some(o) = self.observer.upgrade() {
            o.status_changed(&self.name);
        }
    }

    fn notify_lists(&self) {
        if let Some(o) = self.observer.upgrade() {
            o.lists_changed(&self.name);
        }
    }

    /// Feeds `event` to the machine and performs its effects, but for
    /// those the caller does after letting go of the lock (dial, notify).
    fn apply(self: &Arc<Self>, inner: &mut Inner, mut event: Event) -> Applied {
        // Every error the machine keeps reaches `/api`, the UI, the status
        // tool and agents: none may carry a secret of this connection.
        if let Event::AttemptFailed { error, .. }
        | Event::Dropped { error }
        | Event::Unauthorized { error }
        | Event::WaitingForNetwork { error } = &mut event
        {
            *error = redact(error, &inner.secret_values);
        }
        let effects = inner.machine.handle(event, Instant::now());
        let mut applied = Applied::default();
        for effect in effects {
            match effect {
                Effect::Dial => applied.dial = true,
                Effect::CancelAttempt => {
                    if let Some(c) = inner.attempts.cancel.take() {
                        c.cancel();
                    }
                }
                Effect::Close => {
                    if let Some(live) = inner.live.take() {
                        tokio::spawn(close(live));
                    }
                    // The session connection goes with the primary one.
                    if let Some(session) = self.session.take() {
                        tokio::spawn(close(session));
                    }
                }
                Effect::ListsChanged => applied.lists_changed = true,
                Effect::StoreTools => {
                    if let Some((lists, _)) = inner.machine.lists() {
                        self.store_tools(inner.cache_key.as_deref(), &lists.tools);
                    }
                }
                Effect::NotifyNeedsAuth => {
                    tracing::warn!(server = %self.name, "server needs sign-in");
                }
            }
        }
        applied
    }

    /// Launch: start the first attempt at once, in the background.
    pub fn start(self: &Arc<Self>) {
        let dial = {
            let mut inner = self.lock();
            if inner.spec.disabled {
                return;
            }
            inner.next_cause = Some("start");
            self.apply(&mut inner, Event::Start).dial
        };
        self.notify_status();
        if dial {
            self.spawn_attempt();
        }
    }

    fn spawn_attempt(self: &Arc<Self>) {
        let this = self.clone();
        tokio::spawn(async move {
            this.load_cache().await;
            let _ = this.peer().await;
        });
    }

    /// A live peer for a request: the current connection, or one made now
    /// (shared with concurrent requests), or the reason there is none.
    pub async fn peer(self: &Arc<Self>) -> Result<Link, Unavailable> {
        let seen = {
            let inner = self.lock();
            match self.admission(&inner) {
                Ok(Some(ready)) => return Ok(ready),
                Ok(None) => inner.attempts.done,
                Err(u) => return Err(u),
            }
        };
        let turn = self.attempt_lock.clone().lock_owned().await;
        let (cancel, spec) = {
            let mut inner = self.lock();
            if inner.attempts.done != seen {
                // An attempt ended while this request waited: share its outcome.
                if let Some(live) = &inner.live {
                    return Ok(live.link());
                }
                let sentence = inner
                    .attempts
                    .failure
                    .clone()
                    .unwrap_or_else(|| format!("Server '{}' is not connected.", self.name));
                return Err(Unavailable { sentence });
            }
            if let Some(ready) = self.admission(&inner)? {
                return Ok(ready);
            }
            // Under the same lock as the admission: no explicit action can
            // come between, so the machine is attempting exactly while
            // `attempts.cancel` is set.
            let cancel = CancellationToken::new();
            inner.attempts.cancel = Some(cancel.clone());
            self.apply(&mut inner, Event::AttemptStarted);
            let cause = inner.next_cause.take().unwrap_or("demand");
            self.ctx
                .activity
                .record(crate::activity::Entry::server_event(&self.name, "connect", cause, None));
            (cancel, inner.spec.clone())
        };
        // The attempt runs on a task of its own that holds the turn: a
        // request that stops waiting (its future dropped) neither abandons
        // the attempt, which would leave the machine attempting with no
        // attempt behind it, nor lets a second one start beside it.
        let this = self.clone();
        let attempt = tokio::spawn(async move {
            let _turn = turn;
            this.attempt(cancel, spec).await
        });
        attempt.await.unwrap_or_else(|e| {
            Err(Unavailable {
                sentence: format!("Server '{}' could not be connected: {e}.", self.name),
            })
        })
    }

    fn admission(&self, inner: &Inner) -> Result<Option<Link>, Unavailable> {
        match inner.machine.admit(Instant::now()) {
            Admission::Ready => match &inner.live {
                Some(live) => Ok(Some(live.link())),
                None => Ok(None),
            },
            Admission::Dial => Ok(None),
            Admission::Refuse(r) => Err(Unavailable {
                sentence: refusal_sentence(&self.name, &r),
            }),
        }
    }

    /// One attempt, started by `peer`, which holds the attempt lock.
    async fn attempt(self: &Arc<Self>, cancel: CancellationToken, spec: ServerSpec) -> Result<Link, Unavailable> {
        tracing::info!(server = %self.name, "connecting");
        self.notify_status();
        let (signals_tx, signals_rx) = mpsc::unbounded_channel();
        let listen_signals = signals_tx.clone();
        let ledger = Arc::new(ProgressLedger::default());
        let handler = UpstreamHandler {
            server: self.name.clone(),
            hub: self.hub.clone(),
            signals: signals_tx,
            ledger: ledger.clone(),
        };
        let signin = self.ctx.oauth.signin(&spec);
        if let Some(s) = &signin {
            s.load().await;
        }
        let resolved = self.resolve(&spec).await;
        let secret_values = resolved.as_ref().map(|r| r.secret_values.clone()).unwrap_or_default();
        let cache_key = resolved.as_ref().ok().and_then(|r| self.cache_key(r));
        let work = async {
            let resolved = resolved?;
            let log = self.ctx.logs.as_ref().map(|l| l.for_server(&self.name));
            let established = upstream::connect(&resolved.spec, handler, signin, log).await?;
            let lists = list_all(&established.peer)
                .await
                .map_err(|e| ConnectError::from_transport(&e))?;
            Ok::<_, ConnectError>((established, lists))
        };
        let outcome = tokio::select! {
            _ = cancel.cancelled() => None,
            r = tokio::time::timeout(spec.timeout, work) => Some(r.unwrap_or(Err(ConnectError::Timeout(spec.timeout)))),
        };
        let mut inner = self.lock();
        inner.attempts.done += 1;
        // Attempts are serialised by `attempt_lock`, so the token is ours.
        inner.attempts.cancel = None;
        let result = match outcome {
            None => {
                // Cancelled by an explicit action, which already set the state.
                let sentence = format!("Server '{}' was disconnected while connecting.", self.name);
                inner.attempts.failure = Some(sentence.clone());
                drop(inner);
                Err(Unavailable { sentence })
            }
            Some(Ok((established, _))) if !inner.machine.accepts_connection() => {
                drop(inner);
                tokio::spawn(close(Live {
                    peer: established.peer,
                    ledger,
                    activity: Arc::default(),
                    listen: None,
                    info: None,
                    generation: 0,
                    cancel: Some(established.running.cancellation_token()),
                    group: established.group,
                }));
                return Err(Unavailable {
                    sentence: format!("Server '{}' was disconnected while connecting.", self.name),
                });
            }
            Some(Ok((established, (lists, warnings)))) => {
                inner.generation += 1;
                let generation = inner.generation;
                let info = established.peer.peer_info();
                let peer = established.peer.clone();
                let cancel = established.running.cancellation_token();
                let exit = established.group.as_ref().map(ProcessTree::exit_watch);
                let remote = !matches!(inner.spec.transport, crate::config::TransportSpec::Stdio { .. });
                let live = Live {
                    peer: peer.clone(),
                    ledger: ledger.clone(),
                    activity: Arc::default(),
                    listen: self.open_listen(generation, &peer, listen_signals),
                    info: info.clone(),
                    generation,
                    cancel: Some(cancel),
                    group: established.group,
                };
                let link = live.link();
                inner.live = Some(live);
                inner.info = info;
                inner.cache_key = cache_key;
                inner.secret_values = secret_values;
                inner.attempts.failure = None;
                inner.recent.connected(established.stderr.clone());
                inner.recent.listed(&self.name, warnings);
                let applied = self.apply(&mut inner, Event::AttemptSucceeded { lists });
                drop(inner);
                self.watch(generation, established.running, exit, established.stderr, signals_rx);
                if remote {
                    self.keepalive(&link);
                }
                self.renew_subscriptions(&peer);
                self.notify_status();
                if applied.lists_changed {
                    self.notify_lists();
                }
                return Ok(link);
            }
            Some(Err(err)) => {
                let error = redact(&err.to_string(), &secret_values);
                inner.recent.failed(&err);
                let kind_event = Event::AttemptFailed {
                    kind: err.kind(),
                    error: error.clone(),
                };
                let applied = self.apply(&mut inner, kind_event);
                let retry_in = inner
                    .machine
                    .retry_at()
                    .map(|at| at.saturating_duration_since(Instant::now()));
                let sentence = redact(&attempt_failed_sentence(&self.name, &err, retry_in), &secret_values);
                inner.attempts.failure = Some(sentence.clone());
                drop(inner);
                tracing::warn!(server = %self.name, "connection attempt failed: {error}");
                if applied.lists_changed {
                    self.notify_lists();
                }
                Err(Unavailable { sentence })
            }
        };
        self.notify_status();
        result
    }

    /// Explicit disconnect: tools go at once, any attempt is abandoned.
    pub fn disconnect(self: &Arc<Self>) {
        let changed = {
            let mut inner = self.lock();
            self.apply(&mut inner, Event::Disconnect).lists_changed
        };
        self.notify_status();
        if changed {
            self.notify_lists();
        }
    }

    /// Explicit reconnect (or enable): bypasses backoff; waits for the attempt.
    pub async fn reconnect(self: &Arc<Self>) -> Result<(), Unavailable> {
        {
            let mut inner = self.lock();
            if inner.machine.is_stopped() {
                return Err(Unavailable {
                    sentence: format!("Server '{}' is not in the config.", self.name),
                });
            }
            self.apply(&mut inner, Event::Reconnect);
            inner.next_cause = Some("user");
        }
        self.notify_status();
        self.peer().await.map(|_| ())
    }

    /// Stops the server for good (shutdown, or removal from the config).
    pub async fn stop(self: &Arc<Self>) {
        let live = {
            let mut inner = self.lock();
            // Closed here, and awaited: a shutdown waits for its processes.
            let live = inner.live.take();
            // The pool tells agents about a removed server's lists itself.
            self.apply(&mut inner, Event::Stop);
            live
        };
        if let Some(live) = live {
            close(live).await;
        }
        if let Some(session) = self.session.take() {
            close(session).await;
        }
    }
}

#[cfg(test)]
mod tests;
