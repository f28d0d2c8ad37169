//! A server's second connection, on a session revision (behaviour.md rule
//! 16). mcpool speaks to a server that has both revisions in 2026-07-28,
//! where a server cannot send requests of its own: a tool that asks for
//! sampling, elicitation or roots only that way (the conformance suite's
//! `test_sampling`) fails there, though a session agent would get its
//! question directly. So a session agent's call, prompt, read or completion
//! goes over a connection opened with `initialize`, when the agent declared
//! something such a server may ask of it; the server's requests on it reach
//! that agent through the hub, as any session server's do.
//!
//! The connection is opened on demand, one dial at a time, and shared by
//! every session agent of the server; it closes after `session_idle` without
//! a request, and with the primary connection (disconnect, drop, a changed
//! entry, shutdown). It never moves the server's status: the primary alone
//! drives the lifecycle, and when this one cannot be had the request takes
//! the primary, with a log line. A server that refuses `initialize` (a
//! 2026-07-28-only one) is remembered until the primary reconnects. The
//! one try is needed: a server's `server/discover` answer may list only
//! 2026-07-28 while the same URL takes `initialize` (the conformance
//! suite's reference server does), so that list cannot tell.
//!
//! The same holds a second kind of second connection ([`Purpose::Apps`]):
//! to a server on a session revision that offers MCP Apps
//! (`io.modelcontextprotocol/ui`), opened with `initialize` declaring the
//! UI extension as the agent declared it, for agents that show apps. The
//! primary's `initialize` declares none, so an agent without UI support
//! gets what a direct connection would give it, and one with it gets the
//! app (for a local server this is a second process of it, started on the
//! first such request and stopped when idle).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rmcp::model::{ClientCapabilities, ClientRequest, ProtocolVersion};
use rmcp::service::{RequestContext, RoleServer};
use tokio::time::Instant;

use super::live::{close, Live};
use super::{Link, Supervisor};
use crate::errors::ConnectError;
use crate::lifecycle::FailureKind;
use crate::sync::lock;
use crate::upstream::ledger::ProgressLedger;
use crate::upstream::{self, UpstreamHandler};

/// The generation of the session connection's [`Link`]s: never a primary's
/// (those count from 1), so its failures drop nothing but itself.
const GENERATION: u64 = 0;

/// After a failure to connect that may pass (the network, a timeout), the
/// next try waits this long; meanwhile requests take the primary.
const RETRY_AFTER: Duration = Duration::from_secs(30);

/// What a second connection is for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) enum Purpose {
    /// `initialize` beside a 2026-07-28 primary, for session agents that
    /// can be asked questions.
    #[default]
    Session,
    /// `initialize` declaring MCP Apps, beside a session-revision primary,
    /// for agents that show apps.
    Apps,
}

impl Purpose {
    /// Its progress tokens reach the hub under this prefix, apart from the
    /// primary's (rmcp numbers each connection's from 0).
    fn token_prefix(self) -> &'static str {
        match self {
            Purpose::Session => "mcpool-session-",
            Purpose::Apps => "mcpool-apps-",
        }
    }

    /// What the log calls it.
    fn what(self) -> &'static str {
        match self {
            Purpose::Session => "session connection for session agents",
            Purpose::Apps => "MCP Apps connection for agents that show apps",
        }
    }
}

/// The MCP Apps extension's id.
pub(super) const UI_EXTENSION: &str = "io.modelcontextprotocol/ui";

/// Whether `request` should go over the MCP Apps connection: a call,
/// prompt, read or completion of an agent that declared the UI extension
/// (`declared`, its settings), to a server on a session revision
/// (`primary`) that offers it (`offered`).
pub(super) fn wants_apps(
    request: &ClientRequest,
    declared: Option<&ClientCapabilities>,
    primary: Option<&ProtocolVersion>,
    offered: bool,
) -> bool {
    let asks = declared
        .and_then(|c| c.extensions.as_ref())
        .is_some_and(|e| e.contains_key(UI_EXTENSION));
    let session_primary = primary.is_some_and(ProtocolVersion::has_initialize);
    may_render(request) && asks && session_primary && offered
}

