//! The endpoint's request rules against the real binary: the bearer scheme
//! in any case, loopback `Host` names on every path and exactly one `Host`,
//! malformed JSON as a JSON-RPC parse error and JSON that is no request as
//! an invalid request, params that do not fit as invalid params, `DELETE`
//! of an unknown session, the request size limit, unreadable bodies, and
//! the config file's problems in `/api/config` and `/api/events`.

use std::time::Duration;

use mcpool_tests::raw::{exchange, RawSession};
use mcpool_tests::*;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(20);

/// An `initialize` to `url` by `method`, accepting what an agent accepts;
/// the test adds the headers it checks.
fn initialize_at(http: &reqwest::Client, method: reqwest::Method, url: String) -> reqwest::RequestBuilder {
    http.request(method, url)
        .header("accept", "application/json, text/event-stream")
        .json(&initialize_request())
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
        let r = initialize_at(&http, reqwest::Method::POST, pool.url("/mcp"))
            .header("authorization", format!("{scheme} {}", pool.token))
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
        let r = initialize_at(&http, method.clone(), pool.url(path))
            .bearer_auth(&pool.token)
            .header("host", format!("rebind.example:{}", pool.port))
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
    let (status, body) = post_body(&pool, "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ").await?;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["code"], -32700, "{body}");
    // The wrong media type is still 415.
    let (status, _) = post_typed(&pool, "text/plain", "{}").await?;
    assert_eq!(status, 415);
    Ok(())
}

/// A POST of `body` to `/mcp` as an agent sends it; the status and the reply.
async fn post_body(pool: &Mcpool, body: impl Into<reqwest::Body>) -> anyhow::Result<(u16, Value)> {
    post_typed(pool, "application/json", body).await
}

/// [`post_body`] with this `content-type`.
async fn post_typed(pool: &Mcpool, content_type: &str, body: impl Into<reqwest::Body>) -> anyhow::Result<(u16, Value)> {
    let r = reqwest::Client::new()
        .post(pool.url("/mcp"))
        .bearer_auth(&pool.token)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", content_type)
        .body(body)
        .send()
        .await?;
    let status = r.status().as_u16();
    let text = r.text().await?;
    Ok((status, serde_json::from_str(&text).unwrap_or(Value::String(text))))
}

/// A raw HTTP/1.1 request to the instance, with its token, `Connection:
/// close` and the caller's `headers` (each ending in CRLF) and body.
fn raw_request(pool: &Mcpool, method: &str, headers: &str, body: &str) -> Vec<u8> {
    format!(
        "{method} /mcp HTTP/1.1\r\nauthorization: Bearer {}\r\naccept: application/json, text/event-stream\r\ncontent-type: application/json\r\nconnection: close\r\n{headers}\r\n{body}",
        pool.token
    )
    .into_bytes()
}

