//! Sleep, wake and network changes (behaviour.md rules 11 and 12). The
//! sources (the OS's own in `os::power`: logind and netlink on Linux, the
//! suspend/resume and IP interface notifications on Windows; and the
//! clock-jump detector everywhere) only produce [`PowerEvent`]s;
//! the [`healer`] turns them into probes and reconnects. The pool never asks
//! the OS directly.

pub mod clock;
pub mod driver;
pub mod gate;
pub mod healer;

use std::future::Future;
use std::pin::Pin;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PowerEvent {
    WillSleep,
    DidWake,
    NetworkChanged,
}

/// A source of power and network events.
pub trait PowerWatcher: Send + 'static {
    fn name(&self) -> &'static str;
    /// Runs until `stop` is cancelled or the source ends, sending events.
    fn run(
        self: Box<Self>,
        tx: mpsc::Sender<PowerEvent>,
        stop: CancellationToken,
    ) -> Pin<Box<dyn Future<Output = ()> + Send>>;
}

/// A watcher from its name and its loop, the one preamble every source
/// shares: the loop gets the events' sender and the stop token.
pub fn watcher<F, Fut>(name: &'static str, run: F) -> Box<dyn PowerWatcher>
where
    F: FnOnce(mpsc::Sender<PowerEvent>, CancellationToken) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    Box::new(FnWatcher { name, run })
}

struct FnWatcher<F> {
    name: &'static str,
    run: F,
}

impl<F, Fut> PowerWatcher for FnWatcher<F>
where
    F: FnOnce(mpsc::Sender<PowerEvent>, CancellationToken) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    fn name(&self) -> &'static str {
        self.name
    }

    fn run(
        self: Box<Self>,
        tx: mpsc::Sender<PowerEvent>,
        stop: CancellationToken,
    ) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin((self.run)(tx, stop))
    }
}

/// The next item of `next`, or `None` once `stop` is cancelled: the select
/// at the top of every source's loop.
pub async fn until_stopped<T>(stop: &CancellationToken, next: impl Future<Output = T>) -> Option<T> {
    tokio::select! {
        _ = stop.cancelled() => None,
        item = next => Some(item),
    }
}

/// The watchers of this platform: the OS's own (`os::power`) and the
/// clock-jump detector everywhere.
pub fn platform_watchers() -> Vec<Box<dyn PowerWatcher>> {
    let mut watchers = vec![clock::ClockJump::default().watcher()];
    watchers.extend(crate::os::power::watchers());
    watchers
}

/// Starts `watchers`; their events arrive on the returned receiver.
pub fn spawn(watchers: Vec<Box<dyn PowerWatcher>>, stop: CancellationToken) -> mpsc::Receiver<PowerEvent> {
    let (tx, rx) = mpsc::channel(64);
    for w in watchers {
        let name = w.name();
        let fut = w.run(tx.clone(), stop.clone());
        tokio::spawn(async move {
            fut.await;
            tracing::debug!("power watcher {name} ended");
        });
    }
    rx
}