/// A request whose answer a server may shape by what its client declared.
fn may_render(request: &ClientRequest) -> bool {
    matches!(
        request,
        ClientRequest::CallToolRequest(_)
            | ClientRequest::GetPromptRequest(_)
            | ClientRequest::ReadResourceRequest(_)
            | ClientRequest::CompleteRequest(_)
    )
}

/// Whether `request` should go over the session connection: a call,
/// prompt, read or completion of an agent on a session revision that
/// declared sampling, elicitation or roots, to a server spoken to in
/// 2026-07-28 over Streamable HTTP (`remote`).
pub(super) fn wants_session(
    request: &ClientRequest,
    agent: Option<&ProtocolVersion>,
    declared: Option<&ClientCapabilities>,
    primary: Option<&ProtocolVersion>,
    remote: bool,
) -> bool {
    let may_ask = may_render(request);
    #[allow(deprecated)] // SEP-2577: sampling and roots are still in use.
    let answers = declared.is_some_and(|c| c.sampling.is_some() || c.elicitation.is_some() || c.roots.is_some());
    let session_agent = agent.is_some_and(ProtocolVersion::has_initialize);
    let stateless_primary = primary.is_some_and(|v| !v.has_initialize());
    remote && may_ask && answers && session_agent && stateless_primary
}

/// What one server's session connection is, under [`SessionUpstream`]'s lock.
#[derive(Default)]
enum State {
    #[default]
    Closed,
    Open(Open),
    /// Not to be tried for the primary connection `primary`: for good
    /// (`until` none: the server refused), or until `until`.
    Refused {
        primary: u64,
        until: Option<Instant>,
    },
}

struct Open {
    /// The primary connection's generation it was opened beside.
    primary: u64,
    /// Tells this opening from the next (the watchers of an old one
    /// change nothing).
    id: u64,
    live: Live,
    /// Requests on it that have not ended.
    busy: Arc<AtomicUsize>,
}

/// What a request finds.
enum Found {
    Use(Link, Busy),
    Primary,
    Dial,
}

/// One server's second connection of one purpose (see the module).
#[derive(Default)]
pub(super) struct SessionUpstream {
    purpose: Purpose,
    /// Held by the dial in flight: concurrent requests share one.
    dial: tokio::sync::Mutex<()>,
    state: Mutex<State>,
    openings: AtomicU64,
}

