//! The tray menu as a value: `menu(snapshot, endpoint_url)` builds it, the
//! shell renders it, and a click comes back as the item's id, which
//! [`Action::parse`] turns into what to do.

use std::fmt;

use mcpool_core::lifecycle::Status;
use mcpool_core::supervisor::ServerSnapshot;

/// An error line longer than this is cut in the menu (the dashboard has all).
const ERROR_CHARS: usize = 60;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Menu {
    pub items: Vec<Item>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// Text that does nothing when clicked.
    Label(String),
    /// A clickable entry; `enabled: false` shows it greyed out.
    Action {
        action: Action,
        text: String,
        enabled: bool,
    },
    Submenu {
        text: String,
        items: Vec<Item>,
    },
    Separator,
}

/// What a click asks for. Its [`id`](Action::id) is the menu item id, stable
/// across rebuilds so an open menu's click still means the same thing.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Action {
    Reconnect(String),
    Disconnect(String),
    /// Sign the server in: the browser opens at its sign-in page.
    SignIn(String),
    /// Forget the server's tokens.
    SignOut(String),
    Enable(String),
    ReconnectAllFailed,
    OpenDashboard,
    CopyEndpointUrl,
    Quit,
}

impl Action {
    pub fn id(&self) -> String {
        match self {
            Action::Reconnect(name) => format!("reconnect:{name}"),
            Action::Disconnect(name) => format!("disconnect:{name}"),
            Action::SignIn(name) => format!("signin:{name}"),
            Action::SignOut(name) => format!("signout:{name}"),
            Action::Enable(name) => format!("enable:{name}"),
            Action::ReconnectAllFailed => "reconnect-all-failed".into(),
            Action::OpenDashboard => "open-dashboard".into(),
            Action::CopyEndpointUrl => "copy-endpoint-url".into(),
            Action::Quit => "quit".into(),
        }
    }

    /// The action behind a menu item id; `None` for an id this menu never made.
    pub fn parse(id: &str) -> Option<Action> {
        // Split at the first colon only: a server name may hold colons.
        if let Some((verb, name)) = id.split_once(':') {
            let name = name.to_string();
            return match verb {
                "reconnect" => Some(Action::Reconnect(name)),
                "disconnect" => Some(Action::Disconnect(name)),
                "signin" => Some(Action::SignIn(name)),
                "signout" => Some(Action::SignOut(name)),
                "enable" => Some(Action::Enable(name)),
                _ => None,
            };
        }
        match id {
            "reconnect-all-failed" => Some(Action::ReconnectAllFailed),
            "open-dashboard" => Some(Action::OpenDashboard),
            "copy-endpoint-url" => Some(Action::CopyEndpointUrl),
            "quit" => Some(Action::Quit),
            _ => None,
        }
    }
}

fn action(action: Action, text: &str, enabled: bool) -> Item {
    Item::Action {
        action,
        text: text.to_string(),
        enabled,
    }
}

/// The whole tray menu for `servers` (in the pool's order, which is by name).
pub fn menu(servers: &[ServerSnapshot], endpoint_url: &str) -> Menu {
    // The summary heads the menu: the tooltip says the same where the
    // desktop shows tooltips, but an AppIndicator (Linux) has none.
    let mut items = vec![Item::Label(crate::tooltip(servers))];
    if !servers.is_empty() {
        items.push(Item::Separator);
    }
    for server in servers {
        items.push(Item::Submenu {
            text: status_line(server),
            items: server_items(server),
        });
    }
    items.push(Item::Separator);
    let any_failed = servers.iter().any(|s| s.status == Status::Failed);
    items.push(action(Action::ReconnectAllFailed, "Reconnect all failed", any_failed));
    items.push(Item::Separator);
    items.push(action(Action::OpenDashboard, "Open dashboard", true));
    items.push(action(
        Action::CopyEndpointUrl,
        &format!("Copy endpoint URL ({endpoint_url})"),
        true,
    ));
    items.push(Item::Separator);
    items.push(action(Action::Quit, "Quit mcpool", true));
    Menu { items }
}

