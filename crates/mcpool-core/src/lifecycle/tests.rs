//! The lifecycle as event scripts: each step renders the event, the status
//! after it, the effects, what a request would be told, and the tools
//! agents see (with their source).

use std::sync::Arc;

use expect_test::{expect, Expect};

use super::*;

/// Replays `(seconds since start, event)` pairs on paused tokio time (the
/// clock only moves when the script says) and compares the rendering.
async fn check(script: &[(u64, Event)], expected: Expect) {
    check_from(Lifecycle::new(false, Backoff::default()), script, expected).await
}

async fn check_from(mut machine: Lifecycle, script: &[(u64, Event)], expected: Expect) {
    let t0 = Instant::now();
    let mut out = String::new();
    for (secs, event) in script {
        let at = t0 + Duration::from_secs(*secs);
        tokio::time::advance(at.saturating_duration_since(Instant::now())).await;
        let now = Instant::now();
        assert_eq!(now, at, "time must be paused");
        let label = label(event);
        let effects = machine.handle(event.clone(), now);
        let admission = match machine.admit(now) {
            Admission::Refuse(Refusal::Backoff { retry_in, .. }) => {
                format!("refuse, retry in {}s", retry_in.as_secs())
            }
            Admission::Refuse(r) => format!("refuse {}", format!("{r:?}").split([' ', '{']).next().unwrap_or("")),
            other => format!("{other:?}").to_lowercase(),
        };
        let tools = match machine.lists() {
            Some((lists, source)) => format!("{source:?}{}", names(&lists.tools)).to_lowercase(),
            None => "-".into(),
        };
        out.push_str(&format!(
            "t={secs:>3}s {label:<28} -> {:<10} {effects:?} request: {admission}; tools: {tools}\n",
            machine.status()
        ));
    }
    expected.assert_eq(&out);
}

fn label(event: &Event) -> String {
    match event {
        Event::AttemptFailed { kind, .. } => match kind {
            FailureKind::Transient { retry_after: Some(d) } => format!("Transient(retry after {}s)", d.as_secs()),
            FailureKind::Transient { retry_after: None } => "Transient".into(),
            other => format!("{other:?}"),
        },
        Event::AttemptSucceeded { lists } => format!("Connected{}", names(&lists.tools)),
        Event::CacheLoaded { tools } => format!("CacheLoaded{}", names(tools)),
        Event::Relisted { lists } => format!("Relisted{}", names(&lists.tools)),
        Event::Dropped { .. } => "Dropped".into(),
        Event::Unauthorized { .. } => "Unauthorized".into(),
        Event::WaitingForNetwork { .. } => "WaitingForNetwork".into(),
        other => format!("{other:?}"),
    }
}

fn names(tools: &[Tool]) -> String {
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    format!("[{}]", names.join(","))
}