#[tokio::test]
async fn json_that_is_no_request_is_an_invalid_request() -> anyhow::Result<()> {
    let pool = Mcpool::start(json!({"mcpServers": {}})).await?;
    for (body, id) in [
        ("{}", Value::Null),
        ("[]", Value::Null),
        (r#"[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]"#, Value::Null),
        (r#"{"jsonrpc": "1.0", "id": 1, "method": "ping"}"#, json!(1)),
        (r#"{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}"#, Value::Null),
        (r#"{"jsonrpc": "2.0", "id": 2, "method": 42}"#, json!(2)),
    ] {
        let (status, reply) = post_body(&pool, body).await?;
        assert_eq!(status, 400, "{body}: {reply}");
        assert_eq!(reply["error"]["code"], -32600, "{body}: {reply}");
        assert_eq!(reply["id"], id, "{body}: {reply}");
        let message = reply["error"]["message"].as_str().unwrap_or_default();
        assert!(message.starts_with("Invalid Request: "), "{body}: {reply}");
    }
    let (status, reply) = post_body(&pool, "[]").await?;
    assert!(
        reply["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("empty batch")),
        "{status} {reply}"
    );
    let (status, reply) = post_body(&pool, r#"{"jsonrpc": "2.0", "id": 1, "method": "#).await?;
    assert_eq!((status, &reply["error"]["code"]), (400, &json!(-32700)), "{reply}");
    Ok(())
}

#[tokio::test]
async fn params_that_do_not_fit_are_invalid_params_with_a_sentence() -> anyhow::Result<()> {
    let log = TempDir::new("params-log");
    let pool = Mcpool::start(json!({"mcpServers": {"f": faulty_stdio(&log.path().join("spawns"), &[])}})).await?;
    pool.wait_status("f", "connected", LIMIT).await?;
    let session = RawSession::open(&pool, "/mcp").await?;
    let calls = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "f__echo", "arguments": 5}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": 42, "arguments": {}}}),
    ];
    for call in calls {
        let reply = session.send(call.clone()).await?;
        let message = reply.message.unwrap_or_default();
        assert_eq!(message["error"]["code"], -32602, "{call}: {}", reply.body);
        assert_eq!(message["id"], call["id"], "{call}: {}", reply.body);
        assert_eq!(
            message["error"]["message"],
            "tools/call needs params.name, a tool name string, and params.arguments, an object (or no arguments).",
            "{call}"
        );
    }
    // Completions are advertised, so the method is there: its params are wrong.
    let reply = session
        .send(json!({"jsonrpc": "2.0", "id": 4, "method": "completion/complete", "params": {}}))
        .await?;
    let message = reply.message.unwrap_or_default();
    assert_eq!(message["error"]["code"], -32602, "{}", reply.body);
    assert!(
        message["error"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("completion/complete needs params.ref")),
        "{}",
        reply.body
    );
    // A method MCP does not have is still -32601, and the session goes on.
    let reply = session
        .send(json!({"jsonrpc": "2.0", "id": 5, "method": "vendor/thing"}))
        .await?;
    assert_eq!(
        reply.message.unwrap_or_default()["error"]["code"],
        -32601,
        "{}",
        reply.body
    );
    let reply = session
        .send(json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "f__echo", "arguments": {"text": "hi"}}}))
        .await?;
    assert!(
        reply.message.is_some_and(|m| m.get("result").is_some()),
        "{}",
        reply.body
    );
    Ok(())
}

#[tokio::test]
async fn deleting_an_unknown_session_is_404() -> anyhow::Result<()> {
    let pool = Mcpool::start(json!({"mcpServers": {}})).await?;
    let session = RawSession::open(&pool, "/mcp").await?;
    assert_eq!(
        RawSession::with_id(&pool, "/mcp", "no-such-session").delete().await?,
        404
    );
    // Open on /mcp, so unknown on a profile's or another endpoint.
    assert_eq!(session.delete().await?, 204);
    assert_eq!(session.delete().await?, 404, "ended already");
    Ok(())
}

#[tokio::test]
async fn a_request_over_the_limit_is_413_with_a_json_rpc_error() -> anyhow::Result<()> {
    let pool = Mcpool::start_with(json!({"mcpServers": {}}), &[("MCPOOL_MAX_REQUEST_BYTES", "2000")]).await?;
    let padded = |n: usize| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "x".repeat(n), "version": "0"}}})
        .to_string()
    };
    let (status, reply) = post_body(&pool, padded(1500)).await?;
    assert_eq!(status, 200, "under the limit: {reply}");
    let check = |status: u16, reply: &Value| {
        assert_eq!(status, 413, "{reply}");
        assert_eq!(reply["jsonrpc"], "2.0", "{reply}");
        assert_eq!(reply["id"], Value::Null, "{reply}");
        assert_eq!(reply["error"]["code"], -32600, "{reply}");
        let message = reply["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("2000 bytes")
                && message.contains("--max-request-bytes")
                && message.contains("MCPOOL_MAX_REQUEST_BYTES"),
            "{reply}"
        );
    };
    let (status, reply) = post_body(&pool, padded(2500)).await?;
    check(status, &reply);
    // Without a length: counted as it streams.
    let body = padded(2500);
    let chunks: Vec<Result<String, std::io::Error>> = body
        .as_bytes()
        .chunks(500)
        .map(|c| Ok(String::from_utf8_lossy(c).into_owned()))
        .collect();
    let (status, reply) = post_body(&pool, reqwest::Body::wrap_stream(futures::stream::iter(chunks))).await?;
    check(status, &reply);
    Ok(())
}

#[tokio::test]
async fn an_unreadable_body_is_400() -> anyhow::Result<()> {
    let pool = Mcpool::start(json!({"mcpServers": {}})).await?;
    let host = format!("host: 127.0.0.1:{}\r\n", pool.port);
    let broken = raw_request(
        &pool,
        "POST",
        &format!("{host}transfer-encoding: chunked\r\n"),
        "5\r\n{\"jso\r\nzz\r\n",
    );
    let (status, body) = exchange(pool.port, &broken).await?;
    assert_eq!(status, 400, "{body}");
    // The same request, whole, is answered.
    let whole = initialize_request().to_string();
    let good = raw_request(
        &pool,
        "POST",
        &format!("{host}content-length: {}\r\n", whole.len()),
        &whole,
    );
    let (status, body) = exchange(pool.port, &good).await?;
    assert_eq!(status, 200, "{body}");
    Ok(())
}

#[tokio::test]
async fn a_request_needs_exactly_one_host() -> anyhow::Result<()> {
    let pool = Mcpool::start(json!({"mcpServers": {}})).await?;
    let body = initialize_request().to_string();
    let length = format!("content-length: {}\r\n", body.len());
    let host = format!("host: 127.0.0.1:{}\r\n", pool.port);
    for (what, headers) in [
        ("two Host headers", format!("{host}{host}{length}")),
        (
            "a loopback and a foreign Host",
            format!("{host}host: rebind.example\r\n{length}"),
        ),
        ("no Host", length.clone()),
    ] {
        let (status, reply) = exchange(pool.port, &raw_request(&pool, "POST", &headers, &body)).await?;
        assert_eq!(status, 400, "{what}: {reply}");
    }
    let (status, reply) = exchange(
        pool.port,
        &raw_request(&pool, "POST", &format!("{host}{length}"), &body),
    )
    .await?;
    assert_eq!(status, 200, "one Host: {reply}");
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
