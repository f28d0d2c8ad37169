//! Sleep, wake and network changes (behaviour.md rules 11 and 12). The
//! sources (the OS's own in `os::power`: logind and netlink on Linux, the
//! suspend/resume and IP interface notifications on Windows; and the
//! clock-jump detector everywhere) only produce [`PowerEvent`]s;
//! the [`healer`] turns them into probes and reconnects (its driver, which
//! needs the pool, is `service/wake_driver.rs`). The pool never asks the OS
//! directly.

pub mod clock;
pub mod gate;
pub mod healer;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The events and the watcher trait are the OS room's (`os::power`), the
/// floor below, so that its backends name nothing above them.
pub use crate::os::power::{until_stopped, watcher, PowerEvent, PowerWatcher};

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
