//! The tray icon and tooltip: one glance says whether the agents' tools work.

use mcpool_core::lifecycle::Status;
use mcpool_core::supervisor::ServerSnapshot;

use crate::menu::plural;

/// Which icon the tray shows. Only enabled servers count; a server still on
/// its first attempt (`pending`) counts as fine, so a launch does not flash.
///
/// Precedence, first match wins:
/// 1. [`NothingReachable`](TrayIcon::NothingReachable): some enabled server
///    failed and none is connected or still connecting: every tool call that
///    needs a live server fails (offline, a broken config).
/// 2. [`NeedsSignIn`](TrayIcon::NeedsSignIn): a server waits for the user to
///    sign in; only the user can fix it, so it outranks a failure that heals
///    on its own.
/// 3. [`SomeFailedToolsKept`](TrayIcon::SomeFailedToolsKept): some server is
///    down; its tools are still offered and it reconnects when next used.
/// 4. [`AllConnected`](TrayIcon::AllConnected): everything else, including an
///    empty config or one with every server disabled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrayIcon {
    AllConnected,
    SomeFailedToolsKept,
    NeedsSignIn,
    NothingReachable,
}

pub fn icon(servers: &[ServerSnapshot]) -> TrayIcon {
    let count = |status: Status| servers.iter().filter(|s| s.status == status).count();
    let (connected, pending, failed, needs_auth) = (
        count(Status::Connected),
        count(Status::Pending),
        count(Status::Failed),
        count(Status::NeedsAuth),
    );
    if failed > 0 && connected == 0 && pending == 0 {
        TrayIcon::NothingReachable
    } else if needs_auth > 0 {
        TrayIcon::NeedsSignIn
    } else if failed > 0 {
        TrayIcon::SomeFailedToolsKept
    } else {
        TrayIcon::AllConnected
    }
}

/// `4 of 5 servers connected`, with what needs the user appended.
pub fn tooltip(servers: &[ServerSnapshot]) -> String {
    let enabled = servers.iter().filter(|s| s.status != Status::Disabled).count();
    if servers.is_empty() {
        return "mcpool: no servers configured".into();
    }
    if enabled == 0 {
        return "mcpool: every server is disabled".into();
    }
    let connected = servers.iter().filter(|s| s.status == Status::Connected).count();
    let mut text = format!("mcpool: {connected} of {} connected", plural(enabled, "server"));
    let needs_auth = servers.iter().filter(|s| s.status == Status::NeedsAuth).count();
    if needs_auth > 0 {
        let verb = if needs_auth == 1 { "needs" } else { "need" };
        text.push_str(&format!(", {needs_auth} {verb} sign-in"));
    }
    text
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;
    use crate::fixtures::{failed, server};

    /// One row per snapshot: its servers' statuses, the icon and the tooltip.
    #[test]
    fn table() {
        use Status::*;
        let cases: Vec<Vec<ServerSnapshot>> = vec![
            vec![],
            vec![server("a", Disabled, 0)],
            vec![server("a", Connected, 1)],
            vec![server("a", Pending, 0), server("b", Pending, 0)],
            vec![server("a", Connected, 1), failed("b", 2, "exited")],
            vec![server("a", Pending, 1), failed("b", 2, "exited")],
            vec![failed("a", 1, "dns"), failed("b", 2, "dns")],
            vec![failed("a", 1, "dns"), server("b", NeedsAuth, 0)],
            vec![
                server("a", Connected, 1),
                server("b", NeedsAuth, 0),
                failed("c", 1, "x"),
            ],
            vec![server("a", NeedsAuth, 0), server("b", NeedsAuth, 0)],
            vec![
                server("a", Connected, 1),
                server("b", Connected, 1),
                server("c", Connected, 1),
                server("d", Connected, 1),
                failed("e", 1, "x"),
                server("f", Disabled, 0),
            ],
        ];
        let mut out = String::new();
        for servers in &cases {
            let statuses: Vec<&str> = servers.iter().map(|s| s.status.as_str()).collect();
            out.push_str(&format!(
                "{:<64} {:<20} {}\n",
                format!("[{}]", statuses.join(", ")),
                format!("{:?}", icon(servers)),
                tooltip(servers)
            ));
        }
        expect![[r#"
            []                                                               AllConnected         mcpool: no servers configured
            [disabled]                                                       AllConnected         mcpool: every server is disabled
            [connected]                                                      AllConnected         mcpool: 1 of 1 server connected
            [pending, pending]                                               AllConnected         mcpool: 0 of 2 servers connected
            [connected, failed]                                              SomeFailedToolsKept  mcpool: 1 of 2 servers connected
            [pending, failed]                                                SomeFailedToolsKept  mcpool: 0 of 2 servers connected
            [failed, failed]                                                 NothingReachable     mcpool: 0 of 2 servers connected
            [failed, needs_auth]                                             NothingReachable     mcpool: 0 of 2 servers connected, 1 needs sign-in
            [connected, needs_auth, failed]                                  NeedsSignIn          mcpool: 1 of 3 servers connected, 1 needs sign-in
            [needs_auth, needs_auth]                                         NeedsSignIn          mcpool: 0 of 2 servers connected, 2 need sign-in
            [connected, connected, connected, connected, failed, disabled]   SomeFailedToolsKept  mcpool: 4 of 5 servers connected
        "#]]
        .assert_eq(&out);
    }
}
