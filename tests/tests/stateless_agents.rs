//! behaviour.md rule 16, agent side: an agent that speaks only MCP
//! 2026-07-28 (no `initialize`, no session: `server/discover`, each request
//! with its revision, client info and capabilities in `_meta`, the standard
//! `Mcp-Method`/`Mcp-Name` headers) is served on `/mcp`,
//! `/servers/NAME/mcp` and `/profiles/NAME/mcp` next to session agents.
//!
//! The agents are rmcp's own client pinned to 2026-07-28 (the SDKs pinned
//! for the other tests, TypeScript 1.x and Python 1.x, have no 2026-07-28
//! client) and bare requests over reqwest where the wire itself is checked
//! (`ttlMs`, `cacheScope`, `resultType`, error codes, the SSE stream of one
//! request). The servers behind mcpool are our fault server over stdio, on
//! a session revision and on 2026-07-28 only.

use std::time::Duration;

use mcpool_tests::stateless::REVISION;
use mcpool_tests::*;
use rmcp::model::{ServerNotification, SubscriptionFilter};
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(30);

/// `f`: the fault server on 2025-11-25; `s`: the same on 2026-07-28 only;
/// profile `p`: `f` alone.
/// In a fresh dir `tag`, where the servers log.
async fn pool(tag: &str) -> anyhow::Result<Mcpool> {
    let dir = TempDir::new(tag);
    let config = json!({
        "mcpServers": {
            "f": faulty_stdio(&dir.path().join("f.log"), &[]),
            "s": faulty_stdio(&dir.path().join("s.log"), &STATELESS_ONLY),
        },
        "profiles": {"p": {"servers": ["f"]}},
    });
    Mcpool::start_connected_in(dir, config).await
}

fn error_code(reply: &Value) -> Option<i64> {
    reply.get("error").and_then(|e| e.get("code")).and_then(Value::as_i64)
}

#[tokio::test]
async fn a_2026_07_28_agent_discovers_lists_and_calls_on_every_endpoint() -> anyhow::Result<()> {
    let pool = pool("stateless-agent").await?;

    // server/discover names 2026-07-28 and what /mcp offers.
    let reply = pool
        .stateless_request("/mcp", "server/discover", json!({}), json!({}))
        .await?;
    let discovered = reply.response()?;
    assert_eq!(error_code(discovered), None, "{}", reply.body);
    let result = &discovered["result"];
    let versions = result["supportedVersions"].as_array().cloned().unwrap_or_default();
    assert!(versions.contains(&json!(REVISION)), "{result}");
    assert!(versions.contains(&json!("2025-11-25")), "{result}");
    assert!(result["capabilities"]["tools"].is_object(), "{result}");
    // On a server's own endpoint the answer carries the server's identity.
    let reply = pool
        .stateless_request("/servers/s/mcp", "server/discover", json!({}), json!({}))
        .await?;
    let own = reply.response()?;
    assert_eq!(
        own["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "faulty",
        "{}",
        reply.body
    );

    // Every list carries the 2026-07-28 cache hints and resultType.
    for (path, method) in [
        ("/mcp", "tools/list"),
        ("/mcp", "prompts/list"),
        ("/mcp", "resources/list"),
        ("/mcp", "resources/templates/list"),
        ("/profiles/p/mcp", "tools/list"),
        ("/servers/f/mcp", "tools/list"),
        ("/servers/s/mcp", "tools/list"),
    ] {
        let reply = pool.stateless_request(path, method, json!({}), json!({})).await?;
        let response = reply.response()?;
        let result = &response["result"];
        assert!(result.is_object(), "{path} {method}: {}", reply.body);
        assert_eq!(result["resultType"], "complete", "{path} {method}: {result}");
        assert!(result["ttlMs"].is_u64(), "{path} {method}: {result}");
        assert_eq!(result["cacheScope"], "private", "{path} {method}: {result}");
    }

    // rmcp's client pinned to 2026-07-28: lists and calls through each endpoint.
    let agent = pool.stateless_agent("/mcp").await?;
    let info = agent.service.peer().peer_info().map(|i| i.protocol_version.to_string());
    assert_eq!(info.as_deref(), Some(REVISION));
    let names = agent.tool_names().await?;
    for tool in ["f__echo", "s__echo", "mcpool__status", "mcpool__reconnect"] {
        assert!(names.contains(&tool.to_string()), "{tool} missing: {names:?}");
    }
    assert_eq!(text(&agent.call("f__echo", json!({"text": "via f"})).await?), "via f");
    assert_eq!(text(&agent.call("s__echo", json!({"text": "via s"})).await?), "via s");
    let status = text(&agent.call("mcpool__status", json!({})).await?);
    assert!(status.contains("f") && status.contains("connected"), "{status}");

    let own = pool.stateless_agent("/servers/s/mcp").await?;
    assert!(own.tool_names().await?.contains(&"echo".to_string()));
    assert_eq!(text(&own.call("echo", json!({"text": "own"})).await?), "own");

    let profile = pool.stateless_agent("/profiles/p/mcp").await?;
    let names = profile.tool_names().await?;
    assert!(names.contains(&"f__echo".to_string()), "{names:?}");
    assert!(!names.contains(&"s__echo".to_string()), "{names:?}");
    Ok(())
}

#[tokio::test]
async fn a_2026_07_28_request_is_never_refused_with_unsupported_protocol_version() -> anyhow::Result<()> {
    let pool = pool("stateless-32022").await?;
    let requests = [
        ("server/discover", json!({})),
        ("tools/list", json!({})),
        ("tools/call", json!({"name": "f__echo", "arguments": {"text": "x"}})),
        ("tools/call", json!({"name": "s__echo", "arguments": {"text": "x"}})),
        ("tools/call", json!({"name": "mcpool__status", "arguments": {}})),
        ("prompts/list", json!({})),
        ("resources/list", json!({})),
        ("resources/read", json!({"uri": "faulty://static/hello"})),
    ];
    for path in ["/mcp", "/servers/f/mcp", "/servers/s/mcp", "/profiles/p/mcp"] {
        for (method, params) in &requests {
            let reply = pool.stateless_request(path, method, params.clone(), json!({})).await?;
            let response = reply.response()?;
            assert_ne!(error_code(response), Some(-32022), "{path} {method}: {}", reply.body);
            let own_endpoint = path.starts_with("/servers/");
            if !(own_endpoint && *method == "tools/call") {
                assert_eq!(reply.status, 200, "{path} {method}: {}", reply.body);
            }
        }
    }
    // The calls that name a tool of this endpoint answer it.
    let reply = pool
        .stateless_request(
            "/servers/f/mcp",
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "own"}}),
            json!({}),
        )
        .await?;
    assert_eq!(
        reply.response()?["result"]["content"][0]["text"],
        "own",
        "{}",
        reply.body
    );
    Ok(())
}

