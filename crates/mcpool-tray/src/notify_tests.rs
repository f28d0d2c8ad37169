//! The unit tests of `notify`: what is told, when, and in which words.

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
