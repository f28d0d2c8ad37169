//! Which requests take the session connection, and how the record of one
//! opens, refuses and closes (the dial itself is tested end to end:
//! tests/tests/session_upstream.rs).

#![allow(deprecated)] // SEP-2577: sampling and roots are still in use.

use super::*;
use rmcp::model::{
    CallToolRequestParams, ElicitationCapability, ListToolsRequest, PaginatedRequestParams, Request, SamplingCapability,
};

fn call() -> ClientRequest {
    ClientRequest::CallToolRequest(Request::new(CallToolRequestParams::new("t")))
}

fn asking() -> ClientCapabilities {
    let mut caps = ClientCapabilities::default();
    caps.sampling = Some(SamplingCapability::default());
    caps
}

const NEW: ProtocolVersion = ProtocolVersion::V_2026_07_28;
const OLD: ProtocolVersion = ProtocolVersion::LATEST_WITH_INITIALIZE;

#[test]
fn a_session_agent_that_can_be_asked_takes_it_to_a_2026_07_28_server() {
    assert!(wants_session(&call(), Some(&OLD), Some(&asking()), Some(&NEW), true));
    let mut elicits = ClientCapabilities::default();
    elicits.elicitation = Some(ElicitationCapability::default());
    assert!(wants_session(
        &call(),
        Some(&ProtocolVersion::V_2025_06_18),
        Some(&elicits),
        Some(&NEW),
        true
    ));
}

#[test]
fn everyone_else_takes_the_primary() {
    let caps = asking();
    // A 2026-07-28 agent: InputRequiredResult, on the primary.
    assert!(!wants_session(&call(), Some(&NEW), Some(&caps), Some(&NEW), true));
    // An agent that cannot be asked anything.
    assert!(!wants_session(
        &call(),
        Some(&OLD),
        Some(&ClientCapabilities::default()),
        Some(&NEW),
        true
    ));
    assert!(!wants_session(&call(), Some(&OLD), None, Some(&NEW), true));
    // A session server is one connection already.
    assert!(!wants_session(&call(), Some(&OLD), Some(&caps), Some(&OLD), true));
    // A local server would be a second process.
    assert!(!wants_session(&call(), Some(&OLD), Some(&caps), Some(&NEW), false));
    // A request a server does not answer with questions.
    let list = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(PaginatedRequestParams::default()));
    assert!(!wants_session(&list, Some(&OLD), Some(&caps), Some(&NEW), true));
}

#[test]
fn a_refusal_holds_for_its_primary_and_a_passing_one_for_a_while() {
    let session = SessionUpstream::default();
    let now = Instant::now();
    assert!(matches!(session.find(1, now).0, Found::Dial));
    *lock(&session.state) = State::Refused {
        primary: 1,
        until: None,
    };
    assert!(matches!(
        session.find(1, now + Duration::from_secs(3600)).0,
        Found::Primary
    ));
    // The primary reconnected: the server may have changed.
    assert!(matches!(session.find(2, now).0, Found::Dial));
    *lock(&session.state) = State::Refused {
        primary: 2,
        until: Some(now + RETRY_AFTER),
    };
    assert!(matches!(session.find(2, now).0, Found::Primary));
    assert!(matches!(session.find(2, now + RETRY_AFTER).0, Found::Dial));
}

#[test]
fn only_an_agent_that_shows_apps_to_a_session_server_that_offers_them_takes_the_apps_connection() {
    let mut shows = ClientCapabilities::default();
    let settings: rmcp::model::JsonObject = serde_json::from_value(serde_json::json!({"mimeTypes": ["x"]})).unwrap();
    shows.extensions = Some([(UI_EXTENSION.to_string(), settings)].into_iter().collect());
    assert!(wants_apps(&call(), Some(&shows), Some(&OLD), true));
    // The agent does not show apps, the server offers none, or speaks
    // 2026-07-28 (where each request says what its client declared).
    assert!(!wants_apps(&call(), Some(&asking()), Some(&OLD), true));
    assert!(!wants_apps(&call(), None, Some(&OLD), true));
    assert!(!wants_apps(&call(), Some(&shows), Some(&OLD), false));
    assert!(!wants_apps(&call(), Some(&shows), Some(&NEW), true));
    // Lists come from the pool.
    let list = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(PaginatedRequestParams::default()));
    assert!(!wants_apps(&list, Some(&shows), Some(&OLD), true));
}
