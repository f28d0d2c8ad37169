//! Windows: the window needs the WebView2 runtime, and an app started from
//! the Start menu, the Run key or Explorer has no stderr, so a fatal
//! sentence is shown in a message box.

use std::os::windows::io::AsRawHandle;

/// Windows always has a desktop for the tray app.
pub fn no_display() -> Option<String> {
    None
}

/// When the WebView2 runtime is not installed (asked of its loader).
pub fn no_webview() -> Option<String> {
    tauri::webview_version()
        .err()
        .map(|e| format!("no WebView2 runtime is installed: {e}"))
}

pub fn show_fatal(sentence: &str) {
    if !std::io::stderr().as_raw_handle().is_null() {
        return;
    }
    use windows_sys::Win32::UI::WindowsAndMessaging::{MessageBoxW, MB_ICONERROR, MB_OK};
    let wide = |s: &str| s.encode_utf16().chain(Some(0)).collect::<Vec<u16>>();
    let (text, title) = (wide(sentence), wide("mcpool"));
    // SAFETY: both strings are NUL-terminated UTF-16 that live across the
    // call; no owner window.
    unsafe {
        MessageBoxW(
            std::ptr::null_mut(),
            text.as_ptr(),
            title.as_ptr(),
            MB_OK | MB_ICONERROR,
        )
    };
}
