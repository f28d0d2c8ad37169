//! One upstream server's driver: it owns the server's [`Lifecycle`], performs
//! its effects (dial, close, drop tools), shares one attempt between
//! concurrent requests, and turns a connection that ends on its own into a
//! drop with the tools kept.
//!
//! `Supervisor` (here, and `dial.rs` for the one attempt) holds the machine
//! and what its effects need. Each other concern is a type in its own file,
//! which the supervisor composes or lends itself to: `Forwarder`
//! (`forward.rs`, one request), `ParkedCalls` (`questions.rs`, a session
//! server's questions to a 2026-07-28 agent), `SessionUpstream`
//! (`session_upstream.rs`), `Watch` (`watch.rs`, an ended connection is a
//! drop; re-listing), `Listen` (`listen.rs`, a stateless server's
//! `subscriptions/listen`), `Keepalive` (`keepalive.rs`), `SignIn`
//! (`signin.rs`), `DiskCache` (`cache.rs`), `ServerSnapshot`
//! (`snapshot.rs`), `Recent` (`recent.rs`) and `SupervisorPatient`
//! (`heal.rs`, the wake healer's view).

use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use rmcp::model::ServerPeerInfo;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::cache::{Fingerprinter, ToolCache};
use crate::config::ServerSpec;
use crate::hub::Hub;
use crate::lifecycle::{Admission, Effect, Event, Lifecycle, Status};
use crate::secrets::{redact, SecretStore};

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
mod dial;
mod forward;
mod heal;
mod keepalive;
mod listen;
mod live;
pub mod probe;
mod questions;
mod recent;
mod session_upstream;
mod signin;
mod snapshot;
mod told;
mod watch;

pub use crate::lifecycle::Lists;
use cache::DiskCache;
use forward::Forwarder;
pub use heal::{SupervisorPatient, WAITING_PREFIX};
use keepalive::Keepalive;
pub use live::Link;
use live::{close, list_all, Live};
use session_upstream::SessionUpstream;
use signin::SignIn;
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
    recent: recent::Recent,
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
    /// Attempts finished so far: a request that waited sees it move. An
    /// attempt abandoned by an explicit action counts as finished when it
    /// is abandoned, not when its task ends: a request that comes after the
    /// action (a reconnect right after a disconnect) waits for an attempt
    /// of its own instead of taking the abandoned one's outcome.
    done: u64,
    /// What the last attempt's failure told its request, for those that waited.
    failure: Option<String>,
}

