//! When the tray notifies, as a sans-IO state machine: status changes and
//! the clock go in, [`Notification`]s come out. The shell calls
//! [`Notifier::on_status`] for every status event, and [`Notifier::poll`]
//! at [`Notifier::next_deadline`].
//!
//! Three kinds, all rate-limited, so a flaky network never floods the desktop:
//! - a server enters `needs_auth` (behaviour.md rule 6): once per episode (until
//!   it connects or is disabled). Servers entering it within [`AUTH_BURST`]
//!   of each other share one notification, e.g. when one sign-in provider
//!   expires every token at once.
//! - a server that was connected is still not connected [`DOWN_GRACE`] after
//!   it dropped: the drop was not healed by the reconnects that followed.
//! - a tool is held back for approval (its description or input schema
//!   changed since the user approved it, or it is new under
//!   `approveNewTools: "ask"`): once per tool until it is approved (or goes),
//!   fed by [`Notifier::on_tools_held`]; tools held within [`HELD_BURST`]
//!   share one notification.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use mcpool_core::lifecycle::Status;

/// How long sign-in requests are gathered into one notification.
pub const AUTH_BURST: Duration = Duration::from_secs(2);
/// The least time between two sign-in notifications.
pub const AUTH_MIN_GAP: Duration = Duration::from_secs(60);
/// How long a dropped server gets to come back before the user hears of it.
pub const DOWN_GRACE: Duration = Duration::from_secs(60);
/// The least time between two "down" notifications.
pub const DOWN_MIN_GAP: Duration = Duration::from_secs(10 * 60);
/// How long held-back tools are gathered into one notification.
pub const HELD_BURST: Duration = Duration::from_secs(2);
/// The least time between two held-back tool notifications.
pub const HELD_MIN_GAP: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    pub title: String,
    pub body: String,
    /// The servers it is about, by name: activating the notification acts
    /// on the first.
    pub servers: Vec<String>,
    /// What activating it does.
    pub action: NoticeAction,
}

/// What a click on a notification does, to its first server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeAction {
    /// Open the dashboard at that server.
    OpenDashboard,
    /// Start signing that server in: the browser opens at its sign-in page.
    SignIn,
}

impl NoticeAction {
    /// The label of the notification's button.
    pub fn label(self) -> &'static str {
        match self {
            NoticeAction::OpenDashboard => "Open dashboard",
            NoticeAction::SignIn => "Sign in",
        }
    }
}

#[derive(Debug, Default)]
pub struct Notifier {
    /// [`DOWN_GRACE`] unless set with [`Notifier::with_down_grace`].
    down_grace: Option<Duration>,
    /// Servers in a `needs_auth` episode the user has been (or will be) told of.
    auth_episode: BTreeSet<String>,
    /// Of those, the ones not told yet.
    auth_queue: BTreeSet<String>,
    auth_due: Option<Instant>,
    last_auth: Option<Instant>,
    /// Servers that dropped from `connected`, and when.
    down_since: BTreeMap<String, Instant>,
    /// Past their grace, waiting for the rate limit.
    down_ready: BTreeSet<String>,
    last_down: Option<Instant>,
    /// Per server, the held-back tools the user has been (or will be) told of.
    held_told: BTreeMap<String, BTreeSet<String>>,
    /// Of those, the ones not told yet.
    held_queue: BTreeMap<String, BTreeSet<String>>,
    held_due: Option<Instant>,
    last_held: Option<Instant>,
    /// Per server, the held tools the scan quarantined (told as such).
    quarantined: BTreeMap<String, BTreeSet<String>>,
}

impl Notifier {
    /// A notifier that gives a dropped server `grace` (instead of
    /// [`DOWN_GRACE`]) to come back before the user hears of it.
    pub fn with_down_grace(grace: Duration) -> Notifier {
        Notifier {
            down_grace: Some(grace),
            ..Notifier::default()
        }
    }

