//! One server's lifecycle as a pure state machine: `(state, event, now) ->
//! (state, effects)`. Each state carries exactly the data it has (the lists
//! agents see and where they come from, the error, the backoff), so no
//! contradictory combination can be represented. The supervisor performs
//! the effects (dial, close, notify, write the cache) and feeds their
//! outcomes back as events; nothing here touches a process, a socket or a
//! clock.

use std::fmt;
use std::time::Duration;

use rmcp::model::{Prompt, Resource, ResourceTemplate, Tool};
use serde::Serialize;
use tokio::time::Instant;

use crate::backoff::Backoff;

/// What a server shows (behaviour.md §1), exactly these strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    Connected,
    Failed,
    NeedsAuth,
    Disabled,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Connected => "connected",
            Status::Failed => "failed",
            Status::NeedsAuth => "needs_auth",
            Status::Disabled => "disabled",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// A server's lists as it gave them.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Lists {
    pub tools: Vec<Tool>,
    pub prompts: Vec<Prompt>,
    pub resources: Vec<Resource>,
    pub templates: Vec<ResourceTemplate>,
}

/// Where the lists offered to agents come from while the server is not
/// connected (behaviour.md rules 2 and 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// From the live connection (also while an explicit reconnect runs).
    Live,
    /// Kept from a connection that dropped or an attempt that failed for a
    /// transient reason.
    Kept,
    /// From the disk cache, until the server answers.
    Cached,
}

/// Lists offered to agents without a live connection behind them.
#[derive(Debug, Clone, PartialEq)]
pub struct Offer {
    pub lists: Lists,
    pub source: Source,
}

impl Offer {
    /// A transient failure keeps what was offered, as after a drop.
    fn kept(self) -> Offer {
        let source = match self.source {
            Source::Cached => Source::Kept,
            other => other,
        };
        Offer { source, ..self }
    }
}

/// The transient failures so far and when the next attempt is allowed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retry {
    /// Consecutive failed attempts; 0 after a drop or a reset.
    pub failures: u32,
    /// `None` when requests may dial at once.
    pub at: Option<Instant>,
}

/// One server's state, as the user sees it (`status()` names it).
#[derive(Debug, Clone, PartialEq)]
pub enum State {
    /// Not connected yet: at launch, after `enable`, during an explicit
    /// reconnect (which keeps the error it had).
    Pending {
        offer: Option<Offer>,
        error: Option<String>,
        attempting: bool,
    },
    Connected {
        lists: Lists,
    },
    /// Dropped, or a transient failure: a request reconnects once the
    /// backoff allows.
    Failed {
        offer: Option<Offer>,
        error: String,
        retry: Retry,
        attempting: bool,
    },
    /// A permanent failure: never retried until an explicit action.
    FailedPermanently {
        error: String,
    },
    NeedsAuth {
        error: String,
    },
    /// Disconnected by the user (or disabled in the config).
    Disabled,
    /// Stopped for good: shut down or removed from the config.
    Stopped,
}

/// How an attempt failed (behaviour.md rule 10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureKind {
    /// Worth another try later; a server's `Retry-After` is a floor.
    Transient { retry_after: Option<Duration> },
    /// Never retried on its own: a config or server problem.
    Permanent,
    /// The server wants a sign-in (401).
    Auth,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// Launch, or an `enable` of a disabled server.
    Start,
    /// The disk cache had this server's tools (used only before anything
    /// else is offered).
    CacheLoaded {
        tools: Vec<Tool>,
    },
    AttemptStarted,
    AttemptSucceeded {
        lists: Lists,
    },
    AttemptFailed {
        kind: FailureKind,
        error: String,
    },
    /// The live connection listed its lists again.
    Relisted {
        lists: Lists,
    },
    /// The live connection went away on its own; `error` is the full text.
    Dropped {
        error: String,
    },
    /// A request on the live connection was refused for want of a sign-in.
    Unauthorized {
        error: String,
    },
    /// An explicit disconnect.
    Disconnect,
    /// An explicit reconnect: bypasses backoff and any earlier verdict.
    Reconnect,
    /// After a wake: the network cannot reach the server yet (tools kept).
    WaitingForNetwork {
        error: String,
    },
    /// After a wake, once the network is back: forget the backoff.
    ResetBackoff,
    /// Shutdown, or removal from the config.
    Stop,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Start a connection attempt now.
    Dial,
    /// Close the live connection (and stop its process group).
    Close,
    /// Abandon the attempt in flight.
    CancelAttempt,
    /// What agents see of the server's lists changed (dropped, replaced,
    /// or their source): agents may need `list_changed`.
    ListsChanged,
    /// Write the live tools to the disk cache: they differ from what was
    /// offered before.
    StoreTools,
    /// Tell the user once that the server needs sign-in.
    NotifyNeedsAuth,
}

