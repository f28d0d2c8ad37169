//! What the dashboard shows per server and of the agents' calls, against
//! the real binary, real servers and the real Secret Service (behaviour §2
//! "control API"): `GET /api/calls` and the `call` event carry tool, server,
//! timing and outcome, never an argument or an error's text; a server's
//! `stderr_tail` is redacted of every secret (rule 14); `last_connected` is
//! set by a connection; `retry_at` is there during a backoff.

use std::path::Path;
use std::time::{Duration, SystemTime};

use mcpool_core::calls::rfc3339;
use mcpool_tests::events::Events;
use mcpool_tests::secrets::*;
use mcpool_tests::*;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(20);

/// A local server that prints its keys on stderr as careless servers do,
/// then serves.
fn chatty_server(dir: &Path) -> anyhow::Result<std::path::PathBuf> {
    let script = dir.join("chatty.sh");
    let body = format!(
        r#"#!/bin/sh
echo "starting with API_KEY=$API_KEY and SERVICE_TOKEN=$SERVICE_TOKEN" >&2
echo "ready" >&2
exec '{}' stdio
"#,
        bin("mcpool-faulty").display()
    );
    write_script(&script, body)?;
    Ok(script)
}

async fn calls(pool: &Mcpool) -> anyhow::Result<(String, Vec<Value>)> {
    let r = reqwest::Client::new()
        .get(pool.url("/api/calls"))
        .bearer_auth(&pool.token)
        .send()
        .await?
        .error_for_status()?;
    let text = r.text().await?;
    let calls: Vec<Value> = serde_json::from_str(&text)?;
    Ok((text, calls))
}

