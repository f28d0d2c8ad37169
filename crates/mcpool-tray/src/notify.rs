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
mod tests {
    use expect_test::{expect, Expect};

    use super::*;
    use Status::*;

    enum Step {
        /// At this second, `server` went from one status to another.
        Change(u64, &'static str, Status, Status),
        /// At this second, the shell polls.
        Poll(u64),
        /// At this second, these tools of `server` are held back.
        Held(u64, &'static str, &'static [&'static str]),
    }
    use Step::{Change, Held, Poll};

    /// Replays `script` and lists what was notified when, and the deadline after.
    fn check(script: &[Step], expect: Expect) {
        check_with(Notifier::default(), script, expect);
    }

    fn check_with(mut notifier: Notifier, script: &[Step], expect: Expect) {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut out = String::new();
        for step in script {
            let notes = match *step {
                Change(s, server, old, new) => {
                    out.push_str(&format!("{s:>4}s {server}: {old} -> {new}\n"));
                    notifier.on_status(server, old, new, at(s))
                }
                Poll(s) => {
                    out.push_str(&format!("{s:>4}s poll\n"));
                    notifier.poll(at(s))
                }
                Held(s, server, tools) => {
                    out.push_str(&format!("{s:>4}s {server}: held {tools:?}\n"));
                    let tools: Vec<String> = tools.iter().map(|t| t.to_string()).collect();
                    notifier.on_tools_held(server, &tools, at(s))
                }
            };
            for n in notes {
                out.push_str(&format!(
                    "      NOTIFY {} | {} | {} {}\n",
                    n.title,
                    n.body,
                    n.action.label(),
                    n.servers[0]
                ));
            }
        }
        match notifier.next_deadline() {
            Some(d) => out.push_str(&format!("next deadline {}s\n", (d - t0).as_secs())),
            None => out.push_str("no deadline\n"),
        }
        expect.assert_eq(&out);
    }

    #[test]
    fn one_sign_in_notification_per_episode() {
        check(
            &[
                Change(0, "github", Connected, NeedsAuth),
                Poll(1),
                Poll(2),
                // The user reconnects without signing in: same episode, no repeat.
                Change(100, "github", NeedsAuth, Pending),
                Change(101, "github", Pending, NeedsAuth),
                Poll(200),
                // Signed in, then the token expires again: a new episode.
                Change(300, "github", NeedsAuth, Connected),
                Change(400, "github", Connected, NeedsAuth),
                Poll(402),
            ],
            expect![[r#"
                   0s github: connected -> needs_auth
                   1s poll
                   2s poll
                      NOTIFY github needs sign-in | Its tools are unavailable until you sign in; click to sign in in your browser. | Sign in github
                 100s github: needs_auth -> pending
                 101s github: pending -> needs_auth
                 200s poll
                 300s github: needs_auth -> connected
                 400s github: connected -> needs_auth
                 402s poll
                      NOTIFY github needs sign-in | Its tools are unavailable until you sign in; click to sign in in your browser. | Sign in github
                no deadline
            "#]],
        );
    }

    #[test]
    fn a_burst_gives_one_summary() {
        check(
            &[
                Change(0, "github", Connected, NeedsAuth),
                Change(0, "linear", Connected, NeedsAuth),
                Change(1, "notion", Pending, NeedsAuth),
                Change(1, "sentry", Connected, NeedsAuth),
                Poll(2),
            ],
            expect![[r#"
                   0s github: connected -> needs_auth
                   0s linear: connected -> needs_auth
                   1s notion: pending -> needs_auth
                   1s sentry: connected -> needs_auth
                   2s poll
                      NOTIFY 4 servers need sign-in | github, linear, notion, sentry: their tools are unavailable until you sign in; click to sign in to github, and the others from the tray menu. | Sign in github
                no deadline
            "#]],
        );
    }

    #[test]
    fn sign_in_notifications_are_rate_limited() {
        check(
            &[
                Change(0, "github", Connected, NeedsAuth),
                Poll(2),
                Change(10, "linear", Connected, NeedsAuth),
                Poll(12),
                Change(30, "notion", Connected, NeedsAuth),
                Poll(61),
                Poll(62),
            ],
            expect![[r#"
                   0s github: connected -> needs_auth
                   2s poll
                      NOTIFY github needs sign-in | Its tools are unavailable until you sign in; click to sign in in your browser. | Sign in github
                  10s linear: connected -> needs_auth
                  12s poll
                  30s notion: connected -> needs_auth
                  61s poll
                  62s poll
                      NOTIFY 2 servers need sign-in | linear, notion: their tools are unavailable until you sign in; click to sign in to linear, and the others from the tray menu. | Sign in linear
                no deadline
            "#]],
        );
    }

    #[test]
    fn a_server_fixed_before_the_burst_ends_is_not_mentioned() {
        check(
            &[
                Change(0, "github", Connected, NeedsAuth),
                Change(1, "github", NeedsAuth, Disabled),
                Poll(2),
            ],
            expect![[r#"
                   0s github: connected -> needs_auth
                   1s github: needs_auth -> disabled
                   2s poll
                no deadline
            "#]],
        );
    }

    #[test]
    fn a_drop_healed_within_the_grace_is_silent() {
        check(
            &[
                Change(0, "fs", Connected, Failed),
                Change(5, "fs", Failed, Pending),
                Change(6, "fs", Pending, Connected),
                Poll(120),
            ],
            expect![[r#"
                   0s fs: connected -> failed
                   5s fs: failed -> pending
                   6s fs: pending -> connected
                 120s poll
                no deadline
            "#]],
        );
    }

    #[test]
    fn the_down_grace_can_be_shortened() {
        check_with(
            Notifier::with_down_grace(Duration::from_secs(5)),
            &[Change(0, "fs", Connected, Failed), Poll(4), Poll(5)],
            expect![[r#"
                   0s fs: connected -> failed
                   4s poll
                   5s poll
                      NOTIFY fs is down | mcpool could not reconnect it; its tools stay listed and it retries when next used. | Open dashboard fs
                no deadline
            "#]],
        );
    }

    #[test]
    fn a_server_that_stays_down_gets_one_short_notice() {
        check(
            &[
                Change(0, "fs", Connected, Failed),
                Change(10, "fs", Failed, Pending),
                Change(12, "fs", Pending, Failed),
                Poll(59),
                Poll(60),
                Poll(3000),
            ],
            expect![[r#"
                   0s fs: connected -> failed
                  10s fs: failed -> pending
                  12s fs: pending -> failed
                  59s poll
                  60s poll
                      NOTIFY fs is down | mcpool could not reconnect it; its tools stay listed and it retries when next used. | Open dashboard fs
                3000s poll
                no deadline
            "#]],
        );
    }

    #[test]
    fn down_notices_are_rate_limited_and_gathered() {
        check(
            &[
                Change(0, "fs", Connected, Failed),
                Poll(60),
                Change(100, "api", Connected, Failed),
                Change(110, "git", Connected, Failed),
                Poll(170),
                // api comes back while waiting for the rate limit: not mentioned.
                Change(300, "api", Failed, Connected),
                Poll(660),
            ],
            expect![[r#"
                   0s fs: connected -> failed
                  60s poll
                      NOTIFY fs is down | mcpool could not reconnect it; its tools stay listed and it retries when next used. | Open dashboard fs
                 100s api: connected -> failed
                 110s git: connected -> failed
                 170s poll
                 300s api: failed -> connected
                 660s poll
                      NOTIFY git is down | mcpool could not reconnect it; its tools stay listed and it retries when next used. | Open dashboard git
                no deadline
            "#]],
        );
    }

    #[test]
    fn a_server_that_never_connected_is_not_down() {
        check(
            &[Change(0, "fs", Pending, Failed), Poll(600)],
            expect![[r#"
                   0s fs: pending -> failed
                 600s poll
                no deadline
            "#]],
        );
    }

    #[test]
    fn a_tool_the_scan_quarantined_is_told_as_held_back_not_as_changed() {
        let mut notifier = Notifier::default();
        let start = Instant::now();
        notifier.note_quarantined("p", &["add".to_string()]);
        let mut told = notifier.on_tools_held("p", &["add".to_string()], start);
        told.extend(notifier.poll(start + Duration::from_secs(5)));
        let titles: Vec<(&str, &str)> = told.iter().map(|n| (n.title.as_str(), n.body.as_str())).collect();
        assert_eq!(
            titles,
            [(
                "p: tool add held back",
                "mcpool's scan found signs of an attack in its definition; agents do not see it until you allow it in the dashboard."
            )]
        );
        // With a changed one beside it: one notice for both, in words that fit both.
        notifier.note_quarantined("q", &["x".to_string()]);
        let mut told = notifier.on_tools_held(
            "q",
            &["x".to_string(), "y".to_string()],
            start + Duration::from_secs(600),
        );
        told.extend(notifier.poll(start + Duration::from_secs(700)));
        assert_eq!(told.len(), 1, "{told:?}");
        assert_eq!(told[0].title, "2 tools held back");
    }

    #[test]
    fn a_held_tool_is_told_once_until_approved() {
        check(
            &[
                Held(0, "fs", &["write"]),
                Poll(2),
                // Changed again while held, or listed again: no repeat.
                Held(10, "fs", &["write"]),
                Poll(100),
                // Approved (no longer held), then changed again: told again.
                Held(200, "fs", &[]),
                Held(300, "fs", &["write"]),
                Poll(302),
            ],
            expect![[r#"
                   0s fs: held ["write"]
                   2s poll
                      NOTIFY fs: tool write needs your approval | Its description or input schema is new or changed since you approved it; agents do not see it until you approve it in the dashboard. | Open dashboard fs
                  10s fs: held ["write"]
                 100s poll
                 200s fs: held []
                 300s fs: held ["write"]
                 302s poll
                      NOTIFY fs: tool write needs your approval | Its description or input schema is new or changed since you approved it; agents do not see it until you approve it in the dashboard. | Open dashboard fs
                no deadline
            "#]],
        );
    }

    #[test]
    fn held_tools_are_gathered_and_rate_limited() {
        check(
            &[
                Held(0, "fs", &["write"]),
                Held(1, "gh", &["search", "issues"]),
                Poll(2),
                Held(10, "fs", &["write", "read"]),
                // Approved before it was told: not mentioned.
                Held(30, "db", &["query"]),
                Held(40, "db", &[]),
                Poll(62),
            ],
            expect![[r#"
                   0s fs: held ["write"]
                   1s gh: held ["search", "issues"]
                   2s poll
                      NOTIFY 3 tools need your approval | fs/write, gh/issues, gh/search: their descriptions or input schemas are new or changed since you approved them; agents do not see them until you approve them in the dashboard. | Open dashboard fs
                  10s fs: held ["write", "read"]
                  30s db: held ["query"]
                  40s db: held []
                  62s poll
                      NOTIFY fs: tool read needs your approval | Its description or input schema is new or changed since you approved it; agents do not see it until you approve it in the dashboard. | Open dashboard fs
                no deadline
            "#]],
        );
    }
}
