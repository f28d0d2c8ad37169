//! Event scripts for the relay on paused time.

use std::time::Duration;

use mcpool_core::backoff::Backoff;

use super::*;

const ADDR: &str = "127.0.0.1:7007";

fn policy() -> Policy {
    Policy {
        backoff: Backoff::new(Duration::from_millis(100), Duration::from_secs(2)).unwrap(),
        wait: Duration::from_secs(30),
    }
}

fn now() -> Instant {
    Instant::now()
}

async fn advance(ms: u64) {
    tokio::time::advance(Duration::from_millis(ms)).await;
}

fn initialize(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize",
           "params": {"protocolVersion": "2025-06-18", "capabilities": {"roots": {}}, "clientInfo": {"name": "agent", "version": "1"}}})
}

fn init_result() -> Value {
    json!({"protocolVersion": "2025-06-18",
           "capabilities": {"tools": {"listChanged": true}, "prompts": {"listChanged": true}, "resources": {}},
           "serverInfo": {"name": "mcpool", "version": "0"}})
}

fn call(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "f__echo", "arguments": {}}})
}

fn initialized() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
}

fn error_message(effect: &Effect) -> Option<(Value, String)> {
    match effect {
        Effect::ToAgent(m) => Some((m["id"].clone(), m["error"]["message"].as_str()?.to_string())),
        _ => None,
    }
}

/// What `pick` finds in each of `effects`, in order.
fn picked<T>(effects: &[Effect], pick: impl Fn(&Effect) -> Option<&T>) -> Vec<T>
where
    T: Clone,
{
    effects.iter().filter_map(pick).cloned().collect()
}

/// The messages `effects` send upstream, in order.
fn to_upstream(effects: &[Effect]) -> Vec<Value> {
    picked(effects, |e| match e {
        Effect::ToUpstream(m) => Some(m),
        _ => None,
    })
}

/// The connections `effects` open, in order.
fn connects(effects: &[Effect]) -> Vec<Connect> {
    picked(effects, |e| match e {
        Effect::Connect(c) => Some(c),
        _ => None,
    })
}

/// The session comes up: the agent's `initialize` (id 1) gets the answer.
fn up_answers_the_initialize(relay: &mut Relay) {
    assert_eq!(
        relay.attempt_done(Attempt::Up(Some(init_result())), now()),
        vec![Effect::ToAgent(
            json!({"jsonrpc": "2.0", "id": 1, "result": init_result()})
        )]
    );
}

/// A relay with an initialized session: probe, the agent's initialize
/// (answered with its own id), `initialized` forwarded.
fn connected() -> Relay {
    let mut relay = Relay::new(ADDR, policy(), now());
    assert_eq!(
        relay.tick(now()),
        vec![Effect::Connect(Connect {
            initialize: None,
            initialized: false
        })]
    );
    assert_eq!(relay.attempt_done(Attempt::Up(None), now()), vec![]);
    assert_eq!(
        relay.on_agent(initialize(1), now()),
        vec![Effect::Connect(Connect {
            initialize: Some(initialize(1)),
            initialized: false
        })]
    );
    up_answers_the_initialize(&mut relay);
    assert_eq!(
        relay.on_agent(initialized(), now()),
        vec![Effect::ToUpstream(initialized())]
    );
    relay
}

#[tokio::test(start_paused = true)]
async fn relays_both_ways_once_initialized() {
    let mut relay = connected();
    assert_eq!(relay.on_agent(call(2), now()), vec![Effect::ToUpstream(call(2))]);
    let progress =
        json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}});
    assert_eq!(relay.on_upstream(progress.clone()), vec![Effect::ToAgent(progress)]);
    let answer = json!({"jsonrpc": "2.0", "id": 2, "result": {"content": []}});
    assert_eq!(relay.on_upstream(answer.clone()), vec![Effect::ToAgent(answer)]);
    // Answered: its stream ending afterwards says nothing more.
    assert_eq!(relay.request_ended(&json!(2), None), vec![]);
    // Pings go to mcpool while it is there.
    let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"});
    assert_eq!(relay.on_agent(ping.clone(), now()), vec![Effect::ToUpstream(ping)]);
}