#[tokio::test]
async fn the_dashboard_data_names_calls_and_timings_and_shows_a_redacted_stderr_tail() -> anyhow::Result<()> {
    let Keyed { dir, scripts, key } = Keyed::new("recent-calls", "chatty-key").await?;
    let literal = new_secret("literal");
    // Passed as an argument only: it must never come back from /api.
    let argument = format!("argument-{}", new_secret("argument"));
    let (_limited, limited_url) = faulty_http(&scripts.path().join("limited.log"), &[]).await?;
    control(&limited_url, json!({"mode": "429", "retry_after": 120})).await?;
    let before_start = rfc3339(SystemTime::now());
    let pool = Mcpool::start_in(
        dir,
        json!({"mcpServers": {
            "chatty": {"command": chatty_server(scripts.path())?, "env": {
                "API_KEY": "${keyring:chatty-key}",
                "SERVICE_TOKEN": literal,
            }},
            "limited": {"url": limited_url},
        }}),
        &[],
    )
    .await?;
    let secrets = [key.as_str(), literal.as_str()];

    // Connected: when, and the stderr tail without the values.
    let chatty = pool.wait_status("chatty", "connected", LIMIT).await?;
    let connected = chatty["last_connected"].as_str().unwrap_or_default().to_string();
    assert!(
        connected.len() == 24 && connected >= before_start && connected <= rfc3339(SystemTime::now()),
        "last_connected is the RFC 3339 time of the connection: {chatty}"
    );
    assert_eq!(
        chatty["stderr_tail"],
        json!(["starting with API_KEY=[secret] and SERVICE_TOKEN=[secret]", "ready"]),
        "{chatty}"
    );
    assert_eq!(chatty["retry_at"], Value::Null, "{chatty}");

    // Backing off after a 429 with Retry-After: 120: the absolute time of
    // the next attempt, about two minutes ahead; never connected.
    let limited = pool.wait_status("limited", "failed", LIMIT).await?;
    let now = SystemTime::now();
    let retry_at = limited["retry_at"].as_str().unwrap_or_default();
    assert!(
        retry_at >= rfc3339(now + Duration::from_secs(100)).as_str()
            && retry_at <= rfc3339(now + Duration::from_secs(121)).as_str(),
        "retry_at during the backoff: {limited}"
    );
    assert!(limited["retry_in_ms"].as_u64().unwrap_or(0) > 100_000, "{limited}");
    assert_eq!(limited["last_connected"], Value::Null, "{limited}");
    assert_eq!(
        limited["stderr_tail"],
        json!([]),
        "a remote server has no stderr: {limited}"
    );

    // Calls of every kind, with the argument in each.
    let events = Events::follow(&pool).await?;
    let agent = pool.agent("/mcp").await?;
    let echoed = agent.call("chatty__echo", json!({"text": argument})).await?;
    assert_eq!(text(&echoed), argument);
    agent.call("chatty__slow", json!({"ms": 300, "note": argument})).await?;
    let bad = agent.call("chatty__add", json!({"a": argument, "b": 1})).await;
    assert!(bad.is_err(), "a bad argument is a JSON-RPC error: {bad:?}");
    let refused = agent.call("limited__echo", json!({"text": argument})).await?;
    assert_eq!(refused.is_error, Some(true));
    agent.call("mcpool__status", json!({"verbose": argument})).await?;
    let one = pool.agent("/servers/chatty/mcp").await?;
    one.call("echo", json!({"text": argument})).await?;
    let unknown = agent.call("nobody__echo", json!({"text": argument})).await;
    assert!(unknown.is_err());

    let (raw, recent) = calls(&pool).await?;
    let seen: Vec<(&str, &str, &str, bool)> = recent
        .iter()
        .map(|c| {
            (
                c["server"].as_str().unwrap_or(""),
                c["tool"].as_str().unwrap_or(""),
                c["outcome"].as_str().unwrap_or(""),
                c["ok"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    // Newest first; the call to an unknown tool reached no server.
    assert_eq!(
        seen,
        [
            ("chatty", "echo", "ok", true),
            ("mcpool", "status", "ok", true),
            ("limited", "echo", "unavailable", false),
            ("chatty", "add", "protocol_error", false),
            ("chatty", "slow", "ok", true),
            ("chatty", "echo", "ok", true),
        ],
        "{raw}"
    );
    for call in &recent {
        let keys: Vec<&String> = call.as_object().map(|o| o.keys().collect()).unwrap_or_default();
        assert_eq!(
            keys,
            ["id", "time", "server", "tool", "duration_ms", "ok", "outcome"],
            "names and timings only: {call}"
        );
        let time = call["time"].as_str().unwrap_or_default();
        assert!(time.len() == 24 && time >= connected.as_str(), "{call}");
    }
    assert!(recent[4]["duration_ms"].as_u64().unwrap_or(0) >= 300, "{raw}");
    assert!(recent[0]["id"].as_u64() > recent[1]["id"].as_u64(), "{raw}");
    assert!(!raw.contains(&argument), "/api/calls holds an argument: {raw}");
    assert!(!raw.contains("argument-"), "/api/calls holds an argument: {raw}");
    assert_clean("/api/calls", raw.as_bytes(), &secrets);

    // The same six, live on /api/events, without the argument either.
    wait_for("six call events", LIMIT, || events.data_of("call").len() >= 6).await?;
    let streamed: Vec<Value> = events.data_of("call");
    let mut newest_first = streamed.clone();
    newest_first.reverse();
    assert_eq!(newest_first, recent, "the events are the records");
    let stream = events.text();
    assert!(!stream.contains("argument-"), "/api/events holds an argument: {stream}");
    assert_clean("/api/events", stream.as_bytes(), &secrets);
    let servers = serde_json::to_string(&pool.servers().await?)?;
    assert_clean("/api/servers", servers.as_bytes(), &secrets);
    assert!(!servers.contains("argument-"), "{servers}");

    // After a crash the tail keeps the process's last words, still
    // redacted, and a reconnect moves last_connected on.
    let crash = agent.call("chatty__crash", json!({"message": "disk on fire"})).await;
    assert!(
        crash.is_err() || crash.as_ref().is_ok_and(|r| r.is_error == Some(true)),
        "{crash:?}"
    );
    let failed = pool.wait_status("chatty", "failed", LIMIT).await?;
    let tail: Vec<&str> = failed["stderr_tail"]
        .as_array()
        .map(|t| t.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert_eq!(tail.last(), Some(&"disk on fire"), "{failed}");
    assert!(
        tail.contains(&"starting with API_KEY=[secret] and SERVICE_TOKEN=[secret]"),
        "{failed}"
    );
    assert_eq!(failed["last_connected"].as_str(), Some(connected.as_str()), "{failed}");
    tokio::time::sleep(Duration::from_millis(20)).await;
    let (code, body) = pool.post("/api/servers/chatty/reconnect").await?;
    assert_eq!(code, 200, "{body}");
    let again = pool.wait_status("chatty", "connected", LIMIT).await?;
    assert!(
        again["last_connected"].as_str().is_some_and(|t| t > connected.as_str()),
        "last_connected moves on: {again}"
    );
    assert_clean(
        "/api/servers at the end",
        serde_json::to_string(&pool.servers().await?)?.as_bytes(),
        &secrets,
    );
    Ok(())
}
