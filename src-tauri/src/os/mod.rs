//! The tray app's own boundary with the desktop, one file per platform
//! (the pool's boundaries are `mcpool_core::os`): why no window can open
//! here, why no web view can, and where a fatal sentence goes besides
//! stderr.

#[cfg(all(unix, not(target_os = "macos")))]
mod linux;
#[cfg(all(unix, not(target_os = "macos")))]
use linux as backend;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as backend;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as backend;

/// Why no window can open here, if none can; asked before Tauri starts,
/// which would panic instead.
pub fn no_display() -> Option<String> {
    backend::no_display()
}

/// Why no web view can be made here, if none can; asked before a window
/// is made, since one made without it never comes up and says nothing.
pub fn no_webview() -> Option<String> {
    backend::no_webview()
}

/// Shows `sentence`, already on stderr, where the person sees it when the
/// app has no stderr of its own.
pub fn show_fatal(sentence: &str) {
    backend::show_fatal(sentence);
}
