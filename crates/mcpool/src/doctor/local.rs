//! This desktop (checks 6 and 7): the agents pointed at mcpool, a tray host and a
//! notification server on the session bus.

use std::net::SocketAddr;
use std::time::{Duration, SystemTime};

use mcpool_core::agent_config::{self as agents, Change, Client, Dirs};
use mcpool_core::search::ListingMode;

use super::report::Check;

/// How long the session bus may take to answer.
const BUS_WAIT: Duration = Duration::from_secs(3);

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

/// Check 7: a tray host (`org.kde.StatusNotifierWatcher`) and notifications
/// (`org.freedesktop.Notifications`, running or activatable) on the
/// session bus.
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
