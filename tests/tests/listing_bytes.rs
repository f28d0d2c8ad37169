//! A session's `tools/list` on an aggregated path answered from the
//! listing mcpool serialised once per change (endpoint/mcp/cached_list.rs):
//! the same result as rmcp's own answer (a request with `_meta`, which
//! always goes to rmcp), for `/mcp` and a profile, after a tool is switched
//! off and on again, and for a `search` listing (never from the bytes);
//! an unknown session still gets 404.

use mcpool_tests::raw::RawSession;
use mcpool_tests::*;
use serde_json::{json, Value};

/// The result of a plain `tools/list` (served from the bytes) and of one
/// rmcp answers, with the content type of the first.
async fn both(session: &RawSession) -> anyhow::Result<(Value, Value, bool)> {
    let plain = session
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .await?;
    let through_rmcp = session
        .send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": {"mcpool-test": 1}}}))
        .await?;
    anyhow::ensure!(
        plain.status == 200 && through_rmcp.status == 200,
        "{plain:?} {through_rmcp:?}"
    );
    let json_body = serde_json::from_str::<Value>(&plain.body).is_ok();
    let result = |m: Option<Value>| m.and_then(|m| m.get("result").cloned()).unwrap_or(Value::Null);
    let plain_id = plain.message.as_ref().and_then(|m| m.get("id").cloned());
    anyhow::ensure!(plain_id == Some(json!(1)), "id {plain_id:?}");
    Ok((result(plain.message), result(through_rmcp.message), json_body))
}

fn names(result: &Value) -> Vec<String> {
    names_in(&result["tools"])
}

#[tokio::test]
async fn a_listing_from_the_bytes_is_the_one_rmcp_would_send() -> anyhow::Result<()> {
    let logs = TempDir::new("listing-bytes");
    let a = faulty_stdio(&logs.path().join("a.log"), &[]);
    let pool = Mcpool::start_connected(
        json!({"toolListing": "all", "mcpServers": {"a": a}, "profiles": {"p": {"servers": ["a"]}}}),
    )
    .await?;

    let session = RawSession::open(&pool, "/mcp").await?;
    let (plain, rmcp, json_body) = both(&session).await?;
    assert!(json_body, "answered as one JSON body");
    assert!(names(&plain).iter().any(|n| n == "a__echo"), "{plain}");
    assert_eq!(plain, rmcp);

    // A switch changes the lists: the bytes follow.
    let (status, _) = pool.post("/api/servers/a/tools/echo/disable").await?;
    assert_eq!(status, 200);
    let (plain, rmcp, _) = both(&session).await?;
    assert!(!names(&plain).iter().any(|n| n == "a__echo"), "{plain}");
    assert_eq!(plain, rmcp);
    pool.post("/api/servers/a/tools/echo/enable").await?;
    let (plain, rmcp, _) = both(&session).await?;
    assert!(names(&plain).iter().any(|n| n == "a__echo"), "{plain}");
    assert_eq!(plain, rmcp);

    let profile = RawSession::open(&pool, "/profiles/p/mcp").await?;
    let (plain, rmcp, _) = both(&profile).await?;
    assert!(names(&plain).iter().any(|n| n == "a__echo"), "{plain}");
    assert_eq!(plain, rmcp);

    // A `search` listing: the meta-tools, the same either way.
    let search = RawSession::open(&pool, "/mcp?toolListing=search").await?;
    let (plain, rmcp, _) = both(&search).await?;
    assert_eq!(
        names(&plain),
        ["mcpool__search_tools", "mcpool__call_tool", "mcpool__run_script"]
    );
    assert_eq!(plain, rmcp);

    let gone = RawSession::with_id(&pool, "/mcp", "no-such-session");
    let reply = gone
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .await?;
    assert_eq!(reply.status, 404, "{reply:?}");
    Ok(())
}
