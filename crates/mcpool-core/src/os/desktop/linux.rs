//! The free desktops: a tray host (`org.kde.StatusNotifierWatcher`) and
//! notifications (`org.freedesktop.Notifications`, running or activatable)
//! on the D-Bus session bus.

use std::time::Duration;

use super::DesktopCheck;

/// How long the session bus may take to answer.
const BUS_WAIT: Duration = Duration::from_secs(3);

/// What is looked for: the check, the bus name, what its absence is, and
/// what to do.
const WANTED: [(&str, &str, &str, &str); 2] = [
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

pub async fn checks() -> Vec<DesktopCheck> {
    let names = match tokio::time::timeout(BUS_WAIT, bus_names()).await {
        Ok(Ok(names)) => names,
        Ok(Err(e)) => {
            return WANTED
                .iter()
                .map(|(check, _, _, hint)| DesktopCheck::missing(check, format!("no D-Bus session bus: {e}"), hint))
                .collect()
        }
        Err(_) => {
            return WANTED
                .iter()
                .map(|(check, _, _, hint)| {
                    DesktopCheck::missing(check, "the D-Bus session bus did not answer within 3 s", hint)
                })
                .collect()
        }
    };
    WANTED
        .iter()
        .map(|(check, name, missing, hint)| {
            if names.running.iter().any(|n| n == name) {
                DesktopCheck::found(check, format!("{name} is on the session bus"))
            } else if names.activatable.iter().any(|n| n == name) {
                DesktopCheck::found(check, format!("{name} starts on demand on the session bus"))
            } else {
                DesktopCheck::missing(check, *missing, hint)
            }
        })
        .collect()
}

struct BusNames {
    running: Vec<String>,
    activatable: Vec<String>,
}

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