    fn down_grace(&self) -> Duration {
        self.down_grace.unwrap_or(DOWN_GRACE)
    }

    pub fn on_status(&mut self, server: &str, old: Status, new: Status, now: Instant) -> Vec<Notification> {
        match new {
            Status::NeedsAuth => {
                self.stop_watching_down(server);
                if self.auth_episode.insert(server.to_string()) {
                    self.auth_queue.insert(server.to_string());
                    if self.auth_due.is_none() {
                        let burst_end = now + AUTH_BURST;
                        let gap_end = self.last_auth.map(|t| t + AUTH_MIN_GAP);
                        self.auth_due = Some(gap_end.map_or(burst_end, |g| g.max(burst_end)));
                    }
                }
            }
            Status::Connected | Status::Disabled => self.forget(server),
            Status::Failed | Status::Pending => {
                if old == Status::Connected {
                    self.down_since.entry(server.to_string()).or_insert(now);
                }
            }
        }
        self.poll(now)
    }

    /// The tools of `server` held back for approval now (all of them, as
    /// `/api/events` sends them): the ones not told of yet are queued; one
    /// that is no longer held (approved, or gone) may be told of again when
    /// it is next held.
    /// Which of `server`'s held tools the scan quarantined: told as found
    /// suspicious rather than as changed. Before [`Self::on_tools_held`].
    pub fn note_quarantined(&mut self, server: &str, tools: &[String]) {
        if tools.is_empty() {
            self.quarantined.remove(server);
        } else {
            self.quarantined
                .insert(server.to_string(), tools.iter().cloned().collect());
        }
    }

    pub fn on_tools_held(&mut self, server: &str, held: &[String], now: Instant) -> Vec<Notification> {
        let held: BTreeSet<String> = held.iter().cloned().collect();
        let told = self.held_told.remove(server).unwrap_or_default();
        let mut queue = self.held_queue.remove(server).unwrap_or_default();
        queue.retain(|t| held.contains(t));
        queue.extend(held.difference(&told).cloned());
        if !held.is_empty() {
            self.held_told.insert(server.to_string(), held);
        }
        if !queue.is_empty() {
            self.held_queue.insert(server.to_string(), queue);
            if self.held_due.is_none() {
                let burst_end = now + HELD_BURST;
                let gap_end = self.last_held.map(|t| t + HELD_MIN_GAP);
                self.held_due = Some(gap_end.map_or(burst_end, |g| g.max(burst_end)));
            }
        } else if self.held_queue.is_empty() {
            self.held_due = None;
        }
        self.poll(now)
    }

    /// The server is gone (removed from the config) or healthy: nothing pending for it.
    pub fn forget(&mut self, server: &str) {
        self.auth_episode.remove(server);
        self.auth_queue.remove(server);
        if self.auth_queue.is_empty() {
            self.auth_due = None;
        }
        self.stop_watching_down(server);
    }

    fn stop_watching_down(&mut self, server: &str) {
        self.down_since.remove(server);
        self.down_ready.remove(server);
    }

    /// The notifications due at `now`.
    pub fn poll(&mut self, now: Instant) -> Vec<Notification> {
        let mut out = Vec::new();
        if self.held_due.is_some_and(|due| now >= due) && !self.held_queue.is_empty() {
            out.push(held(&std::mem::take(&mut self.held_queue), &self.quarantined));
            self.held_due = None;
            self.last_held = Some(now);
        }
        if self.auth_due.is_some_and(|due| now >= due) && !self.auth_queue.is_empty() {
            out.push(needs_auth(&std::mem::take(&mut self.auth_queue)));
            self.auth_due = None;
            self.last_auth = Some(now);
        }
        let grace = self.down_grace();
        let graced: Vec<String> = self
            .down_since
            .iter()
            .filter(|(_, since)| now >= **since + grace)
            .map(|(name, _)| name.clone())
            .collect();
        for name in graced {
            self.down_since.remove(&name);
            self.down_ready.insert(name);
        }
        let gap_over = self.last_down.is_none_or(|t| now >= t + DOWN_MIN_GAP);
        if !self.down_ready.is_empty() && gap_over {
            out.push(down(&std::mem::take(&mut self.down_ready)));
            self.last_down = Some(now);
        }
        out
    }

