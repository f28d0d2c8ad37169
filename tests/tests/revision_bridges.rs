//! behaviour.md rule 16, between revisions: a server's request for input
//! during a call, when the server and the agent speak different revisions.
//! - A 2026-07-28 server answers `InputRequiredResult` (our fault server's
//!   `elicit` on that revision): a session agent that declared elicitation
//!   is asked with an ordinary `elicitation/create` on its call's stream,
//!   and its answer goes back to the server as the next round with the
//!   server's `requestState`; one that did not declare it gets one sentence;
//!   a 2026-07-28 agent gets the `InputRequiredResult` itself and answers it.
//! - A session server sends `elicitation/create` during a 2026-07-28
//!   agent's call: the agent cannot be asked, so the server hears an error
//!   that says why (and the call ends with the server's own answer).

use std::time::Duration;

use mcpool_tests::*;
use rmcp::model::CallToolRequestParams;
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(30);
const STATELESS_ONLY: [&str; 4] = [
    "--min-protocol-version",
    "2026-07-28",
    "--max-protocol-version",
    "2026-07-28",
];

fn answering(answer: &str) -> AgentHandler {
    AgentHandler {
        elicit_answer: Some(answer.to_string()),
        ..AgentHandler::default()
    }
}

#[tokio::test]
async fn a_2026_07_28_servers_input_request_is_asked_of_a_session_agent() -> anyhow::Result<()> {
    let dir = TempDir::new("bridge-input");
    let pool = Mcpool::start(json!({"mcpServers": {
        "s": faulty_stdio(&dir.path().join("s.log"), &STATELESS_ONLY),
    }}))
    .await?;
    pool.wait_status("s", "connected", LIMIT).await?;

    // A session agent that answers elicitation: asked, and the call completes.
    for path in ["/mcp", "/servers/s/mcp"] {
        let agent = pool.agent_with(path, answering("forty-two")).await?;
        let tool = if path == "/mcp" { "s__elicit" } else { "elicit" };
        let r = agent.call(tool, json!({"message": "Pick a number"})).await?;
        assert_ne!(r.is_error, Some(true), "{path}: {}", text(&r));
        let said: serde_json::Value = serde_json::from_str(&text(&r))?;
        assert_eq!(said["action"], "accept", "{said}");
        assert_eq!(said["content"]["answer"], "forty-two", "{said}");
        assert_eq!(agent.handler.elicited(), vec!["Pick a number".to_string()], "{path}");
    }

    // One that did not declare elicitation is not asked: one sentence.
    let plain = pool.agent("/mcp").await?;
    let r = plain.call("s__elicit", json!({"message": "Pick a number"})).await?;
    assert_eq!(r.is_error, Some(true));
    assert!(
        text(&r).starts_with("Server 's' asked for an answer from the user (elicitation) before answering"),
        "{}",
        text(&r)
    );

    // A 2026-07-28 agent gets the InputRequiredResult and answers it itself.
    // (rmcp's RunningService::call_tool drives the rounds with the handler.)
    let agent = pool.stateless_agent_with("/mcp", answering("seven")).await?;
    let mut params = CallToolRequestParams::new("s__elicit");
    params = params.with_arguments(
        json!({"message": "Pick again"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    let r = agent.service.call_tool(params).await?;
    let said: serde_json::Value = serde_json::from_str(&text(&r))?;
    assert_eq!(said["content"]["answer"], "seven", "{said}");
    assert_eq!(agent.handler.elicited(), vec!["Pick again".to_string()]);
    Ok(())
}

#[tokio::test]
async fn a_session_servers_elicitation_during_a_2026_07_28_call_is_refused_with_a_reason() -> anyhow::Result<()> {
    let dir = TempDir::new("bridge-refused");
    let pool = Mcpool::start(json!({"mcpServers": {
        "f": faulty_stdio(&dir.path().join("f.log"), &[]),
    }}))
    .await?;
    pool.wait_status("f", "connected", LIMIT).await?;
    // A session agent that would answer is connected, and is not asked
    // about another agent's call.
    let bystander = pool.agent_with("/mcp", answering("not mine")).await?;
    let agent = pool.stateless_agent_with("/mcp", answering("seven")).await?;
    let r = agent.call("f__elicit", json!({"message": "Pick"})).await?;
    let said = text(&r);
    assert!(said.starts_with("elicitation failed"), "{said}");
    assert!(said.contains("speaks MCP 2026-07-28"), "{said}");
    assert!(bystander.handler.elicited().is_empty());
    assert!(agent.handler.elicited().is_empty());
    Ok(())
}

/// A 2026-07-28 agent that did not declare elicitation is never asked:
/// mcpool tells a 2026-07-28 server what the agent can answer, so the
/// server refuses with -32021 itself; a server that asks anyway is refused
/// by mcpool the same way (HTTP 400, `requiredCapabilities`), in one sentence.
#[tokio::test]
async fn a_2026_07_28_agent_lacking_a_capability_gets_32021() -> anyhow::Result<()> {
    let dir = TempDir::new("bridge-32021");
    let mut loose = STATELESS_ONLY.to_vec();
    loose.push("--ignore-client-capabilities");
    let pool = Mcpool::start(json!({"mcpServers": {
        "s": faulty_stdio(&dir.path().join("s.log"), &STATELESS_ONLY),
        "loose": faulty_stdio(&dir.path().join("loose.log"), &loose),
    }}))
    .await?;
    pool.wait_status("s", "connected", LIMIT).await?;
    pool.wait_status("loose", "connected", LIMIT).await?;
    for tool in ["s__elicit", "loose__elicit"] {
        let call = json!({"name": tool, "arguments": {"message": "Pick"}});
        let reply = pool.stateless_request("/mcp", "tools/call", call, json!({})).await?;
        assert_eq!(reply.status, 400, "{tool}: {}", reply.body);
        let error = &reply.messages.first().map(|m| m["error"].clone()).unwrap_or_default();
        assert_eq!(error["code"], -32021, "{tool}: {}", reply.body);
        assert!(
            error["data"]["requiredCapabilities"]["elicitation"].is_object(),
            "{tool}: {}",
            reply.body
        );
        if tool == "loose__elicit" {
            assert_eq!(
                error["message"],
                "Server 'loose' needs the client capability elicitation to answer, which this agent did not declare.",
                "{}",
                reply.body
            );
        }
    }
    // Declared, the same call gets the server's question.
    let call = json!({"name": "s__elicit", "arguments": {"message": "Pick"}});
    let caps = json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
    let reply = pool.stateless_request("/mcp", "tools/call", call, caps).await?;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let result = &reply.messages.first().map(|m| m["result"].clone()).unwrap_or_default();
    assert_eq!(result["resultType"], "input_required", "{}", reply.body);
    assert!(result["inputRequests"]["answer"].is_object(), "{}", reply.body);
    Ok(())
}
