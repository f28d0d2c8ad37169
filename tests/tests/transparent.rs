//! behaviour.md §4 (the pool is transparent), for `_meta`: the keys of
//! an agent's request `_meta` that mcpool does not own reach the server
//! unchanged, and the `_meta` of the server's results and notifications
//! reaches the agent unchanged. Through `/mcp`, `/profiles/NAME/mcp` and
//! `/servers/NAME/mcp`, for agents on a session revision and on
//! 2026-07-28, to our fault server on 2025-11-25 (stdio), on 2026-07-28
//! only (stdio) and on both over HTTP (the pool speaks 2026-07-28 with it,
//! and a session agent's requests may take the session connection).

use std::time::Duration;

use anyhow::Context as _;

use mcpool_tests::*;
use rmcp::model::{
    CallToolRequestParams, ClientRequest, GetMeta, GetPromptRequestParams, NotificationMetaObject,
    ReadResourceRequestParams, Request, ServerNotification, ServerResult, SubscriptionFilter,
};
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(20);

/// The agent's own keys: a vendor's key, and one of a reverse-DNS name
/// under the MCP prefix that mcpool does not use.
fn probe() -> Value {
    json!({
        "com.example/probe": {"n": [1, "two", null], "deep": {"ok": true}},
        "io.modelcontextprotocol.example/other": 5,
    })
}

/// What `show_meta` puts on what it sends back, `from` naming which.
fn marked(from: &str) -> Value {
    json!({"com.example/from": from, "com.example/nested": {"list": [1, "two"]}})
}

/// `old`: the fault server on 2025-11-25; `new`: on 2026-07-28 only; `web`:
/// over HTTP on both. Profile `p` holds all three.
async fn pool(tag: &str) -> anyhow::Result<(Mcpool, tokio::process::Child)> {
    let dir = TempDir::new(tag);
    let (web, url) = faulty_http(&dir.path().join("web.log"), &["--max-protocol-version", "2026-07-28"]).await?;
    let config = json!({
        "mcpServers": {
            "old": faulty_stdio(&dir.path().join("old.log"), &[]),
            "new": faulty_stdio(&dir.path().join("new.log"), &STATELESS_ONLY),
            "web": {"url": url},
        },
        "profiles": {"p": {"servers": ["old", "new", "web"]}},
    });
    let pool = Mcpool::start_connected_in(dir, config).await?;
    for (server, revision) in [("old", "2025-11-25"), ("new", "2026-07-28"), ("web", "2026-07-28")] {
        assert_eq!(pool.server(server).await?["protocol"], revision, "{server}");
    }
    Ok((pool, web))
}

/// Every (path, tool name) by which `server`'s `tool` is reached.
fn routes(server: &str, tool: &str) -> [(String, String); 3] {
    [
        ("/mcp".to_string(), format!("{server}__{tool}")),
        ("/profiles/p/mcp".to_string(), format!("{server}__{tool}")),
        (format!("/servers/{server}/mcp"), tool.to_string()),
    ]
}

/// The next resource update on a listen stream (list changes skipped).
async fn next_resource_update(
    stream: &mut rmcp::service::Subscription,
    who: &str,
) -> anyhow::Result<rmcp::model::ResourceUpdatedNotification> {
    loop {
        let next = tokio::time::timeout(LIMIT, stream.next()).await;
        match next.with_context(|| format!("{who}: no resource update"))?? {
            Some(ServerNotification::ResourceUpdatedNotification(n)) => return Ok(n),
            Some(ServerNotification::ToolListChangedNotification(_)) => continue,
            other => anyhow::bail!("{who}: not a resource update: {other:?}"),
        }
    }
}

/// `tools/call` of `tool` with the probe keys in the request's `_meta`.
async fn call_with_probe(agent: &Agent, tool: &str) -> anyhow::Result<rmcp::model::CallToolResult> {
    let mut request = ClientRequest::CallToolRequest(Request::new(CallToolRequestParams::new(tool.to_string())));
    if let Value::Object(keys) = probe() {
        request.get_meta_mut().extend(keys.into());
    }
    match agent.service.peer().send_request(request).await? {
        ServerResult::CallToolResult(r) => Ok(r),
        other => anyhow::bail!("not a tool result: {other:?}"),
    }
}

