//! Remote servers on the legacy HTTP+SSE transport (2024-11-05), served by
//! the official Python SDK (`tests/py/sse_server.py`), through mcpool.

use std::time::Duration;

use mcpool_tests::*;
use serde_json::{json, Value};
use tokio::process::Child;

/// Tools listed and called through `/mcp` under `name`'s prefix.
async fn works_through_the_endpoint(pool: &Mcpool, name: &str) -> anyhow::Result<()> {
    let s = pool.wait_status(name, "connected", Duration::from_secs(30)).await?;
    assert_eq!(s["transport"], "sse", "{s}");
    let agent = pool.agent("/mcp").await?;
    let names = agent.tool_names().await?;
    for tool in ["echo", "add", "long_running", "pid"] {
        assert!(names.contains(&format!("{name}__{tool}")), "{tool} missing: {names:?}");
    }
    let r = agent.call(&format!("{name}__echo"), json!({"message": "hi"})).await?;
    assert_eq!(text(&r), "Echo: hi");
    let r = agent.call(&format!("{name}__add"), json!({"a": 2, "b": 3})).await?;
    assert_eq!(text(&r), "5");
    Ok(())
}

/// The Python SDK's SSE server ([`python_sse_server`]), on loopback.
async fn sse_server(extra: &[&str]) -> anyhow::Result<(Child, String)> {
    let (child, url) = python_sse_server(extra).await?;
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    Ok((child, url))
}

#[tokio::test]
async fn an_sse_upstream_is_listed_and_called_through_the_endpoints() -> anyhow::Result<()> {
    let (_server, url) = sse_server(&[]).await?;
    let pool = Mcpool::start(json!({"mcpServers": {"s": {"url": url, "transport": "sse"}}})).await?;
    works_through_the_endpoint(&pool, "s").await?;

    // The per-server endpoint shows it as itself.
    let agent = pool.agent("/servers/s/mcp").await?;
    assert_eq!(agent.server_name().as_deref(), Some("sse-test-server"));
    let r = agent.call("echo", json!({"message": "direct"})).await?;
    assert_eq!(text(&r), "Echo: direct");
    Ok(())
}

#[tokio::test]
async fn a_vs_code_style_sse_entry_works_too() -> anyhow::Result<()> {
    let (_server, url) = sse_server(&[]).await?;
    let pool = Mcpool::start(json!({"servers": {"v": {"type": "sse", "url": url}}})).await?;
    works_through_the_endpoint(&pool, "v").await
}

#[tokio::test]
async fn configured_headers_reach_an_sse_server() -> anyhow::Result<()> {
    let (_server, url) = sse_server(&["--require-header", "X-Api-Key: k1"]).await?;
    let with = |headers: Value| json!({"url": url, "transport": "sse", "headers": headers});
    let pool = Mcpool::start(json!({"mcpServers": {
        "keyed": with(json!({"X-Api-Key": "k1"})),
        "bare": with(json!({})),
    }}))
    .await?;
    // The GET stream and every POST carry the header: listing and calls work.
    works_through_the_endpoint(&pool, "keyed").await?;

    // Without it the server answers 401: a sign-in matter, not a retry loop.
    let s = pool.wait_status("bare", "needs_auth", Duration::from_secs(30)).await?;
    assert!(s["error"].as_str().unwrap_or_default().contains("401"), "{s}");
    let agent = pool.agent("/mcp").await?;
    let r = agent.call("bare__echo", json!({"message": "x"})).await?;
    assert_error_starts(&r, "Server 'bare' needs sign-in");
    Ok(())
}

#[tokio::test]
async fn an_endpoint_on_another_origin_is_refused_and_gets_no_headers() -> anyhow::Result<()> {
    // The other origin: a loopback listener that records every connection.
    let trap = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let foreign = format!("http://127.0.0.1:{}", trap.local_addr()?.port());
    let (seen_tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((stream, _)) = trap.accept().await {
            let _ = seen_tx.send(());
            // Held open, never answered, as a collector would.
            std::mem::forget(stream);
        }
    });
    let (_server, url) = sse_server(&["--require-header", "X-Api-Key: k1", "--endpoint-origin", &foreign]).await?;
    let own = url.trim_end_matches("/sse").to_string();
    let pool = Mcpool::start(json!({"mcpServers": {
        "hostile": {"url": url, "transport": "sse", "headers": {"X-Api-Key": "k1"}},
    }}))
    .await?;

    let s = pool.wait_status("hostile", "failed", Duration::from_secs(30)).await?;
    let error = s["error"].as_str().unwrap_or_default();
    assert!(error.contains("'hostile'"), "{s}");
    assert!(error.contains(&format!("{own} ")), "{s}");
    assert!(error.contains(&format!("{foreign},")), "{s}");
    assert!(error.contains("another origin"), "{s}");
    // Permanent: not dialled again on its own, and nothing reached the trap.
    assert!(seen.try_recv().is_err(), "the foreign origin was contacted");
    let agent = pool.agent("/mcp").await?;
    let r = agent.call("hostile__echo", json!({"message": "x"})).await?;
    assert_eq!(r.is_error, Some(true));
    assert!(seen.try_recv().is_err(), "the foreign origin was contacted");
    Ok(())
}
