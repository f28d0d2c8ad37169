//! The stdio bridge's relay state, without I/O: whether mcpool is there, the
//! agent's `initialize` to replay on a new session, the requests in flight
//! and those waiting for mcpool to come back, and the sentences the agent
//! reads when a request cannot be answered.
//!
//! Requests are never replayed once they may have reached mcpool (a tool
//! call may have reached its server): those in flight when the connection
//! ends get an error. Only a request that provably never arrived (the
//! connection was refused, or the session was unknown) is sent again.
//!
//! A request of the stateless revision (2026-07-28: `server/discover`, or
//! `_meta` naming the revision) needs no session: it goes to mcpool on its
//! own as soon as an instance answers, from the agent's first message on.

use std::collections::{HashSet, VecDeque};

use serde_json::{json, Value};
use tokio::time::Instant;

use super::revision::is_stateless;
pub use super::vocabulary::{Attempt, Connect, Effect, Failure, Policy};

/// JSON-RPC "internal error": the bridge's own answers carry it.
const INTERNAL_ERROR: i64 = -32603;
const NOT_INITIALIZED: &str = "mcpool stdio: the session is not initialized; send `initialize` first";

#[derive(Debug)]
enum Link {
    /// An instance answers; `session` once a session is open on it.
    Up { session: bool },
    Down {
        since: Instant,
        failures: u32,
        next: Instant,
        last: Failure,
    },
}

#[derive(Debug)]
struct Init {
    /// The agent's `initialize` request, kept whole.
    request: Value,
    /// The result the agent got.
    answered: Option<Value>,
}

pub struct Relay {
    addr: String,
    policy: Policy,
    link: Link,
    /// An attempt is under way; its outcome comes through `attempt_done`.
    attempting: bool,
    ever_up: bool,
    init: Option<Init>,
    /// The agent sent `notifications/initialized`.
    initialized: bool,
    /// Request ids (as JSON text) sent on the session and not answered.
    in_flight: HashSet<String>,
    /// Stateless requests sent and not answered: no session holds them.
    stateless: HashSet<String>,
    /// Requests held until a session is open: (id as JSON text, message).
    waiting: VecDeque<(String, Value)>,
    reinits: u64,
}

fn key(id: &Value) -> String {
    id.to_string()
}

fn error(id: &Value, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": INTERNAL_ERROR, "message": message}})
}

fn is_request(message: &Value) -> bool {
    message.get("method").is_some() && message.get("id").is_some()
}

impl Relay {
    /// Starts down, as if mcpool had just gone away: the first attempt (a
    /// check that an instance answers) is due at once.
    pub fn new(addr: impl Into<String>, policy: Policy, now: Instant) -> Self {
        Relay {
            addr: addr.into(),
            policy,
            link: Link::Down {
                since: now,
                failures: 0,
                next: now,
                last: Failure::Unreachable,
            },
            attempting: false,
            ever_up: false,
            init: None,
            initialized: false,
            in_flight: HashSet::new(),
            stateless: HashSet::new(),
            waiting: VecDeque::new(),
            reinits: 0,
        }
    }

    fn has_session(&self) -> bool {
        matches!(self.link, Link::Up { session: true })
    }

    fn past_wait(&self, now: Instant) -> bool {
        matches!(self.link, Link::Down { since, .. } if now >= since + self.policy.wait)
    }

    /// The one sentence a request gets when mcpool stayed away too long.
    fn away_sentence(&self, last: &Failure) -> String {
        match last {
            Failure::Unauthorized => format!(
                "mcpool at {} refused the token; check MCPOOL_TOKEN or `mcpool token`",
                self.addr
            ),
            Failure::Unreachable => format!(
                "mcpool at {} is not running; start it with `mcpool serve` or the tray app",
                self.addr
            ),
            Failure::Other(why) => format!("mcpool at {} cannot be reached ({why})", self.addr),
        }
    }

    fn lost_sentence(&self) -> String {
        format!(
            "the connection to mcpool at {} ended while this request was in flight (mcpool stopped or restarted); it was not retried, since it may have reached its server",
            self.addr
        )
    }

