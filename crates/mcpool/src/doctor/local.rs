//! This desktop (checks 6 and 7): the agents pointed at mcpool, and what the
//! tray app needs of the desktop.

use std::net::SocketAddr;
use std::time::SystemTime;

use mcpool_core::agent_config::{self as agents, Change, Client, Dirs};
use mcpool_core::search::ListingMode;

use super::report::Check;

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

/// Check 7: what the tray app needs from this desktop, as the platform's
/// `os::desktop` finds it (a tray host and notifications on the session
/// bus, the WebView2 runtime, or nothing to look for on macOS).
pub async fn desktop() -> Vec<Check> {
    mcpool_core::os::desktop::checks()
        .await
        .into_iter()
        .map(|c| match c.hint {
            None => Check::ok(c.check, c.detail),
            Some(hint) => Check::warn(c.check, c.detail, hint),
        })
        .collect()
}
