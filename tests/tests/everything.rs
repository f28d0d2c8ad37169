//! The official `@modelcontextprotocol/server-everything` behind mcpool, over
//! stdio and over Streamable HTTP, seen by the official Python SDK and by an
//! rmcp agent, on `/mcp` (prefixed names) and `/servers/everything/mcp`
//! (names unchanged).

use std::process::Stdio;
use std::time::Duration;

use mcpool_tests::*;
use rmcp::model::{GetPromptRequestParams, ReadResourceRequestParams};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const FEATURES_URI: &str = "demo://resource/static/document/features.md";
const FEATURES_START: &str = "# Everything Server - Features";
const SIMPLE_PROMPT_TEXT: &str = "This is a simple prompt without arguments.";

fn everything_stdio() -> Value {
    json!({"command": "node", "args": [everything_js(), "stdio"]})
}

/// Starts server-everything in Streamable HTTP mode; returns it and its URL
/// once it says it listens.
async fn everything_http() -> anyhow::Result<(Child, String)> {
    // server-everything takes only `PORT` and logs "port 0" for an
    // ephemeral one, so it needs a concrete number.
    let port = free_port()?;
    let mut child = Command::new("node")
        .arg(everything_js())
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let stderr = child.stderr.take().ok_or_else(|| anyhow::anyhow!("no stderr"))?;
    let mut lines = BufReader::new(stderr).lines();
    let ready = format!("listening on port {port}");
    let mut seen = Vec::new();
    let waited = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await? {
            let found = line.contains(&ready);
            seen.push(line);
            if found {
                return Ok(true);
            }
        }
        Ok::<_, anyhow::Error>(false)
    })
    .await;
    match waited {
        Ok(Ok(true)) => {}
        _ => anyhow::bail!(
            "server-everything did not listen on {port}; stderr:\n{}",
            seen.join("\n")
        ),
    }
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok((child, format!("http://127.0.0.1:{port}/mcp")))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// The Python SDK agent runs list, call, progress, prompt and resource
/// through `path`, with tool and prompt names given by `name`.
async fn python_sees_everything(pool: &Mcpool, path: &str, name: impl Fn(&str) -> String) -> anyhow::Result<()> {
    let extra = [
        "--tool",
        &name("echo"),
        "--args",
        r#"{"message": "hi from python"}"#,
        "--progress-tool",
        &name("trigger-long-running-operation"),
        "--progress-args",
        r#"{"duration": 1, "steps": 4}"#,
        "--prompt",
        &name("simple-prompt"),
        "--resource",
        FEATURES_URI,
    ];
    let report = pool.python_scenario(path, "all", &extra).await?;

    let tools = strings(&report["tools"]);
    for tool in ["echo", "get-sum", "trigger-long-running-operation"] {
        assert!(
            tools.contains(&name(tool)),
            "{path}: {} missing from {tools:?}",
            name(tool)
        );
    }
    assert!(
        strings(&report["prompts_list"]).contains(&name("simple-prompt")),
        "{path}: {report}"
    );
    assert!(
        strings(&report["resources_list"]).contains(&FEATURES_URI.to_string()),
        "{path}: {report}"
    );
    assert_eq!(report["call"]["isError"], false, "{path}: {report}");
    assert_eq!(report["call"]["text"], json!(["Echo: hi from python"]), "{path}");

    assert_eq!(report["progress"], json!([1.0, 2.0, 3.0, 4.0]), "{path}: {report}");
    let totals: Vec<&Value> = report["progress_events"]
        .as_array()
        .map(|a| a.iter().map(|e| &e["total"]).collect())
        .unwrap_or_default();
    assert!(totals.iter().all(|t| **t == json!(4.0)), "{path}: {report}");
    assert_eq!(
        report["progress_call"]["text"],
        json!(["Long running operation completed. Duration: 1 seconds, Steps: 4."]),
        "{path}"
    );

    assert_eq!(report["prompt"]["messages"][0]["role"], "user", "{path}: {report}");
    assert_eq!(report["prompt"]["messages"][0]["text"], SIMPLE_PROMPT_TEXT, "{path}");
    let resource = report["resource"][0].as_str().unwrap_or_default();
    assert!(resource.starts_with(FEATURES_START), "{path}: {resource}");
    Ok(())
}

