//! The agent side of the pool: which agent sessions are open, and where a
//! message from an upstream goes (progress to the call that asked for it,
//! a sampling or elicitation request to the session whose call caused it,
//! logging and resource updates to the sessions that can see the server).

// Logging, sampling and roots are deprecated by SEP-2577 but agents and
// servers in use today still rely on them, so the pool passes them through.
#![allow(deprecated)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rmcp::model::GetExtensions;
use rmcp::model::{
    ClientResult, ErrorData as McpError, LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam,
    ProgressToken, RequestId, ResourceUpdatedNotificationParam, ServerNotification, ServerRequest,
};
use rmcp::service::{OriginatingRequestId, Peer, RoleServer, SubscriptionSink};

/// Which servers an agent session sees: all of them (`/mcp`), one
/// (`/servers/NAME/mcp`), or a profile's subset (`/profiles/NAME/mcp`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    All,
    One(String),
    /// Named by the URL; its servers and tools are looked up in the config
    /// on each request, so a profile session is not chosen for a server's
    /// own requests or logs outside a call it made.
    Profile(String),
}

impl Scope {
    pub fn sees(&self, server: &str) -> bool {
        match self {
            Scope::All => true,
            Scope::One(name) => name == server,
            Scope::Profile(_) => false,
        }
    }
}

struct Agent {
    scope: Scope,
    peer: Peer<RoleServer>,
    /// `(server, uri)` pairs this session subscribed to.
    subscriptions: BTreeSet<(String, String)>,
    /// A 2026-07-28 agent's `subscriptions/listen` stream: list changes and
    /// resource updates go through it (with its subscription id), nothing
    /// else does (no logs, no requests).
    listen: Option<SubscriptionSink>,
}

struct Call {
    server: String,
    peer: Peer<RoleServer>,
    request_id: RequestId,
    upstream_token: Option<ProgressToken>,
    agent_token: Option<ProgressToken>,
    /// The agent speaks 2026-07-28: its request has its own stream, which
    /// carries its progress and (at `log_level` and above) the server's logs,
    /// but no request from the server.
    stateless: bool,
    log_level: Option<LoggingLevel>,
}

/// Who an upstream's call is for, as `Hub::begin_call` records it.
pub struct Caller {
    pub peer: Peer<RoleServer>,
    pub request_id: RequestId,
    pub agent_token: Option<ProgressToken>,
    pub stateless: bool,
    pub log_level: Option<LoggingLevel>,
}

#[derive(Default)]
pub struct Hub {
    next: AtomicU64,
    agents: Mutex<BTreeMap<u64, Agent>>,
    calls: Mutex<BTreeMap<u64, Call>>,
    progress: Mutex<HashMap<(String, ProgressToken), u64>>,
    /// Per server, the calls sent (or being sent) upstream whose progress
    /// route is not known yet: their first progress can overtake the route.
    unrouted: Mutex<HashMap<String, usize>>,
    routed: tokio::sync::Notify,
    /// The last tool calls agents made, names and timings only.
    recent_calls: crate::calls::CallLog,
}

/// How long an upstream's progress waits for its call's route while a call
/// to that server is between being sent and being routed.
const ROUTE_WAIT: Duration = Duration::from_secs(2);

/// Removes a call's routes when the call ends, however it ends.
pub struct CallGuard<'a> {
    hub: &'a Hub,
    id: u64,
    server: String,
    awaiting_route: AtomicBool,
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        self.route_known();
        self.hub.end_call(self.id);
    }
}

impl CallGuard<'_> {
    /// Routes the upstream's progress for this call back to the agent, under
    /// the agent's own token.
    pub fn route_progress(&self, upstream_token: ProgressToken) {
        self.insert_route(upstream_token);
        self.route_known();
    }

    fn insert_route(&self, upstream_token: ProgressToken) {
        let Ok(mut calls) = self.hub.calls.lock() else { return };
        let Some(call) = calls.get_mut(&self.id) else { return };
        if call.agent_token.is_none() {
            return;
        }
        call.upstream_token = Some(upstream_token.clone());
        if let Ok(mut progress) = self.hub.progress.lock() {
            progress.insert((call.server.clone(), upstream_token), self.id);
        }
    }

    /// Progress waiting for this call's route need not wait any longer.
    fn route_known(&self) {
        if !self.awaiting_route.swap(false, Ordering::SeqCst) {
            return;
        }
        if let Ok(mut unrouted) = self.hub.unrouted.lock() {
            if let Some(n) = unrouted.get_mut(&self.server) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    unrouted.remove(&self.server);
                }
            }
        }
        self.hub.routed.notify_waiters();
    }
}

