//! One server's lifecycle as a pure state machine: `(state, event, now) ->
//! (state, effects)`. The supervisor performs the effects (dial, close,
//! notify) and feeds their outcomes back as events; nothing here touches a
//! process, a socket or a clock.

use std::fmt;
use std::time::Duration;

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

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Launch, or an `enable` of a disabled server.
    Start,
    AttemptStarted,
    AttemptSucceeded,
    AttemptFailed {
        kind: FailureKind,
        error: String,
    },
    /// The live connection went away on its own; `error` is the full text.
    Dropped {
        error: String,
    },
    /// An explicit disconnect (or removal from the config).
    Disconnect,
    /// An explicit reconnect: bypasses backoff and any earlier verdict.
    Reconnect,
    /// After a wake: the network cannot reach the server yet (tools kept).
    WaitingForNetwork {
        error: String,
    },
    /// After a wake, once the network is back: forget the backoff.
    ResetBackoff,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Start a connection attempt now.
    Dial,
    /// Close the live connection (and stop its process group).
    Close,
    /// Abandon the attempt in flight.
    CancelAttempt,
    /// Forget the server's tools; agents see `list_changed`.
    DropTools,
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
    NeedsAuth { error: String },
    Permanent { error: String },
    Backoff { error: String, retry_in: Duration },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lifecycle {
    status: Status,
    error: Option<String>,
    /// Consecutive failed attempts; 0 after a success or an explicit action.
    failures: u32,
    retry_at: Option<Instant>,
    permanent: bool,
    attempting: bool,
    backoff: Backoff,
}

impl Lifecycle {
    pub fn new(disabled: bool, backoff: Backoff) -> Self {
        Lifecycle {
            status: if disabled { Status::Disabled } else { Status::Pending },
            error: None,
            failures: 0,
            retry_at: None,
            permanent: false,
            attempting: false,
            backoff,
        }
    }

    pub fn status(&self) -> Status {
        self.status
    }

    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    pub fn attempting(&self) -> bool {
        self.attempting
    }

    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// When the next attempt is allowed, if a backoff is in force.
    pub fn retry_at(&self) -> Option<Instant> {
        self.retry_at
    }

    pub fn admit(&self, now: Instant) -> Admission {
        match self.status {
            Status::Connected => Admission::Ready,
            Status::Disabled => Admission::Refuse(Refusal::Disabled),
            Status::NeedsAuth => Admission::Refuse(Refusal::NeedsAuth {
                error: self.error_text(),
            }),
            Status::Failed if self.permanent => Admission::Refuse(Refusal::Permanent {
                error: self.error_text(),
            }),
            Status::Failed | Status::Pending => match self.retry_at {
                Some(at) if at > now && !self.attempting => Admission::Refuse(Refusal::Backoff {
                    error: self.error_text(),
                    retry_in: at - now,
                }),
                _ => Admission::Dial,
            },
        }
    }

    fn error_text(&self) -> String {
        self.error.clone().unwrap_or_else(|| "unknown error".into())
    }

    pub fn handle(&mut self, event: Event, now: Instant) -> Vec<Effect> {
        match event {
            Event::Start => {
                if self.status == Status::Connected || self.attempting {
                    return vec![];
                }
                self.reset();
                self.status = Status::Pending;
                vec![Effect::Dial]
            }
            Event::AttemptStarted => {
                self.attempting = true;
                vec![]
            }
            Event::AttemptSucceeded => {
                self.reset();
                self.status = Status::Connected;
                vec![]
            }
            Event::AttemptFailed { kind, error } => {
                self.attempting = false;
                if self.status == Status::Disabled {
                    return vec![];
                }
                self.error = Some(error);
                match kind {
                    FailureKind::Auth => {
                        self.status = Status::NeedsAuth;
                        self.retry_at = None;
                        vec![Effect::DropTools, Effect::NotifyNeedsAuth]
                    }
                    FailureKind::Permanent => {
                        self.status = Status::Failed;
                        self.permanent = true;
                        self.retry_at = None;
                        vec![Effect::DropTools]
                    }
                    FailureKind::Transient { retry_after } => {
                        self.status = Status::Failed;
                        self.failures = self.failures.saturating_add(1);
                        self.retry_at = Some(now + self.backoff.with_hint(self.failures, retry_after));
                        vec![]
                    }
                }
            }
            Event::Dropped { error } => {
                if self.status != Status::Connected {
                    return vec![];
                }
                self.reset();
                self.status = Status::Failed;
                self.error = Some(error);
                vec![]
            }
            Event::Disconnect => {
                let mut effects = Vec::new();
                if self.attempting {
                    effects.push(Effect::CancelAttempt);
                }
                if self.status == Status::Connected {
                    effects.push(Effect::Close);
                }
                effects.push(Effect::DropTools);
                self.reset();
                self.status = Status::Disabled;
                effects
            }
            Event::WaitingForNetwork { error } => {
                if matches!(self.status, Status::Disabled | Status::NeedsAuth | Status::Connected) || self.permanent {
                    return vec![];
                }
                // The backoff stays: requests meanwhile still follow rules 3-5.
                self.status = Status::Failed;
                self.error = Some(error);
                vec![]
            }
            Event::ResetBackoff => {
                self.failures = 0;
                self.retry_at = None;
                vec![]
            }
            Event::Reconnect => {
                let mut effects = Vec::new();
                if self.attempting {
                    effects.push(Effect::CancelAttempt);
                }
                if self.status == Status::Connected {
                    effects.push(Effect::Close);
                }
                effects.push(Effect::Dial);
                let keep_error = self.status != Status::Disabled;
                let error = self.error.take();
                self.reset();
                if keep_error {
                    self.error = error;
                }
                self.status = Status::Pending;
                effects
            }
        }
    }

