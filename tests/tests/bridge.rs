//! `mcpool stdio` (behaviour.md §2): a stdio MCP server that relays a whole session
//! to the running instance, driven by the official Python SDK over stdio; and
//! a clear refusal when no instance runs (after a bounded wait for one).

use std::time::Duration;

use mcpool_tests::*;
use serde_json::{json, Value};

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn the_python_sdk_runs_a_whole_session_through_mcpool_stdio() -> anyhow::Result<()> {
    let (dir, log) = TempDir::with_spawn_log("bridge");
    let pool = Mcpool::start_connected(json!({"mcpServers": {"f": faulty_stdio(&log, &[])}})).await?;
    let listen = format!("127.0.0.1:{}", pool.port);
    let stdio_cmd = format!("{} stdio", bin("mcpool").display());

    // The agent spawns `mcpool stdio`, which finds the instance through the
    // environment it inherits, exactly as a stdio-only client would run it.
    let report = python_agent_with_env(
        &[
            "--stdio-cmd",
            &stdio_cmd,
            "--scenario",
            "all",
            "--tool",
            "f__echo",
            "--args",
            r#"{"text": "through the bridge"}"#,
            "--progress-tool",
            "f__progress",
            "--progress-args",
            r#"{"steps": 4}"#,
            "--prompt",
            "f__greet",
            "--prompt-args",
            r#"{"name": "Ada"}"#,
        ],
        &[
            ("MCPOOL_LISTEN", &listen),
            ("MCPOOL_TOKEN", &pool.token),
            ("MCPOOL_PROFILE", &profile_for(dir.path())),
        ],
    )
    .await?;

    assert!(report.get("error").is_none(), "{report}");
    let tools = strings(&report["tools"]);
    for tool in ["f__echo", "f__progress", "mcpool__status", "mcpool__reconnect"] {
        assert!(tools.contains(&tool.to_string()), "{tool} missing from {tools:?}");
    }
    assert!(
        strings(&report["prompts_list"]).contains(&"f__greet".to_string()),
        "{report}"
    );

    assert_eq!(report["call"]["isError"], false, "{report}");
    assert_eq!(report["call"]["text"], json!(["through the bridge"]), "{report}");
    assert_eq!(count_lines(&log, "call echo"), 1, "the call reached the server once");

    // Progress notifications cross both hops, in order, before the result.
    assert_eq!(report["progress"], json!([1.0, 2.0, 3.0, 4.0]), "{report}");
    assert_eq!(report["progress_call"]["text"], json!(["done"]), "{report}");

    assert_eq!(report["prompt"]["messages"][0]["role"], "user", "{report}");
    assert_eq!(report["prompt"]["messages"][0]["text"], "Hello, Ada!", "{report}");

    // The instance answered as itself, not as the upstream server.
    assert!(report["server_info"].is_object(), "{report}");
    assert_ne!(report["server_info"]["name"], "faulty", "{report}");
    Ok(())
}

#[tokio::test]
async fn mcpool_stdio_says_so_when_no_instance_runs() -> anyhow::Result<()> {
    let dir = TempDir::new("bridge-none");
    // It waits (here 1 s) for an instance to start, with the client's stdin
    // open as a client keeps it.
    let (mut child, listen) = stdio_bridge_to_nothing(dir.path())?;
    let _stdin = child.stdin.take();
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output()).await??;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("no mcpool instance is running at {listen}")),
        "{stderr}"
    );
    // Nothing that a stdio client would mistake for a protocol message.
    assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));

    // A client that spawns it sees the session fail rather than hang.
    let stdio_cmd = format!("{} stdio", bin("mcpool").display());
    let report = python_agent_with_env(
        &["--stdio-cmd", &stdio_cmd, "--scenario", "ping", "--timeout", "30"],
        &[
            ("MCPOOL_LISTEN", &listen),
            ("MCPOOL_TOKEN", "some-token"),
            ("MCPOOL_STDIO_WAIT", "1"),
            ("MCPOOL_PROFILE", &profile_for(dir.path())),
        ],
    )
    .await;
    let message = format!("{report:?}");
    assert!(report.is_err(), "{message}");
    // The child's stderr reaches the client's log, so the user sees why.
    assert!(message.contains("no mcpool instance is running"), "{message}");
    Ok(())
}
