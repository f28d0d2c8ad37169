//! The routing table between plain values: agents are their names, listen
//! streams are `"<name> stream"`.

use super::*;
use rmcp::model::NumberOrString;

type T = Table<&'static str, &'static str>;

fn token(n: i64) -> ProgressToken {
    ProgressToken(NumberOrString::Number(n))
}

fn caller(peer: &'static str, request: i64, agent_token: Option<i64>) -> Caller<&'static str> {
    Caller {
        peer,
        request_id: NumberOrString::Number(request),
        agent_token: agent_token.map(token),
        stateless: false,
        log_level: None,
    }
}

fn stateless(peer: &'static str, level: Option<LoggingLevel>) -> Caller<&'static str> {
    Caller {
        stateless: true,
        log_level: level,
        ..caller(peer, 1, Some(1))
    }
}

#[test]
fn progress_goes_back_to_the_calling_agent_under_its_own_token() {
    let mut t = T::default();
    let a = t.begin_call("fs", caller("alice", 1, Some(100)));
    let b = t.begin_call("fs", caller("bob", 1, Some(200)));
    // Both agents' calls got upstream token 7 and 8 from the one connection.
    t.route_progress(a, token(7));
    t.route_progress(b, token(8));
    assert_eq!(t.progress_target("fs", &token(7)), Some(("alice", token(100))));
    assert_eq!(t.progress_target("fs", &token(8)), Some(("bob", token(200))));
    // Tokens are per server: the same token elsewhere is someone else's.
    assert_eq!(t.progress_target("git", &token(7)), None);
    t.end_call(a);
    assert_eq!(t.progress_target("fs", &token(7)), None);
    assert_eq!(t.progress_target("fs", &token(8)), Some(("bob", token(200))));
}

#[test]
fn a_call_whose_agent_asked_for_no_progress_gets_no_route() {
    let mut t = T::default();
    let id = t.begin_call("fs", caller("alice", 1, None));
    t.route_progress(id, token(7));
    assert_eq!(t.progress_target("fs", &token(7)), None);
}

#[test]
fn progress_waits_only_while_a_call_to_its_server_is_unrouted() {
    let mut t = T::default();
    assert!(!t.awaiting_route("fs"));
    let a = t.begin_call("fs", caller("alice", 1, Some(1)));
    let _b = t.begin_call("fs", caller("bob", 2, Some(2)));
    assert!(t.awaiting_route("fs"));
    assert!(!t.awaiting_route("git"));
    t.route_progress(a, token(7));
    t.route_known("fs");
    assert!(t.awaiting_route("fs"), "bob's call is still unrouted");
    t.route_known("fs");
    assert!(!t.awaiting_route("fs"));
    // More ends than begins never wrap around.
    t.route_known("fs");
    assert!(!t.awaiting_route("fs"));
}

#[test]
fn a_servers_request_goes_to_the_newest_call_in_flight_on_its_stream() {
    let mut t = T::default();
    t.register(Scope::All, "watcher", None);
    let first = t.begin_call("fs", caller("alice", 11, None));
    t.begin_call("git", caller("carol", 12, None));
    t.begin_call("fs", caller("bob", 13, None));
    assert_eq!(
        t.request_route("fs"),
        RequestRoute::Call {
            peer: "bob",
            origin: NumberOrString::Number(13)
        }
    );
    t.end_call(first);
    assert_eq!(
        t.request_route("git"),
        RequestRoute::Call {
            peer: "carol",
            origin: NumberOrString::Number(12)
        }
    );
}

#[test]
fn a_servers_request_during_a_stateless_agents_call_goes_to_that_call() {
    let mut t = T::default();
    t.register(Scope::All, "watcher", None);
    let call = t.begin_call("fs", stateless("dora", None));
    assert_eq!(t.request_route("fs"), RequestRoute::Stateless { call });
}

#[test]
fn without_a_call_a_servers_request_goes_to_a_session_that_sees_it() {
    let mut t = T::default();
    assert_eq!(t.request_route("fs"), RequestRoute::Nobody);
    t.register(Scope::One("git".into()), "git only", None);
    t.register(Scope::Profile("work".into()), "profile", None);
    t.register(Scope::All, "listener", Some("listener stream"));
    assert_eq!(
        t.request_route("fs"),
        RequestRoute::Nobody,
        "none of them can answer for fs"
    );
    t.register(Scope::One("fs".into()), "fs only", None);
    assert_eq!(t.request_route("fs"), RequestRoute::Session("fs only"));
}

#[test]
fn logs_go_to_the_servers_own_sessions_and_to_mcp_only_when_asked() {
    let mut t = T::default();
    t.register(Scope::All, "all", None);
    t.register(Scope::All, "all listener", Some("stream"));
    t.register(Scope::One("fs".into()), "fs", None);
    t.register(Scope::One("git".into()), "git", None);
    t.register(Scope::Profile("work".into()), "profile", None);
    assert_eq!(
        t.log_route("fs", false),
        LogRoute {
            own: vec!["fs"],
            all: vec![]
        }
    );
    assert_eq!(
        t.log_route("fs", true),
        LogRoute {
            own: vec!["fs"],
            all: vec!["all"]
        }
    );
}

#[test]
fn a_stateless_call_hears_logs_at_or_above_its_level() {
    let mut t = T::default();
    t.begin_call("fs", stateless("warn", Some(LoggingLevel::Warning)));
    t.begin_call("fs", stateless("silent", None));
    t.begin_call("fs", stateless("debug", Some(LoggingLevel::Debug)));
    t.begin_call("git", stateless("elsewhere", Some(LoggingLevel::Debug)));
    t.begin_call("fs", caller("session", 1, None));
    assert_eq!(t.call_log_peers("fs", LoggingLevel::Info), vec!["debug"]);
    assert_eq!(t.call_log_peers("fs", LoggingLevel::Error), vec!["warn", "debug"]);
}

#[test]
fn resource_updates_go_to_the_subscribed_sessions_and_streams() {
    let mut t = T::default();
    let a = t.register(Scope::All, "alice", None);
    let b = t.register(Scope::All, "bob", Some("bob stream"));
    let c = t.register(Scope::All, "carol", None);
    t.subscribe(a, "fs", "file:///a", true);
    t.subscribe(b, "fs", "file:///a", true);
    t.subscribe(c, "git", "file:///a", true);
    assert_eq!(
        t.resource_targets("fs", "file:///a"),
        vec![Target::Session("alice"), Target::Listen("bob stream")]
    );
    assert_eq!(t.subscribed_uris("fs").into_iter().collect::<Vec<_>>(), ["file:///a"]);
    assert!(t.others_subscribed(a, "fs", "file:///a"));
    t.subscribe(b, "fs", "file:///a", false);
    assert!(
        !t.others_subscribed(a, "fs", "file:///a"),
        "carol's is on another server"
    );
    t.unregister(a);
    assert!(t.subscribed_uris("fs").is_empty());
}

#[test]
fn ended_sessions_are_pruned_and_calls_count_as_agents() {
    let mut t = T::default();
    t.register(Scope::One("fs".into()), "open", None);
    t.register(Scope::All, "closed", None);
    assert!(t.has_agent_for("git"));
    t.prune(|peer| *peer == "closed");
    assert_eq!(t.agent_count(), 1);
    assert!(t.has_agent_for("fs"));
    assert!(!t.has_agent_for("git"));
    let call = t.begin_call("git", caller("gone soon", 1, None));
    assert!(t.has_agent_for("git"));
    t.end_call(call);
    assert!(!t.has_agent_for("git"));
}

#[test]
fn list_changes_reach_sessions_and_streams_the_filter_picks() {
    let mut t = T::default();
    t.register(Scope::All, "all", None);
    t.register(Scope::One("fs".into()), "fs", Some("fs stream"));
    t.register(Scope::Profile("work".into()), "work", None);
    assert_eq!(
        t.targets(|scope, _| scope.sees("fs")),
        vec![Target::Session("all"), Target::Listen("fs stream")]
    );
    assert_eq!(t.sessions(|scope| matches!(scope, Scope::Profile(_))), vec!["work"]);
}

#[test]
fn progress_only_grows_so_a_late_earlier_step_is_dropped() {
    let mut t = T::default();
    let call = t.begin_call("fs", caller("alice", 1, Some(100)));
    t.route_progress(call, token(7));
    assert!(t.admit_progress("fs", &token(7), 0.0));
    assert!(t.admit_progress("fs", &token(7), 100.0));
    assert!(!t.admit_progress("fs", &token(7), 50.0), "came after 100");
    assert!(!t.admit_progress("fs", &token(7), 100.0), "not an increase");
    assert!(!t.admit_progress("fs", &token(8), 1.0), "no such route");
    t.end_call(call);
    assert!(!t.admit_progress("fs", &token(7), 200.0), "the call ended");
}