    fn reset(&mut self) {
        self.error = None;
        self.failures = 0;
        self.retry_at = None;
        self.permanent = false;
        self.attempting = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{expect, Expect};

    /// Replays `(seconds since start, event)` pairs and renders one line per
    /// step: the event, the status after it, the effects, and what a request
    /// would be told at that moment.
    /// Runs on paused tokio time: the clock only moves when the script says.
    async fn check(script: &[(u64, Event)], expected: Expect) {
        let t0 = Instant::now();
        let mut machine = Lifecycle::new(false, Backoff::default());
        let mut out = String::new();
        for (secs, event) in script {
            let at = t0 + Duration::from_secs(*secs);
            tokio::time::advance(at.saturating_duration_since(Instant::now())).await;
            let now = Instant::now();
            assert_eq!(now, at, "time must be paused");
            let label = match event {
                Event::AttemptFailed { kind, .. } => format!("AttemptFailed({kind:?})"),
                Event::Dropped { .. } => "Dropped".to_string(),
                other => format!("{other:?}"),
            };
            let effects = machine.handle(event.clone(), now);
            let admission = match machine.admit(now) {
                Admission::Refuse(Refusal::Backoff { retry_in, .. }) => {
                    format!("refuse, retry in {}s", retry_in.as_secs())
                }
                Admission::Refuse(r) => format!("refuse {}", format!("{r:?}").split([' ', '{']).next().unwrap_or("")),
                other => format!("{other:?}").to_lowercase(),
            };
            out.push_str(&format!(
                "t={secs:>3}s {label:<40} -> {:<10} {effects:?} request: {admission}\n",
                machine.status()
            ));
        }
        expected.assert_eq(&out);
    }

    fn transient() -> Event {
        Event::AttemptFailed {
            kind: FailureKind::Transient { retry_after: None },
            error: "connection refused".into(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn start_connect_drop_reconnect_on_demand() {
        check(
            &[
                (0, Event::Start),
                (0, Event::AttemptStarted),
                (1, Event::AttemptSucceeded),
                (
                    5,
                    Event::Dropped {
                        error: "process exited (tools kept; reconnects when next used)".into(),
                    },
                ),
                (9, Event::AttemptStarted),
                (9, Event::AttemptSucceeded),
            ],
            expect![[r#"
                t=  0s Start                                    -> pending    [Dial] request: dial
                t=  0s AttemptStarted                           -> pending    [] request: dial
                t=  1s AttemptSucceeded                         -> connected  [] request: ready
                t=  5s Dropped                                  -> failed     [] request: dial
                t=  9s AttemptStarted                           -> failed     [] request: dial
                t=  9s AttemptSucceeded                         -> connected  [] request: ready
            "#]],
        )
        .await;
    }

    #[tokio::test(start_paused = true)]
    async fn backoff_doubles_and_resets_on_success() {
        check(
            &[
                (0, Event::AttemptStarted),
                (0, transient()),
                (1, Event::AttemptStarted),
                (1, transient()),
                (3, Event::AttemptStarted),
                (3, transient()),
                (7, Event::AttemptStarted),
                (7, Event::AttemptSucceeded),
                (8, Event::Dropped { error: "gone".into() }),
                (8, Event::AttemptStarted),
                (8, transient()),
            ],
            expect![[r#"
                t=  0s AttemptStarted                           -> pending    [] request: dial
                t=  0s AttemptFailed(Transient { retry_after: None }) -> failed     [] request: refuse, retry in 1s
                t=  1s AttemptStarted                           -> failed     [] request: dial
                t=  1s AttemptFailed(Transient { retry_after: None }) -> failed     [] request: refuse, retry in 2s
                t=  3s AttemptStarted                           -> failed     [] request: dial
                t=  3s AttemptFailed(Transient { retry_after: None }) -> failed     [] request: refuse, retry in 4s
                t=  7s AttemptStarted                           -> failed     [] request: dial
                t=  7s AttemptSucceeded                         -> connected  [] request: ready
                t=  8s Dropped                                  -> failed     [] request: dial
                t=  8s AttemptStarted                           -> failed     [] request: dial
                t=  8s AttemptFailed(Transient { retry_after: None }) -> failed     [] request: refuse, retry in 1s
            "#]],
        )
        .await;
    }

    #[tokio::test(start_paused = true)]
    async fn retry_after_is_honoured() {
        check(
            &[
                (0, Event::AttemptStarted),
                (
                    0,
                    Event::AttemptFailed {
                        kind: FailureKind::Transient {
                            retry_after: Some(Duration::from_secs(7)),
                        },
                        error: "HTTP 429".into(),
                    },
                ),
            ],
            expect![[r#"
                t=  0s AttemptStarted                           -> pending    [] request: dial
                t=  0s AttemptFailed(Transient { retry_after: Some(7s) }) -> failed     [] request: refuse, retry in 7s
            "#]],
        )
        .await;
    }

    #[tokio::test(start_paused = true)]
    async fn auth_and_permanent_are_not_retried_until_an_explicit_action() {
        check(
            &[
                (0, Event::AttemptStarted),
                (
                    0,
                    Event::AttemptFailed {
                        kind: FailureKind::Auth,
                        error: "HTTP 401".into(),
                    },
                ),
                (3600, Event::Start),
                (3600, Event::Reconnect),
                (3600, Event::AttemptStarted),
                (
                    3600,
                    Event::AttemptFailed {
                        kind: FailureKind::Permanent,
                        error: "HTTP 403".into(),
                    },
                ),
                (7200, Event::Reconnect),
            ],
            expect![[r#"
                t=  0s AttemptStarted                           -> pending    [] request: dial
                t=  0s AttemptFailed(Auth)                      -> needs_auth [DropTools, NotifyNeedsAuth] request: refuse NeedsAuth
                t=3600s Start                                    -> pending    [Dial] request: dial
                t=3600s Reconnect                                -> pending    [Dial] request: dial
                t=3600s AttemptStarted                           -> pending    [] request: dial
                t=3600s AttemptFailed(Permanent)                 -> failed     [DropTools] request: refuse Permanent
                t=7200s Reconnect                                -> pending    [Dial] request: dial
            "#]],
        )
        .await;
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_for_the_network_then_a_reset_backoff() {
        check(
            &[
                (0, Event::AttemptStarted),
                (0, Event::AttemptSucceeded),
                (10, Event::Dropped { error: "gone".into() }),
                (10, Event::AttemptStarted),
                (10, transient()),
                (10, Event::WaitingForNetwork { error: "waiting for the network".into() }),
                (11, Event::ResetBackoff),
            ],
            expect![[r#"
                t=  0s AttemptStarted                           -> pending    [] request: dial
                t=  0s AttemptSucceeded                         -> connected  [] request: ready
                t= 10s Dropped                                  -> failed     [] request: dial
                t= 10s AttemptStarted                           -> failed     [] request: dial
                t= 10s AttemptFailed(Transient { retry_after: None }) -> failed     [] request: refuse, retry in 1s
                t= 10s WaitingForNetwork { error: "waiting for the network" } -> failed     [] request: refuse, retry in 1s
                t= 11s ResetBackoff                             -> failed     [] request: dial
            "#]],
        )
        .await;
    }

    #[tokio::test(start_paused = true)]
    async fn explicit_disconnect_wins_over_an_attempt_in_flight() {
        check(
            &[
                (0, Event::AttemptStarted),
                (0, Event::Disconnect),
                (1, transient()),
                (2, Event::Start),
                (2, Event::AttemptStarted),
                (2, Event::AttemptSucceeded),
                (3, Event::Disconnect),
                (4, Event::Dropped { error: "late".into() }),
            ],
            expect![[r#"
                t=  0s AttemptStarted                           -> pending    [] request: dial
                t=  0s Disconnect                               -> disabled   [CancelAttempt, DropTools] request: refuse Disabled
                t=  1s AttemptFailed(Transient { retry_after: None }) -> disabled   [] request: refuse Disabled
                t=  2s Start                                    -> pending    [Dial] request: dial
                t=  2s AttemptStarted                           -> pending    [] request: dial
                t=  2s AttemptSucceeded                         -> connected  [] request: ready
                t=  3s Disconnect                               -> disabled   [Close, DropTools] request: refuse Disabled
                t=  4s Dropped                                  -> disabled   [] request: refuse Disabled
            "#]],
        )
        .await;
    }
}