    /// When [`poll`](Self::poll) next has something to say, if ever.
    pub fn next_deadline(&self) -> Option<Instant> {
        let grace = self.down_grace();
        let grace = self.down_since.values().map(|since| *since + grace);
        let ready = match (self.down_ready.is_empty(), self.last_down) {
            (false, Some(t)) => Some(t + DOWN_MIN_GAP),
            _ => None,
        };
        grace.chain(self.auth_due).chain(ready).chain(self.held_due).min()
    }
}

fn needs_auth(servers: &BTreeSet<String>) -> Notification {
    let (title, body) = match servers.len() {
        1 => (
            format!("{} needs sign-in", join(servers)),
            "Its tools are unavailable until you sign in; click to sign in in your browser.".to_string(),
        ),
        n => (
            format!("{n} servers need sign-in"),
            format!(
                "{}: their tools are unavailable until you sign in; click to sign in to {}, and the others from the tray menu.",
                join(servers),
                servers.first().map(String::as_str).unwrap_or_default()
            ),
        ),
    };
    Notification {
        title,
        body,
        servers: servers.iter().cloned().collect(),
        action: NoticeAction::SignIn,
    }
}

fn down(servers: &BTreeSet<String>) -> Notification {
    let (title, body) = match servers.len() {
        1 => (
            format!("{} is down", join(servers)),
            "mcpool could not reconnect it; its tools stay listed and it retries when next used.".into(),
        ),
        n => (
            format!("{n} servers are down"),
            format!(
                "{}: mcpool could not reconnect them; their tools stay listed and they retry when next used.",
                join(servers)
            ),
        ),
    };
    Notification {
        title,
        body,
        servers: servers.iter().cloned().collect(),
        action: NoticeAction::OpenDashboard,
    }
}

fn held(tools: &BTreeMap<String, BTreeSet<String>>, quarantined: &BTreeMap<String, BTreeSet<String>>) -> Notification {
    let all: Vec<(&String, &String)> = tools.iter().flat_map(|(s, t)| t.iter().map(move |t| (s, t))).collect();
    let scanned = |(s, t): &(&String, &String)| quarantined.get(*s).is_some_and(|q| q.contains(*t));
    let (title, body) = match all.as_slice() {
        [one @ (server, tool)] if scanned(one) => (
            format!("{server}: tool {tool} held back"),
            "mcpool's scan found signs of an attack in its definition; agents do not see it until you allow it in the dashboard.".to_string(),
        ),
        [(server, tool)] => (
            format!("{server}: tool {tool} needs your approval"),
            "Its description or input schema is new or changed since you approved it; agents do not see it until you approve it in the dashboard.".to_string(),
        ),
        _ if all.iter().any(scanned) => (
            format!("{} tools held back", all.len()),
            format!(
                "{}: new, changed, or found suspicious by mcpool's scan; agents do not see them until you review them in the dashboard.",
                all.iter().map(|(s, t)| format!("{s}/{t}")).collect::<Vec<_>>().join(", ")
            ),
        ),
        _ => (
            format!("{} tools need your approval", all.len()),
            format!(
                "{}: their descriptions or input schemas are new or changed since you approved them; agents do not see them until you approve them in the dashboard.",
                all.iter().map(|(s, t)| format!("{s}/{t}")).collect::<Vec<_>>().join(", ")
            ),
        ),
    };
    Notification {
        title,
        body,
        servers: tools.keys().cloned().collect(),
        action: NoticeAction::OpenDashboard,
    }
}

fn join(servers: &BTreeSet<String>) -> String {
    servers.iter().map(String::as_str).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
#[path = "notify_tests.rs"]
mod tests;
