//! Supervisor's own dialing: one attempt shared by concurrent requests,
//! and the tools offered from the disk cache before the first answer.
//! These need the machine, the attempts and the live connection under the
//! one lock (an admission and the start of an attempt are one step), so
//! they stay methods of [`Supervisor`], in this file beside `mod.rs`.

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::cache;
use super::keepalive::Keepalive;
use super::listen::Listen;
use super::live::{close, list_all, Live};
use super::watch::{self, Watch};
use super::{Inner, Link, Supervisor, Unavailable};
use crate::config::ServerSpec;
use crate::errors::{attempt_failed_sentence, refusal_sentence, ConnectError};
use crate::lifecycle::{Admission, Event};
use crate::os::process::ProcessTree;
use crate::secrets::redact;
use crate::upstream::ledger::ProgressLedger;
use crate::upstream::{self, UpstreamHandler};

/// Local servers starting at once (spawn, `initialize`, first lists), in
/// the whole process: four per core, at least eight. Five hundred servers
/// started together on two cores would each get a sliver of the machine
/// and miss their startup timeout; queued, each gets its timeout to itself
/// (the wait is not counted) and the queue drains at the machine's pace.
/// A remote server's start is network time, not this machine's: it never
/// waits here.
static LOCAL_STARTS: std::sync::LazyLock<tokio::sync::Semaphore> = std::sync::LazyLock::new(|| {
    let cores = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
    tokio::sync::Semaphore::new((cores * 4).max(8))
});

impl Supervisor {
    pub(super) fn spawn_attempt(self: &Arc<Self>) {
        let this = self.clone();
        tokio::spawn(async move {
            this.load_cache().await;
            let mut outcome = this.peer().await;
            // Rule 3's exception (behaviour.md, next to rule 11): a server
            // that has never connected has no tools to call, so no request
            // would ever reconnect it. It is retried here, as the backoff
            // allows, until it connects (then rule 3 holds), fails for
            // good, or the user acts.
            while outcome.is_err() {
                let Some(at) = this.never_connected_retry() else {
                    break;
                };
                tokio::time::sleep_until(at).await;
                this.lock().next_cause = Some("start");
                outcome = this.peer().await;
            }
        });
    }

    /// When a server that never connected (no tools offered, live or
    /// cached) may be tried again after a transient failure; `None` for
    /// any other state.
    fn never_connected_retry(&self) -> Option<Instant> {
        let inner = self.lock();
        if inner.live.is_some() || inner.machine.lists().is_some() {
            return None;
        }
        inner.machine.retry_at()
    }

    /// A live peer for a request: the current connection, or one made now
    /// (shared with concurrent requests), or the reason there is none.
    pub async fn peer(self: &Arc<Self>) -> Result<Link, Unavailable> {
        let seen = {
            let inner = self.lock();
            match self.admission(&inner) {
                Ok(Some(ready)) => return Ok(ready),
                Ok(None) => inner.attempts.done,
                Err(u) => return Err(u),
            }
        };
        let turn = self.attempt_lock.clone().lock_owned().await;
        let (cancel, spec) = {
            let mut inner = self.lock();
            if inner.attempts.done != seen {
                // An attempt ended while this request waited: share its outcome.
                if let Some(live) = &inner.live {
                    return Ok(live.link());
                }
                let sentence = inner
                    .attempts
                    .failure
                    .clone()
                    .unwrap_or_else(|| format!("Server '{}' is not connected.", self.name));
                return Err(Unavailable { sentence });
            }
            if let Some(ready) = self.admission(&inner)? {
                return Ok(ready);
            }
            // Under the same lock as the admission: no explicit action can
            // come between, so the machine is attempting exactly while
            // `attempts.cancel` is set.
            let cancel = CancellationToken::new();
            inner.attempts.cancel = Some(cancel.clone());
            self.apply(&mut inner, Event::AttemptStarted);
            let cause = inner.next_cause.take().unwrap_or("demand");
            self.ctx
                .activity
                .record(crate::activity::Entry::server_event(&self.name, "connect", cause, None));
            (cancel, inner.spec.clone())
        };
        // The attempt runs on a task of its own that holds the turn: a
        // request that stops waiting (its future dropped) neither abandons
        // the attempt, which would leave the machine attempting with no
        // attempt behind it, nor lets a second one start beside it.
        let this = self.clone();
        let attempt = tokio::spawn(async move {
            let _turn = turn;
            this.attempt(cancel, spec).await
        });
        attempt.await.unwrap_or_else(|e| {
            Err(Unavailable {
                sentence: format!("Server '{}' could not be connected: {e}.", self.name),
            })
        })
    }

