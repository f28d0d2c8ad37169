//! The hub's routing table as plain data: which agents exist, which calls
//! are in flight, and where each message from a server goes. No locks, no
//! I/O: `Hub` holds one behind a mutex and sends what the table picks.
//! Generic over the agent's peer `P` and listen stream `S`, so unit tests
//! route between plain values.

#![allow(deprecated)] // LoggingLevel: SEP-2577, still used by agents and servers.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use rmcp::model::{LoggingLevel, ProgressToken, RequestId};

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

struct Agent<P, S> {
    scope: Scope,
    peer: P,
    /// `(server, uri)` pairs this session subscribed to.
    subscriptions: BTreeSet<(String, String)>,
    /// A 2026-07-28 agent's `subscriptions/listen` stream: list changes and
    /// resource updates go through it (with its subscription id), nothing
    /// else does (no logs, no requests).
    listen: Option<S>,
}

/// Who an upstream's call is for, as `Hub::begin_call` records it.
#[derive(Debug, Clone)]
pub struct Caller<P> {
    pub peer: P,
    pub request_id: RequestId,
    pub agent_token: Option<ProgressToken>,
    /// The agent speaks 2026-07-28: its request has its own stream, which
    /// carries its progress and (at `log_level` and above) the server's
    /// logs, but no request from the server.
    pub stateless: bool,
    pub log_level: Option<LoggingLevel>,
}

struct Call<P> {
    server: String,
    caller: Caller<P>,
    upstream_token: Option<ProgressToken>,
    /// The last progress value passed on to the agent.
    last_progress: Option<f64>,
}

/// Where a message for agents goes: a session, or a listen stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target<P, S> {
    Session(P),
    Listen(S),
}

/// Where a server's own request (sampling, elicitation, roots) goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestRoute<P> {
    /// The session whose call to that server is in flight, on that call's
    /// stream (`origin`).
    Call {
        peer: P,
        origin: RequestId,
    },
    /// The newest call in flight is a 2026-07-28 agent's (`call`, as
    /// `begin_call` numbered it): it has no stream to answer a request on,
    /// so the call itself may take the question (`CallGuard::questions`).
    Stateless {
        call: u64,
    },
    /// No call in flight: a session that sees the server.
    Session(P),
    Nobody,
}

/// Where a server's log message goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRoute<P> {
    /// Sessions of that server's own endpoint: the message as it is.
    pub own: Vec<P>,
    /// Sessions of `/mcp`: the logger prefixed with the server's name.
    pub all: Vec<P>,
}

pub struct Table<P, S> {
    next: u64,
    agents: BTreeMap<u64, Agent<P, S>>,
    calls: BTreeMap<u64, Call<P>>,
    progress: HashMap<(String, ProgressToken), u64>,
    /// Per server, the calls sent (or being sent) upstream whose progress
    /// route is not known yet: their first progress can overtake the route.
    unrouted: HashMap<String, usize>,
}

impl<P, S> Default for Table<P, S> {
    fn default() -> Self {
        Table {
            next: 0,
            agents: BTreeMap::new(),
            calls: BTreeMap::new(),
            progress: HashMap::new(),
            unrouted: HashMap::new(),
        }
    }
}

impl<P: Clone, S: Clone> Table<P, S> {
    fn next_id(&mut self) -> u64 {
        let id = self.next;
        self.next += 1;
        id
    }

    /// A new agent session (with its listen stream, for a 2026-07-28
    /// `subscriptions/listen`); returns its id.
    pub fn register(&mut self, scope: Scope, peer: P, listen: Option<S>) -> u64 {
        let id = self.next_id();
        self.agents.insert(
            id,
            Agent {
                scope,
                peer,
                subscriptions: BTreeSet::new(),
                listen,
            },
        );
        id
    }

    /// The peer of agent session `id`, while it is open.
    pub fn peer_of(&self, id: u64) -> Option<P> {
        self.agents.get(&id).map(|a| a.peer.clone())
    }

    pub fn unregister(&mut self, id: u64) {
        self.agents.remove(&id);
    }

    pub fn agent_count(&self) -> usize {
        self.agents.len()
    }

    /// Drops the agents whose peer `closed` says has gone.
    pub fn prune(&mut self, closed: impl Fn(&P) -> bool) {
        self.agents.retain(|_, a| !closed(&a.peer));
    }

    pub fn subscribe(&mut self, agent: u64, server: &str, uri: &str, on: bool) {
        let Some(a) = self.agents.get_mut(&agent) else { return };
        let key = (server.to_string(), uri.to_string());
        if on {
            a.subscriptions.insert(key);
        } else {
            a.subscriptions.remove(&key);
        }
    }

    /// Whether an agent other than `agent` is subscribed to `uri` on `server`.
    pub fn others_subscribed(&self, agent: u64, server: &str, uri: &str) -> bool {
        let key = (server.to_string(), uri.to_string());
        self.agents
            .iter()
            .any(|(id, a)| *id != agent && a.subscriptions.contains(&key))
    }

    /// Every URI some agent is subscribed to on `server`.
    pub fn subscribed_uris(&self, server: &str) -> BTreeSet<String> {
        self.agents
            .values()
            .flat_map(|a| a.subscriptions.iter())
            .filter(|(s, _)| s == server)
            .map(|(_, uri)| uri.clone())
            .collect()
    }

