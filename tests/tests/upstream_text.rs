//! Text that comes from upstream (a local server's stderr, an HTTP error
//! body, a URL) reaches agents, `/api`, `/api/events` and the dashboard
//! only redacted of every secret and cut to one readable sentence; the
//! whole (redacted) text goes to the log. Against the real binary and the
//! real Secret Service.

use std::path::Path;
use std::time::Duration;

use mcpool_tests::events::Events;
use mcpool_tests::secrets::*;
use mcpool_tests::*;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(20);

/// What an agent reads from a call: the result's text, or the error.
async fn outcome(agent: &Agent, tool: &str, args: Value) -> String {
    match agent.call(tool, args).await {
        Ok(r) => text(&r),
        Err(e) => e.to_string(),
    }
}

/// A local server that prints its keys on stderr, serves once, and after
/// its first exit refuses to start again (printing the key once more).
fn leaky_server(dir: &Path) -> anyhow::Result<std::path::PathBuf> {
    let script = dir.join("leaky.sh");
    let body = format!(
        r#"#!/bin/sh
echo "starting with API_KEY=$API_KEY and SERVICE_TOKEN=$SERVICE_TOKEN" >&2
if [ -e "$MARK" ]; then echo "still broken, key $API_KEY" >&2; exit 1; fi
touch "$MARK"
exec '{}' stdio
"#,
        bin("mcpool-faulty").display()
    );
    write_script(&script, body)?;
    Ok(script)
}

#[tokio::test]
async fn a_secret_a_connected_server_prints_never_reaches_api_events_status_or_agents() -> anyhow::Result<()> {
    let Keyed { dir, scripts, key } = Keyed::new("leak-after-connect", "leaky-key").await?;
    let literal = new_secret("literal");
    let in_url = new_secret("query");
    let closed = free_port()?;
    let pool = Mcpool::start_in(
        dir,
        json!({"mcpServers": {
            "leaky": {"command": leaky_server(scripts.path())?, "env": {
                "API_KEY": "${keyring:leaky-key}",
                "SERVICE_TOKEN": literal,
                "MARK": scripts.path().join("started-once"),
            }},
            "query": {"url": format!("http://127.0.0.1:{closed}/mcp?api_key={in_url}&x=1")},
        }}),
        &[],
    )
    .await?;
    let secrets = [key.as_str(), literal.as_str(), in_url.as_str()];
    pool.wait_status("leaky", "connected", LIMIT).await?;
    let query = pool.wait_status("query", "failed", LIMIT).await?;
    let events = Events::follow(&pool).await?;
    let agent = pool.agent("/mcp").await?;

    let mut texts: Vec<(String, String)> = Vec::new();
    texts.push((
        "the crash call".into(),
        outcome(&agent, "leaky__crash", json!({})).await,
    ));
    let failed = pool.wait_status("leaky", "failed", LIMIT).await?;
    let error = failed["error"].as_str().unwrap_or_default().to_string();
    // The stderr tail is there, only without the values.
    assert!(
        error.contains("starting with API_KEY=[secret] and SERVICE_TOKEN=[secret]"),
        "{error}"
    );
    texts.push((
        "/api/servers after the drop".into(),
        serde_json::to_string(&pool.servers().await?)?,
    ));
    texts.push((
        "mcpool__status".into(),
        outcome(&agent, "mcpool__status", json!({})).await,
    ));
    texts.push((
        "the next call".into(),
        outcome(&agent, "leaky__echo", json!({"text": "hi"})).await,
    ));
    texts.push((
        "a call to query".into(),
        outcome(&agent, "query__echo", json!({"text": "hi"})).await,
    ));
    texts.push((
        "/api/servers at the end".into(),
        serde_json::to_string(&pool.servers().await?)?,
    ));
    texts.push(("query's error".into(), query.to_string()));
    wait_for("the drop on /api/events", LIMIT, || {
        events.text().contains("tools kept")
    })
    .await?;
    texts.push(("/api/events".into(), events.text()));
    for (what, text) in &texts {
        assert_clean(what, text.as_bytes(), &secrets);
    }
    assert!(
        query["error"].as_str().is_some_and(|e| e.contains("api_key=")),
        "{query}"
    );
    assert_clean("the log", pool.logs().as_bytes(), &secrets);
    Ok(())
}

