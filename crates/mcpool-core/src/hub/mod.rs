//! The agent side of the pool: which agent sessions are open, and where a
//! message from an upstream goes (progress to the call that asked for it,
//! a sampling or elicitation request to the session whose call caused it,
//! logging and resource updates to the sessions that can see the server).

// Logging, sampling and roots are deprecated by SEP-2577 but agents and
// servers in use today still rely on them, so the pool passes them through.
#![allow(deprecated)]

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use rmcp::model::GetExtensions;
use rmcp::model::{
    ClientResult, ErrorData as McpError, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
    ResourceUpdatedNotification, ResourceUpdatedNotificationParam, ServerNotification, ServerRequest,
};
use rmcp::service::{OriginatingRequestId, Peer, RoleServer, SubscriptionSink};
use tokio::sync::{mpsc, oneshot};

use table::{LogRoute, RequestRoute};
pub use table::{Scope, Target};

mod table;

/// Who an upstream's call is for, as `Hub::begin_call` records it.
pub type Caller = table::Caller<Peer<RoleServer>>;

/// One agent-side table for the whole pool: every route is looked up and
/// changed under its one lock (`crate::sync::lock`).
#[derive(Default)]
pub struct Hub {
    table: Mutex<table::Table<Peer<RoleServer>, SubscriptionSink>>,
    /// Calls of 2026-07-28 agents that take a server's questions themselves
    /// (`CallGuard::questions`), by call number.
    questions: Mutex<HashMap<u64, mpsc::UnboundedSender<Question>>>,
    /// Which server made each task agents were handed, under the id mcpool
    /// handed out (`tasks/*` go back to it with the server's own id).
    tasks: Mutex<TaskOwners>,
    routed: tokio::sync::Notify,
    /// Held while one progress notification is checked and sent.
    progress_order: tokio::sync::Mutex<()>,
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
        self.hub.table().end_call(self.id);
        crate::sync::lock(&self.hub.questions).remove(&self.id);
    }
}

/// The last [`TaskOwners::KEPT`] tasks agents were handed, by the id
/// mcpool handed out.
#[derive(Default)]
struct TaskOwners {
    tasks: HashMap<String, TaskRoute>,
    order: std::collections::VecDeque<String>,
}

impl TaskOwners {
    const KEPT: usize = 4096;
}

/// Where a task an agent was handed lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRoute {
    /// The server that made it.
    pub server: String,
    /// The server's own id for it.
    pub upstream: String,
    /// The agent session it was handed to (`None`: an agent without a
    /// session, a 2026-07-28 one, for whom the id alone is the key).
    pub owner: Option<u64>,
    /// Whether the agent's revision of tasks is the server's.
    pub bridge: Bridge,
}

/// How a task reaches the agent it was handed to (session/tasks.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bridge {
    /// As the server made it: both sides have the same revision of tasks.
    None,
    /// A 2025-11-25 server's task, to a 2026-07-28 agent as the tasks
    /// extension's.
    AsExtension,
    /// A 2026-07-28 server's task, to a session agent that asked for it
    /// the 2025-11-25 way (`task` on its call).
    AsSession,
}

impl Hub {
    /// Notes that `route.server` made the task `route.upstream` an agent
    /// was handed, and answers the id the agent gets instead: a random one
    /// of mcpool's, so that no agent can name a task it was not handed (a
    /// server's ids may be guessable, and one connection carries every
    /// agent's tasks).
    pub fn task_made(&self, route: TaskRoute) -> String {
        let public = format!("mcpool-task-{:032x}", rand::random::<u128>());
        let mut tasks = crate::sync::lock(&self.tasks);
        tasks.tasks.insert(public.clone(), route);
        tasks.order.push_back(public.clone());
        while tasks.order.len() > TaskOwners::KEPT {
            if let Some(oldest) = tasks.order.pop_front() {
                tasks.tasks.remove(&oldest);
            }
        }
        public
    }

    /// Where the task an agent knows as `public` lives, when that agent
    /// (`asker`, its session) was handed it.
    pub fn task_route(&self, public: &str, asker: Option<u64>) -> Option<TaskRoute> {
        let tasks = crate::sync::lock(&self.tasks);
        let route = tasks.tasks.get(public)?;
        (route.owner.is_none() || route.owner == asker).then(|| route.clone())
    }