    pub(super) fn admission(&self, inner: &Inner) -> Result<Option<Link>, Unavailable> {
        match inner.machine.admit(Instant::now()) {
            Admission::Ready => match &inner.live {
                Some(live) => Ok(Some(live.link())),
                None => Ok(None),
            },
            Admission::Dial => Ok(None),
            Admission::Refuse(r) => Err(Unavailable {
                sentence: refusal_sentence(&self.name, &r),
            }),
        }
    }

    /// One attempt, started by `peer`, which holds the attempt lock.
    async fn attempt(self: &Arc<Self>, cancel: CancellationToken, spec: ServerSpec) -> Result<Link, Unavailable> {
        tracing::info!(server = %self.name, "connecting");
        self.notify_status();
        let (signals_tx, signals_rx) = mpsc::unbounded_channel();
        let listen_signals = signals_tx.clone();
        let ledger = Arc::new(ProgressLedger::default());
        let handler = UpstreamHandler {
            server: self.name.clone(),
            hub: self.hub.clone(),
            signals: signals_tx,
            ledger: ledger.clone(),
            extensions: None,
        };
        let signin = self.ctx.oauth.signin(&spec);
        if let Some(s) = &signin {
            s.load().await;
        }
        let resolved = cache::resolve(&self.ctx, &spec).await;
        let secret_values = resolved.as_ref().map(|r| r.secret_values.clone()).unwrap_or_default();
        let cache_key = resolved
            .as_ref()
            .ok()
            .and_then(|r| self.disk().key(r, || self.signin().credential_id()));
        let local = spec.transport.kind() == "stdio";
        let work = async {
            let resolved = resolved?;
            let log = self.ctx.logs.as_ref().map(|l| l.for_server(&self.name));
            let established = upstream::connect(&resolved.spec, handler, signin, log).await?;
            let lists = list_all(&established.peer)
                .await
                .map_err(|e| ConnectError::from_transport(&e))?;
            Ok::<_, ConnectError>((established, lists))
        };
        // A local start waits for its turn first; its timeout runs from then.
        let started = async {
            let _turn = if local { LOCAL_STARTS.acquire().await.ok() } else { None };
            tokio::time::timeout(spec.timeout, work).await
        };
        let outcome = tokio::select! {
            biased;
            _ = cancel.cancelled() => None,
            r = started => Some(r.unwrap_or(Err(ConnectError::Timeout(spec.timeout)))),
        };
        let mut inner = self.lock();
        // Cancelled by an explicit action, which already set the state and
        // counted this attempt as finished (under this lock, so this is
        // exact): whatever it came to is nobody's now, not even when it came
        // to something just before the action. Applied, its failure would
        // put a backoff on the state the action made, and the request that
        // came after it would be refused.
        let outcome = match outcome {
            Some(outcome) if !cancel.is_cancelled() => outcome,
            abandoned => {
                drop(inner);
                if let Some(Ok((established, _))) = abandoned {
                    close_unused(established, ledger);
                }
                self.notify_status();
                return Err(Unavailable {
                    sentence: super::abandoned_sentence(&self.name),
                });
            }
        };
        inner.attempts.done += 1;
        // Attempts are serialised by `attempt_lock`, so the token is ours.
        inner.attempts.cancel = None;
        let result = match outcome {
            Ok((established, _)) if !inner.machine.accepts_connection() => {
                drop(inner);
                close_unused(established, ledger);
                return Err(Unavailable {
                    sentence: super::abandoned_sentence(&self.name),
                });
            }
            Ok((established, (lists, warnings))) => {
                inner.generation += 1;
                let generation = inner.generation;
                let info = established.peer.peer_info();
                let peer = established.peer.clone();
                let cancel = established.running.cancellation_token();
                let exit = established.group.as_ref().map(ProcessTree::exit_watch);
                let remote = !matches!(inner.spec.transport, crate::config::TransportSpec::Stdio { .. });
                let live = Live {
                    peer: peer.clone(),
                    ledger: ledger.clone(),
                    activity: Arc::default(),
                    listen: Listen::open(self, generation, &peer, listen_signals),
                    info: info.clone(),
                    generation,
                    cancel: Some(cancel),
                    group: established.group,
                };
                let link = live.link();
                inner.live = Some(live);
                inner.info = info;
                inner.cache_key = cache_key;
                inner.secret_values = secret_values;
                inner.attempts.failure = None;
                inner.recent.connected(established.stderr.clone());
                inner.recent.listed(&self.name, warnings);
                let tools = lists.tools.len();
                let applied = self.apply(&mut inner, Event::AttemptSucceeded { lists });
                drop(inner);
                // What a person watching `serve` waits for after "connecting".
                tracing::info!(server = %self.name, tools, "connected");
                Watch::new(self, generation).spawn(established.running, exit, established.stderr, signals_rx);
                if remote {
                    Keepalive::start(self, &link);
                }
                watch::renew_subscriptions(&self.hub, &self.name, &peer);
                self.notify_status();
                if applied.lists_changed {
                    self.notify_lists();
                }
                return Ok(link);
            }
            Err(err) => {
                let error = redact(&err.to_string(), &secret_values);
                inner.recent.failed(&err);
                let kind_event = Event::AttemptFailed {
                    kind: err.kind(),
                    error: error.clone(),
                };
                let applied = self.apply(&mut inner, kind_event);
                let retry_in = inner
                    .machine
                    .retry_at()
                    .map(|at| at.saturating_duration_since(Instant::now()));
                let sentence = redact(&attempt_failed_sentence(&self.name, &err, retry_in), &secret_values);
                inner.attempts.failure = Some(sentence.clone());
                drop(inner);
                tracing::warn!(server = %self.name, "connection attempt failed: {error}");
                if applied.lists_changed {
                    self.notify_lists();
                }
                Err(Unavailable { sentence })
            }
        };
        self.notify_status();
        result
    }

