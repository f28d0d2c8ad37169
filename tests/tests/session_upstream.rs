//! behaviour.md rule 16: a server that speaks both revisions, seen by a
//! session agent as it would see it directly. mcpool speaks to such a
//! server in 2026-07-28, where our fault server's `sample` cannot ask the
//! client (a server's own request needs a session) and its `elicit` asks
//! by `InputRequiredResult`. A session agent's calls go over a second
//! connection, opened with `initialize` on demand and shared by every
//! session agent, where both ask by request; a 2026-07-28 agent keeps the
//! first connection. A server that refuses `initialize` is tried once.

use std::time::Duration;

use mcpool_tests::*;
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(30);

/// Our fault server with both revisions (2026-07-28 and the session ones).
const BOTH: [&str; 2] = ["--max-protocol-version", "2026-07-28"];

#[tokio::test]
async fn a_session_agent_is_asked_by_request_over_a_session_connection() -> anyhow::Result<()> {
    let (pool, _http, _) = Mcpool::start_with_faulty_remote("session-upstream", "h", &BOTH).await?;
    let log = pool.dir.path().join("h.log");
    let server = pool.server("h").await?;
    assert_eq!(server["protocol"], "2026-07-28", "{server}");
    assert_eq!(count_lines(&log, "initialize"), 0, "the first connection discovers");

    for path in ["/servers/h/mcp", "/mcp"] {
        let prefix = if path == "/mcp" { "h__" } else { "" };
        let agent = pool.agent_with(path, AgentHandler::answering("forty-two")).await?;
        // Sampling exists only as the server's own request on a session.
        let r = agent
            .call(&format!("{prefix}sample"), json!({"prompt": "hello"}))
            .await?;
        assert_ne!(r.is_error, Some(true), "{path}: {}", text(&r));
        let sampled = agent.handler.sampling_answer();
        assert_eq!(Some(text(&r)), sampled, "{path}");
        // Elicitation by request too, and the answer goes back.
        let r = agent
            .call(&format!("{prefix}elicit"), json!({"message": "Pick a number"}))
            .await?;
        assert_ne!(r.is_error, Some(true), "{path}: {}", text(&r));
        let said: serde_json::Value = serde_json::from_str(&text(&r))?;
        assert_eq!(said["content"]["answer"], "forty-two", "{path}: {said}");
        assert_eq!(agent.handler.elicited(), vec!["Pick a number".to_string()], "{path}");
    }
    // One session connection for both agents and all their calls.
    assert_eq!(count_lines(&log, "initialize"), 1);
    // The server's status is its first connection's.
    let server = pool.server("h").await?;
    assert_eq!(server["status"], "connected", "{server}");
    assert_eq!(server["protocol"], "2026-07-28", "{server}");

    // A 2026-07-28 agent keeps the first connection: the server's own
    // InputRequiredResult (its requestState), and no sampling, as directly.
    let call = json!({"name": "h__elicit", "arguments": {"message": "Pick by hand"}});
    let caps = json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "sampling": {}}});
    let reply = pool.stateless_request("/mcp", "tools/call", call, caps.clone()).await?;
    let result = reply.response()?["result"].clone();
    assert_eq!(result["resultType"], "input_required", "{}", reply.body);
    assert_eq!(result["requestState"], "faulty-elicit", "{}", reply.body);
    assert!(result["inputRequests"]["answer"].is_object(), "{}", reply.body);
    let call = json!({"name": "h__sample", "arguments": {"prompt": "hello"}});
    let reply = pool.stateless_request("/mcp", "tools/call", call, caps).await?;
    let result = reply.response()?["result"].clone();
    assert_eq!(result["isError"], true, "{}", reply.body);
    assert_eq!(count_lines(&log, "initialize"), 1);

    // A disconnect closes both; the next session agent's call opens another.
    let (status, body) = pool.post("/api/servers/h/disconnect").await?;
    assert_eq!(status, 200, "{body}");
    pool.post("/api/servers/h/reconnect").await?;
    pool.wait_status("h", "connected", LIMIT).await?;
    let agent = pool
        .agent_with("/servers/h/mcp", AgentHandler::answering("again"))
        .await?;
    let r = agent.call("sample", json!({"prompt": "hello"})).await?;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    assert_eq!(count_lines(&log, "initialize"), 2);
    Ok(())
}

#[tokio::test]
async fn a_server_that_refuses_initialize_is_bridged_over_its_one_connection() -> anyhow::Result<()> {
    let (pool, _http, _) = Mcpool::start_with_faulty_remote("session-refused", "h", &STATELESS_ONLY).await?;
    let log = pool.dir.path().join("h.log");
    let agent = pool
        .agent_with("/servers/h/mcp", AgentHandler::answering("seven"))
        .await?;
    for message in ["Pick", "Pick again"] {
        // InputRequiredResult, asked of the agent as a request (bridge.rs).
        let r = agent.call("elicit", json!({"message": message})).await?;
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
        let said: serde_json::Value = serde_json::from_str(&text(&r))?;
        assert_eq!(said["content"]["answer"], "seven", "{said}");
    }
    assert_eq!(
        agent.handler.elicited(),
        vec!["Pick".to_string(), "Pick again".to_string()]
    );
    // Tried once, then remembered.
    assert_eq!(count_lines(&log, "initialize"), 1);
    assert!(
        pool.logs().contains("no session connection for session agents"),
        "{}",
        pool.logs()
    );
    Ok(())
}
