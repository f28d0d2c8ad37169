//! The operating system's sleep, wake and network-change notifications, as
//! [`PowerWatcher`]s that feed `wake/` (its driver and healer never ask the
//! OS). One backend per platform: `linux.rs` (logind's `PrepareForSleep`,
//! rtnetlink), `windows.rs` (`PowerRegisterSuspendResumeNotification`,
//! `NotifyIpInterfaceChange`); none yet on macOS, where the clock-jump
//! detector of `wake/clock.rs` is the only source.

#[cfg(target_os = "linux")]
mod linux;
#[cfg(windows)]
pub mod windows;

use crate::wake::PowerWatcher;

/// This platform's OS watchers.
pub fn watchers() -> Vec<Box<dyn PowerWatcher>> {
    #[cfg(target_os = "linux")]
    return linux::watchers();
    #[cfg(windows)]
    return windows::watchers();
    #[cfg(not(any(target_os = "linux", windows)))]
    Vec::new()
}
