//! Each tool under the user's control, against the real binary, the fault
//! server and an rmcp agent: `disabledTools` / `enabledTools` hide tools
//! and refuse calls with a sentence; the dashboard's switch writes the
//! config file; a profile URL serves only its subset; a tool whose
//! description changes under the pool is held back (`changed`) until the
//! user approves it, across restarts; `approveNewTools: "ask"` holds every
//! new tool.

use std::path::Path;
use std::time::Duration;

use mcpool_tests::*;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(20);

fn names_of(prefix: &str, names: &[String]) -> Vec<String> {
    let mut out: Vec<String> = names.iter().filter(|n| n.starts_with(prefix)).cloned().collect();
    out.sort();
    out
}

async fn tool_state(pool: &Mcpool, server: &str, tool: &str) -> anyhow::Result<Value> {
    let s = pool.server(server).await?;
    let found = s["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == tool).cloned());
    Ok(found.unwrap_or(Value::Null))
}

async fn wait_tool(pool: &Mcpool, server: &str, tool: &str, check: impl Fn(&Value) -> bool) -> anyhow::Result<Value> {
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        let t = tool_state(pool, server, tool).await?;
        if check(&t) {
            return Ok(t);
        }
        if tokio::time::Instant::now() > deadline {
            anyhow::bail!("{server}/{tool} never got there; last: {t}\nlogs:\n{}", pool.logs());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `POST path` is refused with 404 and the sentence `error`.
async fn assert_not_found(pool: &Mcpool, path: &str, error: &str) -> anyhow::Result<()> {
    let (status, body) = pool.post(path).await?;
    assert_eq!((status, body["error"].clone()), (404, json!(error)));
    Ok(())
}

#[tokio::test]
async fn disabled_tools_are_not_listed_and_refused_and_the_switch_writes_the_config() -> anyhow::Result<()> {
    let logs = TempDir::new("toolctl-logs");
    let log_a = logs.path().join("a.log");
    let mut a = faulty_stdio(&log_a, &[]);
    a["disabledTools"] = json!(["crash", "hang"]);
    let mut b = faulty_stdio(&logs.path().join("b.log"), &[]);
    b["enabledTools"] = json!(["echo", "add"]);
    let pool = Mcpool::start_connected(json!({"mcpServers": {"a": a, "b": b}})).await?;

    let agent = pool.agent("/mcp").await?;
    let names = agent.tool_names().await?;
    assert!(names.contains(&"a__echo".to_string()), "{names:?}");
    assert!(!names.contains(&"a__crash".to_string()) && !names.contains(&"a__hang".to_string()));
    assert_eq!(names_of("b__", &names), vec!["b__add", "b__echo"]);

    let refused = agent.call("a__crash", json!({})).await?;
    assert_eq!(refused.is_error, Some(true));
    assert_eq!(
        text(&refused),
        "Tool 'crash' of server 'a' is disabled in mcpool; the user can enable it in the mcpool dashboard."
    );
    let refused = agent.call("b__slow", json!({"ms": 1})).await?;
    assert_eq!(
        text(&refused),
        "Tool 'slow' of server 'b' is disabled in mcpool; the user can enable it in the mcpool dashboard."
    );
    assert_eq!(
        count_lines(&log_a, "call crash"),
        0,
        "a refused call never reaches the server"
    );

    // The per-server endpoint hides and refuses the same.
    let own = pool.agent("/servers/a/mcp").await?;
    let own_names = own.tool_names().await?;
    assert!(own_names.contains(&"echo".to_string()) && !own_names.contains(&"crash".to_string()));
    assert_eq!(own.call("crash", json!({})).await?.is_error, Some(true));

    let crash = tool_state(&pool, "a", "crash").await?;
    assert_eq!(
        (crash["enabled"].clone(), crash["state"].clone()),
        (json!(false), json!("live"))
    );

    // The dashboard's switch: written into the config, applied at once.
    let before = agent.handler.tool_list_changes();
    let (status, body) = pool.post("/api/servers/a/tools/crash/enable").await?;
    assert_eq!(status, 200, "{body}");
    let config: Value = serde_json::from_str(&std::fs::read_to_string(pool.config_path())?)?;
    assert_eq!(config["mcpServers"]["a"]["disabledTools"], json!(["hang"]));
    assert_eq!(config["mcpServers"]["a"]["command"], json!(bin("mcpool-faulty")));
    wait_for("list_changed after enable", LIMIT, || {
        agent.handler.tool_list_changes() > before
    })
    .await?;
    assert!(agent.tool_names().await?.contains(&"a__crash".to_string()));

    let (status, _) = pool.post("/api/servers/a/tools/echo/disable").await?;
    assert_eq!(status, 200);
    let config: Value = serde_json::from_str(&std::fs::read_to_string(pool.config_path())?)?;
    assert_eq!(config["mcpServers"]["a"]["disabledTools"], json!(["hang", "echo"]));
    assert!(!agent.tool_names().await?.contains(&"a__echo".to_string()));
    // An allowlist gains what is switched on.
    pool.post("/api/servers/b/tools/slow/enable").await?;
    let config: Value = serde_json::from_str(&std::fs::read_to_string(pool.config_path())?)?;
    assert_eq!(
        config["mcpServers"]["b"]["enabledTools"],
        json!(["echo", "add", "slow"])
    );
    assert_eq!(text(&agent.call("b__slow", json!({"ms": 1})).await?), "slept 1");

    assert_not_found(
        &pool,
        "/api/servers/zz/tools/echo/disable",
        "mcpool has no server named 'zz'",
    )
    .await?;
    Ok(())
}

#[tokio::test]
async fn a_profile_url_lists_only_its_subset_and_refuses_the_rest() -> anyhow::Result<()> {
    let logs = TempDir::new("toolctl-profile");
    let config = json!({
        "mcpServers": {
            "a": faulty_stdio(&logs.path().join("a.log"), &[]),
            "b": faulty_stdio(&logs.path().join("b.log"), &[]),
        },
        "profiles": {"review": {"servers": ["a"], "tools": ["b__echo"]}},
    });
    let pool = Mcpool::start(config).await?;
    pool.wait_status("a", "connected", LIMIT).await?;
    pool.wait_status("b", "connected", LIMIT).await?;
    let all = pool.agent("/mcp").await?.tool_names().await?;

    let agent = pool.agent("/profiles/review/mcp").await?;
    let names = agent.tool_names().await?;
    assert_eq!(names_of("a__", &names), names_of("a__", &all));
    assert_eq!(names_of("b__", &names), vec!["b__echo"]);
    // The built-in tools only when named; the search, call and run tools
    // on every aggregated endpoint (behaviour.md rule 19, code mode).
    let own: Vec<&String> = names.iter().filter(|n| n.starts_with("mcpool__")).collect();
    assert_eq!(
        own,
        ["mcpool__search_tools", "mcpool__call_tool", "mcpool__run_script"],
        "{names:?}"
    );
    assert_eq!(text(&agent.call("b__echo", json!({"text": "hi"})).await?), "hi");
    let refused = agent.call("b__add", json!({"a": 1, "b": 2})).await?;
    assert_eq!(refused.is_error, Some(true));
    assert_eq!(
        text(&refused),
        "Tool 'b__add' is not part of the mcpool profile 'review'."
    );
    let refused = agent.call("mcpool__status", json!({})).await?;
    assert_eq!(
        text(&refused),
        "Tool 'mcpool__status' is not part of the mcpool profile 'review'."
    );

    // An unknown profile is 404 with a sentence, and the token is still needed.
    let client = reqwest::Client::new();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let r = pool.post_mcp("/profiles/nope/mcp", &body).await?;
    assert_eq!(r.status().as_u16(), 404);
    assert_eq!(r.text().await?, "mcpool has no profile named 'nope'\n");
    let r = client.post(pool.url("/profiles/review/mcp")).json(&body).send().await?;
    assert_eq!(r.status().as_u16(), 401);
    Ok(())
}

/// Writes the descriptions file the fault server reads at every listing.
fn describe(file: &Path, echo: &str) -> anyhow::Result<()> {
    Ok(std::fs::write(file, serde_json::to_vec(&json!({"echo": echo}))?)?)
}

#[tokio::test]
async fn a_changed_description_is_held_back_until_approved_across_restarts() -> anyhow::Result<()> {
    let logs = TempDir::new("toolctl-change");
    let descriptions = logs.path().join("descriptions.json");
    let mut a = faulty_stdio(&logs.path().join("a.log"), &[]);
    a["env"] = json!({"MCPOOL_FAULTY_DESCRIPTIONS": descriptions});
    let mut pool = Mcpool::start_connected(json!({"mcpServers": {"a": a}})).await?;
    let agent = pool.agent("/mcp").await?;
    assert!(agent.tool_names().await?.contains(&"a__echo".to_string()));
    let first = wait_tool(&pool, "a", "echo", |t| t["state"] == "live").await?;
    assert!(first.get("approved").is_none(), "{first}");

    // The server changes the description under everyone.
    let rewritten = "Returns the text, and keeps a copy in the audit log.";
    describe(&descriptions, rewritten)?;
    let before = agent.handler.tool_list_changes();
    agent.call("a__set_tools", json!({"names": []})).await?;
    let held = wait_tool(&pool, "a", "echo", |t| t["state"] == "changed").await?;
    assert_eq!(held["approved"]["description"], "Returns the text");
    assert_eq!(held["current"]["description"], rewritten);
    assert_eq!(held["approved"]["inputSchema"], held["current"]["inputSchema"]);
    assert_eq!(
        tool_state(&pool, "a", "add").await?["state"],
        "live",
        "only the changed tool is held"
    );
    wait_for("list_changed for the held tool", LIMIT, || {
        agent.handler.tool_list_changes() > before
    })
    .await?;
    let names = agent.tool_names().await?;
    assert!(!names.contains(&"a__echo".to_string()) && names.contains(&"a__add".to_string()));
    let refused = agent.call("a__echo", json!({"text": "x"})).await?;
    assert_eq!(refused.is_error, Some(true));
    assert_eq!(
        text(&refused),
        "Tool 'echo' of server 'a' is held back: its description or input schema changed since the user approved it. The user can review and approve it in the mcpool dashboard."
    );

    // Still held after a restart: the approval lives apart from the cache.
    pool.restart().await?;
    pool.wait_status("a", "connected", LIMIT).await?;
    wait_tool(&pool, "a", "echo", |t| t["state"] == "changed").await?;
    let agent = pool.agent("/mcp").await?;
    assert!(!agent.tool_names().await?.contains(&"a__echo".to_string()));
    let approvals = pool.data_dir().join("approvals");
    let file = std::fs::read_dir(&approvals)?
        .next()
        .expect("an approvals file")?
        .path();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&file)?.permissions().mode() & 0o777, 0o600);

    // Approve: the tool returns, with its new text.
    let before = agent.handler.tool_list_changes();
    let (status, body) = pool.post("/api/servers/a/tools/echo/approve").await?;
    assert_eq!(status, 200, "{body}");
    wait_for("list_changed after approve", LIMIT, || {
        agent.handler.tool_list_changes() > before
    })
    .await?;
    let tools = agent.service.peer().list_all_tools().await?;
    let echo = tools
        .iter()
        .find(|t| t.name == "a__echo")
        .expect("a__echo listed again");
    assert_eq!(echo.description.as_deref(), Some(rewritten));
    assert_eq!(text(&agent.call("a__echo", json!({"text": "back"})).await?), "back");
    assert_eq!(tool_state(&pool, "a", "echo").await?["state"], "live");

    pool.restart().await?;
    pool.wait_status("a", "connected", LIMIT).await?;
    wait_tool(&pool, "a", "echo", |t| t["state"] == "live").await?;
    assert_not_found(
        &pool,
        "/api/servers/a/tools/nope/approve",
        "server 'a' lists no tool named 'nope'",
    )
    .await?;
    Ok(())
}

#[tokio::test]
async fn ask_mode_holds_every_new_tool_until_approved() -> anyhow::Result<()> {
    let logs = TempDir::new("toolctl-ask");
    let config = json!({
        "approveNewTools": "ask",
        "mcpServers": {"a": faulty_stdio(&logs.path().join("a.log"), &[])},
    });
    let pool = Mcpool::start(config).await?;
    pool.wait_status("a", "connected", LIMIT).await?;
    let echo = wait_tool(&pool, "a", "echo", |t| t["state"] == "changed").await?;
    assert_eq!(echo["approved"], Value::Null);
    let agent = pool.agent("/mcp").await?;
    let names = agent.tool_names().await?;
    assert!(!names.iter().any(|n| n.starts_with("a__")), "{names:?}");
    assert_eq!(
        text(&agent.call("a__echo", json!({"text": "x"})).await?),
        "Tool 'echo' of server 'a' is waiting for the user's approval in the mcpool dashboard."
    );
    let (status, _) = pool.post("/api/servers/a/tools/echo/approve").await?;
    assert_eq!(status, 200);
    assert_eq!(names_of("a__", &agent.tool_names().await?), vec!["a__echo"]);
    Ok(())
}
