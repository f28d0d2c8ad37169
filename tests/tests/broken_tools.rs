//! One broken tool breaks nothing else (behaviour.md rule 18): a server
//! that lists tools agents would reject stays connected with its other
//! tools; what can be repaired is, the rest is left out with a warning that
//! names server, tool and field in `/api/servers` and the log; public names
//! stay unique; and the official Python SDK agent lists every server.

use std::time::Duration;

use mcpool_tests::*;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(20);

#[tokio::test]
async fn broken_tools_are_repaired_or_left_out_and_the_rest_stay() -> anyhow::Result<()> {
    let dir = TempDir::new("broken-tools");
    let raw = dir.path().join("raw-tools.json");
    std::fs::write(
        &raw,
        serde_json::to_vec(&json!([
            {"name": "arr", "inputSchema": {"type": "array"}},
            {"name": "props", "inputSchema": {"type": "object", "properties": "bad"}},
            {"name": "text", "inputSchema": "a string"},
            {"name": "nul", "inputSchema": null},
            {"name": "num", "inputSchema": 3},
            {"name": "missing"},
            {"description": "no name", "inputSchema": {"type": "object"}},
            {"name": "echo", "description": "a second echo", "inputSchema": {"type": "object"}},
        ]))?,
    )?;
    let log = dir.path().join("spawns.log");
    let pool = Mcpool::start(json!({"mcpServers": {
        "broken": faulty_stdio(&log, &["--raw-tools", raw.to_str().unwrap_or_default()]),
        "good": faulty_stdio(&log, &[]),
    }}))
    .await?;
    pool.wait_status("good", "connected", LIMIT).await?;
    let broken = pool.wait_status("broken", "connected", LIMIT).await?;
    let names: Vec<&str> = broken["tools"]
        .as_array()
        .map(|a| a.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    for kept in ["echo", "add", "nul", "missing"] {
        assert!(names.contains(&kept), "{kept} is not offered: {names:?}");
    }
    for gone in ["arr", "props", "text", "num"] {
        assert!(!names.contains(&gone), "{gone} is offered: {names:?}");
    }
    assert_eq!(names.iter().filter(|n| **n == "echo").count(), 1, "{names:?}");
    let warnings: Vec<(String, String, bool)> = broken["tool_warnings"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|w| {
                    let s = |k: &str| w[k].as_str().unwrap_or_default().to_string();
                    (s("tool"), s("field"), w["left_out"] == true)
                })
                .collect()
        })
        .unwrap_or_default();
    let expected = [
        ("arr", "inputSchema.type", true),
        ("props", "inputSchema.properties", true),
        ("text", "inputSchema", true),
        ("nul", "inputSchema", false),
        ("num", "inputSchema", true),
        ("missing", "inputSchema", false),
        ("echo", "name", true),
    ];
    for (tool, field, left_out) in expected {
        assert!(
            warnings.contains(&(tool.to_string(), field.to_string(), left_out)),
            "no warning for {tool} {field}: {warnings:?}"
        );
    }
    assert!(
        warnings
            .iter()
            .any(|(tool, field, _)| tool.starts_with('#') && field == "name"),
        "{warnings:?}"
    );
    let logs = pool.logs();
    assert!(
        logs.contains("server 'broken': tool 'arr': field 'inputSchema.type': is \"array\", not \"object\""),
        "{logs}"
    );
    // A repaired tool is called like any other.
    let agent = pool.agent("/mcp").await?;
    let listed = agent.tool_names().await?;
    let mut unique = listed.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), listed.len(), "public names repeat: {listed:?}");
    assert!(listed.contains(&"broken__echo".to_string()) && listed.contains(&"good__echo".to_string()));

    // The official Python SDK validates every tool of the listing.
    let report = python_agent(&["--url", &pool.url("/mcp"), "--token", &pool.token, "--scenario", "list"]).await?;
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for name in ["good__echo", "broken__echo", "broken__nul", "mcpool__status"] {
        assert!(tools.contains(&name), "the Python SDK agent lacks {name}: {report}");
    }
    assert!(!tools.contains(&"broken__arr"), "{report}");

    // The server's own endpoint lists it as checked too: each name once,
    // with its first definition, and none that agents would reject.
    let own = pool.agent("/servers/broken/mcp").await?;
    let listed = own.service.peer().list_all_tools().await?;
    let names: Vec<&str> = listed.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names.iter().filter(|n| **n == "echo").count(), 1, "{names:?}");
    let echo = listed.iter().find(|t| t.name == "echo");
    assert_ne!(
        echo.and_then(|t| t.description.as_deref()),
        Some("a second echo"),
        "the first definition is kept"
    );
    for gone in ["arr", "props", "text", "num"] {
        assert!(
            !names.contains(&gone),
            "{gone} is offered on /servers/broken/mcp: {names:?}"
        );
    }
    let report = pool.python_scenario("/servers/broken/mcp", "list", &[]).await?;
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert_eq!(tools.iter().filter(|n| **n == "echo").count(), 1, "{report}");
    assert!(tools.contains(&"nul") && tools.contains(&"add"), "{report}");
    assert_eq!(
        count_lines(&log, "start"),
        2,
        "no server was restarted as if it had failed"
    );
    Ok(())
}
