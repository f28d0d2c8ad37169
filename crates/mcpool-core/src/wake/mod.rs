//! Sleep, wake and network changes (behaviour.md rules 11 and 12). The OS sources
//! (logind, netlink, a clock-jump detector) only produce [`PowerEvent`]s;
//! the [`healer`] turns them into probes and reconnects. The pool never asks
//! the OS directly.

pub mod clock;
pub mod driver;
pub mod gate;
pub mod healer;
#[cfg(target_os = "linux")]
pub mod logind;
#[cfg(target_os = "linux")]
pub mod netlink;

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
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;
}

/// The watchers of this platform: logind and netlink on Linux, and the
/// clock-jump detector everywhere.
pub fn platform_watchers() -> Vec<Box<dyn PowerWatcher>> {
    let mut watchers: Vec<Box<dyn PowerWatcher>> = vec![Box::new(clock::ClockJump::default())];
    #[cfg(target_os = "linux")]
    {
        watchers.push(Box::new(logind::Logind));
        watchers.push(Box::new(netlink::Netlink));
    }
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