/// The conformance suite's SEP-2575 checks (`sep-2575-http-server-method-not-found-404-*`):
/// a method 2026-07-28 removed, sent in that revision's form (`_meta` and
/// headers, no other params, as the suite sends it, and with the params the
/// older revisions took), is HTTP 404 with JSON-RPC -32601 and the
/// request's id, on every endpoint, as a method nobody has is; a session
/// agent still gets each of them answered.
#[tokio::test]
#[allow(deprecated)] // logging and subscriptions: SEP-2577, still passed through
async fn methods_2026_07_28_removed_are_404_method_not_found() -> anyhow::Result<()> {
    let pool = pool("stateless-removed").await?;
    let removed = [
        ("initialize", json!({})),
        ("ping", json!({})),
        ("logging/setLevel", json!({})),
        ("logging/setLevel", json!({"level": "info"})),
        ("resources/subscribe", json!({})),
        ("resources/subscribe", json!({"uri": "faulty://static/hello"})),
        ("resources/unsubscribe", json!({})),
        ("resources/unsubscribe", json!({"uri": "faulty://static/hello"})),
        ("unknown/method", json!({})),
    ];
    for path in ["/mcp", "/servers/f/mcp", "/servers/s/mcp", "/profiles/p/mcp"] {
        for (method, params) in &removed {
            let reply = pool.stateless_request(path, method, params.clone(), json!({})).await?;
            assert_eq!(reply.status, 404, "{path} {method} {params}: {}", reply.body);
            let response = reply.response()?;
            assert_eq!(
                error_code(response),
                Some(-32601),
                "{path} {method} {params}: {}",
                reply.body
            );
            assert_eq!(response["id"], 1, "{path} {method}: the request's id: {}", reply.body);
        }
    }
    // A session agent keeps them.
    use rmcp::model::{ClientRequest, LoggingLevel, Request, SetLevelRequestParams, SubscribeRequestParams};
    let agent = pool.agent("/servers/f/mcp").await?;
    let peer = agent.service.peer();
    peer.send_request(ClientRequest::SetLevelRequest(Request::new(
        SetLevelRequestParams::new(LoggingLevel::Info),
    )))
    .await?;
    peer.send_request(ClientRequest::SubscribeRequest(Request::new(
        SubscribeRequestParams::new("faulty://static/hello"),
    )))
    .await?;
    peer.send_request(ClientRequest::PingRequest(Default::default()))
        .await?;
    Ok(())
}