/// A request on the session connection: while one is held, it is not idle.
pub(super) struct Busy(Arc<AtomicUsize>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl SessionUpstream {
    pub(super) fn apps() -> Self {
        SessionUpstream {
            purpose: Purpose::Apps,
            ..Default::default()
        }
    }

    fn find(&self, primary: u64, now: Instant) -> (Found, Option<Live>) {
        let mut state = lock(&self.state);
        match &*state {
            State::Open(open) if open.primary == primary => {
                open.busy.fetch_add(1, Ordering::Relaxed);
                let busy = Busy(open.busy.clone());
                return (Found::Use(open.live.link(), busy), None);
            }
            State::Refused { primary: p, until } if *p == primary && until.is_none_or(|u| now < u) => {
                return (Found::Primary, None);
            }
            _ => {}
        }
        // Beside an older primary connection, or refused a while ago: over.
        let old = match std::mem::take(&mut *state) {
            State::Open(open) => Some(open.live),
            _ => None,
        };
        (Found::Dial, old)
    }

    /// Takes the connection, to be closed by the caller; forgets a refusal.
    pub(super) fn take(&self) -> Option<Live> {
        match std::mem::take(&mut *lock(&self.state)) {
            State::Open(open) => Some(open.live),
            _ => None,
        }
    }

    /// Takes opening `id` if it is still the connection.
    fn take_if(&self, id: u64) -> Option<Live> {
        let mut state = lock(&self.state);
        if !matches!(&*state, State::Open(open) if open.id == id) {
            return None;
        }
        match std::mem::take(&mut *state) {
            State::Open(open) => Some(open.live),
            _ => None,
        }
    }

    /// Opening `id`, when no request is on it and none came since `seen`
    /// (the requests counted by its link): taken, to be closed. `Err` when
    /// `id` is no longer the connection.
    fn take_if_idle(&self, id: u64, seen: &mut u64) -> Result<Option<Live>, ()> {
        let mut state = lock(&self.state);
        let State::Open(open) = &*state else { return Err(()) };
        if open.id != id {
            return Err(());
        }
        let now = open.live.activity.load(Ordering::Relaxed);
        if now != *seen || open.busy.load(Ordering::Relaxed) > 0 {
            *seen = now;
            return Ok(None);
        }
        match std::mem::take(&mut *state) {
            State::Open(open) => Ok(Some(open.live)),
            _ => Err(()),
        }
    }

    /// The session connection for `request`, when it wants one
    /// ([`wants_session`]) and one can be had beside `primary`.
    pub(super) async fn session_for(
        &self,
        sup: &Arc<Supervisor>,
        request: &ClientRequest,
        agent: Option<&RequestContext<RoleServer>>,
        primary: &Link,
    ) -> Option<(Link, Busy)> {
        let agent = agent?;
        let primary_info = primary.peer.peer_info();
        let primary_version = primary_info.as_ref().map(|i| i.protocol_version.clone());
        let declared = agent.client_capabilities();
        let wanted = match self.purpose {
            Purpose::Session => wants_session(
                request,
                agent.protocol_version().as_ref(),
                declared.as_ref(),
                primary_version.as_ref(),
                matches!(sup.lock().spec.transport, crate::config::TransportSpec::Http { .. }),
            ),
            Purpose::Apps => {
                let offered = primary_info
                    .as_ref()
                    .and_then(|i| i.capabilities.extensions.as_ref())
                    .is_some_and(|e| e.contains_key(UI_EXTENSION));
                wants_apps(request, declared.as_ref(), primary_version.as_ref(), offered)
            }
        };
        if !wanted {
            return None;
        }
        // The UI extension as this agent declared it (the first agent's
        // settings open the connection; every such agent shares it).
        let ui = declared
            .and_then(|c| c.extensions)
            .and_then(|mut e| e.remove(UI_EXTENSION))
            .filter(|_| self.purpose == Purpose::Apps);
        self.link(sup, primary.generation, ui).await
    }

    /// [`link`](Self::link)'s answer if it needs no dial
    /// (the connection it retires closes in the background).
    fn found(&self, primary: u64) -> Option<Option<(Link, Busy)>> {
        let (found, old) = self.find(primary, Instant::now());
        if let Some(old) = old {
            tokio::spawn(close(old));
        }
        match found {
            Found::Use(link, busy) => Some(Some((link, busy))),
            Found::Primary => Some(None),
            Found::Dial => None,
        }
    }

    /// The session connection for a session agent's request beside the
    /// primary connection `primary`, opened now if need be; `None`: the
    /// request takes the primary.
    pub(super) async fn link(
        &self,
        sup: &Arc<Supervisor>,
        primary: u64,
        ui: Option<rmcp::model::JsonObject>,
    ) -> Option<(Link, Busy)> {
        if let Some(answer) = self.found(primary) {
            return answer;
        }
        let _turn = self.dial.lock().await;
        // Another request may have dialled while this one waited.
        if let Some(answer) = self.found(primary) {
            return answer;
        }
        let spec = sup.lock().spec.clone();
        let ledger = Arc::new(ProgressLedger::with_hub_prefix(self.purpose.token_prefix()));
        let dialled = tokio::time::timeout(spec.timeout, self.connect(sup, &spec, ledger.clone(), ui))
            .await
            .unwrap_or(Some(Err(ConnectError::Timeout(spec.timeout))));
        let established = match dialled {
            Some(Ok(established)) => established,
            None => {
                self.refused(primary, None);
                return None;
            }
            Some(Err(e)) => {
                let transient = matches!(e.kind(), FailureKind::Transient { .. });
                let secrets = sup.lock().secret_values.clone();
                let why = crate::secrets::redact(&e.to_string(), &secrets);
                tracing::warn!(
                    server = %sup.name,
                    "no {} ({why}); their requests take the server's one connection",
                    self.purpose.what()
                );
                self.refused(primary, transient.then(|| Instant::now() + RETRY_AFTER));
                return None;
            }
        };
        if !sup.is_live(primary) {
            // The primary connection went while this one was dialled.
            established.running.cancellation_token().cancel();
            return None;
        }
        let id = self.openings.fetch_add(1, Ordering::Relaxed);
        let live = Live {
            peer: established.peer.clone(),
            ledger,
            activity: Arc::default(),
            listen: None,
            info: established.peer.peer_info(),
            generation: GENERATION,
            cancel: Some(established.running.cancellation_token()),
            group: None,
        };
        let link = live.link();
        let busy = Arc::new(AtomicUsize::new(1));
        *lock(&self.state) = State::Open(Open {
            primary,
            id,
            live,
            busy: busy.clone(),
        });
        tracing::info!(server = %sup.name, "{} opened", self.purpose.what());
        let group = established.group;
        Self::watch(sup, self.purpose, id, established.running, group);
        Some((link, Busy(busy)))
    }

    /// Connects with `initialize` (declaring `ui` for MCP Apps); `None` for
    /// a transport that has no second connection of this purpose.
    async fn connect(
        &self,
        sup: &Supervisor,
        spec: &crate::config::ServerSpec,
        ledger: Arc<ProgressLedger>,
        ui: Option<rmcp::model::JsonObject>,
    ) -> Option<Result<upstream::Established, ConnectError>> {
        let resolved = match super::cache::resolve(&sup.ctx, spec).await {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        let handler = UpstreamHandler {
            server: sup.name.clone(),
            hub: sup.hub.clone(),
            // List changes are the primary connection's to tell.
            signals: tokio::sync::mpsc::unbounded_channel().0,
            ledger,
            extensions: ui.map(|settings| [(UI_EXTENSION.to_string(), settings)].into_iter().collect()),
        };
        let signin = sup.ctx.oauth.signin(spec);
        match self.purpose {
            Purpose::Session => upstream::connect_session(&resolved.spec, handler, signin).await,
            Purpose::Apps => Some(upstream::connect_declaring(&resolved.spec, handler, signin).await),
        }
    }

    fn refused(&self, primary: u64, until: Option<Instant>) {
        *lock(&self.state) = State::Refused { primary, until };
    }

    /// Forgets opening `id` when it ends, and closes it once idle: no
    /// request on it over a whole `session_idle` (checked at each such
    /// interval, so it closes within two).
    fn watch(
        sup: &Arc<Supervisor>,
        purpose: Purpose,
        id: u64,
        running: upstream::Running,
        group: Option<crate::os::process::ProcessTree>,
    ) {
        let this: Weak<Supervisor> = Arc::downgrade(sup);
        tokio::spawn(async move {
            let _ = running.waiting().await;
            // A local server's second process goes with its connection.
            if let Some(mut group) = group {
                group.stop(crate::os::process::STOP_GRACE).await;
            }
            if let Some(this) = this.upgrade() {
                if this.second(purpose).take_if(id).is_some() {
                    tracing::info!(server = %this.name, "{} ended; the next such request opens another", purpose.what());
                }
            }
        });
        let this: Weak<Supervisor> = Arc::downgrade(sup);
        let idle = sup.ctx.session_idle;
        tokio::spawn(async move {
            let mut seen = 0;
            loop {
                tokio::time::sleep(idle).await;
                let Some(this) = this.upgrade() else { return };
                match this.second(purpose).take_if_idle(id, &mut seen) {
                    Err(()) => return,
                    Ok(None) => {}
                    Ok(Some(live)) => {
                        tracing::info!(server = %this.name, "{} closed: unused for {}", purpose.what(), crate::errors::human_duration(idle));
                        close(live).await;
                        return;
                    }
                }
            }
        });
    }
}

impl Supervisor {
    /// The second connection of `purpose`.
    fn second(&self, purpose: Purpose) -> &SessionUpstream {
        match purpose {
            Purpose::Session => &self.session,
            Purpose::Apps => &self.apps,
        }
    }
}

#[cfg(test)]
#[path = "session_upstream_tests.rs"]
mod tests;