/// An agent session's place in the hub, removed when this is dropped: the
/// session's handler holds it, so when the session ends (closed, expired,
/// evicted) nothing it registered outlives it.
pub struct Registration {
    hub: Weak<Hub>,
    id: u64,
}

impl Registration {
    pub fn id(&self) -> u64 {
        self.id
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(hub) = self.hub.upgrade() {
            hub.unregister(self.id);
        }
    }
}

impl Hub {
    pub fn recent_calls(&self) -> &crate::calls::CallLog {
        &self.recent_calls
    }

    pub fn register(self: &Arc<Self>, scope: Scope, peer: Peer<RoleServer>) -> Registration {
        self.insert(scope, peer, None)
    }

    /// A 2026-07-28 agent's `subscriptions/listen` stream, until the
    /// registration is dropped (the stream ended).
    pub fn register_listener(
        self: &Arc<Self>,
        scope: Scope,
        peer: Peer<RoleServer>,
        sink: SubscriptionSink,
    ) -> Registration {
        self.insert(scope, peer, Some(sink))
    }

    fn insert(
        self: &Arc<Self>,
        scope: Scope,
        peer: Peer<RoleServer>,
        listen: Option<SubscriptionSink>,
    ) -> Registration {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut agents) = self.agents.lock() {
            agents.insert(
                id,
                Agent {
                    scope,
                    peer,
                    subscriptions: BTreeSet::new(),
                    listen,
                },
            );
        }
        Registration {
            hub: Arc::downgrade(self),
            id,
        }
    }

    fn unregister(&self, id: u64) {
        if let Ok(mut agents) = self.agents.lock() {
            agents.remove(&id);
        }
    }

    /// The agent sessions the hub holds, closed or not (closed ones are
    /// removed when their session ends).
    pub fn agent_count(&self) -> usize {
        self.agents.lock().map(|a| a.len()).unwrap_or(0)
    }

    fn prune(&self) {
        if let Ok(mut agents) = self.agents.lock() {
            agents.retain(|_, a| !a.peer.is_transport_closed());
        }
    }

    /// Whether a call is in flight on `server` or a session can see it.
    pub fn has_agent_for(&self, server: &str) -> bool {
        let calling = self
            .calls
            .lock()
            .map(|c| c.values().any(|c| c.server == server))
            .unwrap_or(false);
        calling || !self.targets(|scope, _| scope.sees(server)).is_empty()
    }

    pub fn subscribe(&self, agent: u64, server: &str, uri: &str, on: bool) {
        if let Ok(mut agents) = self.agents.lock() {
            if let Some(a) = agents.get_mut(&agent) {
                if on {
                    a.subscriptions.insert((server.to_string(), uri.to_string()));
                } else {
                    a.subscriptions.remove(&(server.to_string(), uri.to_string()));
                }
            }
        }
    }

    /// Whether an open session other than `agent` that sees `server` is
    /// subscribed to `uri`: the upstream's one subscription serves them all,
    /// so it must stay while any of them wants it.
    pub fn others_subscribed(&self, agent: u64, server: &str, uri: &str) -> bool {
        self.prune();
        self.agents
            .lock()
            .map(|agents| {
                agents
                    .iter()
                    .any(|(id, a)| *id != agent && a.subscriptions.contains(&(server.to_string(), uri.to_string())))
            })
            .unwrap_or(false)
    }

    /// Every URI some open session is subscribed to on `server`, to renew
    /// after the server reconnects.
    pub fn subscribed_uris(&self, server: &str) -> BTreeSet<String> {
        self.prune();
        self.agents
            .lock()
            .map(|agents| {
                agents
                    .values()
                    .flat_map(|a| a.subscriptions.iter())
                    .filter(|(s, _)| s == server)
                    .map(|(_, uri)| uri.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Peers of the sessions matching `filter` (no listen streams), pruned
    /// of closed ones.
    fn peers(&self, filter: impl Fn(&Scope, &BTreeSet<(String, String)>) -> bool) -> Vec<Peer<RoleServer>> {
        self.targets(filter)
            .into_iter()
            .filter_map(|t| match t {
                Target::Session(peer) => Some(peer),
                Target::Listen(_) => None,
            })
            .collect()
    }

    /// Sessions and listen streams matching `filter`, pruned of closed ones.
    fn targets(&self, filter: impl Fn(&Scope, &BTreeSet<(String, String)>) -> bool) -> Vec<Target> {
        self.prune();
        self.agents
            .lock()
            .map(|agents| {
                agents
                    .values()
                    .filter(|a| filter(&a.scope, &a.subscriptions))
                    .map(|a| match &a.listen {
                        Some(sink) => Target::Listen(sink.clone()),
                        None => Target::Session(a.peer.clone()),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn begin_call(&self, server: &str, caller: Caller) -> CallGuard<'_> {
        let Caller {
            peer,
            request_id,
            agent_token,
            stateless,
            log_level,
        } = caller;
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut unrouted) = self.unrouted.lock() {
            *unrouted.entry(server.to_string()).or_default() += 1;
        }
        if let Ok(mut calls) = self.calls.lock() {
            calls.insert(
                id,
                Call {
                    server: server.to_string(),
                    peer,
                    request_id,
                    upstream_token: None,
                    agent_token,
                    stateless,
                    log_level,
                },
            );
        }
        CallGuard {
            hub: self,
            id,
            server: server.to_string(),
            awaiting_route: AtomicBool::new(true),
        }
    }

    fn end_call(&self, id: u64) {
        let Ok(mut calls) = self.calls.lock() else { return };
        if let Some(call) = calls.remove(&id) {
            if let (Some(token), Ok(mut progress)) = (call.upstream_token, self.progress.lock()) {
                progress.remove(&(call.server, token));
            }
        }
    }

    /// Sends tools/prompts/resources `list_changed` to the sessions `scope_filter` picks.
    pub fn notify_list_changed(&self, kind: ListKind, scope_filter: impl Fn(&Scope) -> bool) {
        for target in self.targets(|scope, _| scope_filter(scope)) {
            let notification = match kind {
                ListKind::Tools => ServerNotification::ToolListChangedNotification(Default::default()),
                ListKind::Prompts => ServerNotification::PromptListChangedNotification(Default::default()),
                ListKind::Resources => ServerNotification::ResourceListChangedNotification(Default::default()),
            };
            tokio::spawn(async move {
                match target {
                    Target::Session(peer) => {
                        let _ = peer.send_notification(notification).await;
                    }
                    // The stream's filter drops what the agent did not ask for.
                    Target::Listen(sink) => {
                        let _ = sink.send(notification).await;
                    }
                }
            });
        }
    }

    /// Sends an upstream's progress to the agent whose call asked for it,
    /// under the agent's token; returns once it is sent (or has no route).
    pub async fn route_progress(&self, server: &str, mut params: ProgressNotificationParam) {
        // A server may send progress before `forward` has learnt the
        // upstream token of the call (the first step often comes at once):
        // while a call to this server is in that gap, wait for its route.
        let deadline = tokio::time::Instant::now() + ROUTE_WAIT;
        let target = loop {
            let routed = self.routed.notified();
            tokio::pin!(routed);
            routed.as_mut().enable();
            if let Some(target) = self.progress_target(server, &params.progress_token) {
                break Some(target);
            }
            let waiting = self.unrouted.lock().is_ok_and(|u| u.contains_key(server));
            if !waiting || tokio::time::timeout_at(deadline, routed).await.is_err() {
                break None;
            }
        };
        if let Some((peer, token)) = target {
            params.progress_token = token;
            let _ = peer.notify_progress(params).await;
        }
    }

    /// The agent and its token for an upstream's progress token, if routed.
    fn progress_target(&self, server: &str, token: &ProgressToken) -> Option<(Peer<RoleServer>, ProgressToken)> {
        let call_id = *self.progress.lock().ok()?.get(&(server.to_string(), token.clone()))?;
        let calls = self.calls.lock().ok()?;
        calls
            .get(&call_id)
            .and_then(|c| c.agent_token.clone().map(|t| (c.peer.clone(), t)))
    }

    pub fn route_log(&self, server: &str, aggregated_logger: bool, mut params: LoggingMessageNotificationParam) {
        let own = self.peers(|scope, _| *scope == Scope::One(server.to_string()));
        let all = if aggregated_logger {
            self.peers(|scope, _| *scope == Scope::All)
        } else {
            Vec::new()
        };
        for peer in own {
            let p = params.clone();
            tokio::spawn(async move {
                let _ = peer.notify_logging_message(p).await;
            });
        }
        params.logger = Some(match params.logger.take() {
            Some(l) => format!("{server}/{l}"),
            None => server.to_string(),
        });
        for peer in all {
            let p = params.clone();
            tokio::spawn(async move {
                let _ = peer.notify_logging_message(p).await;
            });
        }
    }

    /// A 2026-07-28 agent hears a server's logs on the stream of its
    /// request to it, at the level its request named (behaviour.md rule
    /// 16); sent before this returns, as the request's stream ends with its
    /// result.
    pub async fn route_log_to_calls(&self, server: &str, mut params: LoggingMessageNotificationParam) {
        params.logger = Some(match params.logger.take() {
            Some(l) => format!("{server}/{l}"),
            None => server.to_string(),
        });
        for peer in self.stateless_log_peers(server, params.level) {
            let _ = peer.notify_logging_message(params.clone()).await;
        }
    }

    fn stateless_log_peers(&self, server: &str, level: LoggingLevel) -> Vec<Peer<RoleServer>> {
        let Ok(calls) = self.calls.lock() else {
            return Vec::new();
        };
        calls
            .values()
            .filter(|c| c.stateless && c.server == server)
            .filter(|c| c.log_level.is_some_and(|min| level_rank(level) >= level_rank(min)))
            .map(|c| c.peer.clone())
            .collect()
    }

    pub fn route_resource_updated(&self, server: &str, params: ResourceUpdatedNotificationParam) {
        let uri = params.uri.clone();
        for target in self.targets(|_, subs| subs.contains(&(server.to_string(), uri.clone()))) {
            let p = params.clone();
            tokio::spawn(async move {
                match target {
                    Target::Session(peer) => {
                        let _ = peer.notify_resource_updated(p).await;
                    }
                    Target::Listen(sink) => {
                        let _ = sink.notify_resource_updated(p.uri).await;
                    }
                }
            });
        }
    }

    /// Sends an upstream's request (sampling, elicitation, roots, custom) to
    /// the agent whose call is in flight on that server, else to any session
    /// that sees the server. It rides the originating call's stream.
    pub async fn forward_request(&self, server: &str, mut request: ServerRequest) -> Result<ClientResult, McpError> {
        let target = self.calls.lock().ok().and_then(|calls| {
            calls
                .values()
                .rev()
                .find(|c| c.server == server)
                .map(|c| (c.peer.clone(), Some(c.request_id.clone()), c.stateless))
        });
        let (peer, origin) = match target {
            // A 2026-07-28 agent has no stream to answer a request on.
            Some((_, _, true)) => {
                return Err(McpError::internal_error(
                    format!(
                        "the agent calling server '{server}' through mcpool speaks MCP 2026-07-28, \
                         which cannot answer a server's request during a call"
                    ),
                    None,
                ))
            }
            Some((peer, origin, false)) => (peer, origin),
            None => match self.peers(|scope, _| scope.sees(server)).into_iter().next() {
                Some(peer) => (peer, None),
                None => {
                    return Err(McpError::internal_error(
                        format!("no agent is connected to mcpool to answer server '{server}'"),
                        None,
                    ))
                }
            },
        };
        if let Some(origin) = origin {
            request.extensions_mut().insert(OriginatingRequestId(origin));
        }
        // Sent from a task of its own so that rmcp's task-local origin (the
        // upstream's request id) does not replace the agent's.
        let sent = tokio::spawn(async move { peer.send_request(request).await })
            .await
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        sent.map_err(|e| match e {
            rmcp::ServiceError::McpError(e) => e,
            other => McpError::internal_error(format!("the agent did not answer: {other}"), None),
        })
    }
}

enum Target {
    Session(Peer<RoleServer>),
    Listen(SubscriptionSink),
}

/// Severity order of the syslog levels MCP uses (debug lowest).
fn level_rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ListKind {
    Tools,
    Prompts,
    Resources,
}