#[tokio::test(start_paused = true)]
async fn a_lost_session_fails_what_was_in_flight_and_reopens_with_the_agents_initialize() {
    let mut relay = connected();
    relay.on_agent(call(2), now());
    relay.on_agent(call(3), now());
    relay.on_upstream(json!({"jsonrpc": "2.0", "id": 3, "result": {}}));

    let effects = relay.session_lost(Failure::Other("the event stream closed".into()), vec![], now());
    let errors: Vec<_> = effects.iter().filter_map(error_message).collect();
    assert_eq!(errors.len(), 1, "{effects:?}");
    assert_eq!(errors[0].0, json!(2));
    assert_eq!(
        errors[0].1,
        "the connection to mcpool at 127.0.0.1:7007 ended while this request was in flight (mcpool stopped or restarted); it was not retried, since it may have reached its server"
    );
    // The same initialize params, an id of the bridge's own, and the
    // agent's `initialized` sent again; at once.
    let mut again = initialize(1);
    again["id"] = json!("mcpool-stdio-reinitialize-1");
    assert_eq!(
        connects(&effects),
        vec![Connect {
            initialize: Some(again),
            initialized: true
        }]
    );

    let effects = relay.attempt_done(Attempt::Up(Some(init_result())), now());
    assert_eq!(
        effects,
        vec![
            Effect::Log("reconnected to mcpool at 127.0.0.1:7007".into()),
            Effect::ToAgent(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})),
            Effect::ToAgent(json!({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"})),
        ],
        "the internal initialize is answered to nobody; lists the server says may change are announced"
    );
    assert_eq!(relay.on_agent(call(4), now()), vec![Effect::ToUpstream(call(4))]);
}

#[tokio::test(start_paused = true)]
async fn requests_wait_for_the_reconnect_with_backoff_while_pings_and_cancels_are_answered() {
    let mut relay = connected();
    relay.session_lost(Failure::Unreachable, vec![], now());
    let mut delays = Vec::new();
    for _ in 0..7 {
        let start = now();
        assert!(relay
            .attempt_done(Attempt::Failed(Failure::Unreachable), now())
            .is_empty());
        let due = relay.next_deadline().unwrap();
        delays.push((due - start).as_millis());
        tokio::time::advance(due - start).await;
        assert_eq!(connects(&relay.tick(now())).len(), 1);
    }
    assert_eq!(delays, vec![100, 200, 400, 800, 1600, 2000, 2000]);

    assert!(relay.on_agent(call(5), now()).is_empty(), "waits");
    assert!(relay.on_agent(call(6), now()).is_empty(), "waits");
    let ping = json!({"jsonrpc": "2.0", "id": 7, "method": "ping"});
    assert_eq!(
        relay.on_agent(ping, now()),
        vec![Effect::ToAgent(json!({"jsonrpc": "2.0", "id": 7, "result": {}}))]
    );
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 6}});
    assert!(relay.on_agent(cancel, now()).is_empty());
    // A notification and an answer to mcpool have nobody to go to.
    assert!(relay
        .on_agent(
            json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}),
            now()
        )
        .is_empty());
    assert!(relay
        .on_agent(json!({"jsonrpc": "2.0", "id": 0, "result": {}}), now())
        .is_empty());

    let effects = relay.attempt_done(Attempt::Up(Some(init_result())), now());
    let sent = to_upstream(&effects);
    assert_eq!(sent, vec![call(5)], "the cancelled request is not sent");
}