/// The `_meta` of `prompts/get` of `prompt` and of `resources/read` of `uri`.
async fn prompt_and_read_meta(agent: &Agent, prompt: &str, uri: &str) -> anyhow::Result<(Value, Value)> {
    let mut params = GetPromptRequestParams::new(prompt);
    params.arguments = json!({"name": "Ada"}).as_object().cloned();
    let request = ClientRequest::GetPromptRequest(Request::new(params));
    let ServerResult::GetPromptResult(got) = agent.service.peer().send_request(request).await? else {
        anyhow::bail!("{prompt}: not a prompt");
    };
    let request = ClientRequest::ReadResourceRequest(Request::new(ReadResourceRequestParams::new(uri)));
    let ServerResult::ReadResourceResult(read) = agent.service.peer().send_request(request).await? else {
        anyhow::bail!("{uri}: not a resource");
    };
    Ok((serde_json::to_value(&got.meta)?, serde_json::to_value(&read.meta)?))
}

/// Whether `meta` holds every key of `want` with the same value.
fn holds(meta: &Value, want: &Value) -> bool {
    want.as_object()
        .is_some_and(|w| w.iter().all(|(k, v)| meta.get(k) == Some(v)))
}

#[tokio::test]
async fn request_result_and_notification_meta_pass_through_every_path_and_revision() -> anyhow::Result<()> {
    let (pool, _web) = pool("transparent-meta").await?;
    for server in ["old", "new", "web"] {
        for (path, tool) in routes(server, "show_meta") {
            for stateless in [false, true] {
                let who = format!("{server} via {path}, stateless agent: {stateless}");
                let agent = if stateless {
                    pool.stateless_agent(&path).await?
                } else {
                    pool.agent(&path).await?
                };
                let r = call_with_probe(&agent, &tool).await?;
                assert_ne!(r.is_error, Some(true), "{who}: {r:?}");
                let received = r.structured_content.as_ref().map(|s| s["meta"].clone());
                let received = received.unwrap_or_default();
                assert!(holds(&received, &probe()), "{who}: the server received {received}");
                // mcpool's own keys are its own: the progress token is one of
                // the upstream connection's, a session server hears no
                // 2026-07-28 revision.
                let token = &received["progressToken"];
                assert!(!token.is_null(), "{who}: {received}");
                if server == "old" {
                    assert!(
                        received.get("io.modelcontextprotocol/protocolVersion").is_none(),
                        "{who}: {received}"
                    );
                }
                let result_meta = serde_json::to_value(&r.meta)?;
                assert_eq!(result_meta, marked("result"), "{who}");
                let (prompt, uri) = (tool.replace("show_meta", "greet"), "faulty://item/1");
                let (prompt_meta, read_meta) = prompt_and_read_meta(&agent, &prompt, uri).await?;
                assert_eq!(prompt_meta, marked("prompt"), "{who}: prompts/get");
                assert_eq!(read_meta, marked("read"), "{who}: resources/read");

                let h = agent.handler.clone();
                wait_for(&format!("the progress `_meta` at the agent ({who})"), LIMIT, || {
                    h.notification_metas("notifications/progress")
                        .iter()
                        .any(|m| holds(m, &marked("progress")))
                })
                .await?;
                if !stateless && !path.starts_with("/profiles/") {
                    // A session agent on `/mcp` or the server's own path
                    // hears the server's logs; a 2026-07-28 agent only at
                    // a level it asks for, a profile's agent not yet.
                    wait_for(&format!("the log `_meta` at the agent ({who})"), LIMIT, || {
                        h.notification_metas("notifications/message")
                            .iter()
                            .any(|m| holds(m, &marked("log")))
                    })
                    .await?;
                }
            }
        }
    }
    Ok(())
}

#[tokio::test]
async fn a_servers_request_to_the_agent_keeps_its_meta() -> anyhow::Result<()> {
    let (pool, _web) = pool("transparent-sampling").await?;
    // A session server's sampling request reaches a session agent as a
    // request of the agent's session (`new` and `web` ask 2026-07-28 agents
    // by `InputRequiredResult` instead, which is rule 16's).
    for (path, tool) in routes("old", "sample") {
        let agent = pool.agent(&path).await?;
        let r = agent.call(&tool, json!({"prompt": "a haiku"})).await?;
        assert_ne!(r.is_error, Some(true), "{path}: {}", text(&r));
        let metas = agent.handler.notification_metas("sampling/createMessage");
        assert!(metas.iter().any(|m| holds(m, &marked("sampling"))), "{path}: {metas:?}");
    }
    Ok(())
}