fn tools(names: &[&'static str]) -> Vec<Tool> {
    names
        .iter()
        .map(|n| Tool::new(*n, "", Arc::new(serde_json::Map::new())))
        .collect()
}

fn lists(names: &[&'static str]) -> Lists {
    Lists {
        tools: tools(names),
        ..Lists::default()
    }
}

fn connected(names: &[&'static str]) -> Event {
    Event::AttemptSucceeded { lists: lists(names) }
}

fn transient() -> Event {
    Event::AttemptFailed {
        kind: FailureKind::Transient { retry_after: None },
        error: "connection refused".into(),
    }
}

fn failed(kind: FailureKind) -> Event {
    Event::AttemptFailed {
        kind,
        error: "refused".into(),
    }
}

fn dropped() -> Event {
    Event::Dropped {
        error: "process exited (tools kept; reconnects when next used)".into(),
    }
}

#[tokio::test(start_paused = true)]
async fn start_connect_drop_reconnect_on_demand() {
    check(
        &[
            (0, Event::Start),
            (0, Event::AttemptStarted),
            (1, connected(&["a", "b"])),
            (5, dropped()),
            (9, Event::AttemptStarted),
            (9, connected(&["a", "b"])),
        ],
        expect![[r#"
            t=  0s Start                        -> pending    [Dial] request: dial; tools: -
            t=  0s AttemptStarted               -> pending    [] request: dial; tools: -
            t=  1s Connected[a,b]               -> connected  [StoreTools, ListsChanged] request: ready; tools: live[a,b]
            t=  5s Dropped                      -> failed     [Close, ListsChanged] request: dial; tools: kept[a,b]
            t=  9s AttemptStarted               -> failed     [] request: dial; tools: kept[a,b]
            t=  9s Connected[a,b]               -> connected  [ListsChanged] request: ready; tools: live[a,b]
        "#]],
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn backoff_doubles_and_resets_on_success() {
    check(
        &[
            (0, Event::AttemptStarted),
            (0, transient()),
            (1, Event::AttemptStarted),
            (1, transient()),
            (3, Event::AttemptStarted),
            (3, transient()),
            (7, Event::AttemptStarted),
            (7, connected(&["a"])),
            (8, dropped()),
            (8, Event::AttemptStarted),
            (8, transient()),
        ],
        expect![[r#"
            t=  0s AttemptStarted               -> pending    [] request: dial; tools: -
            t=  0s Transient                    -> failed     [] request: refuse, retry in 1s; tools: -
            t=  1s AttemptStarted               -> failed     [] request: dial; tools: -
            t=  1s Transient                    -> failed     [] request: refuse, retry in 2s; tools: -
            t=  3s AttemptStarted               -> failed     [] request: dial; tools: -
            t=  3s Transient                    -> failed     [] request: refuse, retry in 4s; tools: -
            t=  7s AttemptStarted               -> failed     [] request: dial; tools: -
            t=  7s Connected[a]                 -> connected  [StoreTools, ListsChanged] request: ready; tools: live[a]
            t=  8s Dropped                      -> failed     [Close, ListsChanged] request: dial; tools: kept[a]
            t=  8s AttemptStarted               -> failed     [] request: dial; tools: kept[a]
            t=  8s Transient                    -> failed     [] request: refuse, retry in 1s; tools: kept[a]
        "#]],
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn retry_after_is_honoured() {
    check(
        &[
            (0, Event::AttemptStarted),
            (
                0,
                Event::AttemptFailed {
                    kind: FailureKind::Transient {
                        retry_after: Some(Duration::from_secs(7)),
                    },
                    error: "HTTP 429".into(),
                },
            ),
        ],
        expect![[r#"
            t=  0s AttemptStarted               -> pending    [] request: dial; tools: -
            t=  0s Transient(retry after 7s)    -> failed     [] request: refuse, retry in 7s; tools: -
        "#]],
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn auth_and_permanent_are_not_retried_until_an_explicit_action() {
    check(
        &[
            (0, Event::AttemptStarted),
            (0, failed(FailureKind::Auth)),
            (3600, Event::Start),
            (3600, Event::Reconnect),
            (3600, Event::AttemptStarted),
            (3600, failed(FailureKind::Permanent)),
            (7200, Event::Reconnect),
        ],
        expect![[r#"
            t=  0s AttemptStarted               -> pending    [] request: dial; tools: -
            t=  0s Auth                         -> needs_auth [NotifyNeedsAuth] request: refuse NeedsAuth; tools: -
            t=3600s Start                        -> pending    [Dial] request: dial; tools: -
            t=3600s Reconnect                    -> pending    [Dial] request: dial; tools: -
            t=3600s AttemptStarted               -> pending    [] request: dial; tools: -
            t=3600s Permanent                    -> failed     [] request: refuse Permanent; tools: -
            t=7200s Reconnect                    -> pending    [Dial] request: dial; tools: -
        "#]],
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn waiting_for_the_network_then_a_reset_backoff() {
    check(
        &[
            (0, Event::AttemptStarted),
            (0, connected(&["a"])),
            (10, dropped()),
            (10, Event::AttemptStarted),
            (10, transient()),
            (
                10,
                Event::WaitingForNetwork {
                    error: "waiting".into(),
                },
            ),
            (11, Event::ResetBackoff),
        ],
        expect![[r#"
            t=  0s AttemptStarted               -> pending    [] request: dial; tools: -
            t=  0s Connected[a]                 -> connected  [StoreTools, ListsChanged] request: ready; tools: live[a]
            t= 10s Dropped                      -> failed     [Close, ListsChanged] request: dial; tools: kept[a]
            t= 10s AttemptStarted               -> failed     [] request: dial; tools: kept[a]
            t= 10s Transient                    -> failed     [] request: refuse, retry in 1s; tools: kept[a]
            t= 10s WaitingForNetwork            -> failed     [] request: refuse, retry in 1s; tools: kept[a]
            t= 11s ResetBackoff                 -> failed     [] request: dial; tools: kept[a]
        "#]],
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn explicit_disconnect_wins_over_an_attempt_in_flight() {
    check(
        &[
            (0, Event::CacheLoaded { tools: tools(&["a"]) }),
            (0, Event::AttemptStarted),
            (0, Event::Disconnect),
            (1, transient()),
            (1, connected(&["a"])),
            (2, Event::Start),
            (2, Event::AttemptStarted),
            (2, connected(&["a"])),
            (3, Event::Disconnect),
            (4, dropped()),
        ],
        expect![[r#"
            t=  0s CacheLoaded[a]               -> pending    [ListsChanged] request: dial; tools: cached[a]
            t=  0s AttemptStarted               -> pending    [] request: dial; tools: cached[a]
            t=  0s Disconnect                   -> disabled   [CancelAttempt, ListsChanged] request: refuse Disabled; tools: -
            t=  1s Transient                    -> disabled   [] request: refuse Disabled; tools: -
            t=  1s Connected[a]                 -> disabled   [] request: refuse Disabled; tools: -
            t=  2s Start                        -> pending    [Dial] request: dial; tools: -
            t=  2s AttemptStarted               -> pending    [] request: dial; tools: -
            t=  2s Connected[a]                 -> connected  [StoreTools, ListsChanged] request: ready; tools: live[a]
            t=  3s Disconnect                   -> disabled   [Close, ListsChanged] request: refuse Disabled; tools: -
            t=  4s Dropped                      -> disabled   [] request: refuse Disabled; tools: -
        "#]],
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn cached_tools_until_the_server_answers_and_written_back_only_when_new() {
    check(
        &[
            (0, Event::Start),
            (0, Event::CacheLoaded { tools: tools(&["a"]) }),
            (0, Event::AttemptStarted),
            (1, connected(&["a"])),
            // A second cache read never replaces what is live.
            (1, Event::CacheLoaded { tools: tools(&["old"]) }),
            (2, Event::Reconnect),
            (2, Event::AttemptStarted),
            (3, connected(&["a", "b"])),
        ],
        expect![[r#"
            t=  0s Start                        -> pending    [Dial] request: dial; tools: -
            t=  0s CacheLoaded[a]               -> pending    [ListsChanged] request: dial; tools: cached[a]
            t=  0s AttemptStarted               -> pending    [] request: dial; tools: cached[a]
            t=  1s Connected[a]                 -> connected  [ListsChanged] request: ready; tools: live[a]
            t=  1s CacheLoaded[old]             -> connected  [] request: ready; tools: live[a]
            t=  2s Reconnect                    -> pending    [Close, Dial] request: dial; tools: live[a]
            t=  2s AttemptStarted               -> pending    [] request: dial; tools: live[a]
            t=  3s Connected[a,b]               -> connected  [StoreTools, ListsChanged] request: ready; tools: live[a,b]
        "#]],
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn cached_tools_are_kept_after_a_transient_failure_and_dropped_after_a_permanent_one() {
    check(
        &[
            (0, Event::CacheLoaded { tools: tools(&["a"]) }),
            (0, Event::AttemptStarted),
            (0, transient()),
            (1, Event::AttemptStarted),
            (1, failed(FailureKind::Permanent)),
            (2, Event::CacheLoaded { tools: tools(&["a"]) }),
        ],
        expect![[r#"
            t=  0s CacheLoaded[a]               -> pending    [ListsChanged] request: dial; tools: cached[a]
            t=  0s AttemptStarted               -> pending    [] request: dial; tools: cached[a]
            t=  0s Transient                    -> failed     [] request: refuse, retry in 1s; tools: kept[a]
            t=  1s AttemptStarted               -> failed     [] request: dial; tools: kept[a]
            t=  1s Permanent                    -> failed     [ListsChanged] request: refuse Permanent; tools: -
            t=  2s CacheLoaded[a]               -> failed     [] request: refuse Permanent; tools: -
        "#]],
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn waiting_for_the_network_keeps_cached_tools() {
    check(
        &[
            (0, Event::CacheLoaded { tools: tools(&["a"]) }),
            (
                0,
                Event::WaitingForNetwork {
                    error: "waiting".into(),
                },
            ),
            (0, Event::ResetBackoff),
        ],
        expect![[r#"
            t=  0s CacheLoaded[a]               -> pending    [ListsChanged] request: dial; tools: cached[a]
            t=  0s WaitingForNetwork            -> failed     [] request: dial; tools: kept[a]
            t=  0s ResetBackoff                 -> failed     [] request: dial; tools: kept[a]
        "#]],
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_relist_replaces_the_live_lists_and_writes_new_tools() {
    let mut with_prompt = lists(&["a", "b"]);
    with_prompt.prompts = vec![Prompt::new("p", None::<String>, None)];
    check(
        &[
            (0, Event::AttemptStarted),
            (0, connected(&["a"])),
            (1, Event::Relisted { lists: lists(&["a"]) }),
            (2, Event::Relisted { lists: lists(&["a", "b"]) }),
            (3, Event::Relisted { lists: with_prompt }),
            (4, Event::Relisted { lists: lists(&[]) }),
            (5, dropped()),
            (6, Event::Relisted { lists: lists(&["late"]) }),
        ],
        expect![[r#"
            t=  0s AttemptStarted               -> pending    [] request: dial; tools: -
            t=  0s Connected[a]                 -> connected  [StoreTools, ListsChanged] request: ready; tools: live[a]
            t=  1s Relisted[a]                  -> connected  [] request: ready; tools: live[a]
            t=  2s Relisted[a,b]                -> connected  [StoreTools, ListsChanged] request: ready; tools: live[a,b]
            t=  3s Relisted[a,b]                -> connected  [ListsChanged] request: ready; tools: live[a,b]
            t=  4s Relisted[]                   -> connected  [ListsChanged] request: ready; tools: live[]
            t=  5s Dropped                      -> failed     [Close, ListsChanged] request: dial; tools: kept[]
            t=  6s Relisted[late]               -> failed     [] request: dial; tools: kept[]
        "#]],
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_sign_in_refused_on_the_live_connection_drops_the_tools() {
    check(
        &[
            (0, Event::AttemptStarted),
            (0, connected(&["a"])),
            (1, Event::Unauthorized { error: "HTTP 401".into() }),
            (2, Event::Unauthorized { error: "HTTP 401".into() }),
            (3, Event::Reconnect),
        ],
        expect![[r#"
            t=  0s AttemptStarted               -> pending    [] request: dial; tools: -
            t=  0s Connected[a]                 -> connected  [StoreTools, ListsChanged] request: ready; tools: live[a]
            t=  1s Unauthorized                 -> needs_auth [Close, ListsChanged, NotifyNeedsAuth] request: refuse NeedsAuth; tools: -
            t=  2s Unauthorized                 -> needs_auth [] request: refuse NeedsAuth; tools: -
            t=  3s Reconnect                    -> pending    [Dial] request: dial; tools: -
        "#]],
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_reconnect_keeps_the_error_and_the_kept_tools_until_it_succeeds() {
    check(
        &[
            (0, Event::AttemptStarted),
            (0, connected(&["a"])),
            (1, dropped()),
            (2, Event::Reconnect),
            (2, Event::AttemptStarted),
            (2, Event::Reconnect),
            (3, Event::Disconnect),
            (4, Event::Reconnect),
        ],
        expect![[r#"
            t=  0s AttemptStarted               -> pending    [] request: dial; tools: -
            t=  0s Connected[a]                 -> connected  [StoreTools, ListsChanged] request: ready; tools: live[a]
            t=  1s Dropped                      -> failed     [Close, ListsChanged] request: dial; tools: kept[a]
            t=  2s Reconnect                    -> pending    [Dial] request: dial; tools: kept[a]
            t=  2s AttemptStarted               -> pending    [] request: dial; tools: kept[a]
            t=  2s Reconnect                    -> pending    [CancelAttempt, Dial] request: dial; tools: kept[a]
            t=  3s Disconnect                   -> disabled   [ListsChanged] request: refuse Disabled; tools: -
            t=  4s Reconnect                    -> pending    [Dial] request: dial; tools: -
        "#]],
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn stop_is_final() {
    check(
        &[
            (0, Event::AttemptStarted),
            (0, connected(&["a"])),
            (1, Event::Stop),
            (2, Event::Start),
            (2, Event::Reconnect),
            (2, Event::Disconnect),
            (2, connected(&["a"])),
        ],
        expect![[r#"
            t=  0s AttemptStarted               -> pending    [] request: dial; tools: -
            t=  0s Connected[a]                 -> connected  [StoreTools, ListsChanged] request: ready; tools: live[a]
            t=  1s Stop                         -> disabled   [Close, ListsChanged] request: refuse Removed; tools: -
            t=  2s Start                        -> disabled   [] request: refuse Removed; tools: -
            t=  2s Reconnect                    -> disabled   [] request: refuse Removed; tools: -
            t=  2s Disconnect                   -> disabled   [] request: refuse Removed; tools: -
            t=  2s Connected[a]                 -> disabled   [] request: refuse Removed; tools: -
        "#]],
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_disabled_server_starts_only_when_asked() {
    check_from(
        Lifecycle::new(true, Backoff::default()),
        &[
            (0, Event::CacheLoaded { tools: tools(&["a"]) }),
            (0, Event::AttemptStarted),
            (0, Event::Start),
        ],
        expect![[r#"
            t=  0s CacheLoaded[a]               -> disabled   [] request: refuse Disabled; tools: -
            t=  0s AttemptStarted               -> disabled   [] request: refuse Disabled; tools: -
            t=  0s Start                        -> pending    [Dial] request: dial; tools: -
        "#]],
    )
    .await;
}

#[test]
fn a_connection_made_after_a_disconnect_or_stop_is_not_used() {
    let now = Instant::now();
    let mut machine = Lifecycle::new(false, Backoff::default());
    assert!(machine.accepts_connection());
    machine.handle(Event::AttemptStarted, now);
    machine.handle(Event::Disconnect, now);
    assert!(!machine.accepts_connection());
    machine.handle(Event::Reconnect, now);
    assert!(machine.accepts_connection());
    machine.handle(Event::Stop, now);
    assert!(!machine.accepts_connection() && machine.is_stopped());
    assert_eq!(machine.status(), Status::Disabled);
}

#[test]
fn errors_show_only_where_the_state_has_one() {
    let now = Instant::now();
    let mut machine = Lifecycle::new(false, Backoff::default());
    assert_eq!(machine.error(), None);
    machine.handle(failed(FailureKind::Permanent), now);
    assert_eq!(machine.error(), Some("refused"));
    machine.handle(Event::Reconnect, now);
    assert_eq!((machine.status(), machine.error()), (Status::Pending, Some("refused")));
    machine.handle(connected(&[]), now);
    assert_eq!(machine.error(), None);
    assert_eq!(machine.failures(), 0);
    assert_eq!(machine.retry_at(), None);
}