/// Only the actions that make sense for the server's status.
fn server_items(s: &ServerSnapshot) -> Vec<Item> {
    let name = &s.name;
    let mut items = Vec::new();
    if let Some(error) = s.error.as_deref().and_then(|e| e.lines().next()) {
        items.push(Item::Label(shorten(error.trim(), ERROR_CHARS)));
    }
    match s.status {
        Status::Connected => {
            items.push(action(Action::Reconnect(name.clone()), "Reconnect", true));
            items.push(action(Action::Disconnect(name.clone()), "Disconnect", true));
        }
        // An attempt is running: another would join it, so only stopping it helps.
        Status::Pending => items.push(action(Action::Disconnect(name.clone()), "Disconnect", true)),
        Status::Failed => {
            items.push(action(Action::Reconnect(name.clone()), "Reconnect now", true));
            items.push(action(Action::Disconnect(name.clone()), "Disconnect", true));
        }
        Status::NeedsAuth => {
            items.push(action(
                Action::SignIn(name.clone()),
                &format!("Sign in to {name}…"),
                true,
            ));
            items.push(action(Action::Disconnect(name.clone()), "Disconnect", true));
        }
        Status::Disabled => items.push(action(Action::Enable(name.clone()), "Enable", true)),
    }
    if s.auth.as_ref().is_some_and(|a| a.signed_in) {
        items.push(action(Action::SignOut(name.clone()), "Sign out", true));
    }
    items
}

/// `github: connected, 12 tools`, as the user reads it.
pub fn status_line(s: &ServerSnapshot) -> String {
    let tools = plural(s.tool_count, "tool");
    let state = match s.status {
        Status::Connected => format!("connected, {tools}"),
        Status::Pending if s.tool_count > 0 => format!("connecting… ({tools} cached)"),
        Status::Pending => "connecting…".to_string(),
        Status::Failed if s.waiting_for_network => format!("waiting for the network ({tools} kept)"),
        // No "retry in N s" countdown here: a line that changes every
        // second would rebuild the menu under the user's pointer (GTK closes
        // an open menu that is replaced). The dashboard shows the time.
        Status::Failed => format!("failed ({tools} kept)"),
        Status::NeedsAuth => "needs sign-in".to_string(),
        Status::Disabled => "disabled".to_string(),
    };
    format!("{}: {state}", s.name)
}

pub(crate) fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max - 1).collect();
    format!("{}…", cut.trim_end())
}

/// One line per item, submenus indented: how tests compare menus.
impl fmt::Display for Menu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_items(f, &self.items, 0)
    }
}