#[tokio::test]
async fn a_64_kb_error_body_becomes_a_short_excerpt_and_the_rest_goes_to_the_log() -> anyhow::Result<()> {
    let dir = TempDir::new("big-error-body");
    let bearer = new_secret("literal-bearer");
    let (_remote, url) = faulty_http(&dir.path().join("remote.log"), &[]).await?;
    let pool = Mcpool::start_connected(json!({"mcpServers": {
        "echoer": {"url": url, "headers": {"Authorization": format!("Bearer {bearer}")}},
    }}))
    .await?;
    let agent = pool.agent("/mcp").await?;
    control(&url, json!({"mode": "400-echo"})).await?;
    let during = outcome(&agent, "echoer__echo", json!({"text": "hi"})).await;
    let next = outcome(&agent, "echoer__echo", json!({"text": "hi"})).await;
    let status = pool.wait_status("echoer", "failed", LIMIT).await?;
    let error = status["error"].as_str().unwrap_or_default().to_string();
    for (what, text) in [
        ("the call", &during),
        ("the next call", &next),
        ("the status error", &error),
    ] {
        assert!(
            text.chars().count() < 600,
            "{what} is {} characters: {text}",
            text.chars().count()
        );
        assert!(!text.contains("xxxxxxxxxx"), "{what} carries the body: {text}");
        assert_clean(what, text.as_bytes(), &[&bearer]);
    }
    assert!(
        error.contains("the request was not understood") && error.contains("more in the mcpool log"),
        "{error}"
    );
    let logs = pool.logs();
    assert!(logs.contains("request_headers"), "the full body is not in the log");
    assert_clean("the log", logs.as_bytes(), &[&bearer]);
    Ok(())
}

/// The excerpt of an error body is cut only after the secrets are taken
/// out: a server that echoes a keyring value over and over leaves no piece
/// of it in the call's error, the status, `mcpool__status` or the log.
#[tokio::test]
async fn a_secret_the_excerpt_would_cut_leaves_no_piece_behind() -> anyhow::Result<()> {
    let dir = TempDir::new("cut-secret");
    let key = new_secret("cut-keyring");
    store_secret(dir.path(), "echoed-key", &key).await?;
    let (_remote, url) = faulty_http(&dir.path().join("remote.log"), &[]).await?;
    let pool = Mcpool::start_in(
        dir,
        json!({"mcpServers": {
            "echoer": {"url": url, "headers": {"X-Api-Key": "${keyring:echoed-key}"}},
        }}),
        &[],
    )
    .await?;
    pool.wait_status("echoer", "connected", LIMIT).await?;
    let agent = pool.agent("/mcp").await?;
    control(&url, json!({"mode": "400-echo-text"})).await?;
    let during = outcome(&agent, "echoer__echo", json!({"text": "hi"})).await;
    let status = pool.wait_status("echoer", "failed", LIMIT).await?;
    let next = outcome(&agent, "echoer__echo", json!({"text": "hi"})).await;
    let builtin = outcome(&agent, "mcpool__status", json!({})).await;
    let error = status["error"].as_str().unwrap_or_default().to_string();
    assert!(error.contains("rejected: x-api-key=[secret]"), "{error}");
    for (what, text) in [
        ("the call", during.as_str()),
        ("the next call", next.as_str()),
        ("the status error", error.as_str()),
        ("mcpool__status", builtin.as_str()),
        ("the log", pool.logs().as_str()),
    ] {
        assert_no_fragment(what, text, &key, 8);
    }
    Ok(())
}

/// A tool result marked `isError` is the server's own error too: redacted
/// exactly as its JSON-RPC errors are.
#[tokio::test]
async fn a_tool_error_is_redacted_like_a_protocol_error() -> anyhow::Result<()> {
    let dir = TempDir::new("tool-error-secret");
    let token = new_secret("tool-error");
    let mut entry = faulty_stdio(&dir.path().join("spawns.log"), &[]);
    entry["env"] = json!({"SERVICE_TOKEN": token});
    let pool = Mcpool::start_connected(json!({"mcpServers": {"f": entry}})).await?;
    for path in ["/mcp", "/servers/f/mcp"] {
        let agent = pool.agent(path).await?;
        let tool = if path == "/mcp" { "f__fail" } else { "fail" };
        let r = agent
            .call(tool, json!({"text": format!("token {token} was refused")}))
            .await?;
        assert_eq!(r.is_error, Some(true), "{r:?}");
        assert_eq!(text(&r), "token [secret] was refused", "through {path}");
        assert_clean(path, serde_json::to_string(&r)?.as_bytes(), &[&token]);
    }
    Ok(())
}
