//! What the tray app needs from this desktop (`mcpool doctor`'s check 7),
//! asked of the platform's own services: `linux.rs` (and the other free
//! desktops) looks for a tray host and a notification server on the D-Bus
//! session bus; `windows.rs` for the WebView2 runtime (the notification
//! area and toasts are the system's own); `macos.rs` has nothing to look
//! for (the menu bar, Notification Center and WebKit come with the system).

#[cfg(all(unix, not(target_os = "macos")))]
mod linux;
#[cfg(all(unix, not(target_os = "macos")))]
use linux as backend;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as backend;
#[cfg(any(windows, test))]
mod windows;
#[cfg(windows)]
use windows as backend;

/// One thing the tray app needs, as found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesktopCheck {
    /// The check's short name (`tray`, `notifications`, `webview2`).
    pub check: &'static str,
    /// What was found, or what is missing.
    pub detail: String,
    /// `None` when it is there; else what to do about it.
    pub hint: Option<&'static str>,
}

impl DesktopCheck {
    pub fn found(check: &'static str, detail: impl Into<String>) -> DesktopCheck {
        DesktopCheck {
            check,
            detail: detail.into(),
            hint: None,
        }
    }

    pub fn missing(check: &'static str, detail: impl Into<String>, hint: &'static str) -> DesktopCheck {
        DesktopCheck {
            check,
            detail: detail.into(),
            hint: Some(hint),
        }
    }
}

/// What this desktop offers the tray app, one entry per need.
pub async fn checks() -> Vec<DesktopCheck> {
    backend::checks().await
}