/// What a request may do with the server right now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// A live connection is there.
    Ready,
    /// Connect (or join the attempt in flight) first.
    Dial,
    Refuse(Refusal),
}

/// Why a request fails at once, without dialling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    Disabled,
    /// Stopped: removed from the config (or shutting down).
    Removed,
    NeedsAuth {
        error: String,
    },
    Permanent {
        error: String,
    },
    Backoff {
        error: String,
        retry_in: Duration,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Lifecycle {
    state: State,
    backoff: Backoff,
}

impl Lifecycle {
    pub fn new(disabled: bool, backoff: Backoff) -> Self {
        let state = if disabled {
            State::Disabled
        } else {
            State::Pending {
                offer: None,
                error: None,
                attempting: false,
            }
        };
        Lifecycle { state, backoff }
    }

    pub fn state(&self) -> &State {
        &self.state
    }

    pub fn status(&self) -> Status {
        match self.state {
            State::Pending { .. } => Status::Pending,
            State::Connected { .. } => Status::Connected,
            State::Failed { .. } | State::FailedPermanently { .. } => Status::Failed,
            State::NeedsAuth { .. } => Status::NeedsAuth,
            State::Disabled | State::Stopped => Status::Disabled,
        }
    }

    pub fn error(&self) -> Option<&str> {
        match &self.state {
            State::Pending { error, .. } => error.as_deref(),
            State::Failed { error, .. } | State::FailedPermanently { error } | State::NeedsAuth { error } => {
                Some(error)
            }
            State::Connected { .. } | State::Disabled | State::Stopped => None,
        }
    }

    pub fn attempting(&self) -> bool {
        matches!(
            self.state,
            State::Pending { attempting: true, .. } | State::Failed { attempting: true, .. }
        )
    }

    pub fn is_stopped(&self) -> bool {
        self.state == State::Stopped
    }

    /// Whether a connection that an attempt just made may be used: not
    /// after a disconnect or a stop that came while it was being made.
    pub fn accepts_connection(&self) -> bool {
        !matches!(self.state, State::Disabled | State::Stopped)
    }

    /// Consecutive failed attempts; 0 after a success or an explicit action.
    pub fn failures(&self) -> u32 {
        match self.state {
            State::Failed { retry, .. } => retry.failures,
            _ => 0,
        }
    }

    /// When the next attempt is allowed, if a backoff is in force.
    pub fn retry_at(&self) -> Option<Instant> {
        match self.state {
            State::Failed { retry, .. } => retry.at,
            _ => None,
        }
    }

    /// The lists agents see and where they come from, if any.
    pub fn lists(&self) -> Option<(&Lists, Source)> {
        match &self.state {
            State::Connected { lists } => Some((lists, Source::Live)),
            State::Pending { offer: Some(o), .. } | State::Failed { offer: Some(o), .. } => Some((&o.lists, o.source)),
            _ => None,
        }
    }

    pub fn admit(&self, now: Instant) -> Admission {
        match &self.state {
            State::Connected { .. } => Admission::Ready,
            State::Disabled => Admission::Refuse(Refusal::Disabled),
            State::Stopped => Admission::Refuse(Refusal::Removed),
            State::NeedsAuth { error } => Admission::Refuse(Refusal::NeedsAuth { error: error.clone() }),
            State::FailedPermanently { error } => Admission::Refuse(Refusal::Permanent { error: error.clone() }),
            State::Pending { .. } => Admission::Dial,
            State::Failed {
                error,
                retry,
                attempting,
                ..
            } => match retry.at {
                Some(at) if at > now && !attempting => Admission::Refuse(Refusal::Backoff {
                    error: error.clone(),
                    retry_in: at - now,
                }),
                _ => Admission::Dial,
            },
        }
    }

    pub fn handle(&mut self, event: Event, now: Instant) -> Vec<Effect> {
        if self.state == State::Stopped {
            return vec![];
        }
        let state = std::mem::replace(&mut self.state, State::Stopped);
        let (state, effects) = self.next(state, event, now);
        self.state = state;
        effects
    }
}

mod transitions;

#[cfg(test)]
mod tests;
