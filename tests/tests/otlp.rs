//! OpenTelemetry over OTLP/HTTP against the real binary: a receiver that
//! decodes with the official `opentelemetry-proto` package
//! (`tests/py/otlp_receiver.py`) gets a SERVER span for the agent's
//! `tools/call`, continuing the trace of the `traceparent` the agent sent
//! in `_meta`, and its CLIENT child for the upstream request, whose
//! `traceparent` the server (the Python SDK's FastMCP, echoing its
//! request's `_meta`) received; a prompt get and a resource read are traced
//! the same way; the metrics arrive too; a keyring secret and a tool or
//! prompt argument are in nothing exported.

use std::process::Stdio;
use std::time::Duration;

use mcpool_tests::process::first_line;
use mcpool_tests::raw::RawSession;
use mcpool_tests::secrets::*;
use mcpool_tests::stateless::STATELESS_ONLY;
use mcpool_tests::*;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(20);
const TRACE: &str = "5ba1c0ffee5ba1c0ffee5ba1c0ffee01";
const AGENT_SPAN: &str = "a9e1a9e1a9e1a9e1";
/// OTLP's `Span.SpanKind`.
const SERVER: u64 = 2;
const CLIENT: u64 = 3;

fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[tokio::test]
async fn a_tool_call_is_traced_from_the_agents_traceparent_to_the_upstream() -> anyhow::Result<()> {
    let work = TempDir::new("otlp-receiver");
    let out = work.path().join("otlp.jsonl");
    let mut receiver = tokio::process::Command::new(python())
        .arg(repo_root().join("tests/py/otlp_receiver.py"))
        .arg(&out)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let port = first_line(&mut receiver, LIMIT).await?;
    let endpoint = format!("http://127.0.0.1:{}", port.trim());

    let dir = TempDir::new("otlp");
    let stateless_log = work.path().join("stateless.log");
    let key = new_secret("otlp-keyring");
    let argument = format!("argument-{}", new_secret("otlp-argument"));
    store_secret(dir.path(), "otlp-key", &key).await?;
    let mut pool = Mcpool::start_in(
        dir,
        json!({"mcpServers": {
            "meta": {
                "command": python(),
                "args": [repo_root().join("tests/py/meta_server.py")],
                "env": {"API_KEY": "${keyring:otlp-key}"},
            },
            "stateless": faulty_stdio(&stateless_log, &STATELESS_ONLY),
        }}),
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
            ("OTEL_METRIC_EXPORT_INTERVAL", "500"),
        ],
    )
    .await?;
    pool.wait_status("meta", "connected", LIMIT).await?;
    pool.wait_status("stateless", "connected", LIMIT).await?;
    let session = RawSession::open(&pool, "/mcp").await?;
    let reply = session
        .send(json!({
            "jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {
                "name": "meta__echo_meta",
                "arguments": {"text": argument},
                "_meta": {"traceparent": format!("00-{TRACE}-{AGENT_SPAN}-01"), "tracestate": "agent=1"},
            }
        }))
        .await?;
    let message = reply.message.unwrap_or_default();
    let text = message["result"]["content"][0]["text"].as_str().unwrap_or_default();
    let upstream_meta: Value = serde_json::from_str(text).map_err(|e| anyhow::anyhow!("{e}: {message}"))?;
    let received = upstream_meta["traceparent"].as_str().unwrap_or_default().to_string();
    assert!(received.starts_with(&format!("00-{TRACE}-")), "{upstream_meta}");
    assert!(
        !received.contains(AGENT_SPAN),
        "the server's parent is mcpool's span: {received}"
    );

    // A prompt get and a resource read: traces of their own (no traceparent).
    for (id, method, params) in [
        (
            8,
            "prompts/get",
            json!({"name": "stateless__greet", "arguments": {"name": argument}}),
        ),
        (9, "resources/read", json!({"uri": "faulty://static/hello"})),
    ] {
        let reply = session
            .send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        let message = reply.message.unwrap_or_default();
        assert!(message.get("result").is_some(), "{method}: {message}");
    }

    // The activity log names the trace the call ran under.
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        let page = pool.get_json("/api/activity").await?;
        let items = page["items"].as_array().cloned().unwrap_or_default();
        let traced = items.iter().find(|i| i["tool"] == "echo_meta");
        if let Some(item) = traced {
            assert_eq!(item["trace_id"], TRACE, "{item}");
            break;
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "no echo_meta in the activity log: {page}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Shutdown flushes what is batched.
    pool.stop().await?;
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + LIMIT;
    while tokio::time::Instant::now() < deadline {
        seen = lines(&out);
        let spans = seen.iter().filter(|l| l["type"] == "span").count();
        if spans >= 6 && seen.iter().any(|l| l["type"] == "metric") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let spans: Vec<&Value> = seen.iter().filter(|l| l["type"] == "span").collect();
    let agent_span = spans
        .iter()
        .find(|s| s["kind"] == SERVER && s["name"] == "tools/call echo_meta")
        .ok_or_else(|| anyhow::anyhow!("no agent span in {spans:?}"))?;
    assert_eq!(agent_span["trace_id"], TRACE, "{agent_span}");
    assert_eq!(agent_span["parent_span_id"], AGENT_SPAN, "{agent_span}");
    let attributes = &agent_span["attributes"];
    assert_eq!(attributes["mcp.method.name"], "tools/call", "{agent_span}");
    assert_eq!(attributes["gen_ai.tool.name"], "echo_meta", "{agent_span}");
    assert_eq!(attributes["mcpool.server"], "meta", "{agent_span}");
    assert_eq!(attributes["mcp.session.id"], session.id.as_str(), "{agent_span}");
    assert_eq!(attributes["mcpool.outcome"], "ok", "{agent_span}");
    assert_eq!(agent_span["resource"]["service.name"], "mcpool", "{agent_span}");

    let upstream = spans
        .iter()
        .find(|s| s["kind"] == CLIENT && s["attributes"]["mcpool.server"] == "meta")
        .ok_or_else(|| anyhow::anyhow!("no upstream span in {spans:?}"))?;
    assert_eq!(upstream["trace_id"], TRACE, "{upstream}");
    assert_eq!(upstream["parent_span_id"], agent_span["span_id"], "{upstream}");
    assert_eq!(upstream["attributes"]["mcpool.server"], "meta", "{upstream}");
    assert_eq!(upstream["attributes"]["gen_ai.tool.name"], "echo_meta", "{upstream}");
    let client_span = upstream["span_id"].as_str().unwrap_or_default();
    assert_eq!(
        received,
        format!("00-{TRACE}-{client_span}-01"),
        "the server got the CLIENT span"
    );

    for (name, attribute, value) in [
        ("prompts/get greet", "gen_ai.prompt.name", "greet"),
        ("resources/read", "mcp.resource.uri", "faulty://static/hello"),
    ] {
        let agent_span = spans
            .iter()
            .find(|s| s["kind"] == SERVER && s["name"] == name)
            .ok_or_else(|| anyhow::anyhow!("no agent span {name} in {spans:?}"))?;
        let attributes = &agent_span["attributes"];
        assert_eq!(attributes["mcpool.server"], "stateless", "{agent_span}");
        assert_eq!(attributes[attribute], value, "{agent_span}");
        assert_eq!(attributes["mcpool.outcome"], "ok", "{agent_span}");
        assert_ne!(agent_span["trace_id"], TRACE, "a trace of its own: {agent_span}");
        let upstream = spans
            .iter()
            .find(|s| s["kind"] == CLIENT && s["parent_span_id"] == agent_span["span_id"])
            .ok_or_else(|| anyhow::anyhow!("no upstream span under {agent_span} in {spans:?}"))?;
        assert_eq!(upstream["trace_id"], agent_span["trace_id"], "{upstream}");
        assert_eq!(upstream["attributes"]["mcpool.server"], "stateless", "{upstream}");
        assert_eq!(upstream["name"], name, "{upstream}");
    }

    let metrics: Vec<&Value> = seen.iter().filter(|l| l["type"] == "metric").collect();
    let calls = metrics
        .iter()
        .find(|m| m["name"] == "mcpool.tool.calls")
        .ok_or_else(|| anyhow::anyhow!("no mcpool.tool.calls in {metrics:?}"))?;
    let point = &calls["data"]["sum"]["dataPoints"][0];
    let labels: Vec<String> = point["attributes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| {
            format!(
                "{}={}",
                a["key"].as_str().unwrap_or_default(),
                a["value"]["stringValue"].as_str().unwrap_or_default()
            )
        })
        .collect();
    assert!(
        labels.contains(&"server=meta".to_string()) && labels.contains(&"tool=echo_meta".to_string()),
        "{calls}"
    );
    assert!(
        metrics.iter().any(|m| m["name"] == "mcpool.tool.call.duration"),
        "{metrics:?}"
    );

    let decoded = std::fs::read(&out)?;
    let raw = std::fs::read(out.with_extension("jsonl.raw"))?;
    for (what, bytes) in [("the decoded export", &decoded), ("the raw export", &raw)] {
        assert_clean(what, bytes, &[&key, &argument]);
        assert!(
            !String::from_utf8_lossy(bytes).contains("otlp-argument"),
            "{what} holds the argument"
        );
    }
    Ok(())
}
