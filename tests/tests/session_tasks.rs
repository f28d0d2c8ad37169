//! behaviour.md §4, tasks of 2025-11-25: the official Python SDK's client
//! (`tests/py/task_agent.py`) calls a tool of the Python SDK's own task
//! server (`tests/py/task_server.py`, `enable_tasks()`) and of the
//! TypeScript SDK's (`tests/js/task_server.mjs`) as a task through
//! `/mcp` and `/servers/NAME/mcp`, follows it (`tasks/get`, `tasks/result`,
//! `tasks/list`), hears its `notifications/tasks/status`, and cancels
//! another; a second agent cannot reach the first one's task by its id
//! and hears nothing of it.

use std::time::Duration;

use anyhow::Context as _;
use mcpool_tests::*;
use serde_json::{json, Value};
use tokio::process::Command;

/// mcpool with the Python SDK's task server as `t` and the TypeScript
/// SDK's as `ts`, both on 2025-11-25.
async fn task_servers(tag: &str) -> anyhow::Result<Mcpool> {
    let script = repo_root().join("tests/py/task_server.py");
    let ts = json!({"command": "node", "args": [
        repo_root().join("tests/js/task_server.mjs"), "--node-modules", node_modules(),
    ]});
    let config = json!({"mcpServers": {"t": {"command": python(), "args": [script]}, "ts": ts}});
    Mcpool::start_connected_in(TempDir::new(tag), config).await
}