#[tokio::test]
async fn progress_and_logs_ride_the_stream_of_the_request_that_asked() -> anyhow::Result<()> {
    let pool = pool("stateless-progress").await?;
    for server in ["f", "s"] {
        let reply = pool
            .stateless_request(
                "/mcp",
                "tools/call",
                json!({"name": format!("{server}__progress"), "arguments": {"steps": 3}}),
                json!({"progressToken": "tok-7"}),
            )
            .await?;
        let progress: Vec<&Value> = reply
            .messages
            .iter()
            .filter(|m| m["method"] == "notifications/progress")
            .collect();
        assert_eq!(progress.len(), 3, "{server}: {}", reply.body);
        assert!(
            progress.iter().all(|p| p["params"]["progressToken"] == "tok-7"),
            "{}",
            reply.body
        );
        assert_eq!(reply.response()?["result"]["resultType"], "complete", "{}", reply.body);

        // The level in the request's _meta: info is heard, error hides it.
        let logged = |level: &'static str| {
            let pool = &pool;
            async move {
                let reply = pool
                    .stateless_request(
                        "/mcp",
                        "tools/call",
                        json!({"name": format!("{server}__log"), "arguments": {"message": "disk at 91%"}}),
                        json!({"io.modelcontextprotocol/logLevel": level}),
                    )
                    .await?;
                // A 2026-07-28 server does not log under the level it was given.
                let said = &reply.response()?["result"]["content"][0]["text"];
                assert!(*said == "logged" || *said == "filtered", "{}", reply.body);
                anyhow::Ok(
                    reply
                        .messages
                        .iter()
                        .filter(|m| m["method"] == "notifications/message")
                        .cloned()
                        .collect::<Vec<_>>(),
                )
            }
        };
        let heard = logged("info").await?;
        assert_eq!(heard.len(), 1, "{server}: {heard:?}");
        assert_eq!(heard[0]["params"]["data"], "disk at 91%");
        assert_eq!(heard[0]["params"]["logger"], format!("{server}/faulty"));
        assert!(
            logged("error").await?.is_empty(),
            "{server}: an info log above the level"
        );
    }
    Ok(())
}

#[tokio::test]
async fn a_call_while_the_server_restarts_keeps_its_tools_for_a_2026_07_28_agent() -> anyhow::Result<()> {
    let pool = pool("stateless-kept").await?;
    let agent = pool.stateless_agent("/mcp").await?;

    let r = agent.call("f__crash", json!({"message": "disk on fire"})).await?;
    assert_error_starts(&r, "Server 'f' dropped the connection during this call");
    pool.wait_status("f", "failed", LIMIT).await?;
    // Kept: listed while the server is down, and nothing respawned for it.
    assert!(agent.tool_names().await?.contains(&"f__echo".to_string()));
    assert_eq!(count_lines(&pool.dir.path().join("f.log"), "start"), 1);
    // The next call reconnects, once.
    assert_eq!(text(&agent.call("f__echo", json!({"text": "back"})).await?), "back");
    assert_eq!(count_lines(&pool.dir.path().join("f.log"), "start"), 2);
    Ok(())
}

#[tokio::test]
async fn subscriptions_listen_hears_list_changes_and_resource_updates() -> anyhow::Result<()> {
    let pool = pool("stateless-listen").await?;
    // Past the one re-list mcpool does after connecting.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let agent = pool.stateless_agent("/mcp").await?;
    let own = pool.stateless_agent("/servers/f/mcp").await?;
    let uri = "faulty://static/hello";
    let mut filter = SubscriptionFilter::builder().tools_list_changed().build();
    filter.resource_subscriptions = Some(vec![uri.to_string()]);
    let mut all = agent.service.peer().listen(filter).await?;
    assert_eq!(all.acknowledged().tools_list_changed, Some(true));
    let mut one = own
        .service
        .peer()
        .listen(SubscriptionFilter::builder().tools_list_changed().build())
        .await?;

    for (server, tool) in [("f", "extra_f"), ("s", "extra_s")] {
        let r = agent
            .call(&format!("{server}__set_tools"), json!({"names": [tool]}))
            .await?;
        assert_eq!(text(&r), "tools set");
        let heard = tokio::time::timeout(LIMIT, all.next()).await??;
        assert!(
            matches!(heard, Some(ServerNotification::ToolListChangedNotification(_))),
            "{heard:?}"
        );
        let name = format!("{server}__{tool}");
        assert!(agent.tool_names().await?.contains(&name), "{name}");
        assert_eq!(text(&agent.call(&name, json!({"text": "dynamic"})).await?), "dynamic");
    }
    // The per-server stream heard f's change, and only that one.
    let heard = tokio::time::timeout(LIMIT, one.next()).await??;
    assert!(matches!(
        heard,
        Some(ServerNotification::ToolListChangedNotification(_))
    ));
    assert!(tokio::time::timeout(Duration::from_secs(1), one.next()).await.is_err());

    // The stream's resource URI was subscribed at the server.
    let r = agent.call("f__touch", json!({"uri": uri})).await?;
    assert_eq!(text(&r), "notified");
    loop {
        match tokio::time::timeout(LIMIT, all.next()).await?? {
            Some(ServerNotification::ResourceUpdatedNotification(n)) => {
                assert_eq!(n.params.uri, uri);
                break;
            }
            Some(ServerNotification::ToolListChangedNotification(_)) => continue,
            other => panic!("not a resource update: {other:?}"),
        }
    }
    // Closing the stream unsubscribes.
    all.cancel().await?;
    let touched = || agent.call("f__touch", json!({"uri": uri}));
    let mut said = String::new();
    for _ in 0..40 {
        said = text(&touched().await?);
        if said == "not subscribed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(said, "not subscribed");
    Ok(())
}