/// The rmcp agent sees the same through `path`.
async fn rmcp_sees_everything(pool: &Mcpool, path: &str, name: impl Fn(&str) -> String) -> anyhow::Result<()> {
    let agent = pool.agent(path).await?;
    let tools = agent.tool_names().await?;
    assert!(tools.contains(&name("echo")), "{path}: {tools:?}");

    let r = agent.call(&name("echo"), json!({"message": "hi from rust"})).await?;
    assert_eq!(text(&r), "Echo: hi from rust", "{path}");

    let r = agent.call(&name("get-sum"), json!({"a": 2, "b": 3})).await?;
    assert_eq!(text(&r), "The sum of 2 and 3 is 5.", "{path}");

    // rmcp sends a progress token with every request.
    let r = agent
        .call(
            &name("trigger-long-running-operation"),
            json!({"duration": 1, "steps": 4}),
        )
        .await?;
    assert_eq!(
        text(&r),
        "Long running operation completed. Duration: 1 seconds, Steps: 4.",
        "{path}"
    );
    let handler = agent.handler.clone();
    wait_for("four progress notifications", Duration::from_secs(10), || {
        handler.progress().len() >= 4
    })
    .await?;
    assert_eq!(agent.handler.progress(), vec![1.0, 2.0, 3.0, 4.0], "{path}");

    let prompt = agent
        .service
        .get_prompt(GetPromptRequestParams::new(name("simple-prompt")))
        .await?;
    let first = serde_json::to_value(&prompt.messages[0])?;
    assert_eq!(first["content"]["text"], SIMPLE_PROMPT_TEXT, "{path}: {first}");

    // The first content's text of each read, starting as the server's does;
    // a URI only a template offers reaches the server too.
    for (uri, start) in [
        (FEATURES_URI, FEATURES_START),
        ("demo://resource/dynamic/text/1", "Resource 1:"),
    ] {
        let read = agent.service.read_resource(ReadResourceRequestParams::new(uri)).await?;
        let contents = serde_json::to_value(&read.contents)?;
        assert!(
            contents[0]["text"].as_str().unwrap_or_default().starts_with(start),
            "{path}: {contents}"
        );
    }
    agent.service.cancel().await?;
    Ok(())
}

async fn everything_through_mcpool(entry: Value) -> anyhow::Result<()> {
    let pool = Mcpool::start(json!({"mcpServers": {"everything": entry}})).await?;
    let s = pool
        .wait_status("everything", "connected", Duration::from_secs(30))
        .await?;
    let tools = s["tools"].as_array().cloned().unwrap_or_default();
    assert!(tools.iter().any(|t| t["name"] == "echo" && t["state"] == "live"), "{s}");

    let prefixed = |t: &str| format!("everything__{t}");
    let plain = |t: &str| t.to_string();
    python_sees_everything(&pool, "/mcp", prefixed).await?;
    python_sees_everything(&pool, "/servers/everything/mcp", plain).await?;
    rmcp_sees_everything(&pool, "/mcp", prefixed).await?;
    rmcp_sees_everything(&pool, "/servers/everything/mcp", plain).await?;

    // The per-server endpoint says it is server-everything itself.
    let report = pool.python_scenario("/servers/everything/mcp", "ping", &[]).await?;
    assert_eq!(report["server_info"]["name"], "mcp-servers/everything", "{report}");
    let report = pool.python_scenario("/mcp", "ping", &[]).await?;
    assert_eq!(report["server_info"]["name"], "mcpool", "{report}");
    Ok(())
}

#[tokio::test]
async fn server_everything_over_stdio() -> anyhow::Result<()> {
    everything_through_mcpool(everything_stdio()).await
}

#[tokio::test]
async fn server_everything_over_streamable_http() -> anyhow::Result<()> {
    let (mut server, url) = everything_http().await?;
    let result = everything_through_mcpool(json!({"url": url})).await;
    server.kill().await?;
    result
}