#[tokio::test]
async fn a_resource_update_keeps_its_meta() -> anyhow::Result<()> {
    let (pool, _web) = pool("transparent-updated").await?;
    let uri = "faulty://static/hello";
    // Every server has the URI: each server's own endpoint reaches it.
    // `old` sends the update as a notification of its session, `new` on
    // the `subscriptions/listen` stream mcpool keeps with it.
    for server in ["old", "new"] {
        let path = format!("/servers/{server}/mcp");
        let subscriber = pool.agent(&path).await?;
        subscriber.subscribe(uri).await?;
        let r = subscriber.call("touch", json!({"uri": uri})).await?;
        assert_eq!(text(&r), "notified", "{server}");
        subscriber.first_resource_update(LIMIT).await?;
        let metas = subscriber.handler.notification_metas("notifications/resources/updated");
        assert!(
            metas.iter().any(|m| holds(m, &marked("updated"))),
            "{server}: {metas:?}"
        );
        subscriber.unsubscribe(uri).await?;

        // A 2026-07-28 agent hears it on its `subscriptions/listen` stream,
        // under the stream's own subscription id.
        let listener = pool.stateless_agent(&path).await?;
        let mut filter = SubscriptionFilter::default();
        filter.resource_subscriptions = Some(vec![uri.to_string()]);
        let mut stream = listener.service.peer().listen(filter).await?;
        let stream_id = serde_json::to_value(stream.id())?;
        // mcpool subscribes the stream's URI at the server before the
        // stream is acknowledged: a touch right after `listen` is heard.
        let said = text(&listener.call("touch", json!({"uri": uri})).await?);
        assert_eq!(said, "notified", "{server}: the stream's URI was subscribed");
        let update = next_resource_update(&mut stream, server).await?;
        assert_eq!(update.params.uri, uri);
        let meta = update
            .extensions
            .get::<NotificationMetaObject>()
            .cloned()
            .unwrap_or_default();
        let meta = serde_json::to_value(meta)?;
        assert!(holds(&meta, &marked("updated")), "{server}: {meta}");
        assert_eq!(meta["io.modelcontextprotocol/subscriptionId"], stream_id, "{server}");
        stream.cancel().await?;
    }
    Ok(())
}

#[tokio::test]
async fn a_python_sdk_server_receives_the_agents_meta() -> anyhow::Result<()> {
    // The official Python SDK over stdio, 1.x (2025-11-25) and 2.x
    // (2026-07-28): its `echo_meta` answers with the `_meta` it received,
    // as JSON.
    let script = repo_root().join("tests/py/meta_server.py");
    let pool = Mcpool::start_connected(json!({"mcpServers": {
        "meta": {"command": python(), "args": [&script]},
        "meta2": {"command": python_mcp2(), "args": [&script]},
    }}))
    .await?;
    for (server, revision) in [("meta", "2025-11-25"), ("meta2", "2026-07-28")] {
        assert_eq!(pool.server(server).await?["protocol"], revision, "{server}");
    }
    for (path, tool) in [
        ("/mcp", "meta__echo_meta"),
        ("/servers/meta/mcp", "echo_meta"),
        ("/mcp", "meta2__echo_meta"),
        ("/servers/meta2/mcp", "echo_meta"),
    ] {
        for stateless in [false, true] {
            let who = format!("{path}, stateless agent: {stateless}");
            let agent = if stateless {
                pool.stateless_agent(path).await?
            } else {
                pool.agent(path).await?
            };
            let mut params = CallToolRequestParams::new(tool.to_string());
            params = params.with_arguments(json!({"text": "x"}).as_object().cloned().unwrap_or_default());
            let mut request = ClientRequest::CallToolRequest(Request::new(params));
            if let Value::Object(keys) = probe() {
                request.get_meta_mut().extend(keys.into());
            }
            let ServerResult::CallToolResult(r) = agent.service.peer().send_request(request).await? else {
                anyhow::bail!("{who}: not a tool result");
            };
            let received: Value = serde_json::from_str(&text(&r))?;
            assert!(holds(&received, &probe()), "{who}: the server received {received}");
        }
    }
    Ok(())
}