    /// A message the agent wrote.
    pub fn on_agent(&mut self, message: Value, now: Instant) -> Vec<Effect> {
        let method = message.get("method").and_then(Value::as_str).map(str::to_string);
        let id = message.get("id").cloned();
        match (method.as_deref(), id) {
            (Some("initialize"), Some(_)) if self.init.as_ref().is_none_or(|i| i.answered.is_none()) => {
                self.init = Some(Init {
                    request: message,
                    answered: None,
                });
                let mut out = Vec::new();
                if matches!(self.link, Link::Up { .. }) || self.past_wait(now) {
                    self.start_attempt(&mut out);
                }
                out
            }
            (Some(_), Some(id)) if is_stateless(&message) => {
                if matches!(self.link, Link::Up { .. }) {
                    self.stateless.insert(key(&id));
                    return vec![Effect::Stateless(message)];
                }
                self.waiting.push_back((key(&id), message));
                let mut out = Vec::new();
                if self.past_wait(now) {
                    self.start_attempt(&mut out);
                }
                out
            }
            (Some("ping"), Some(id)) if !self.has_session() => {
                vec![Effect::ToAgent(json!({"jsonrpc": "2.0", "id": id, "result": {}}))]
            }
            (Some(_), Some(id)) => {
                if self.has_session() {
                    self.in_flight.insert(key(&id));
                    return vec![Effect::ToUpstream(message)];
                }
                if self.init.is_none() && matches!(self.link, Link::Up { .. }) {
                    return vec![Effect::ToAgent(error(&id, NOT_INITIALIZED.into()))];
                }
                self.waiting.push_back((key(&id), message));
                let mut out = Vec::new();
                // Past the wait, a request does not fail on an old attempt's
                // word: it gets one attempt of its own.
                if self.past_wait(now) {
                    self.start_attempt(&mut out);
                }
                out
            }
            (Some(method), None) => {
                if method == "notifications/initialized" {
                    self.initialized = true;
                } else if method == "notifications/cancelled" {
                    if let Some(cancelled) = message.pointer("/params/requestId") {
                        let k = key(cancelled);
                        self.waiting.retain(|(w, _)| *w != k);
                        self.in_flight.remove(&k);
                        if self.stateless.remove(&k) {
                            return vec![Effect::Abandon(cancelled.clone())];
                        }
                    }
                }
                // Without a session, a notification has nobody to go to: a
                // new session gets `initialized` from the reconnect itself.
                if self.has_session() {
                    vec![Effect::ToUpstream(message)]
                } else {
                    Vec::new()
                }
            }
            // Answers to mcpool's requests, and anything else: only a live
            // session can use them.
            (None, _) if self.has_session() => vec![Effect::ToUpstream(message)],
            (None, _) => Vec::new(),
        }
    }

    /// A message mcpool sent on the current session or a stateless
    /// request's stream.
    pub fn on_upstream(&mut self, message: Value) -> Vec<Effect> {
        if !is_request(&message) {
            if let Some(id) = message.get("id") {
                self.in_flight.remove(&key(id));
                self.stateless.remove(&key(id));
            }
        }
        vec![Effect::ToAgent(message)]
    }

    /// A request's stream ended without its response, or mcpool answered it
    /// with an HTTP error (`why`); no-op when it was answered already.
    pub fn request_ended(&mut self, id: &Value, why: Option<String>) -> Vec<Effect> {
        let k = key(id);
        if !self.in_flight.remove(&k) && !self.stateless.remove(&k) {
            return Vec::new();
        }
        let message = why.unwrap_or_else(|| self.lost_sentence());
        vec![Effect::ToAgent(error(id, message))]
    }

    /// A stateless request never reached mcpool (`failure` says why): it
    /// waits for an instance to answer again. Without a session, that is
    /// the news that mcpool went away; with one, the session learns it too
    /// and its end starts the reconnect.
    pub fn stateless_undelivered(&mut self, message: Value, failure: Failure, now: Instant) -> Vec<Effect> {
        let Some(id) = message.get("id") else {
            return Vec::new();
        };
        let k = key(id);
        if !self.stateless.remove(&k) {
            return Vec::new();
        }
        self.waiting.push_front((k, message));
        if !matches!(self.link, Link::Up { session: false }) {
            return Vec::new();
        }
        self.link = Link::Down {
            since: now,
            failures: 0,
            next: now,
            last: failure,
        };
        self.tick(now)
    }

    /// Sends the waiting stateless requests (an instance answers), and,
    /// with a session, the others too, in the agent's order.
    fn release_waiting(&mut self, out: &mut Vec<Effect>) {
        let session = self.has_session();
        let mut kept = VecDeque::new();
        for (k, message) in std::mem::take(&mut self.waiting) {
            if is_stateless(&message) {
                self.stateless.insert(k);
                out.push(Effect::Stateless(message));
            } else if session {
                self.in_flight.insert(k);
                out.push(Effect::ToUpstream(message));
            } else {
                kept.push_back((k, message));
            }
        }
        self.waiting = kept;
    }