    /// A server's `notifications/tasks/status` (its params, whole), to the
    /// agent session that was handed the task, under the id it knows. A
    /// task of an agent without a session, or one mcpool never handed
    /// out, goes nowhere (agents poll; the notification is optional).
    pub fn route_task_status(&self, server: &str, mut params: serde_json::Value) {
        let Some(upstream) = params.get("taskId").and_then(|v| v.as_str()).map(str::to_string) else {
            return;
        };
        let handed = {
            let tasks = crate::sync::lock(&self.tasks);
            tasks
                .tasks
                .iter()
                .find(|(_, r)| r.server == server && r.upstream == upstream)
                .and_then(|(public, r)| Some((public.clone(), r.owner?)))
        };
        let Some((public, owner)) = handed else { return };
        let Some(peer) = self.table().peer_of(owner) else {
            return;
        };
        params["taskId"] = serde_json::Value::String(public);
        let notification = rmcp::model::CustomNotification::new(crate::kept::TASK_STATUS, Some(params));
        tokio::spawn(async move {
            let _ = peer
                .send_notification(ServerNotification::CustomNotification(notification))
                .await;
        });
    }

    /// The tasks handed to the agent session `owner`, by the id it knows.
    pub fn tasks_of(&self, owner: u64) -> Vec<(String, TaskRoute)> {
        let tasks = crate::sync::lock(&self.tasks);
        tasks
            .order
            .iter()
            .filter_map(|public| tasks.tasks.get(public).map(|r| (public.clone(), r.clone())))
            .filter(|(_, r)| r.owner == Some(owner))
            .collect()
    }
}

/// A server's request (elicitation, sampling, roots) during a call, and
/// where its answer goes.
pub type Question = (ServerRequest, oneshot::Sender<Result<ClientResult, McpError>>);

impl CallGuard<'_> {
    /// Sends the server's requests during this call to `to`: a 2026-07-28
    /// agent's call asks them of the agent as `InputRequiredResult` rounds
    /// (behaviour.md rule 16) instead of on a stream it does not have.
    pub fn send_questions(&self, to: mpsc::UnboundedSender<Question>) {
        crate::sync::lock(&self.hub.questions).insert(self.id, to);
    }

    /// Routes the upstream's progress for this call back to the agent, under
    /// the agent's own token.
    pub fn route_progress(&self, upstream_token: ProgressToken) {
        self.hub.table().route_progress(self.id, upstream_token);
        self.route_known();
    }

    /// Progress waiting for this call's route need not wait any longer.
    fn route_known(&self) {
        if !self.awaiting_route.swap(false, Ordering::SeqCst) {
            return;
        }
        self.hub.table().route_known(&self.server);
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
            hub.table().unregister(self.id);
        }
    }
}