/// behaviour.md §4, cancelling: a 2026-07-28 agent that closes its request
/// cancels the call at the server, on every revision mcpool speaks, whether
/// or not the agent declared a capability a session server may ask it with
/// (such a call takes the questions as rounds). The reply's headers come
/// while the call still runs: the reply turns into a stream.
#[tokio::test]
async fn a_2026_07_28_agent_that_closes_its_request_cancels_the_call() -> anyhow::Result<()> {
    let (pool, _web) = pool("transparent-cancel").await?;
    for server in ["old", "new", "web"] {
        let log = pool.dir.path().join(format!("{server}.log"));
        for (path, tool) in routes(server, "hang") {
            for capabilities in [json!({}), json!({"elicitation": {}, "sampling": {}})] {
                let who = format!("{server} via {path}, capabilities {capabilities}");
                let (calls, cancels) = (count_lines(&log, "call hang"), count_lines(&log, "cancelled hang"));
                let meta = json!({"io.modelcontextprotocol/clientCapabilities": capabilities});
                let open = pool.stateless_open(&path, "tools/call", json!({"name": tool}), meta);
                // `hang` never answers: the headers alone come back.
                let reply = tokio::time::timeout(LIMIT, open).await??;
                assert_eq!(reply.status().as_u16(), 200, "{who}");
                let kind = reply.headers().get("content-type").cloned();
                assert!(
                    kind.as_ref()
                        .and_then(|k| k.to_str().ok())
                        .is_some_and(|k| k.starts_with("text/event-stream")),
                    "{who}: {kind:?}"
                );
                wait_for(&format!("the call at the server ({who})"), LIMIT, || {
                    count_lines(&log, "call hang") > calls
                })
                .await?;
                drop(reply);
                wait_for(&format!("the cancellation at the server ({who})"), LIMIT, || {
                    count_lines(&log, "cancelled hang") > cancels
                })
                .await?;
            }
        }
    }
    Ok(())
}

/// MCP Apps' extension.
const UI: &str = "io.modelcontextprotocol/ui";

/// What the fault server offers of it, and what an agent here declares.
fn ui_settings() -> Value {
    json!({"mimeTypes": ["text/html;profile=mcp-app"]})
}

async fn agent_declaring(pool: &Mcpool, path: &str, stateless: bool, ui: bool) -> anyhow::Result<Agent> {
    let handler = AgentHandler {
        extensions: ui.then(|| json!({ UI: ui_settings() })),
        ..AgentHandler::default()
    };
    if stateless {
        pool.stateless_agent_with(path, handler).await
    } else {
        pool.agent_with(path, handler).await
    }
}

/// behaviour.md §4, MCP Apps: the UI extension the servers offer is
/// advertised on `/mcp` and profiles (merged) and on a server's own path
/// (its own), and an agent's own declaration of it reaches a server on
/// 2026-07-28 with the call, while an agent that declares none is served
/// as one without (the server sees no extension).
#[tokio::test]
async fn mcp_apps_the_ui_extension_is_advertised_and_the_agents_reaches_the_server() -> anyhow::Result<()> {
    let (pool, _web) = pool("transparent-ui").await?;
    for server in ["old", "new", "web"] {
        let row = pool.server(server).await?;
        let offered = row["extensions"].as_array().cloned().unwrap_or_default();
        assert!(offered.contains(&json!(UI)), "{server}: {row}");
    }
    for path in ["/mcp", "/profiles/p/mcp", "/servers/old/mcp", "/servers/new/mcp"] {
        for stateless in [false, true] {
            let agent = agent_declaring(&pool, path, stateless, false).await?;
            let info = agent
                .service
                .peer()
                .peer_info()
                .map(|i| serde_json::to_value(&i.capabilities));
            let capabilities = info.transpose()?.unwrap_or_default();
            assert_eq!(
                capabilities["extensions"][UI],
                ui_settings(),
                "{path}, stateless agent: {stateless}: {capabilities}"
            );
        }
    }
    for server in ["new", "web"] {
        for (path, tool) in routes(server, "show_client") {
            for stateless in [false, true] {
                if server == "web" && !stateless {
                    // A session agent that answers questions reaches a remote
                    // 2026-07-28 server over the session connection, whose
                    // capabilities are mcpool's (behaviour.md §4, "not yet").
                    continue;
                }
                for ui in [true, false] {
                    let who = format!("{server} via {path}, stateless agent: {stateless}, declares UI: {ui}");
                    let agent = agent_declaring(&pool, &path, stateless, ui).await?;
                    let r = agent.call(&tool, json!({})).await?;
                    let told = r.structured_content.as_ref().map(|s| s["extensions"].clone());
                    let told = told.unwrap_or_default();
                    if ui {
                        assert_eq!(told[UI], ui_settings(), "{who}: {told}");
                    } else {
                        assert!(told.get(UI).is_none(), "{who}: {told}");
                    }
                }
            }
        }
    }
    Ok(())
}