/// What `task_agent.py` saw on `path`, calling `tool` (with `extra`
/// options: its arguments).
async fn agents_on(pool: &Mcpool, path: &str, tool: &str, extra: &[&str]) -> anyhow::Result<Value> {
    let output = Command::new(python())
        .arg(repo_root().join("tests/py/task_agent.py"))
        .args(["--url", &pool.url(path), "--token", &pool.token, "--tool", tool])
        .args(extra)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(90), output)
        .await
        .context("task_agent.py ran over 90 s")??;
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.trim()).with_context(|| {
        format!(
            "task_agent.py on {path} said: {stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

#[tokio::test]
async fn a_python_sdk_agent_runs_a_2025_11_25_task_of_a_python_sdk_server_through_mcpool() -> anyhow::Result<()> {
    let pool = task_servers("session-tasks").await?;
    let mut routes = Vec::new();
    for server in ["t", "ts"] {
        assert_eq!(pool.server(server).await?["protocol"], "2025-11-25", "{server}");
        routes.push(("/mcp".to_string(), format!("{server}__slow_sum")));
        routes.push((format!("/servers/{server}/mcp"), "slow_sum".to_string()));
    }
    for (path, tool) in &routes {
        let (path, tool) = (path.as_str(), tool.as_str());
        let seen = agents_on(&pool, path, tool, &[]).await?;
        let tasks = &seen["capabilities"]["tasks"];
        assert!(
            tasks["requests"]["tools"]["call"].is_object() && tasks["list"].is_object() && tasks["cancel"].is_object(),
            "{path}: the tasks capability: {seen}"
        );
        assert_eq!(
            seen["execution"][tool],
            json!({"taskSupport": "optional"}),
            "{path}: {seen}"
        );
        let id = seen["created"]["taskId"].as_str().unwrap_or_default();
        assert!(id.starts_with("mcpool-task-"), "{path}: an id of mcpool's: {seen}");
        assert_eq!(seen["created"]["status"], "working", "{path}: {seen}");
        assert_eq!(seen["status"], "completed", "{path}: {seen}");
        assert_eq!(seen["result"], json!(["sum 5"]), "{path}: {seen}");
        assert_eq!(seen["listed"], json!([id]), "{path}: its own task listed: {seen}");
        assert_eq!(
            seen["cancelled"],
            json!({"same": true, "status": "cancelled"}),
            "{path}: {seen}"
        );
        let other = &seen["other"];
        for step in ["get", "result"] {
            let said = other[step]["error"].as_str().unwrap_or_default();
            assert!(
                said.contains("knows no task"),
                "{path}: another agent's {step}: {other}"
            );
        }
        assert_eq!(other["list"], json!([]), "{path}: another agent lists none: {other}");
        // The server's status notification reaches the agent that made the
        // task, under mcpool's id, and no other.
        let notified = seen["notified"].as_array().cloned().unwrap_or_default();
        assert!(
            notified.contains(&json!({"taskId": id, "status": "completed"})),
            "{path}: notified {notified:?}"
        );
        assert_eq!(seen["other_notified"], json!([]), "{path}: {seen}");
    }
    Ok(())
}

/// A 2026-07-28 agent that takes the tasks extension, to the same 2025-11-25
/// servers: the call becomes a task there, handed to the agent as the
/// extension's (`resultType: "task"`), and its `tasks/get` answers the
/// extension's detailed task with the result inlined once done;
/// `tasks/cancel` cancels it at the server.
#[tokio::test]
async fn a_2026_07_28_agent_takes_a_2025_11_25_servers_task_as_the_extensions() -> anyhow::Result<()> {
    let pool = task_servers("bridged-tasks").await?;
    let takes =
        json!({"io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}});
    let first = |reply: &mcpool_tests::stateless::StatelessReply| {
        reply.messages.last().map(|m| m["result"].clone()).unwrap_or_default()
    };
    for (path, tool) in [("/mcp", "t__slow_sum"), ("/servers/ts/mcp", "slow_sum")] {
        let call = json!({"name": tool, "arguments": {"a": 2, "b": 3, "seconds": 0.3}});
        let made = pool.stateless_request(path, "tools/call", call, takes.clone()).await?;
        let task = first(&made);
        assert_eq!(task["resultType"], "task", "{path}: {}", made.body);
        let id = task["taskId"].as_str().unwrap_or_default().to_string();
        assert!(id.starts_with("mcpool-task-"), "{path}: {}", made.body);
        assert_eq!(task["status"], "working", "{path}: {}", made.body);
        let mut done = Value::Null;
        let mut last_body = String::new();
        for _ in 0..100 {
            let got = pool
                .stateless_request(path, "tasks/get", json!({"taskId": id}), takes.clone())
                .await?;
            done = first(&got);
            last_body = got.body.clone();
            if done["status"] != "working" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(done["status"], "completed", "{path}: {done} {last_body}");
        assert_eq!(done["taskId"], id.as_str(), "{path}: {done}");
        assert_eq!(done["result"]["content"][0]["text"], "sum 5", "{path}: {done}");
        // A long one, cancelled.
        let long = json!({"name": tool, "arguments": {"a": 1, "b": 1, "seconds": 30}});
        let made = pool.stateless_request(path, "tools/call", long, takes.clone()).await?;
        let id = first(&made)["taskId"].as_str().unwrap_or_default().to_string();
        let cancel = pool
            .stateless_request(path, "tasks/cancel", json!({"taskId": id}), takes.clone())
            .await?;
        assert!(
            cancel.messages.last().is_some_and(|m| m.get("result").is_some()),
            "{path}: {}",
            cancel.body
        );
        let got = pool
            .stateless_request(path, "tasks/get", json!({"taskId": id}), takes.clone())
            .await?;
        assert_eq!(first(&got)["status"], "cancelled", "{path}: {}", got.body);
        // Without the extension, the result itself.
        let plain = json!({"name": tool, "arguments": {"a": 2, "b": 2, "seconds": 0}});
        let answered = pool.stateless_request(path, "tools/call", plain, json!({})).await?;
        assert_eq!(
            first(&answered)["content"][0]["text"],
            "sum 4",
            "{path}: {}",
            answered.body
        );
    }
    Ok(())
}

/// A session agent on the Python SDK that asks for a task the 2025-11-25
/// way, of a 2026-07-28 server (our fault server's `echo`, which makes a
/// task for a client that takes the extension): handed the task that way,
/// followed with `tasks/get`, `tasks/result` and `tasks/list`, cancelled
/// with `tasks/cancel`; another session cannot reach it.
#[tokio::test]
async fn a_session_agent_takes_a_2026_07_28_servers_task_the_2025_11_25_way() -> anyhow::Result<()> {
    let dir = TempDir::new("session-tasks-of-2026");
    let config = json!({"mcpServers": {"s": faulty_stdio(&dir.path().join("s.log"), &STATELESS_ONLY)}});
    let pool = Mcpool::start_connected_in(dir, config).await?;
    assert_eq!(pool.server("s").await?["protocol"], "2026-07-28");
    let args = ["--args", r#"{"text": "later"}"#, "--long-args", r#"{"text": "never"}"#];
    for (path, tool) in [("/mcp", "s__echo"), ("/servers/s/mcp", "echo")] {
        let seen = agents_on(&pool, path, tool, &args).await?;
        assert!(
            seen["capabilities"]["tasks"]["requests"]["tools"]["call"].is_object(),
            "{path}: {seen}"
        );
        let id = seen["created"]["taskId"].as_str().unwrap_or_default();
        assert!(id.starts_with("mcpool-task-"), "{path}: {seen}");
        assert_eq!(seen["status"], "completed", "{path}: {seen}");
        assert_eq!(seen["result"], json!(["later"]), "{path}: {seen}");
        assert_eq!(seen["listed"], json!([id]), "{path}: {seen}");
        assert_eq!(seen["cancelled"]["same"], true, "{path}: {seen}");
        let other = &seen["other"];
        for step in ["get", "result"] {
            let said = other[step]["error"].as_str().unwrap_or_default();
            assert!(
                said.contains("knows no task"),
                "{path}: another agent's {step}: {other}"
            );
        }
        assert_eq!(other["list"], json!([]), "{path}: {other}");
    }
    Ok(())
}