fn write_items(f: &mut fmt::Formatter<'_>, items: &[Item], depth: usize) -> fmt::Result {
    let indent = "    ".repeat(depth);
    for item in items {
        match item {
            Item::Label(text) => writeln!(f, "{indent}{text}")?,
            Item::Action { action, text, enabled } => {
                let grey = if *enabled { "" } else { " (disabled)" };
                writeln!(f, "{indent}[{}] {text}{grey}", action.id())?;
            }
            Item::Submenu { text, items } => {
                writeln!(f, "{indent}{text} >")?;
                write_items(f, items, depth + 1)?;
            }
            Item::Separator => writeln!(f, "{indent}---")?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use expect_test::{expect, Expect};

    use super::*;
    use crate::fixtures::{failed, server, signed_in};

    const URL: &str = "http://127.0.0.1:7410/mcp";

    fn check(servers: &[ServerSnapshot], expect: Expect) {
        expect.assert_eq(&menu(servers, URL).to_string());
    }

    #[test]
    fn empty_config() {
        check(
            &[],
            expect![[r#"
                mcpool: no servers configured
                ---
                [reconnect-all-failed] Reconnect all failed (disabled)
                ---
                [open-dashboard] Open dashboard
                [copy-endpoint-url] Copy endpoint URL (http://127.0.0.1:7410/mcp)
                ---
                [quit] Quit mcpool
            "#]],
        );
    }

    #[test]
    fn all_connected() {
        check(
            &[
                server("everything", Status::Connected, 12),
                server("fs", Status::Connected, 1),
            ],
            expect![[r#"
                mcpool: 2 of 2 servers connected
                ---
                everything: connected, 12 tools >
                    [reconnect:everything] Reconnect
                    [disconnect:everything] Disconnect
                fs: connected, 1 tool >
                    [reconnect:fs] Reconnect
                    [disconnect:fs] Disconnect
                ---
                [reconnect-all-failed] Reconnect all failed (disabled)
                ---
                [open-dashboard] Open dashboard
                [copy-endpoint-url] Copy endpoint URL (http://127.0.0.1:7410/mcp)
                ---
                [quit] Quit mcpool
            "#]],
        );
    }

    #[test]
    fn every_status() {
        let mut retrying = failed(
            "api",
            4,
            "https://api.example.com answered 503 Service Unavailable, and this line goes on and on\nmore",
        );
        retrying.retry_in_ms = Some(3_200);
        let mut offline = failed("remote", 2, "waiting for the network to reach api.example.com");
        offline.waiting_for_network = true;
        check(
            &[
                retrying,
                server("booting", Status::Pending, 0),
                server("cached", Status::Pending, 3),
                server("fs", Status::Connected, 5),
                server("linear", Status::NeedsAuth, 0),
                server("off", Status::Disabled, 0),
                offline,
                signed_in("sentry", 7),
            ],
            expect![[r#"
                mcpool: 2 of 7 servers connected, 1 needs sign-in
                ---
                api: failed (4 tools kept) >
                    https://api.example.com answered 503 Service Unavailable, a…
                    [reconnect:api] Reconnect now
                    [disconnect:api] Disconnect
                booting: connecting… >
                    [disconnect:booting] Disconnect
                cached: connecting… (3 tools cached) >
                    [disconnect:cached] Disconnect
                fs: connected, 5 tools >
                    [reconnect:fs] Reconnect
                    [disconnect:fs] Disconnect
                linear: needs sign-in >
                    [signin:linear] Sign in to linear…
                    [disconnect:linear] Disconnect
                off: disabled >
                    [enable:off] Enable
                remote: waiting for the network (2 tools kept) >
                    waiting for the network to reach api.example.com
                    [reconnect:remote] Reconnect now
                    [disconnect:remote] Disconnect
                sentry: connected, 7 tools >
                    [reconnect:sentry] Reconnect
                    [disconnect:sentry] Disconnect
                    [signout:sentry] Sign out
                ---
                [reconnect-all-failed] Reconnect all failed
                ---
                [open-dashboard] Open dashboard
                [copy-endpoint-url] Copy endpoint URL (http://127.0.0.1:7410/mcp)
                ---
                [quit] Quit mcpool
            "#]],
        );
    }

    #[test]
    fn the_menu_is_a_value() {
        let servers = [server("fs", Status::Connected, 1)];
        assert_eq!(menu(&servers, URL), menu(&servers, URL));
        assert_ne!(menu(&servers, URL), menu(&[], URL));
    }

    #[test]
    fn ids_round_trip() {
        let actions = [
            Action::Reconnect("a:b".into()),
            Action::Disconnect("fs".into()),
            Action::Enable("x".into()),
            Action::ReconnectAllFailed,
            Action::OpenDashboard,
            Action::CopyEndpointUrl,
            Action::SignIn("a:b".into()),
            Action::SignOut("c".into()),
            Action::Quit,
        ];
        for a in actions {
            assert_eq!(Action::parse(&a.id()), Some(a));
        }
        assert_eq!(Action::parse("launch:fs"), None);
        assert_eq!(Action::parse("nonsense"), None);
    }

    /// Every clickable id in a menu parses back, so no click is ever lost.
    #[test]
    fn every_item_id_parses() {
        fn walk(items: &[Item]) {
            for item in items {
                match item {
                    Item::Action { action, .. } => assert_eq!(Action::parse(&action.id()).as_ref(), Some(action)),
                    Item::Submenu { items, .. } => walk(items),
                    Item::Label(_) | Item::Separator => {}
                }
            }
        }
        let servers = [
            server("a", Status::Connected, 1),
            failed("b", 1, "x"),
            server("c", Status::NeedsAuth, 0),
            server("d", Status::Disabled, 0),
            server("e", Status::Pending, 0),
        ];
        walk(&menu(&servers, URL).items);
    }

    /// A backoff counting down changes no line: the menu is not rebuilt
    /// (which would close it under the user's pointer) every second.
    #[test]
    fn a_backoff_countdown_leaves_the_menu_unchanged() {
        let mut earlier = failed("api", 4, "HTTP 503");
        earlier.retry_in_ms = Some(29_000);
        let mut later = earlier.clone();
        later.retry_in_ms = Some(3_000);
        assert_eq!(menu(&[earlier.clone()], URL), menu(&[later], URL));
        // A real change still shows.
        let mut healed = earlier.clone();
        healed.status = Status::Connected;
        assert_ne!(menu(&[earlier], URL), menu(&[healed], URL));
    }
}