#[tokio::test(start_paused = true)]
async fn past_the_wait_requests_fail_with_a_sentence_naming_the_address() {
    let mut relay = connected();
    relay.session_lost(Failure::Unreachable, vec![], now());
    relay.attempt_done(Attempt::Failed(Failure::Unreachable), now());
    assert!(relay.on_agent(call(8), now()).is_empty());
    let sentence = "mcpool at 127.0.0.1:7007 is not running; start it with `mcpool serve` or the tray app";
    let mut failed = Vec::new();
    for _ in 0..40 {
        let Some(due) = relay.next_deadline() else { break };
        tokio::time::sleep_until(due).await;
        for effect in relay.tick(now()) {
            if let Some(error) = error_message(&effect) {
                failed.push(error);
            }
            if matches!(effect, Effect::Connect(_)) {
                failed.extend(
                    relay
                        .attempt_done(Attempt::Failed(Failure::Unreachable), now())
                        .iter()
                        .filter_map(error_message),
                );
            }
        }
        if !failed.is_empty() {
            break;
        }
    }
    assert_eq!(failed, vec![(json!(8), sentence.to_string())]);

    // Later, a request gets an attempt of its own, and its outcome.
    let effects = relay.on_agent(call(9), now());
    assert_eq!(connects(&effects).len(), 1);
    let effects = relay.attempt_done(Attempt::Failed(Failure::Unreachable), now());
    assert_eq!(
        effects.iter().filter_map(error_message).collect::<Vec<_>>(),
        vec![(json!(9), sentence.to_string())]
    );
    assert_eq!(connects(&relay.on_agent(call(10), now())).len(), 1);
    let effects = relay.attempt_done(Attempt::Up(Some(init_result())), now());
    assert!(effects.contains(&Effect::ToUpstream(call(10))), "{effects:?}");
}

#[tokio::test(start_paused = true)]
async fn requests_that_never_left_are_sent_on_the_next_session() {
    let mut relay = connected();
    relay.on_agent(call(10), now());
    relay.on_agent(call(11), now());
    relay.on_agent(call(12), now());
    // 10 was taken by mcpool; 11 was refused (unknown session) and 12 was
    // still queued behind it.
    let effects = relay.session_lost(
        Failure::Other("mcpool no longer knows this session".into()),
        vec![call(11), call(12), initialized()],
        now(),
    );
    let errors: Vec<_> = effects.iter().filter_map(error_message).map(|(id, _)| id).collect();
    assert_eq!(errors, vec![json!(10)], "{effects:?}");
    assert_eq!(connects(&effects).len(), 1);
    let effects = relay.attempt_done(Attempt::Up(Some(init_result())), now());
    let sent = to_upstream(&effects);
    assert_eq!(sent, vec![call(11), call(12)], "in the agent's order");
}

#[tokio::test(start_paused = true)]
async fn an_http_error_answers_only_its_request() {
    let mut relay = connected();
    relay.on_agent(call(12), now());
    let why = "mcpool at 127.0.0.1:7007 answered HTTP 500 to this request".to_string();
    let effects = relay.request_ended(&json!(12), Some(why.clone()));
    assert_eq!(
        effects.iter().filter_map(error_message).collect::<Vec<_>>(),
        vec![(json!(12), why)]
    );
    assert_eq!(relay.on_agent(call(13), now()), vec![Effect::ToUpstream(call(13))]);
}

