//! This desktop (checks 6 and 7): the agents pointed at mcpool, a tray host and a
//! notification server on the session bus.

use std::net::SocketAddr;
use std::time::SystemTime;

use mcpool_core::agent_config::{self as agents, Change, Client, Dirs};
use mcpool_core::search::ListingMode;

use super::report::Check;

/// How long the session bus may take to answer.
#[cfg(not(windows))]
const BUS_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// Check 6: each client `mcpool connect` knows that is installed here: whether its
/// user config has an `mcpool` entry for this instance (any tool listing).
/// Clients not installed are left out.
pub fn clients(listen: SocketAddr, token: Option<&str>, token_fixed: bool) -> Vec<Check> {
    let dirs = Dirs::from_env();
    let conn = crate::connect::connection(listen, token.unwrap_or_default().to_string(), token_fixed);
    let installed: Vec<Client> = Client::ALL.into_iter().filter(|c| dirs.found(*c)).collect();
    if installed.is_empty() {
        return vec![Check::ok(
            "clients",
            "no known agent is installed here (`mcpool connect CLIENT` prints what to add)",
        )];
    }
    installed
        .into_iter()
        .map(|client| {
            let check = format!("client {}", client.name());
            let write = format!("run `mcpool connect {} --write`", client.name());
            let modes = [
                client.default_listing(),
                ListingMode::All,
                ListingMode::Search,
                ListingMode::Auto,
            ];
            let mut plans = modes
                .iter()
                .map(|mode| agents::plan(client, &dirs, &conn.with_listing(*mode), &[], false, SystemTime::now()));
            let first = match plans.next() {
                Some(Ok(plan)) => plan,
                Some(Err(e)) => return Check::warn(check, e.to_string(), format!("fix the file, then {write}")),
                None => return Check::ok(check, "nothing to check"),
            };
            let path = first.path.display().to_string();
            if first.up_to_date() || plans.any(|p| p.is_ok_and(|p| p.up_to_date())) {
                return Check::ok(check, format!("{path} points at {}", conn.url));
            }
            if first.changes.contains(&Change::Update) {
                Check::warn(
                    check,
                    format!("the mcpool entry in {path} points elsewhere or holds an old token"),
                    write,
                )
            } else {
                Check::warn(check, format!("no mcpool entry in {path}"), write)
            }
        })
        .collect()
}

/// Check 7: what the tray app needs from this desktop. On Windows the
/// notification area and toasts are the system's own; the window needs the
/// WebView2 runtime ([`windows_desktop`]).
#[cfg(windows)]
pub async fn desktop() -> Vec<Check> {
    windows_desktop(webview2::version())
}

/// Check 7 on Windows, from the WebView2 runtime's version (none when it is
/// not installed).
#[cfg_attr(not(windows), allow(dead_code))]
pub fn windows_desktop(webview2: Option<String>) -> Vec<Check> {
    let runtime = match webview2 {
        Some(version) => Check::ok("webview2", format!("the WebView2 runtime {version} is installed")),
        None => Check::warn(
            "webview2",
            "no WebView2 runtime (Microsoft Edge WebView2) is installed",
            "the dashboard window of mcpool-app needs it: install the Evergreen runtime from Microsoft (Windows 11 has it); the tray icon, `mcpool serve` and the dashboard in a browser work without it",
        ),
    };
    vec![
        Check::ok("tray", "the notification area and toasts are built into Windows"),
        runtime,
    ]
}

/// The WebView2 runtime's version as its installer records it (Microsoft's
/// "Detect if a WebView2 Runtime is already installed": the `pv` value of
/// the runtime's EdgeUpdate client key, per machine or per user).
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

/// Check 7: a tray host (`org.kde.StatusNotifierWatcher`) and notifications
/// (`org.freedesktop.Notifications`, running or activatable) on the
/// session bus.
#[cfg(not(windows))]
pub async fn desktop() -> Vec<Check> {
    let wanted = [
        (
            "tray",
            "org.kde.StatusNotifierWatcher",
            "no tray host (org.kde.StatusNotifierWatcher) on the session bus",
            "the tray icon needs one (KDE, or GNOME with the AppIndicator extension); `mcpool serve` works without it",
        ),
        (
            "notifications",
            "org.freedesktop.Notifications",
            "no notification server (org.freedesktop.Notifications) on the session bus",
            "install or start one (your desktop's, or dunst/mako); `mcpool serve` works without it",
        ),
    ];
    let names = match tokio::time::timeout(BUS_WAIT, bus_names()).await {
        Ok(Ok(names)) => names,
        Ok(Err(e)) => {
            return wanted
                .iter()
                .map(|(check, _, _, hint)| Check::warn(*check, format!("no D-Bus session bus: {e}"), *hint))
                .collect()
        }
        Err(_) => {
            return wanted
                .iter()
                .map(|(check, _, _, hint)| {
                    Check::warn(*check, "the D-Bus session bus did not answer within 3 s", *hint)
                })
                .collect()
        }
    };
    wanted
        .iter()
        .map(|(check, name, missing, hint)| {
            if names.running.iter().any(|n| n == name) {
                Check::ok(*check, format!("{name} is on the session bus"))
            } else if names.activatable.iter().any(|n| n == name) {
                Check::ok(*check, format!("{name} starts on demand on the session bus"))
            } else {
                Check::warn(*check, *missing, *hint)
            }
        })
        .collect()
}

#[cfg(not(windows))]
struct BusNames {
    running: Vec<String>,
    activatable: Vec<String>,
}

#[cfg(not(windows))]
async fn bus_names() -> zbus::Result<BusNames> {
    let connection = zbus::Connection::session().await?;
    let bus = zbus::fdo::DBusProxy::new(&connection).await?;
    let running = bus.list_names().await?.into_iter().map(|n| n.to_string()).collect();
    let activatable = bus
        .list_activatable_names()
        .await?
        .into_iter()
        .map(|n| n.to_string())
        .collect();
    Ok(BusNames { running, activatable })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_windows_the_desktop_check_is_the_webview2_runtime() {
        let with = windows_desktop(Some("131.0.2903.86".into()));
        let text = |checks: &[Check]| checks.iter().map(|c| format!("{c:?}")).collect::<Vec<_>>().join("\n");
        assert!(
            text(&with).contains("the WebView2 runtime 131.0.2903.86 is installed"),
            "{}",
            text(&with)
        );
        assert!(!text(&with).contains("D-Bus"), "{}", text(&with));
        let without = windows_desktop(None);
        assert!(text(&without).contains("no WebView2 runtime"), "{}", text(&without));
    }
}