impl Hub {
    fn table(&self) -> MutexGuard<'_, table::Table<Peer<RoleServer>, SubscriptionSink>> {
        crate::sync::lock(&self.table)
    }

    /// The table with the agents whose session has ended removed.
    fn pruned(&self) -> MutexGuard<'_, table::Table<Peer<RoleServer>, SubscriptionSink>> {
        let mut table = self.table();
        table.prune(|peer| peer.is_transport_closed());
        table
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
        let id = self.table().register(scope, peer, listen);
        Registration {
            hub: Arc::downgrade(self),
            id,
        }
    }

    /// The agent sessions the hub holds, closed or not (closed ones are
    /// removed when their session ends).
    pub fn agent_count(&self) -> usize {
        self.table().agent_count()
    }

    /// Whether a call is in flight on `server` or a session can see it.
    pub fn has_agent_for(&self, server: &str) -> bool {
        self.pruned().has_agent_for(server)
    }

    pub fn subscribe(&self, agent: u64, server: &str, uri: &str, on: bool) {
        self.table().subscribe(agent, server, uri, on);
    }

    /// Whether an open session other than `agent` that sees `server` is
    /// subscribed to `uri`: the upstream's one subscription serves them all,
    /// so it must stay while any of them wants it.
    pub fn others_subscribed(&self, agent: u64, server: &str, uri: &str) -> bool {
        self.pruned().others_subscribed(agent, server, uri)
    }

    /// Every URI some open session is subscribed to on `server`, to renew
    /// after the server reconnects.
    pub fn subscribed_uris(&self, server: &str) -> BTreeSet<String> {
        self.pruned().subscribed_uris(server)
    }

    pub fn begin_call(&self, server: &str, caller: Caller) -> CallGuard<'_> {
        let id = self.table().begin_call(server, caller);
        CallGuard {
            hub: self,
            id,
            server: server.to_string(),
            awaiting_route: AtomicBool::new(true),
        }
    }

    /// Sends tools/prompts/resources `list_changed` to the sessions `scope_filter` picks.
    pub fn notify_list_changed(&self, kind: ListKind, scope_filter: impl Fn(&Scope) -> bool) {
        let targets = self.pruned().targets(|scope, _| scope_filter(scope));
        for target in targets {
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
            let (target, waiting) = {
                let table = self.table();
                let target = table.progress_target(server, &params.progress_token);
                (target, table.awaiting_route(server))
            };
            if target.is_some() {
                break target;
            }
            if !waiting || tokio::time::timeout_at(deadline, routed).await.is_err() {
                break None;
            }
        };
        if let Some((peer, token)) = target {
            // One progress at a time, so the check and the send keep order.
            let _in_order = self.progress_order.lock().await;
            if !self
                .table()
                .admit_progress(server, &params.progress_token, params.progress)
            {
                return;
            }
            params.progress_token = token;
            let _ = peer.notify_progress(params).await;
        }
    }

    pub fn route_log(&self, server: &str, aggregated_logger: bool, mut params: LoggingMessageNotificationParam) {
        let LogRoute { own, all } = self.pruned().log_route(server, aggregated_logger);
        for peer in own {
            let p = params.clone();
            tokio::spawn(async move {
                let _ = peer.notify_logging_message(p).await;
            });
        }
        params.logger = Some(prefixed_logger(server, params.logger.take()));
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
        params.logger = Some(prefixed_logger(server, params.logger.take()));
        let peers = self.table().call_log_peers(server, params.level);
        for peer in peers {
            let _ = peer.notify_logging_message(params.clone()).await;
        }
    }

    pub fn route_resource_updated(&self, server: &str, params: ResourceUpdatedNotificationParam) {
        let targets = self.pruned().resource_targets(server, &params.uri);
        for target in targets {
            let p = params.clone();
            tokio::spawn(async move {
                match target {
                    Target::Session(peer) => {
                        let _ = peer.notify_resource_updated(p).await;
                    }
                    // The whole notification, so that its `_meta` goes along.
                    Target::Listen(sink) => {
                        let _ = sink
                            .send(ServerNotification::ResourceUpdatedNotification(
                                ResourceUpdatedNotification::new(p),
                            ))
                            .await;
                    }
                }
            });
        }
    }

    /// Sends an upstream's request (sampling, elicitation, roots, custom) to
    /// the agent whose call is in flight on that server, else to any session
    /// that sees the server. It rides the originating call's stream.
    pub async fn forward_request(&self, server: &str, mut request: ServerRequest) -> Result<ClientResult, McpError> {
        let route = self.pruned().request_route(server);
        let peer = match route {
            RequestRoute::Call { peer, origin } => {
                request.extensions_mut().insert(OriginatingRequestId(origin));
                peer
            }
            RequestRoute::Session(peer) => peer,
            // A 2026-07-28 agent has no stream to answer a request on: its
            // call takes the question, if it can.
            RequestRoute::Stateless { call } => {
                let asker = crate::sync::lock(&self.questions).get(&call).cloned();
                if let Some(asker) = asker {
                    let (answer, answered) = oneshot::channel();
                    if asker.send((request, answer)).is_ok() {
                        return answered.await.unwrap_or_else(|_| {
                            Err(McpError::internal_error(
                                format!("the agent calling server '{server}' through mcpool did not answer in time"),
                                None,
                            ))
                        });
                    }
                }
                return Err(McpError::internal_error(
                    format!(
                        "the agent calling server '{server}' through mcpool speaks MCP 2026-07-28, \
                         which cannot answer a server's request during a call"
                    ),
                    None,
                ));
            }
            RequestRoute::Nobody => {
                return Err(McpError::internal_error(
                    format!("no agent is connected to mcpool to answer server '{server}'"),
                    None,
                ))
            }
        };
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

/// A server's log as `/mcp` agents see it: the logger names the server.
fn prefixed_logger(server: &str, logger: Option<String>) -> String {
    match logger {
        Some(l) => format!("{server}/{l}"),
        None => server.to_string(),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ListKind {
    Tools,
    Prompts,
    Resources,
}