    /// Sessions and listen streams whose scope and subscriptions `filter` accepts.
    pub fn targets(&self, filter: impl Fn(&Scope, &BTreeSet<(String, String)>) -> bool) -> Vec<Target<P, S>> {
        self.agents
            .values()
            .filter(|a| filter(&a.scope, &a.subscriptions))
            .map(|a| match &a.listen {
                Some(sink) => Target::Listen(sink.clone()),
                None => Target::Session(a.peer.clone()),
            })
            .collect()
    }

    /// Sessions (never listen streams) whose scope `filter` accepts.
    pub fn sessions(&self, filter: impl Fn(&Scope) -> bool) -> Vec<P> {
        self.targets(|scope, _| filter(scope))
            .into_iter()
            .filter_map(|t| match t {
                Target::Session(peer) => Some(peer),
                Target::Listen(_) => None,
            })
            .collect()
    }

    /// Whether a call is in flight on `server` or a session can see it.
    pub fn has_agent_for(&self, server: &str) -> bool {
        self.calls.values().any(|c| c.server == server) || self.agents.values().any(|a| a.scope.sees(server))
    }

    /// A call to `server` is being sent: its progress route is not known
    /// yet. Returns the call's id.
    pub fn begin_call(&mut self, server: &str, caller: Caller<P>) -> u64 {
        let id = self.next_id();
        *self.unrouted.entry(server.to_string()).or_default() += 1;
        self.calls.insert(
            id,
            Call {
                server: server.to_string(),
                caller,
                upstream_token: None,
                last_progress: None,
            },
        );
        id
    }

    /// The upstream's progress token of call `id`: its progress goes back to
    /// the agent under the agent's own token (when the agent asked for any).
    pub fn route_progress(&mut self, id: u64, upstream_token: ProgressToken) {
        let Some(call) = self.calls.get_mut(&id) else { return };
        if call.caller.agent_token.is_none() {
            return;
        }
        call.upstream_token = Some(upstream_token.clone());
        self.progress.insert((call.server.clone(), upstream_token), id);
    }

    /// One call to `server` is no longer between being sent and being routed.
    pub fn route_known(&mut self, server: &str) {
        if let Some(n) = self.unrouted.get_mut(server) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.unrouted.remove(server);
            }
        }
    }

    /// Whether a call to `server` is between being sent and being routed:
    /// progress without a route should wait for it.
    pub fn awaiting_route(&self, server: &str) -> bool {
        self.unrouted.contains_key(server)
    }

    pub fn end_call(&mut self, id: u64) {
        if let Some(call) = self.calls.remove(&id) {
            if let Some(token) = call.upstream_token {
                self.progress.remove(&(call.server, token));
            }
        }
    }

    /// Whether progress `value` for the upstream's token may go on to the
    /// agent: progress only grows, and rmcp handles each notification on a
    /// task of its own, so one that comes after a later one is dropped
    /// rather than shown out of order.
    pub fn admit_progress(&mut self, server: &str, token: &ProgressToken, value: f64) -> bool {
        let Some(id) = self.progress.get(&(server.to_string(), token.clone())) else {
            return false;
        };
        let Some(call) = self.calls.get_mut(id) else {
            return false;
        };
        if call.last_progress.is_some_and(|last| value <= last) {
            return false;
        }
        call.last_progress = Some(value);
        true
    }

    /// The agent and its token for an upstream's progress token, if routed.
    pub fn progress_target(&self, server: &str, token: &ProgressToken) -> Option<(P, ProgressToken)> {
        let id = self.progress.get(&(server.to_string(), token.clone()))?;
        let call = self.calls.get(id)?;
        let token = call.caller.agent_token.clone()?;
        Some((call.caller.peer.clone(), token))
    }

    /// Where a request from `server` goes: the newest call in flight to it,
    /// else a session that sees it.
    pub fn request_route(&self, server: &str) -> RequestRoute<P> {
        match self.calls.iter().rev().find(|(_, c)| c.server == server) {
            Some((&call, c)) if c.caller.stateless => RequestRoute::Stateless { call },
            Some((_, c)) => RequestRoute::Call {
                peer: c.caller.peer.clone(),
                origin: c.caller.request_id.clone(),
            },
            None => match self.sessions(|scope| scope.sees(server)).into_iter().next() {
                Some(peer) => RequestRoute::Session(peer),
                None => RequestRoute::Nobody,
            },
        }
    }

    /// Where a session-wide log message of `server` goes; `/mcp` sessions
    /// only when one of them set a level (`aggregated_logger`).
    pub fn log_route(&self, server: &str, aggregated_logger: bool) -> LogRoute<P> {
        let own = self.sessions(|scope| *scope == Scope::One(server.to_string()));
        let all = if aggregated_logger {
            self.sessions(|scope| *scope == Scope::All)
        } else {
            Vec::new()
        };
        LogRoute { own, all }
    }

    /// The 2026-07-28 agents whose call to `server` is in flight and asked
    /// for logs at `level` or below.
    pub fn call_log_peers(&self, server: &str, level: LoggingLevel) -> Vec<P> {
        self.calls
            .values()
            .filter(|c| c.caller.stateless && c.server == server)
            .filter(|c| {
                c.caller
                    .log_level
                    .is_some_and(|min| level_rank(level) >= level_rank(min))
            })
            .map(|c| c.caller.peer.clone())
            .collect()
    }

    /// Sessions and streams subscribed to `uri` on `server`.
    pub fn resource_targets(&self, server: &str, uri: &str) -> Vec<Target<P, S>> {
        let key = (server.to_string(), uri.to_string());
        self.targets(|_, subs| subs.contains(&key))
    }
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

#[cfg(test)]
#[path = "table_tests.rs"]
mod tests;
