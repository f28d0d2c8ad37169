//! macOS: the window server, the menu bar and WebKit come with every
//! logged-in session, so there is nothing to ask before Tauri starts (it
//! says itself when the session has no window server). Never built here:
//! the tray app is not part of `scripts/macos.sh check`.

pub fn no_display() -> Option<String> {
    None
}

/// WKWebView is part of the system.
pub fn no_webview() -> Option<String> {
    None
}

/// An app opened from the Finder has no terminal; its stderr goes to the
/// unified log (Console.app), where the sentence already is.
pub fn show_fatal(_sentence: &str) {}