    /// The session ended (its event stream closed, or a message was
    /// refused: `failure` says why). `unsent` never reached mcpool: the
    /// requests among them wait for the next session; everything else in
    /// flight gets the sentence.
    pub fn session_lost(&mut self, failure: Failure, unsent: Vec<Value>, now: Instant) -> Vec<Effect> {
        if !self.has_session() {
            return Vec::new();
        }
        for message in unsent.into_iter().filter(is_request) {
            if let Some(id) = message.get("id") {
                let k = key(id);
                if self.in_flight.remove(&k) {
                    self.waiting.push_back((k, message));
                }
            }
        }
        let mut out = Vec::new();
        let sentence = self.lost_sentence();
        let mut lost: Vec<String> = self.in_flight.drain().collect();
        lost.sort();
        for k in lost {
            if let Ok(id) = serde_json::from_str::<Value>(&k) {
                out.push(Effect::ToAgent(error(&id, sentence.clone())));
            }
        }
        self.link = Link::Down {
            since: now,
            failures: 0,
            next: now,
            last: failure,
        };
        out.push(Effect::Log(format!(
            "lost the connection to mcpool at {}; reconnecting (requests wait up to {} s)",
            self.addr,
            self.policy.wait.as_secs()
        )));
        out.extend(self.tick(now));
        out
    }

    fn start_attempt(&mut self, out: &mut Vec<Effect>) {
        if self.attempting {
            return;
        }
        self.attempting = true;
        let connect = match &self.init {
            None => Connect {
                initialize: None,
                initialized: false,
            },
            Some(Init {
                request,
                answered: None,
            }) => Connect {
                initialize: Some(request.clone()),
                initialized: false,
            },
            Some(Init { request, .. }) => {
                self.reinits += 1;
                let mut again = request.clone();
                again["id"] = json!(format!("mcpool-stdio-reinitialize-{}", self.reinits));
                Connect {
                    initialize: Some(again),
                    initialized: self.initialized,
                }
            }
        };
        out.push(Effect::Connect(connect));
    }

    /// The outcome of the attempt `Effect::Connect` asked for.
    pub fn attempt_done(&mut self, attempt: Attempt, now: Instant) -> Vec<Effect> {
        self.attempting = false;
        let mut out = Vec::new();
        let was_down = matches!(self.link, Link::Down { .. });
        match attempt {
            Attempt::Up(None) => {
                self.ever_up = true;
                self.link = Link::Up { session: false };
                self.release_waiting(&mut out);
                // The agent's initialize arrived during the check.
                if self.init.is_some() {
                    self.start_attempt(&mut out);
                } else {
                    // Session requests before any `initialize`: refused as
                    // they would be with mcpool there from the start.
                    for (k, _) in std::mem::take(&mut self.waiting) {
                        if let Ok(id) = serde_json::from_str::<Value>(&k) {
                            out.push(Effect::ToAgent(error(&id, NOT_INITIALIZED.into())));
                        }
                    }
                }
            }
            Attempt::Up(Some(result)) => {
                self.ever_up = true;
                let Some(init) = self.init.as_mut() else {
                    return out;
                };
                let reopened = match &init.answered {
                    None => {
                        let id = init.request.get("id").cloned().unwrap_or(Value::Null);
                        out.push(Effect::ToAgent(
                            json!({"jsonrpc": "2.0", "id": id, "result": result.clone()}),
                        ));
                        init.answered = Some(result);
                        false
                    }
                    Some(first) => {
                        let version = |r: &Value| r["protocolVersion"].as_str().unwrap_or("none").to_string();
                        let (was, now_is) = (version(first), version(&result));
                        if was != now_is {
                            out.push(Effect::Exit(format!(
                                "mcpool at {} came back speaking protocol version {now_is}, not {was}; restart this client's connection to mcpool",
                                self.addr
                            )));
                            return out;
                        }
                        true
                    }
                };
                self.link = Link::Up { session: true };
                if reopened {
                    out.push(Effect::Log(format!("reconnected to mcpool at {}", self.addr)));
                    out.extend(self.list_changed());
                }
                self.release_waiting(&mut out);
            }
            Attempt::Rejected(err) => {
                let message = err.get("message").and_then(Value::as_str).unwrap_or("no reason given");
                match self.init.take() {
                    Some(Init {
                        request,
                        answered: None,
                    }) => {
                        // The agent's own initialize: its answer is the error.
                        let id = request.get("id").cloned().unwrap_or(Value::Null);
                        out.push(Effect::ToAgent(json!({"jsonrpc": "2.0", "id": id, "error": err})));
                        self.ever_up = true;
                        self.link = Link::Up { session: false };
                        self.release_waiting(&mut out);
                        let sentence = format!("mcpool at {} refused to initialize: {message}", self.addr);
                        for (k, _) in std::mem::take(&mut self.waiting) {
                            if let Ok(id) = serde_json::from_str::<Value>(&k) {
                                out.push(Effect::ToAgent(error(&id, sentence.clone())));
                            }
                        }
                    }
                    _ => out.push(Effect::Exit(format!(
                        "mcpool at {} refused to open this session again ({message}); restart this client's connection to mcpool",
                        self.addr
                    ))),
                }
            }
            Attempt::Failed(failure) => {
                if failure == Failure::Unauthorized && !self.ever_up {
                    let sentence = format!("the instance at {} refused the token (check MCPOOL_TOKEN)", self.addr);
                    out.extend(self.fail_waiting(&sentence));
                    out.push(Effect::Exit(sentence));
                    return out;
                }
                let failures = match &self.link {
                    Link::Down { failures, .. } => failures + 1,
                    Link::Up { .. } => 1,
                };
                let since = match &self.link {
                    Link::Down { since, .. } if was_down => *since,
                    _ => now,
                };
                if !self.ever_up && failures == 1 && failure == Failure::Unreachable && !self.policy.wait.is_zero() {
                    out.push(Effect::Log(format!(
                        "no mcpool instance is running at {} yet; waiting up to {} s for one (start it with `mcpool serve` or the tray app)",
                        self.addr,
                        self.policy.wait.as_secs()
                    )));
                }
                self.link = Link::Down {
                    since,
                    failures,
                    next: now + self.policy.backoff.next_delay(failures),
                    last: failure,
                };
                out.extend(self.expire(now));
            }
        }
        out
    }

