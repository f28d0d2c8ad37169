//! The operating system's sleep, wake and network-change notifications, as
//! [`PowerWatcher`]s (the trait and [`PowerEvent`] are defined here, so no backend names a room above `os/`) that feed `wake/` (its driver and healer never ask the
//! OS). One backend per platform: `linux.rs` (logind's `PrepareForSleep`,
//! rtnetlink), `windows.rs` (`PowerRegisterSuspendResumeNotification`,
//! `NotifyIpInterfaceChange`), `macos.rs` (IOKit's `IORegisterForSystemPower`,
//! the System Configuration dynamic store). The clock-jump detector of
//! `wake/clock.rs` runs beside them everywhere.

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(windows)]
pub mod windows;

use std::future::Future;
use std::pin::Pin;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// This platform's OS watchers.
pub fn watchers() -> Vec<Box<dyn PowerWatcher>> {
    #[cfg(target_os = "linux")]
    return linux::watchers();
    #[cfg(windows)]
    return windows::watchers();
    #[cfg(target_os = "macos")]
    return macos::watchers();
    #[cfg(not(any(target_os = "linux", windows, target_os = "macos")))]
    Vec::new()
}

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
