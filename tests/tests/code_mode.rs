//! Code mode end to end (README "Code mode", behaviour.md "code mode"):
//! `mcpool__run_script` on `/mcp` and a profile's endpoint, over the fault
//! server and the official server-everything. Every error code and limit,
//! the walls around the script, calls in parallel, tool control and
//! profiles, the activity log's run and its calls (each naming the run as
//! `parent`, and the dashboard's Activity view showing them in Chromium:
//! tests/ui/runs.mjs), the metrics, the signatures in search answers, and
//! the official Python SDK's client running a script over the Python SDK's
//! server, server-everything and the fault server.

use std::time::Duration;

use mcpool_tests::sdk_agents::LineAgent;
use mcpool_tests::*;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(30);

fn everything() -> Value {
    json!({"command": "node", "args": [everything_js(), "stdio"]})
}

/// The run's `structuredContent`.
async fn run(agent: &Agent, code: &str, timeout_ms: Option<u64>) -> anyhow::Result<Value> {
    let mut args = json!({"code": code});
    if let Some(ms) = timeout_ms {
        args["timeoutMs"] = json!(ms);
    }
    let r = agent.call("mcpool__run_script", args).await?;
    let structured = r.structured_content.clone().unwrap_or(Value::Null);
    let ok = structured["ok"] == true;
    anyhow::ensure!(r.is_error.unwrap_or(false) != ok, "isError goes with ok: {r:?}");
    Ok(structured)
}

fn error_code(structured: &Value) -> &str {
    structured["error"]["code"].as_str().unwrap_or("(none)")
}

async fn activity(pool: &Mcpool, query: &str) -> anyhow::Result<Vec<Value>> {
    let page = pool.get_json(&format!("/api/activity{query}")).await?;
    Ok(page["items"].as_array().cloned().unwrap_or_default())
}