    /// `list_changed` for each list the server said may change: after a
    /// restart, the lists may differ from those the agent holds.
    fn list_changed(&self) -> Vec<Effect> {
        let Some(caps) = self
            .init
            .as_ref()
            .and_then(|i| i.answered.as_ref())
            .map(|r| &r["capabilities"])
        else {
            return Vec::new();
        };
        if !self.initialized {
            return Vec::new();
        }
        ["tools", "prompts", "resources"]
            .into_iter()
            .filter(|list| caps[list]["listChanged"] == json!(true))
            .map(|list| {
                Effect::ToAgent(json!({"jsonrpc": "2.0", "method": format!("notifications/{list}/list_changed")}))
            })
            .collect()
    }

    /// Past the wait with no attempt under way: waiting requests fail (or,
    /// before mcpool was ever reached, the bridge gives up).
    fn expire(&mut self, now: Instant) -> Vec<Effect> {
        if self.attempting || !self.past_wait(now) {
            return Vec::new();
        }
        let Link::Down { last, .. } = &self.link else {
            return Vec::new();
        };
        let sentence = match last {
            Failure::Unreachable if !self.ever_up => format!(
                "no mcpool instance is running at {} (start it with `mcpool serve` or the tray app; waited {} s)",
                self.addr,
                self.policy.wait.as_secs()
            ),
            other => self.away_sentence(other),
        };
        let mut out = self.fail_waiting(&sentence);
        if !self.ever_up {
            out.push(Effect::Exit(sentence));
        }
        out
    }

    /// Every request that waits gets `sentence` as its answer, the agent's
    /// own unanswered `initialize` too, so that the client shows it instead
    /// of a bare timeout.
    fn fail_waiting(&mut self, sentence: &str) -> Vec<Effect> {
        let mut ids = Vec::new();
        if let Some(Init { answered: None, .. }) = &self.init {
            if let Some(Init { request, .. }) = self.init.take() {
                ids.extend(request.get("id").cloned());
            }
        }
        ids.extend(
            std::mem::take(&mut self.waiting)
                .into_iter()
                .filter_map(|(k, _)| serde_json::from_str::<Value>(&k).ok()),
        );
        ids.iter()
            .map(|id| Effect::ToAgent(error(id, sentence.to_string())))
            .collect()
    }

    /// Time passed: start a due attempt, fail requests that waited too long.
    pub fn tick(&mut self, now: Instant) -> Vec<Effect> {
        let mut out = Vec::new();
        if let Link::Down { next, .. } = self.link {
            if now >= next && !self.attempting {
                self.start_attempt(&mut out);
            }
        }
        out.extend(self.expire(now));
        out
    }

    /// When `tick` has something to do next; `None` while an attempt runs
    /// or while connected.
    pub fn next_deadline(&self) -> Option<Instant> {
        match &self.link {
            Link::Down { since, next, .. } if !self.attempting => {
                let expiry = (!self.ever_up || !self.waiting.is_empty()).then(|| *since + self.policy.wait);
                Some(expiry.map_or(*next, |e| e.min(*next)))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
#[path = "relay_tests.rs"]
mod tests;
