//! Tasks (SEP-2663, the `io.modelcontextprotocol/tasks` extension) pass
//! through mcpool (behaviour.md rule 16): a 2026-07-28 server that answers
//! a call with a task does so only for an agent that declared the
//! extension, and that agent's `tasks/get` and `tasks/cancel` reach the
//! server that made the task, on `/mcp` and `/servers/NAME/mcp`.

use mcpool_tests::*;
use serde_json::{json, Value};

fn takes_tasks() -> Value {
    json!({"io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}})
}

/// The acknowledgment of a 2026-07-28 agent's listen stream on `path` that
/// asked for `filter`.
async fn listen_ack(pool: &Mcpool, path: &str, filter: Value) -> anyhow::Result<Value> {
    let params = json!({"notifications": filter});
    let mut stream = pool
        .stateless_open(path, "subscriptions/listen", params, takes_tasks())
        .await?;
    let mut text = String::new();
    let read = async {
        while let Some(chunk) = stream.chunk().await? {
            text.push_str(&String::from_utf8_lossy(&chunk));
            let ack = text
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .find(|m| m["method"] == "notifications/subscriptions/acknowledged");
            if let Some(ack) = ack {
                return Ok(ack);
            }
        }
        anyhow::bail!("the listen stream ended unacknowledged: {text}")
    };
    tokio::time::timeout(std::time::Duration::from_secs(10), read).await?
}

fn result(reply: &mcpool_tests::stateless::StatelessReply) -> Value {
    reply.messages.first().map(|m| m["result"].clone()).unwrap_or_default()
}

#[tokio::test]
async fn tasks_pass_through_to_the_server_that_made_them() -> anyhow::Result<()> {
    let dir = TempDir::new("tasks");
    let pool = Mcpool::start_connected(json!({"mcpServers": {
        "s": faulty_stdio(&dir.path().join("s.log"), &STATELESS_ONLY),
        "other": faulty_stdio(&dir.path().join("other.log"), &STATELESS_ONLY),
    }}))
    .await?;

    // The endpoint says it takes tasks.
    let discovered = pool
        .stateless_request("/mcp", "server/discover", json!({}), json!({}))
        .await?;
    assert!(
        result(&discovered)["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object(),
        "{}",
        discovered.body
    );

    for (path, tool) in [("/mcp", "s__echo"), ("/servers/s/mcp", "echo")] {
        // An agent that takes tasks is handed one.
        let call = json!({"name": tool, "arguments": {"text": "later"}});
        let made = pool
            .stateless_request(path, "tools/call", call.clone(), takes_tasks())
            .await?;
        let task = result(&made);
        assert_eq!(task["resultType"], "task", "{path}: {}", made.body);
        let id = task["taskId"].as_str().unwrap_or_default().to_string();
        // An id of mcpool's, not the server's (which another agent could guess).
        assert!(id.starts_with("mcpool-task-"), "{path}: {}", made.body);

        // A listen stream that asks for the task's `notifications/tasks`
        // is not told it will get them (behaviour.md rule 16): the agent
        // polls, as the extension allows.
        let ack = listen_ack(&pool, path, json!({"toolsListChanged": true, "taskIds": [id]})).await?;
        assert_eq!(
            ack["params"]["notifications"]["toolsListChanged"], true,
            "{path}: {ack}"
        );
        assert_eq!(ack["params"]["notifications"].get("taskIds"), None, "{path}: {ack}");

        // Its tasks/get reaches the server that made it.
        let get = json!({"taskId": id});
        let got = pool
            .stateless_request(path, "tasks/get", get.clone(), takes_tasks())
            .await?;
        let done = result(&got);
        assert_eq!(done["status"], "completed", "{path}: {}", got.body);
        assert_eq!(done["result"]["content"][0]["text"], "later", "{path}: {}", got.body);

        // tasks/cancel too (the fault server then reports it cancelled).
        let cancelled = pool
            .stateless_request(path, "tasks/cancel", get.clone(), takes_tasks())
            .await?;
        assert!(
            cancelled.messages.first().is_some_and(|m| m.get("result").is_some()),
            "{path}: {}",
            cancelled.body
        );
        let got = pool.stateless_request(path, "tasks/get", get, takes_tasks()).await?;
        assert_eq!(result(&got)["status"], "cancelled", "{path}: {}", got.body);

        // An agent that did not declare tasks gets the result itself.
        let plain = pool.stateless_request(path, "tools/call", call, json!({})).await?;
        let direct = result(&plain);
        assert_eq!(direct["resultType"], "complete", "{path}: {}", plain.body);
        assert_eq!(direct["content"][0]["text"], "later", "{path}: {}", plain.body);
    }

    // A task mcpool never handed out is unknown on /mcp (-32602).
    let unknown = json!({"taskId": "faulty-task-999"});
    let reply = pool
        .stateless_request("/mcp", "tasks/get", unknown, takes_tasks())
        .await?;
    let error = reply.messages.first().map(|m| m["error"].clone()).unwrap_or_default();
    assert_eq!(error["code"], -32602, "{}", reply.body);
    Ok(())
}

/// A session agent that declares the tasks extension is handed the task a
/// 2026-07-28 server makes for it, and follows it with its own session's
/// `tasks/get`; a session agent without the extension gets the result.
#[tokio::test]
async fn a_session_agent_that_declares_the_tasks_extension_is_handed_a_2026_07_28_task() -> anyhow::Result<()> {
    use mcpool_tests::raw::RawSession;
    let dir = TempDir::new("session-agent-tasks");
    let pool = Mcpool::start_connected(json!({"mcpServers": {
        "s": faulty_stdio(&dir.path().join("s.log"), &STATELESS_ONLY),
    }}))
    .await?;
    let declares = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let agent = RawSession::open_declaring(&pool, "/mcp", declares).await?;
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "s__echo", "arguments": {"text": "later"}}});
    let made = agent.send(call.clone()).await?.message.unwrap_or_default();
    let id = made["result"]["taskId"].as_str().unwrap_or_default().to_string();
    assert!(id.starts_with("mcpool-task-"), "{made}");
    let get = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"taskId": id}});
    let got = agent.send(get.clone()).await?.message.unwrap_or_default();
    assert_eq!(got["result"]["status"], "completed", "{got}");
    assert_eq!(got["result"]["taskId"], id.as_str(), "{got}");
    // Another session cannot read it.
    let other = RawSession::open(&pool, "/mcp").await?;
    let refused = other.send(get).await?.message.unwrap_or_default();
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("knows no task"),
        "{refused}"
    );
    let plain = other.send(call).await?.message.unwrap_or_default();
    assert_eq!(plain["result"]["content"][0]["text"], "later", "{plain}");
    Ok(())
}