/// MCP Apps with a real app server: the official Python SDK v2's own
/// `mcp.server.apps` (tests/py/apps_server.py, stdio, 2026-07-28). Its
/// `clock` answers "app" only to a client that negotiated the extension:
/// through `/mcp` and its own path an agent that declares MCP Apps gets
/// "app", one that does not gets "text", at either agent revision; the
/// tool's `_meta.ui` and its `ui://` resource come through unchanged.
#[tokio::test]
async fn mcp_apps_a_python_sdk_app_server_serves_each_agent_as_it_would_directly() -> anyhow::Result<()> {
    let script = repo_root().join("tests/py/apps_server.py");
    let pool = Mcpool::start_connected(json!({"mcpServers": {
        "apps": {"command": python_mcp2(), "args": [&script]},
    }}))
    .await?;
    let row = pool.server("apps").await?;
    assert_eq!(row["protocol"], "2026-07-28", "{row}");
    assert_eq!(row["extensions"], json!([UI]), "{row}");
    for (path, tool) in [("/mcp", "apps__clock"), ("/servers/apps/mcp", "clock")] {
        for stateless in [false, true] {
            for ui in [true, false] {
                let who = format!("{path}, stateless agent: {stateless}, declares UI: {ui}");
                let agent = agent_declaring(&pool, path, stateless, ui).await?;
                let info = agent
                    .service
                    .peer()
                    .peer_info()
                    .map(|i| serde_json::to_value(&i.capabilities));
                let capabilities = info.transpose()?.unwrap_or_default();
                assert!(capabilities["extensions"].get(UI).is_some(), "{who}: {capabilities}");

                let listed = agent.service.peer().list_all_tools().await?;
                let clock = listed.iter().find(|t| t.name == tool);
                let meta = clock
                    .and_then(|t| t.meta.as_ref())
                    .map(serde_json::to_value)
                    .transpose()?;
                assert_eq!(
                    meta.unwrap_or_default()["ui"]["resourceUri"],
                    "ui://clock/app.html",
                    "{who}"
                );

                let r = agent.call(tool, json!({})).await?;
                let answer = r.structured_content.as_ref().map(|s| s["result"].clone());
                let expected = if ui { "app" } else { "text" };
                assert_eq!(answer, Some(json!(expected)), "{who}: {r:?}");

                let read = agent
                    .service
                    .peer()
                    .read_resource(ReadResourceRequestParams::new("ui://clock/app.html"))
                    .await?;
                let read = serde_json::to_value(&read.contents)?;
                assert_eq!(read[0]["mimeType"], "text/html;profile=mcp-app", "{who}: {read}");
                assert!(
                    read[0]["text"]
                        .as_str()
                        .is_some_and(|t| t.contains("<title>clock</title>")),
                    "{who}"
                );
            }
        }
    }
    Ok(())
}

/// `tests/js/slow_notes_server.mjs` on the TypeScript SDK `sdk` (v1, v2),
/// noting its calls in `log`.
fn ts_slow_notes(sdk: &str, log: &std::path::Path) -> Value {
    json!({"command": "node", "args": [
        repo_root().join("tests/js/slow_notes_server.mjs"), "--sdk", sdk, "--log", log,
        "--node-modules", node_modules(),
    ]})
}

