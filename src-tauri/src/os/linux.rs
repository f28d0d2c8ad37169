//! Linux (and the other GTK desktops): a display must be named and open.

pub fn no_display() -> Option<String> {
    if std::env::var_os("DISPLAY").is_none() && std::env::var_os("WAYLAND_DISPLAY").is_none() {
        return Some("no display (neither DISPLAY nor WAYLAND_DISPLAY is set)".into());
    }
    // A display that is named but cannot be opened (a stale DISPLAY over
    // ssh): GTK would fail inside Tauri with a panic; say it plainly
    // instead. Tauri's own init later finds GTK ready.
    if gtk::init().is_err() {
        let named = ["WAYLAND_DISPLAY", "DISPLAY"]
            .iter()
            .filter_map(|v| std::env::var(v).ok().map(|d| format!("{v}={d}")))
            .collect::<Vec<_>>()
            .join(", ");
        return Some(format!("cannot open the display ({named})"));
    }
    None
}

/// WebKitGTK is linked into the app: where it runs, the web view does.
pub fn no_webview() -> Option<String> {
    None
}

/// A desktop app started from a menu keeps its stderr in the session's
/// journal, where the sentence already is.
pub fn show_fatal(_sentence: &str) {}