#[tokio::test(start_paused = true)]
async fn at_start_it_waits_for_an_instance_then_gives_up() {
    let mut relay = Relay::new(ADDR, policy(), now());
    assert_eq!(connects(&relay.tick(now())).len(), 1);
    let effects = relay.attempt_done(Attempt::Failed(Failure::Unreachable), now());
    assert_eq!(
        effects,
        vec![Effect::Log(
            "no mcpool instance is running at 127.0.0.1:7007 yet; waiting up to 30 s for one (start it with `mcpool serve` or the tray app)".into()
        )]
    );
    // The agent's initialize waits with it.
    assert!(relay.on_agent(initialize(1), now()).is_empty());
    let mut exit = None;
    while exit.is_none() {
        let due = relay.next_deadline().unwrap();
        tokio::time::sleep_until(due).await;
        for effect in relay.tick(now()) {
            match effect {
                Effect::Connect(c) => {
                    assert_eq!(c.initialize, Some(initialize(1)));
                    let done = relay.attempt_done(Attempt::Failed(Failure::Unreachable), now());
                    exit = done.into_iter().find(|e| matches!(e, Effect::Exit(_)));
                }
                Effect::Exit(_) => exit = Some(effect),
                _ => {}
            }
        }
    }
    assert_eq!(
        exit,
        Some(Effect::Exit(
            "no mcpool instance is running at 127.0.0.1:7007 (start it with `mcpool serve` or the tray app; waited 30 s)"
                .into()
        ))
    );
}

#[tokio::test(start_paused = true)]
async fn at_start_an_instance_that_comes_answers_the_waiting_initialize() {
    let mut relay = Relay::new(ADDR, policy(), now());
    relay.tick(now());
    relay.attempt_done(Attempt::Failed(Failure::Unreachable), now());
    relay.on_agent(initialize(1), now());
    advance(100).await;
    let effects = relay.tick(now());
    assert_eq!(
        connects(&effects),
        vec![Connect {
            initialize: Some(initialize(1)),
            initialized: false
        }]
    );
    up_answers_the_initialize(&mut relay);
}

#[tokio::test(start_paused = true)]
async fn a_refused_token_at_start_ends_the_bridge() {
    let mut relay = Relay::new(ADDR, policy(), now());
    relay.tick(now());
    assert_eq!(
        relay.attempt_done(Attempt::Failed(Failure::Unauthorized), now()),
        vec![Effect::Exit(
            "the instance at 127.0.0.1:7007 refused the token (check MCPOOL_TOKEN)".into()
        )]
    );
}

#[tokio::test(start_paused = true)]
async fn a_session_that_cannot_be_the_same_again_ends_the_bridge() {
    let mut relay = connected();
    relay.session_lost(Failure::Unreachable, vec![], now());
    let mut other = init_result();
    other["protocolVersion"] = json!("2025-03-26");
    let effects = relay.attempt_done(Attempt::Up(Some(other)), now());
    assert!(
        matches!(effects.last(), Some(Effect::Exit(m)) if m.contains("protocol version 2025-03-26, not 2025-06-18")),
        "{effects:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_request_before_initialize_is_refused() {
    let mut relay = Relay::new(ADDR, policy(), now());
    relay.tick(now());
    relay.attempt_done(Attempt::Up(None), now());
    let effects = relay.on_agent(call(1), now());
    assert_eq!(
        effects.iter().filter_map(error_message).collect::<Vec<_>>(),
        vec![(
            json!(1),
            "mcpool stdio: the session is not initialized; send `initialize` first".to_string()
        )]
    );
}

/// A 2026-07-28 request: its revision, client info and capabilities in `_meta`.
fn stateless(id: i64, method: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "agent", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }}})
}

#[tokio::test(start_paused = true)]
async fn a_stateless_agent_is_served_from_its_first_message_without_initialize() {
    let mut relay = Relay::new(ADDR, policy(), now());
    assert_eq!(connects(&relay.tick(now())).len(), 1);
    // The first message arrives while the bridge checks for an instance.
    let discover = stateless(1, "server/discover");
    assert!(relay.on_agent(discover.clone(), now()).is_empty());
    assert_eq!(
        relay.attempt_done(Attempt::Up(None), now()),
        vec![Effect::Stateless(discover)],
        "sent as soon as an instance answers, with no session to open"
    );
    relay.on_upstream(json!({"jsonrpc": "2.0", "id": 1, "result": {"supportedVersions": ["2026-07-28"]}}));
    assert_eq!(relay.request_ended(&json!(1), None), vec![], "answered");

    let list = stateless(2, "tools/list");
    assert_eq!(relay.on_agent(list.clone(), now()), vec![Effect::Stateless(list)]);
    // A stream that ends unanswered gets the sentence; never sent again.
    let effects = relay.request_ended(&json!(2), None);
    assert_eq!(effects.iter().filter_map(error_message).count(), 1, "{effects:?}");

    // A cancelled one is abandoned: its exchange ends, nothing answers it.
    relay.on_agent(stateless(3, "tools/call"), now());
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}});
    assert_eq!(relay.on_agent(cancel, now()), vec![Effect::Abandon(json!(3))]);
    assert_eq!(relay.request_ended(&json!(3), None), vec![]);
}

