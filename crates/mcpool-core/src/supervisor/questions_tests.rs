use rmcp::model::{CallToolRequestParams, ElicitRequest, ListRootsRequest, Request};
use serde_json::json;

use super::*;

fn idle_call() -> Asking {
    Asking {
        done: oneshot::channel().1,
        questions: mpsc::unbounded_channel().1,
        _stop: tokio_util::sync::CancellationToken::new().drop_guard(),
    }
}

fn elicit() -> ServerRequest {
    let params = serde_json::from_value(json!({
        "mode": "form",
        "message": "Pick",
        "requestedSchema": {"type": "object", "properties": {}}
    }))
    .expect("elicit params");
    ServerRequest::ElicitRequest(ElicitRequest::new(params))
}

fn call_with(state: Option<&str>, answer: Option<serde_json::Value>) -> ClientRequest {
    let mut params = CallToolRequestParams::new("t");
    params.request_state = state.map(str::to_string);
    params.input_responses = answer.map(|a| [(KEY.to_string(), a)].into_iter().collect());
    ClientRequest::CallToolRequest(Request::new(params))
}

#[tokio::test(start_paused = true)]
async fn a_parked_call_is_taken_once_and_not_after_the_limit() {
    let parked = ParkedCalls::default();
    let state = parked.park(idle_call(), elicit(), oneshot::channel().0);
    assert!(state.starts_with(STATE_PREFIX));
    assert!(parked.take(&state).is_some());
    assert!(parked.take(&state).is_none(), "a state is spent once taken");

    let late = parked.park(idle_call(), elicit(), oneshot::channel().0);
    tokio::time::advance(PARK_LIMIT + Duration::from_secs(1)).await;
    assert!(parked.take(&late).is_none(), "past the limit the call is gone");
}

#[tokio::test(start_paused = true)]
async fn parking_drops_calls_nobody_came_back_for() {
    let parked = ParkedCalls::default();
    let (answer, answered) = oneshot::channel();
    parked.park(idle_call(), elicit(), answer);
    tokio::time::advance(PARK_LIMIT).await;
    parked.park(idle_call(), elicit(), oneshot::channel().0);
    // The first call's question is dropped: the server hears no answer.
    assert!(answered.await.is_err());
    assert_eq!(lock(&parked.0).len(), 1);
}

#[test]
fn only_mcpools_own_request_state_is_a_round() {
    let answer = json!({"action": "accept", "content": {"a": 1}});
    let ours = call_with(Some("mcpool-1f"), Some(answer.clone()));
    assert_eq!(round_of(&ours), Some(("mcpool-1f", Some(&answer))));
    // A 2026-07-28 server's own state passes through to it.
    assert_eq!(round_of(&call_with(Some("server-state"), None)), None);
    assert_eq!(round_of(&call_with(None, None)), None);
}

#[test]
fn a_question_is_put_only_to_an_agent_that_declared_it() {
    let mut declared = ClientCapabilities::default();
    assert!(as_input(&elicit(), &declared).is_none());
    declared.elicitation = Some(Default::default());
    assert!(matches!(
        as_input(&elicit(), &declared),
        Some(InputRequest::Elicitation(_))
    ));
    let roots = ServerRequest::ListRootsRequest(ListRootsRequest::default());
    assert!(as_input(&roots, &declared).is_none(), "roots were not declared");
}

#[test]
fn the_agents_answer_is_read_as_the_question_expects() {
    let ok = read_answer(&elicit(), Some(&json!({"action": "accept", "content": {"a": 1}})));
    assert!(matches!(ok, Ok(ClientResult::ElicitResult(_))), "{ok:?}");
    let missing = read_answer(&elicit(), None).expect_err("no answer");
    assert!(missing.message.contains("no inputResponses.mcpool"), "{missing:?}");
    let wrong = read_answer(&elicit(), Some(&json!({"action": 7}))).expect_err("not an elicit result");
    assert!(wrong.message.contains("could not be read"), "{wrong:?}");
}