    /// At start: offer the last live tools from disk until the server answers.
    pub(super) async fn load_cache(self: &Arc<Self>) {
        let disk = self.disk();
        if !disk.enabled() {
            return;
        }
        let spec = self.spec();
        // The signed-in credential is part of the identity.
        if let Some(signin) = self.ctx.oauth.signin(&spec) {
            signin.load().await;
        }
        let Ok(resolved) = cache::resolve(&self.ctx, &spec).await else {
            return;
        };
        let Some(k) = disk.key(&resolved, || self.signin().credential_id()) else {
            return;
        };
        let Some(tools) = disk.load(&k).await else { return };
        // Written by an older mcpool, a cache may hold what agents would reject.
        let checked = crate::tool_check::check(tools.iter().map(crate::tool_check::raw).collect());
        let tools = checked.tools;
        let offered = {
            let mut inner = self.lock();
            if !checked.warnings.is_empty() {
                inner.recent.listed(&self.name, checked.warnings);
            }
            // The machine takes them only before anything else is offered.
            let offered = self.apply(&mut inner, Event::CacheLoaded { tools }).lists_changed;
            if offered {
                inner.cache_key = Some(k);
            }
            offered
        };
        if offered {
            self.ctx.cache_hits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.notify_lists();
        }
    }
}

/// Closes a connection made for an attempt whose outcome is nobody's, and
/// stops its process.
fn close_unused(established: upstream::Established, ledger: Arc<ProgressLedger>) {
    tokio::spawn(close(Live {
        peer: established.peer,
        ledger,
        activity: Arc::default(),
        listen: None,
        info: None,
        generation: 0,
        cancel: Some(established.running.cancellation_token()),
        group: established.group,
    }));
}