/// Item 5 with real SDK servers: the official Python SDK over stdio, 1.x
/// (2025-11-25) and 2.x (2026-07-28), its `wait` noting its start and its
/// cancellation (tests/py/slow_server.py), and the TypeScript SDK v1 and v2
/// (tests/js/slow_notes_server.mjs). A 2026-07-28 agent that closes its
/// request cancels the call there, through `/mcp` and the server's own
/// path; the reply's headers came while the call ran.
#[tokio::test]
async fn an_sdk_server_hears_a_2026_07_28_agents_closed_request_as_a_cancellation() -> anyhow::Result<()> {
    let dir = TempDir::new("transparent-py-cancel");
    let script = repo_root().join("tests/py/slow_server.py");
    let logs: Vec<_> = ["slow", "slow2", "ts1", "ts2"]
        .iter()
        .map(|n| dir.path().join(format!("{n}.log")))
        .collect();
    let config = json!({"mcpServers": {
        "slow": {"command": python(), "args": [&script, &logs[0]]},
        "slow2": {"command": python_mcp2(), "args": [&script, &logs[1]]},
        "ts1": ts_slow_notes("v1", &logs[2]),
        "ts2": ts_slow_notes("v2", &logs[3]),
    }});
    let pool = Mcpool::start_connected_in(dir, config).await?;
    let servers = [
        ("slow", "2025-11-25"),
        ("slow2", "2026-07-28"),
        ("ts1", "2025-11-25"),
        ("ts2", "2026-07-28"),
    ];
    for ((server, revision), log) in servers.into_iter().zip(&logs) {
        assert_eq!(pool.server(server).await?["protocol"], revision, "{server}");
        for (path, tool) in [
            ("/mcp".to_string(), format!("{server}__wait")),
            (format!("/servers/{server}/mcp"), "wait".into()),
        ] {
            let who = format!("{server} via {path}");
            let (calls, cancels) = (count_lines(log, "call wait"), count_lines(log, "cancelled wait"));
            let open = pool.stateless_open(&path, "tools/call", json!({"name": tool}), json!({}));
            let reply = tokio::time::timeout(LIMIT, open).await??;
            assert_eq!(reply.status().as_u16(), 200, "{who}");
            wait_for(&format!("the call at the server ({who})"), LIMIT, || {
                count_lines(log, "call wait") > calls
            })
            .await?;
            drop(reply);
            wait_for(&format!("the cancellation at the server ({who})"), LIMIT, || {
                count_lines(log, "cancelled wait") > cancels
            })
            .await?;
        }
    }
    Ok(())
}

/// Item 6 with real SDK servers: the official Python SDK over stdio, 1.x
/// (2025-11-25, `resources/subscribe`) and 2.x (2026-07-28, its own
/// `subscriptions/listen`; tests/py/notes_server.py), and the TypeScript
/// SDK v1 (`resources/subscribe`) and v2 (its `subscriptions/listen`;
/// tests/js/slow_notes_server.mjs), each with its own note. A 2026-07-28
/// agent's listen stream for it, through `/mcp` and the server's own path,
/// hears the update its very next call causes.
#[tokio::test]
async fn an_sdk_servers_resource_update_reaches_a_2026_07_28_listener() -> anyhow::Result<()> {
    let script = repo_root().join("tests/py/notes_server.py");
    let dir = TempDir::new("transparent-listen");
    let (ts_log, ts2_log) = (dir.path().join("ts.log"), dir.path().join("ts2.log"));
    let pool = Mcpool::start_connected_in(
        dir,
        json!({"mcpServers": {
            "notes": {"command": python(), "args": [&script, "note://a"]},
            "notes2": {"command": python_mcp2(), "args": [&script, "note://b"]},
            "ts": ts_slow_notes("v1", &ts_log),
            "ts2": ts_slow_notes("v2", &ts2_log),
        }}),
    )
    .await?;
    for (server, revision, uri) in [
        ("notes", "2025-11-25", "note://a"),
        ("notes2", "2026-07-28", "note://b"),
        ("ts", "2025-11-25", "note://ts-v1"),
        ("ts2", "2026-07-28", "note://ts-v2"),
    ] {
        assert_eq!(pool.server(server).await?["protocol"], revision, "{server}");
        for (path, tool) in [
            ("/mcp".to_string(), format!("{server}__touch")),
            (format!("/servers/{server}/mcp"), "touch".into()),
        ] {
            if server == "notes" && path != "/mcp" {
                // mcp 1.x announces `resources.subscribe: false` (it sends
                // updates all the same): its own path mirrors that, and a
                // listen stream there gets no resources, as directly.
                continue;
            }
            let who = format!("{server} via {path}");
            let listener = pool.stateless_agent(&path).await?;
            let mut filter = SubscriptionFilter::default();
            filter.resource_subscriptions = Some(vec![uri.to_string()]);
            let mut stream = listener.service.peer().listen(filter).await?;
            assert_eq!(text(&listener.call(&tool, json!({})).await?), "touched", "{who}");
            let update = next_resource_update(&mut stream, &who).await?;
            assert_eq!(update.params.uri, uri, "{who}");
            stream.cancel().await?;
        }
    }
    Ok(())
}
