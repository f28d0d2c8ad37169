//! The transition table of [`Lifecycle`]: one arm per (state, event)
//! pair that changes something; every other pair is ignored.

use tokio::time::Instant;

use super::{Effect, Event, FailureKind, Lifecycle, Lists, Offer, Retry, Source, State};
use rmcp::model::Tool;

impl Lifecycle {
    pub(super) fn next(&self, state: State, event: Event, now: Instant) -> (State, Vec<Effect>) {
        use State::*;
        match (state, event) {
            // Nothing to start: connected, or an attempt is on its way.
            (
                state @ (Connected { .. } | Pending { attempting: true, .. } | Failed { attempting: true, .. }),
                Event::Start,
            ) => (state, vec![]),
            (state, Event::Start) => (
                Pending {
                    offer: offer_of(state),
                    error: None,
                    attempting: false,
                },
                vec![Effect::Dial],
            ),

            (
                Pending {
                    offer: None,
                    error,
                    attempting,
                },
                Event::CacheLoaded { tools },
            ) => (
                Pending {
                    offer: Some(cached(tools)),
                    error,
                    attempting,
                },
                vec![Effect::ListsChanged],
            ),
            (
                Failed {
                    offer: None,
                    error,
                    retry,
                    attempting,
                },
                Event::CacheLoaded { tools },
            ) => (
                Failed {
                    offer: Some(cached(tools).kept()),
                    error,
                    retry,
                    attempting,
                },
                vec![Effect::ListsChanged],
            ),

            (Pending { offer, error, .. }, Event::AttemptStarted) => (
                Pending {
                    offer,
                    error,
                    attempting: true,
                },
                vec![],
            ),
            (
                Failed {
                    offer, error, retry, ..
                },
                Event::AttemptStarted,
            ) => (
                Failed {
                    offer,
                    error,
                    retry,
                    attempting: true,
                },
                vec![],
            ),

            (state @ (Disabled | Connected { .. }), Event::AttemptSucceeded { .. }) => (state, vec![]),
            (state, Event::AttemptSucceeded { lists }) => {
                let before = offer_of(state);
                let mut effects = Vec::new();
                if !lists.tools.is_empty() && before.as_ref().is_none_or(|o| o.lists.tools != lists.tools) {
                    effects.push(Effect::StoreTools);
                }
                effects.push(Effect::ListsChanged);
                (Connected { lists }, effects)
            }

            // Late outcomes of an attempt that an explicit action overtook.
            (state @ (Disabled | Connected { .. }), Event::AttemptFailed { .. }) => (state, vec![]),
            (state, Event::AttemptFailed { kind, error }) => {
                let failures = match &state {
                    Failed { retry, .. } => retry.failures,
                    _ => 0,
                };
                let offer = offer_of(state);
                match kind {
                    FailureKind::Auth => (NeedsAuth { error }, dropped(offer, [Effect::NotifyNeedsAuth])),
                    FailureKind::Permanent => (FailedPermanently { error }, dropped(offer, [])),
                    FailureKind::Transient { retry_after } => {
                        let failures = failures.saturating_add(1);
                        let retry = Retry {
                            failures,
                            at: Some(now + self.backoff.with_hint(failures, retry_after)),
                        };
                        let state = Failed {
                            offer: offer.map(Offer::kept),
                            error,
                            retry,
                            attempting: false,
                        };
                        (state, vec![])
                    }
                }
            }

            (Connected { lists }, Event::Relisted { lists: new }) => {
                let mut effects = Vec::new();
                if new != lists {
                    if !new.tools.is_empty() && new.tools != lists.tools {
                        effects.push(Effect::StoreTools);
                    }
                    effects.push(Effect::ListsChanged);
                }
                (Connected { lists: new }, effects)
            }

            (Connected { lists }, Event::Dropped { error }) => (
                Failed {
                    offer: Some(Offer {
                        lists,
                        source: Source::Kept,
                    }),
                    error,
                    retry: Retry::default(),
                    attempting: false,
                },
                vec![Effect::Close, Effect::ListsChanged],
            ),

            (Connected { .. }, Event::Unauthorized { error }) => (
                NeedsAuth { error },
                vec![Effect::Close, Effect::ListsChanged, Effect::NotifyNeedsAuth],
            ),

            (state, Event::Disconnect) => {
                let mut effects = leave(&state);
                if offer_of(state).is_some() {
                    effects.push(Effect::ListsChanged);
                }
                (Disabled, effects)
            }

            (state, Event::Reconnect) => {
                let mut effects = leave(&state);
                effects.push(Effect::Dial);
                let error = match &state {
                    Disabled => None,
                    other => other_error(other),
                };
                let state = Pending {
                    offer: offer_of(state),
                    error,
                    attempting: false,
                };
                (state, effects)
            }

            // The backoff stays: requests meanwhile still follow rules 3-5.
            (Pending { offer, attempting, .. }, Event::WaitingForNetwork { error }) => (
                Failed {
                    offer: offer.map(Offer::kept),
                    error,
                    retry: Retry::default(),
                    attempting,
                },
                vec![],
            ),
            (
                Failed {
                    offer,
                    retry,
                    attempting,
                    ..
                },
                Event::WaitingForNetwork { error },
            ) => (
                Failed {
                    offer: offer.map(Offer::kept),
                    error,
                    retry,
                    attempting,
                },
                vec![],
            ),

            (
                Failed {
                    offer,
                    error,
                    attempting,
                    ..
                },
                Event::ResetBackoff,
            ) => (
                Failed {
                    offer,
                    error,
                    retry: Retry::default(),
                    attempting,
                },
                vec![],
            ),

            (state, Event::Stop) => {
                let mut effects = leave(&state);
                if offer_of(state).is_some() {
                    effects.push(Effect::ListsChanged);
                }
                (Stopped, effects)
            }

            // Anything else does not apply to the state it finds.
            (state, _) => (state, vec![]),
        }
    }
}

/// The lists a state offers, as they would be kept in another state.
fn offer_of(state: State) -> Option<Offer> {
    match state {
        State::Connected { lists } => Some(Offer {
            lists,
            source: Source::Live,
        }),
        State::Pending { offer, .. } | State::Failed { offer, .. } => offer,
        _ => None,
    }
}

fn other_error(state: &State) -> Option<String> {
    match state {
        State::Pending { error, .. } => error.clone(),
        State::Failed { error, .. } | State::FailedPermanently { error } | State::NeedsAuth { error } => {
            Some(error.clone())
        }
        _ => None,
    }
}

fn cached(tools: Vec<Tool>) -> Offer {
    Offer {
        lists: Lists {
            tools,
            ..Lists::default()
        },
        source: Source::Cached,
    }
}

/// What leaving `state` for an explicit action must undo.
fn leave(state: &State) -> Vec<Effect> {
    match state {
        State::Pending { attempting: true, .. } | State::Failed { attempting: true, .. } => {
            vec![Effect::CancelAttempt]
        }
        State::Connected { .. } => vec![Effect::Close],
        _ => vec![],
    }
}

/// The effects of a failure that drops what was offered.
fn dropped(offer: Option<Offer>, then: impl IntoIterator<Item = Effect>) -> Vec<Effect> {
    let mut effects: Vec<Effect> = offer.map(|_| Effect::ListsChanged).into_iter().collect();
    effects.extend(then);
    effects
}