/// What a request that waited on an attempt abandoned by an explicit
/// action (disconnect, reconnect, stop) is told.
fn abandoned_sentence(name: &str) -> String {
    format!("Server '{name}' was disconnected while connecting.")
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
    session: SessionUpstream,
    /// The connection that declares MCP Apps, beside a session-revision
    /// one, for agents that show apps (session_upstream.rs).
    apps: SessionUpstream,
}

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
            apps: SessionUpstream::apps(),
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

    /// Whether connection `generation` is the live one.
    fn is_live(&self, generation: u64) -> bool {
        matches!(&self.lock().live, Some(l) if l.generation == generation)
    }

    fn disk(&self) -> DiskCache<'_> {
        DiskCache {
            ctx: &self.ctx,
            name: &self.name,
        }
    }

    /// The sign-in of the entry as it stands now.
    fn signin(&self) -> SignIn<'_> {
        SignIn {
            ctx: &self.ctx,
            name: &self.name,
            spec: self.spec(),
        }
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
                        // Finished for whoever waits on it (see `Attempts::done`).
                        inner.attempts.done += 1;
                        inner.attempts.failure = Some(abandoned_sentence(&self.name));
                    }
                }
                Effect::Close => {
                    if let Some(live) = inner.live.take() {
                        tokio::spawn(close(live));
                    }
                    // The second connections go with the primary one.
                    for second in [self.session.take(), self.apps.take()].into_iter().flatten() {
                        tokio::spawn(close(second));
                    }
                }
                Effect::ListsChanged => applied.lists_changed = true,
                Effect::StoreTools => {
                    if let Some((lists, _)) = inner.machine.lists() {
                        self.disk().store(inner.cache_key.as_deref(), &lists.tools);
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
        for second in [self.session.take(), self.apps.take()].into_iter().flatten() {
            close(second).await;
        }
    }

    /// The connection of `generation` ended on its own: keep the tools,
    /// show the reason, and wait for the next request to reconnect.
    pub fn dropped(self: &Arc<Self>, generation: u64, reason: &str) {
        let mut inner = self.lock();
        if !matches!(&inner.live, Some(l) if l.generation == generation) {
            return;
        }
        let error = format!("{reason} {KEPT_SUFFIX}");
        // Closes the connection; the lists stay, now kept.
        let applied = self.apply(&mut inner, Event::Dropped { error });
        drop(inner);
        tracing::warn!(server = %self.name, "connection dropped: {reason}");
        self.notify_status();
        if applied.lists_changed {
            self.notify_lists();
        }
    }

    /// Forwards one agent request to the server (`Forwarder::forward`).
    pub async fn forward(
        self: &Arc<Self>,
        request: rmcp::model::ClientRequest,
        ctx: Option<(&rmcp::service::RequestContext<rmcp::service::RoleServer>, u64)>,
    ) -> Result<rmcp::model::ServerResult, RequestError> {
        Forwarder { sup: self }.forward(request, ctx).await
    }

    /// Starts signing this server in and returns the URL to open in the
    /// browser; once the browser comes back the server connects at once.
    pub async fn login(self: &Arc<Self>) -> Result<String, String> {
        let this = Arc::downgrade(self);
        let on_success = Box::pin(async move {
            if let Some(sup) = this.upgrade() {
                sup.ctx.activity.record(crate::activity::Entry::server_event(
                    &sup.name,
                    "signin",
                    "signed_in",
                    None,
                ));
                let _ = sup.reconnect().await;
            }
        });
        let url = self.signin().begin(on_success).await?;
        self.notify_status();
        Ok(url)
    }

    /// Forgets this server's tokens and reconnects it without them (a server
    /// that needs them is `needs_auth` again).
    pub async fn logout(self: &Arc<Self>) -> Result<(), String> {
        self.signin().forget().await?;
        let disabled = self.status() == Status::Disabled;
        if !disabled {
            let _ = self.reconnect().await;
        }
        Ok(())
    }

    /// Before a wake's reconnect: a token that ran out while asleep is
    /// refreshed first, so the laptop comes back signed in.
    pub async fn refresh_signin(&self) {
        self.signin().refresh().await;
    }

    /// Deletes this server's cache file (removed or reconfigured).
    pub fn forget_cache(&self) {
        let key = self.lock().cache_key.take();
        self.disk().remove(key);
    }

    /// A point-in-time view of the server, as `/api/servers` shows it.
    pub fn snapshot(&self) -> ServerSnapshot {
        let status = self.status();
        let auth = self.signin().snapshot(status);
        ServerSnapshot::of(&self.name, &self.lock(), &self.ctx.tools, auth)
    }

    /// Host and port of a remote server, `None` for a local one.
    pub fn remote_target(&self) -> Option<(String, u16)> {
        match &self.lock().spec.transport {
            crate::config::TransportSpec::Http { url, .. } | crate::config::TransportSpec::Sse { url, .. } => {
                crate::wake::gate::target(url)
            }
            crate::config::TransportSpec::Stdio { .. } => None,
        }
    }

    /// Whether a wake should heal this server: it is connected, or it
    /// dropped (or failed transiently) with its tools kept.
    pub fn healable(&self) -> bool {
        let inner = self.lock();
        match inner.machine.admit(Instant::now()) {
            Admission::Ready | Admission::Dial => {
                inner.machine.status() != Status::Pending || inner.machine.lists().is_some()
            }
            Admission::Refuse(crate::lifecycle::Refusal::Backoff { .. }) => true,
            Admission::Refuse(_) => false,
        }
    }

    /// Pings the live connection. A failure or timeout drops it (tools kept)
    /// and returns false; no connection also returns false.
    pub async fn probe(self: &Arc<Self>, timeout: Duration) -> bool {
        let Some(link) = self.lock().live.as_ref().map(|l| l.link()) else {
            return false;
        };
        Keepalive::ping(self, &link, timeout).await
    }
}

#[cfg(test)]
mod tests;
