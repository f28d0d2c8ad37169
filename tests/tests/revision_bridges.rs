//! behaviour.md rule 16, between revisions: a server's request for input
//! during a call, when the server and the agent speak different revisions.
//! - A 2026-07-28 server answers `InputRequiredResult` (our fault server's
//!   `elicit` on that revision): a session agent that declared elicitation
//!   is asked with an ordinary `elicitation/create` on its call's stream,
//!   and its answer goes back to the server as the next round with the
//!   server's `requestState`; one that did not declare it gets one sentence;
//!   a 2026-07-28 agent gets the `InputRequiredResult` itself and answers it.
//! - A session server sends `elicitation/create` during a 2026-07-28
//!   agent's call: mcpool answers the call with `InputRequiredResult` (its
//!   own `requestState`), keeps the server's call waiting, and hands the
//!   agent's next round's answer to the server; an agent that did not
//!   declare the capability is not asked, and the server hears why.

use mcpool_tests::*;
use rmcp::model::CallToolRequestParams;
use serde_json::json;

#[tokio::test]
async fn a_2026_07_28_servers_input_request_is_asked_of_a_session_agent() -> anyhow::Result<()> {
    let dir = TempDir::new("bridge-input");
    let pool = Mcpool::start_connected(json!({"mcpServers": {
        "s": faulty_stdio(&dir.path().join("s.log"), &STATELESS_ONLY),
    }}))
    .await?;

    // A session agent that answers elicitation: asked, and the call completes.
    for path in ["/mcp", "/servers/s/mcp"] {
        let agent = pool.agent_with(path, AgentHandler::answering("forty-two")).await?;
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
    assert_error_starts(
        &r,
        "Server 's' asked for an answer from the user (elicitation) before answering",
    );

    // A 2026-07-28 agent gets the InputRequiredResult and answers it itself.
    // (rmcp's RunningService::call_tool drives the rounds with the handler.)
    let agent = pool
        .stateless_agent_with("/mcp", AgentHandler::answering("seven"))
        .await?;
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
async fn a_session_servers_elicitation_during_a_2026_07_28_call_becomes_a_round() -> anyhow::Result<()> {
    let (pool, _) = Mcpool::start_with_faulty("bridge-rounds", "f", &[]).await?;
    // A session agent that would answer is connected, and is not asked
    // about another agent's call.
    let bystander = pool.agent_with("/mcp", AgentHandler::answering("not mine")).await?;

    // Asked as InputRequiredResult, the agent's answer reaches the session
    // server, whose result comes back (rmcp's RunningService::call_tool
    // drives the rounds with the handler).
    let agent = pool
        .stateless_agent_with("/mcp", AgentHandler::answering("seven"))
        .await?;
    let params = CallToolRequestParams::new("f__elicit")
        .with_arguments(json!({"message": "Pick"}).as_object().cloned().unwrap_or_default());
    let r = agent.service.call_tool(params).await?;
    let said: serde_json::Value = serde_json::from_str(&text(&r)).map_err(|e| anyhow::anyhow!("{e}: {}", text(&r)))?;
    assert_eq!(said["action"], "accept", "{said}");
    assert_eq!(said["content"]["answer"], "seven", "{said}");
    assert_eq!(agent.handler.elicited(), vec!["Pick".to_string()]);
    assert!(bystander.handler.elicited().is_empty());

    // On the wire: mcpool's own requestState and one input request; the
    // next round with the answer gets the server's result.
    let call = json!({"name": "f__elicit", "arguments": {"message": "Pick by hand"}});
    let caps = json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
    let first = pool
        .stateless_request("/mcp", "tools/call", call.clone(), caps.clone())
        .await?;
    let result = first.messages.first().map(|m| m["result"].clone()).unwrap_or_default();
    assert_eq!(result["resultType"], "input_required", "{}", first.body);
    let asked = &result["inputRequests"]["mcpool"];
    assert_eq!(asked["method"], "elicitation/create", "{}", first.body);
    assert_eq!(asked["params"]["message"], "Pick by hand", "{}", first.body);
    let state = result["requestState"].as_str().unwrap_or_default().to_string();
    assert!(state.starts_with("mcpool-"), "{}", first.body);
    let mut next = call.clone();
    next["requestState"] = json!(state);
    next["inputResponses"] = json!({"mcpool": {"action": "accept", "content": {"answer": "by hand"}}});
    let second = pool
        .stateless_request("/mcp", "tools/call", next.clone(), caps.clone())
        .await?;
    let result = second.messages.first().map(|m| m["result"].clone()).unwrap_or_default();
    assert_eq!(result["resultType"], "complete", "{}", second.body);
    let said = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(said.contains("by hand"), "{}", second.body);
    // That state is spent: the same round again starts the call over.
    let again = pool.stateless_request("/mcp", "tools/call", next, caps).await?;
    let result = again.messages.first().map(|m| m["result"].clone()).unwrap_or_default();
    assert_eq!(result["resultType"], "input_required", "{}", again.body);
    assert_ne!(result["requestState"], json!(state), "{}", again.body);

    // An agent that cannot answer elicitation is not asked: the server
    // hears why, and its own answer ends the call.
    let plain = pool.stateless_agent("/mcp").await?;
    let r = plain.call("f__elicit", json!({"message": "Pick"})).await?;
    let said = text(&r);
    assert!(said.starts_with("elicitation failed"), "{said}");
    assert!(said.contains("did not declare the capability"), "{said}");
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
    let pool = Mcpool::start_connected(json!({"mcpServers": {
        "s": faulty_stdio(&dir.path().join("s.log"), &STATELESS_ONLY),
        "loose": faulty_stdio(&dir.path().join("loose.log"), &loose),
    }}))
    .await?;
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