#[tokio::test(start_paused = true)]
async fn a_stateless_request_that_never_arrived_waits_for_mcpool_and_goes_again() {
    let mut relay = Relay::new(ADDR, policy(), now());
    relay.tick(now());
    relay.attempt_done(Attempt::Up(None), now());
    let call = stateless(4, "tools/call");
    assert_eq!(
        relay.on_agent(call.clone(), now()),
        vec![Effect::Stateless(call.clone())]
    );
    // mcpool went away: the connection was refused.
    let effects = relay.stateless_undelivered(call.clone(), Failure::Unreachable, now());
    assert_eq!(connects(&effects).len(), 1, "{effects:?}");
    assert!(
        relay.on_agent(stateless(5, "tools/list"), now()).is_empty(),
        "waits behind it"
    );
    assert!(relay
        .attempt_done(Attempt::Failed(Failure::Unreachable), now())
        .is_empty());
    advance(100).await;
    assert_eq!(connects(&relay.tick(now())).len(), 1);
    assert_eq!(
        relay.attempt_done(Attempt::Up(None), now()),
        vec![Effect::Stateless(call), Effect::Stateless(stateless(5, "tools/list"))],
        "in the agent's order"
    );
}

#[tokio::test(start_paused = true)]
async fn without_an_instance_every_waiting_request_gets_the_sentence_before_the_bridge_exits() {
    let mut relay = Relay::new(ADDR, policy(), now());
    relay.tick(now());
    relay.attempt_done(Attempt::Failed(Failure::Unreachable), now());
    assert!(relay.on_agent(stateless(1, "server/discover"), now()).is_empty());
    assert!(relay.on_agent(initialize(2), now()).is_empty());
    let mut effects = Vec::new();
    while !effects.iter().any(|e| matches!(e, Effect::Exit(_))) {
        let due = relay.next_deadline().unwrap();
        tokio::time::sleep_until(due).await;
        for effect in relay.tick(now()) {
            if matches!(effect, Effect::Connect(_)) {
                effects.extend(relay.attempt_done(Attempt::Failed(Failure::Unreachable), now()));
            } else {
                effects.push(effect);
            }
        }
    }
    let sentence =
        "no mcpool instance is running at 127.0.0.1:7007 (start it with `mcpool serve` or the tray app; waited 30 s)";
    assert_eq!(
        effects.iter().filter_map(error_message).collect::<Vec<_>>(),
        vec![(json!(2), sentence.to_string()), (json!(1), sentence.to_string())],
        "the agent's initialize, then what waited"
    );
    assert_eq!(effects.last(), Some(&Effect::Exit(sentence.into())));
}

#[tokio::test(start_paused = true)]
async fn a_session_request_that_waited_for_the_first_check_is_refused_without_initialize() {
    let mut relay = Relay::new(ADDR, policy(), now());
    relay.tick(now());
    assert!(relay.on_agent(call(1), now()).is_empty());
    let effects = relay.attempt_done(Attempt::Up(None), now());
    assert_eq!(
        effects.iter().filter_map(error_message).collect::<Vec<_>>(),
        vec![(json!(1), NOT_INITIALIZED.to_string())]
    );
}
