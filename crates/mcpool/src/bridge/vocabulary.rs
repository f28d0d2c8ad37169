//! What the stdio bridge's relay (relay.rs) takes in and hands out: the
//! outcome of an attempt to reach mcpool, and the effects its driver
//! (mod.rs) performs.

use std::time::Duration;

use mcpool_core::backoff::Backoff;
use serde_json::Value;

/// Why an attempt to reach mcpool, or a send on a session, failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Nothing listens at the address.
    Unreachable,
    /// The instance refused the token.
    Unauthorized,
    /// The session is gone (mcpool restarted, or ended it), or anything
    /// else, said in a few words.
    Other(String),
}

/// How long to wait and how often to retry.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    pub backoff: Backoff,
    /// How long requests wait for mcpool to come back (and, at start-up, how
    /// long the bridge waits for an instance before it gives up).
    pub wait: Duration,
}

/// One attempt for the driver to make.
#[derive(Debug, Clone, PartialEq)]
pub struct Connect {
    /// The `initialize` request to send on a new session: the agent's own
    /// while unanswered, else a copy with an internal id. `None`: only check
    /// that an instance answers (the agent has not initialized yet).
    pub initialize: Option<Value>,
    /// Send `notifications/initialized` and open the event stream.
    pub initialized: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Attempt {
    /// The instance answered: with the `initialize` result when one was sent.
    Up(Option<Value>),
    /// mcpool answered `initialize` with this JSON-RPC error object.
    Rejected(Value),
    Failed(Failure),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    ToAgent(Value),
    /// On the session, in the agent's order.
    ToUpstream(Value),
    /// A stateless request, on its own (no session) with its revision's
    /// headers; its outcome comes through `on_upstream`, `request_ended` or
    /// `stateless_undelivered`.
    Stateless(Value),
    /// The agent cancelled this stateless request: end its exchange (mcpool
    /// cancels a request whose stream closes).
    Abandon(Value),
    Connect(Connect),
    /// A line for stderr (the client's log).
    Log(String),
    /// Give up: say this on stderr and exit 1.
    Exit(String),
}
