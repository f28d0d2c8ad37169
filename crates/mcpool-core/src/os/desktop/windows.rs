//! Windows: the notification area and toasts are the system's own; the
//! dashboard window needs the WebView2 runtime, whose version its installer
//! records (Microsoft's "Detect if a WebView2 Runtime is already
//! installed": the `pv` value of the runtime's EdgeUpdate client key, per
//! machine or per user). The texts are a pure function of that version, so
//! they are unit-tested on every platform.

use super::DesktopCheck;

#[cfg(windows)]
pub async fn checks() -> Vec<DesktopCheck> {
    from_webview2(webview2::version())
}

/// The checks from the WebView2 runtime's version (none when it is not
/// installed).
pub fn from_webview2(webview2: Option<String>) -> Vec<DesktopCheck> {
    let runtime = match webview2 {
        Some(version) => DesktopCheck::found("webview2", format!("the WebView2 runtime {version} is installed")),
        None => DesktopCheck::missing(
            "webview2",
            "no WebView2 runtime (Microsoft Edge WebView2) is installed",
            "the dashboard window of mcpool-app needs it: install the Evergreen runtime from Microsoft (Windows 11 has it); the tray icon, `mcpool serve` and the dashboard in a browser work without it",
        ),
    };
    vec![
        DesktopCheck::found("tray", "the notification area and toasts are built into Windows"),
        runtime,
    ]
}

#[cfg(windows)]
mod webview2 {
    use windows_sys::Win32::System::Registry::{
        RegGetValueW, HKEY, HKEY_CURRENT_USER, HKEY_LOCAL_MACHINE, RRF_RT_REG_SZ,
    };

    const CLIENT: &str = r"Microsoft\EdgeUpdate\Clients\{F3017226-FE2A-4295-8BDF-00C3A9A7E4C5}";

    pub fn version() -> Option<String> {
        [
            (HKEY_LOCAL_MACHINE, format!(r"SOFTWARE\WOW6432Node\{CLIENT}")),
            (HKEY_LOCAL_MACHINE, format!(r"SOFTWARE\{CLIENT}")),
            (HKEY_CURRENT_USER, format!(r"Software\{CLIENT}")),
        ]
        .into_iter()
        .find_map(|(root, key)| read(root, &key))
        // The installer writes an empty or 0.0.0.0 version when it removed the runtime.
        .filter(|v| !v.is_empty() && v != "0.0.0.0")
    }

    fn read(root: HKEY, key: &str) -> Option<String> {
        let wide = |s: &str| s.encode_utf16().chain(Some(0)).collect::<Vec<u16>>();
        let (key, name) = (wide(key), wide("pv"));
        let mut buf = [0u16; 64];
        let mut len = std::mem::size_of_val(&buf) as u32;
        // SAFETY: NUL-terminated names; `buf` holds `len` bytes.
        let code = unsafe {
            RegGetValueW(
                root,
                key.as_ptr(),
                name.as_ptr(),
                RRF_RT_REG_SZ,
                std::ptr::null_mut(),
                buf.as_mut_ptr().cast(),
                &mut len,
            )
        };
        if code != 0 {
            return None;
        }
        let text = &buf[..(len as usize / 2).min(buf.len())];
        Some(String::from_utf16_lossy(text).trim_end_matches('\0').to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_desktop_check_is_the_webview2_runtime() {
        let text = |checks: &[DesktopCheck]| checks.iter().map(|c| format!("{c:?}")).collect::<Vec<_>>().join("\n");
        let with = from_webview2(Some("131.0.2903.86".into()));
        assert!(
            text(&with).contains("the WebView2 runtime 131.0.2903.86 is installed"),
            "{}",
            text(&with)
        );
        assert!(with.iter().all(|c| c.hint.is_none()), "{}", text(&with));
        assert!(!text(&with).contains("D-Bus"), "{}", text(&with));
        let without = from_webview2(None);
        assert!(text(&without).contains("no WebView2 runtime"), "{}", text(&without));
        assert!(without.iter().any(|c| c.hint.is_some()), "{}", text(&without));
    }
}