/// Waits until `/api/activity{query}` has at least `n` items.
async fn wait_items(pool: &Mcpool, query: &str, n: usize) -> anyhow::Result<Vec<Value>> {
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        let found = activity(pool, query).await?;
        if found.len() >= n {
            return Ok(found);
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "{query}: {} of {n} items: {found:?}",
            found.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_script_calls_real_servers_and_each_error_code_and_limit_holds() -> anyhow::Result<()> {
    let logs = TempDir::new("code-mode");
    let mut a = faulty_stdio(&logs.path().join("a.log"), &[]);
    a["disabledTools"] = json!(["slow"]);
    let config = json!({"mcpServers": {"a": a, "everything": everything()}});
    let pool = Mcpool::start_connected(config).await?;
    let agent = pool.agent("/mcp").await?;
    let names = agent.tool_names().await?;
    assert!(names.contains(&"mcpool__run_script".to_string()), "{names:?}");

    // Two servers in one script; text results, logs and the call count.
    let r = run(
        &agent,
        "const sum = await tools.a__add({a: 2, b: 40});\n\
         const echo = await tools.call('everything__echo', {message: 'hi'});\n\
         console.log('sum is', sum);\n\
         return {sum, echo, keys: Object.keys(tools).filter(k => k.startsWith('a__')).sort()};",
        None,
    )
    .await?;
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["value"]["sum"], "42", "{r}");
    assert!(r["value"]["echo"].as_str().unwrap_or_default().contains("hi"), "{r}");
    assert_eq!(r["logs"], json!(["sum is 42"]), "{r}");
    assert_eq!(r["calls"], 2, "{r}");
    let keys: Vec<String> = serde_json::from_value(r["value"]["keys"].clone())?;
    assert!(keys.contains(&"a__echo".to_string()), "{keys:?}");
    assert!(
        !keys.contains(&"a__slow".to_string()),
        "a disabled tool is not in tools: {keys:?}"
    );

    // Promise.all: more calls than run at once, every answer in its place.
    let r = run(
        &agent,
        "const all = await Promise.all(Array.from({length: 20}, (_, i) => tools.a__add({a: i, b: 1000})));\nreturn all;",
        None,
    )
    .await?;
    let expected: Vec<String> = (0..20).map(|i| (i + 1000).to_string()).collect();
    assert_eq!(r["value"], json!(expected), "{r}");
    assert_eq!(r["calls"], 20);

    // Each error code.
    let r = run(&agent, "const x = 1;\nreturn (;", None).await?;
    assert_eq!(
        (error_code(&r), r["error"]["line"].as_u64()),
        ("SYNTAX_ERROR", Some(2)),
        "{r}"
    );
    let r = run(&agent, "const x = null;\n\nreturn x.y;", None).await?;
    assert_eq!(
        (error_code(&r), r["error"]["line"].as_u64()),
        ("RUNTIME_ERROR", Some(3)),
        "{r}"
    );
    let r = run(&agent, "while (true) {}", Some(300)).await?;
    assert_eq!(error_code(&r), "TIMEOUT", "{r}");
    let r = run(&agent, "await tools.a__hang({});", Some(500)).await?;
    assert_eq!(error_code(&r), "TIMEOUT", "a hanging tool ends at the run's wall: {r}");
    let r = run(
        &agent,
        "const a = []; for (;;) a.push('x'.repeat(4096) + a.length);",
        None,
    )
    .await?;
    assert_eq!(error_code(&r), "MEMORY", "{r}");
    let r = run(
        &agent,
        "for (let i = 0; i < 300; i++) await tools.a__echo({text: 'n' + i});",
        None,
    )
    .await?;
    assert_eq!(
        (error_code(&r), r["calls"].as_u64()),
        ("TOO_MANY_CALLS", Some(200)),
        "{r}"
    );
    for code in [
        "await tools.call('a__slow', {ms: 1});",
        "await tools.call('nowhere__nothing', {});",
        "await tools.call('mcpool__call_tool', {name: 'a__echo'});",
    ] {
        let r = run(&agent, code, None).await?;
        assert_eq!(error_code(&r), "TOOL_NOT_ALLOWED", "{code}: {r}");
    }
    let r = run(&agent, "\nawait tools.a__fail({text: 'it broke'});", None).await?;
    assert_eq!(
        (
            error_code(&r),
            r["error"]["message"].as_str(),
            r["error"]["line"].as_u64()
        ),
        ("TOOL_ERROR", Some("it broke"), Some(2)),
        "{r}"
    );
    let r = run(
        &agent,
        "try { await tools.a__fail({text: 'x'}); } catch (e) { return e.code; }",
        None,
    )
    .await?;
    assert_eq!(r["value"], "TOOL_ERROR", "{r}");

    // The walls: nothing of the host but tools and console.
    let r = run(
        &agent,
        "return ['require','process','fetch','setTimeout','setInterval','std','os','Deno','XMLHttpRequest','WebSocket'].filter(n => typeof globalThis[n] !== 'undefined');",
        None,
    )
    .await?;
    assert_eq!(r["value"], json!([]), "{r}");

    // The runaway runs ended alone: mcpool and its servers go on.
    let direct = agent.call("a__echo", json!({"text": "still here"})).await?;
    assert_eq!(text(&direct), "still here");
    let r = run(&agent, "return await tools.a__add({a: 1, b: 1});", Some(1)).await;
    assert!(r.is_ok(), "a 1 ms run answers too: {r:?}");
    Ok(())
}

#[tokio::test]
async fn a_run_and_its_calls_are_in_the_activity_log_and_the_metrics() -> anyhow::Result<()> {
    let logs = TempDir::new("code-mode-activity");
    let config = json!({"mcpServers": {"a": faulty_stdio(&logs.path().join("a.log"), &[])}});
    let pool = Mcpool::start_connected(config).await?;
    let agent = pool.agent("/mcp").await?;
    let r = run(
        &agent,
        "const [x, y] = await Promise.all([tools.a__add({a: 1, b: 2}), tools.a__echo({text: 'e'})]);\nreturn x + y;",
        None,
    )
    .await?;
    assert_eq!(r["value"], "3e", "{r}");
    let r = run(&agent, "await tools.a__fail({text: 'no'});", None).await?;
    assert_eq!(error_code(&r), "TOOL_ERROR");

    let runs = wait_items(&pool, "?tool=run_script", 2).await?;
    let ok_run = runs.iter().find(|i| i["outcome"] == "ok").expect("the ok run");
    assert_eq!(ok_run["server"], "mcpool", "{ok_run}");
    assert!(runs.iter().any(|i| i["outcome"] == "tool_error"), "{runs:?}");
    let id = ok_run["id"].as_i64().expect("an id");
    let calls = wait_items(&pool, &format!("?parent={id}"), 2).await?;
    let mut tools: Vec<&str> = calls.iter().filter_map(|c| c["tool"].as_str()).collect();
    tools.sort();
    assert_eq!(tools, ["add", "echo"], "{calls:?}");
    assert!(
        calls.iter().all(|c| c["parent"] == id && c["server"] == "a"),
        "{calls:?}"
    );
    // The dashboard's Activity view shows the run with its calls.
    let said = mcpool_tests::browser::BrowserScript::run(
        &pool,
        "runs.mjs",
        &[("RUN", id.to_string().into()), ("CALLS", "2".into())],
        Duration::from_secs(90),
    )
    .await?;
    assert_eq!(said.last().map(String::as_str), Some("OK"), "{said:?}");
    // A direct call names no parent.
    agent.call("a__echo", json!({"text": "direct"})).await?;
    let direct = wait_items(&pool, "?tool=echo", 2).await?;
    assert!(direct.iter().any(|c| c.get("parent").is_none()), "{direct:?}");

    let metrics = reqwest::Client::new()
        .get(pool.url("/metrics"))
        .bearer_auth(&pool.token)
        .send()
        .await?
        .text()
        .await?;
    assert!(
        metrics.contains("mcpool_script_runs_total{outcome=\"ok\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("mcpool_script_runs_total{outcome=\"tool_error\"} 1"),
        "{metrics}"
    );
    Ok(())
}

#[tokio::test]
async fn a_profile_and_tool_approval_hold_inside_a_script() -> anyhow::Result<()> {
    let logs = TempDir::new("code-mode-profile");
    let config = json!({
        "approveNewTools": "ask",
        "mcpServers": {"a": faulty_stdio(&logs.path().join("a.log"), &[])},
        "profiles": {"only-echo": {"tools": ["a__echo"]}}
    });
    let pool = Mcpool::start_connected(config).await?;
    // Under `ask`, every new tool waits for approval: held back.
    let agent = pool.agent("/mcp").await?;
    let r = run(&agent, "return await tools.call('a__add', {a: 1, b: 2});", None).await?;
    assert_eq!(error_code(&r), "TOOL_NOT_ALLOWED", "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("waiting for the user's approval"),
        "{r}"
    );
    let (status, body) = pool.post("/api/servers/a/tools/echo/approve").await?;
    assert_eq!(status, 200, "{body}");
    let (status, body) = pool.post("/api/servers/a/tools/add/approve").await?;
    assert_eq!(status, 200, "{body}");

    let profile = pool.agent("/profiles/only-echo/mcp").await?;
    let r = run(
        &profile,
        "return {keys: Object.keys(tools).sort(), echo: await tools.a__echo({text: 'in'})};",
        None,
    )
    .await?;
    assert_eq!(r["value"], json!({"keys": ["a__echo", "call"], "echo": "in"}), "{r}");
    let r = run(&profile, "return await tools.call('a__add', {a: 1, b: 2});", None).await?;
    assert_eq!(error_code(&r), "TOOL_NOT_ALLOWED", "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("is not part of the mcpool profile 'only-echo'"),
        "{r}"
    );
    let r = run(&agent, "return await tools.call('a__add', {a: 1, b: 2});", None).await?;
    assert_eq!(r["value"], "3", "approved, the tool is callable: {r}");
    Ok(())
}

#[tokio::test]
async fn search_answers_give_typescript_signatures_and_an_sdk_agent_runs_a_script() -> anyhow::Result<()> {
    let logs = TempDir::new("code-mode-sdk");
    let config = json!({
        "toolListing": "search",
        "mcpServers": {
            "a": faulty_stdio(&logs.path().join("a.log"), &[]),
            "everything": everything(),
            "py": {"command": python(), "args": [repo_root().join("tests/py/kept_server.py")]},
        }
    });
    let pool = Mcpool::start_connected(config).await?;
    let agent = pool.agent("/mcp").await?;
    let names = agent.tool_names().await?;
    assert_eq!(
        names,
        ["mcpool__search_tools", "mcpool__call_tool", "mcpool__run_script"]
    );
    let r = agent
        .call(
            "mcpool__search_tools",
            json!({"query": "add two numbers a and b", "limit": 20}),
        )
        .await?;
    let found = r.structured_content.clone().unwrap_or_default();
    let add = found["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "a__add").cloned())
        .ok_or_else(|| anyhow::anyhow!("a__add not found: {found}"))?;
    assert_eq!(
        add["signature"], "tools.a__add(args: { a: number; b: number }): Promise<unknown>",
        "{add}"
    );
    // In `search` mode a script still reaches every tool the endpoint has.
    let mut sdk = LineAgent::python(&pool.url("/mcp"), &pool.token).await?;
    let r = sdk
        .command(json!({"op": "call", "tool": "mcpool__run_script", "args": {
            "code": "const parts = [];\nfor (const t of ['x', 'y']) parts.push(await tools.a__echo({text: t}));\nreturn parts.join('+');"
        }}))
        .await?;
    assert_eq!(r["is_error"], false, "{r}");
    assert_eq!(r["structured"]["value"], "x+y", "{r}");
    assert!(r["text"].as_str().unwrap_or_default().contains("x+y"), "{r}");
    // One script over three real servers: the Python SDK's, the official
    // server-everything and the fault server, in parallel.
    let r = sdk
        .command(json!({"op": "call", "tool": "mcpool__run_script", "args": {
            "code": "const [sum, echo, own] = await Promise.all([tools.py__add({a: 1, b: 2}), tools.everything__echo({message: 'hi'}), tools.a__add({a: 2, b: 2})]);\nreturn {sum, echo, own};"
        }}))
        .await?;
    assert_eq!(r["is_error"], false, "{r}");
    assert_eq!(
        r["structured"]["value"],
        json!({"sum": "3", "echo": "Echo: hi", "own": "4"}),
        "{r}"
    );
    assert_eq!(r["structured"]["calls"], 3, "{r}");
    sdk.close().await?;
    Ok(())
}
