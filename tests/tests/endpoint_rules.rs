//! The endpoint's request rules against the real binary: the bearer scheme
//! in any case, loopback `Host` names on every path, malformed JSON as a
//! JSON-RPC parse error, and the config file's problems in `/api/config`
//! and `/api/events`.

use std::time::Duration;

use mcpool_tests::*;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(20);

fn init() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
}

#[tokio::test]
async fn the_bearer_scheme_is_case_insensitive_and_hosts_must_be_loopback() -> anyhow::Result<()> {
    let pool = Mcpool::start(json!({"mcpServers": {}})).await?;
    let http = reqwest::Client::new();
    for scheme in ["Bearer", "bearer", "BEARER"] {
        let r = http
            .get(pool.url("/api/servers"))
            .header("authorization", format!("{scheme} {}", pool.token))
            .send()
            .await?;
        assert_eq!(r.status(), 200, "{scheme}");
        let r = http
            .post(pool.url("/mcp"))
            .header("authorization", format!("{scheme} {}", pool.token))
            .header("accept", "application/json, text/event-stream")
            .json(&init())
            .send()
            .await?;
        assert_eq!(r.status(), 200, "/mcp with {scheme}");
    }
    // A DNS-rebinding page reaches 127.0.0.1 under its own name.
    for (method, path) in [
        ("GET", "/api/servers"),
        ("GET", "/api/config"),
        ("POST", "/api/servers/x/reconnect"),
        ("GET", "/api/events"),
        ("POST", "/mcp"),
        ("GET", "/ui"),
    ] {
        let method: reqwest::Method = method.parse()?;
        let r = http
            .request(method.clone(), pool.url(path))
            .bearer_auth(&pool.token)
            .header("host", format!("rebind.example:{}", pool.port))
            .header("accept", "application/json, text/event-stream")
            .json(&init())
            .send()
            .await?;
        assert_eq!(r.status(), 403, "{method} {path} with a foreign Host");
        let r = http
            .request(method.clone(), pool.url(path))
            .bearer_auth(&pool.token)
            .header("host", format!("localhost:{}", pool.port))
            .send()
            .await?;
        assert_ne!(r.status(), 403, "{method} {path} with Host localhost");
    }
    Ok(())
}

#[tokio::test]
async fn malformed_json_is_400_with_a_parse_error() -> anyhow::Result<()> {
    let pool = Mcpool::start(json!({"mcpServers": {}})).await?;
    let r = reqwest::Client::new()
        .post(pool.url("/mcp"))
        .bearer_auth(&pool.token)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ")
        .send()
        .await?;
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await?;
    assert_eq!(body["error"]["code"], -32700, "{body}");
    // The wrong media type is still 415.
    let r = reqwest::Client::new()
        .post(pool.url("/mcp"))
        .bearer_auth(&pool.token)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await?;
    assert_eq!(r.status(), 415);
    Ok(())
}

async fn config(pool: &Mcpool) -> anyhow::Result<Value> {
    let r = reqwest::Client::new()
        .get(pool.url("/api/config"))
        .bearer_auth(&pool.token)
        .send()
        .await?;
    anyhow::ensure!(r.status() == 200, "GET /api/config: {}", r.status());
    Ok(r.json().await?)
}

#[tokio::test]
async fn config_problems_and_repeated_keys_show_in_api_config_and_events() -> anyhow::Result<()> {
    let dir = TempDir::new("config-problems");
    let log = dir.path().join("faulty.log");
    let faulty = faulty_stdio(&log, &[]);
    // Written by hand: a JSON value cannot hold a repeated key.
    let text = format!(
        r#"{{"mcpServers": {{
            "good": {faulty},
            "bad": {{"command": "x", "timeout": "soon"}},
            "twice": {{"command": "first"}},
            "twice": {faulty}
        }}}}"#
    );
    std::fs::write(dir.path().join("config.json"), text)?;
    let pool = Mcpool::start_in_dir(dir, &[]).await?;
    pool.wait_status("twice", "connected", LIMIT).await?;
    let state = config(&pool).await?;
    assert!(
        state["path"].as_str().is_some_and(|p| p.ends_with("config.json")),
        "{state}"
    );
    assert_eq!(state["file_error"], Value::Null, "{state}");
    let problems: Vec<(String, String, String)> = state["problems"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            (
                p["server"].as_str().unwrap_or_default().to_string(),
                p["field"].as_str().unwrap_or_default().to_string(),
                p["severity"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(
        problems,
        [
            ("twice".to_string(), String::new(), "warning".to_string()),
            ("bad".to_string(), "timeout".to_string(), "error".to_string()),
        ],
        "{state}"
    );
    let warning = &state["problems"][0]["text"];
    assert!(
        warning
            .as_str()
            .is_some_and(|t| t.contains("defined twice") && t.contains("config.json")),
        "{warning}"
    );
    assert!(pool.logs().contains("defined twice"), "{}", pool.logs());

    // A broken file: the running servers stay, and the error shows, live.
    let mut events = reqwest::Client::new()
        .get(pool.url("/api/events"))
        .bearer_auth(&pool.token)
        .send()
        .await?;
    std::fs::write(pool.config_path(), "{\"mcpServers\": {")?;
    let mut seen = String::new();
    let deadline = tokio::time::Instant::now() + LIMIT;
    while !seen.contains("event: config") || !seen.contains("invalid JSON") {
        let chunk = tokio::time::timeout_at(deadline, events.chunk()).await??;
        let Some(chunk) = chunk else { break };
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(
        seen.contains("event: config") && seen.contains("invalid JSON"),
        "{seen}"
    );
    let state = config(&pool).await?;
    let error = state["file_error"]["text"].as_str().unwrap_or_default();
    assert!(
        error.contains("config.json") && error.contains("invalid JSON at line 1"),
        "{state}"
    );
    assert_eq!(pool.server("good").await?["status"], "connected");
    Ok(())
}
