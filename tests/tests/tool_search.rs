//! Tool search end to end (README "Find tools instead of listing them",
//! behaviour.md rule 19), against `mcpool serve` with the official
//! server-everything and the fault server: the official Python and
//! TypeScript SDK clients find a tool by a paraphrase, are told their list
//! changed and call the found tool by name; `mcpool__call_tool` has a
//! direct call's errors, tool control and recent-calls record; kept tools
//! of a dropped server are found and calling one reconnects it; disabled
//! and held-back tools are never found; a profile sees only its own; a
//! 2026-07-28 agent hears its found tools through `subscriptions/listen`;
//! `auto` switches at the budget; pins and the most-used tools stay listed
//! across a restart.

use std::time::Duration;

use mcpool_tests::sdk_agents::LineAgent;
use mcpool_tests::*;
use rmcp::model::{ServerNotification, SubscriptionFilter};
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(30);

fn everything() -> Value {
    json!({"command": "node", "args": [everything_js(), "stdio"]})
}

fn found_names(structured: &Value) -> Vec<String> {
    names_in(&structured["tools"])
}

async fn changes(agent: &mut LineAgent) -> anyhow::Result<u64> {
    let r = agent.command(json!({"op": "changes"})).await?;
    Ok(r["tool_list_changed"].as_u64().unwrap_or(0))
}

async fn listed(agent: &mut LineAgent) -> anyhow::Result<Vec<String>> {
    let r = agent.command(json!({"op": "list"})).await?;
    Ok(serde_json::from_value(r["tools"].clone())?)
}

/// `mcpool__call_tool` with `name` and `arguments`, as a searching agent
/// calls what it found.
async fn call_tool(agent: &Agent, name: &str, arguments: Value) -> anyhow::Result<rmcp::model::CallToolResult> {
    agent
        .call("mcpool__call_tool", json!({"name": name, "arguments": arguments}))
        .await
}

/// mcpool with one fault server `a` and the top-level settings `top`
/// (connected); the dir of its log is kept as long as the test holds it.
async fn one_faulty(tag: &str, top: Value) -> anyhow::Result<(TempDir, Mcpool)> {
    let logs = TempDir::new(tag);
    let mut config = top;
    config["mcpServers"] = json!({"a": faulty_stdio(&logs.path().join("a.log"), &[])});
    Ok((logs, Mcpool::start_connected(config).await?))
}

#[tokio::test]
async fn sdk_agents_find_a_tool_by_a_paraphrase_then_list_and_call_it_by_name() -> anyhow::Result<()> {
    let logs = TempDir::new("search-sdk");
    let config = json!({
        "toolListing": "search",
        "mcpServers": {"everything": everything(), "a": faulty_stdio(&logs.path().join("a.log"), &[])}
    });
    let pool = Mcpool::start_connected(config).await?;
    for sdk in ["python", "typescript"] {
        let url = pool.url("/mcp");
        let mut agent = match sdk {
            "python" => LineAgent::python(&url, &pool.token).await?,
            _ => LineAgent::typescript(&url, &pool.token).await?,
        };
        let before = listed(&mut agent).await?;
        assert_eq!(
            before,
            ["mcpool__search_tools", "mcpool__call_tool", "mcpool__run_script"],
            "{sdk}"
        );

        let r = agent
            .command(json!({"op": "call", "tool": "mcpool__search_tools", "args": {"query": "work out the total of two numbers a and b"}}))
            .await?;
        assert_eq!(r["is_error"], false, "{sdk}: {r}");
        let names = found_names(&r["structured"]);
        assert!(names.contains(&"a__add".to_string()), "{sdk}: {names:?}");
        assert!(names.len() <= 5, "{sdk}: the default limit is 5: {names:?}");
        let text = r["text"].as_str().unwrap_or_default();
        assert!(
            text.contains("a__add [a, connected]") && text.contains("a*: "),
            "{sdk}: {text}"
        );
        let first = &r["structured"]["tools"][0];
        assert!(
            first["inputSchema"]["type"] == "object" && first["server"].is_string(),
            "{sdk}: {first}"
        );

        let deadline = tokio::time::Instant::now() + LIMIT;
        while changes(&mut agent).await? == 0 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{sdk}: no tools/list_changed after the search"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let after = listed(&mut agent).await?;
        assert!(after.contains(&"a__add".to_string()), "{sdk}: {after:?}");
        assert!(
            !after.contains(&"a__crash".to_string()),
            "{sdk}: only what was found joins: {after:?}"
        );
        let r = agent
            .command(json!({"op": "call", "tool": "a__add", "args": {"a": 2, "b": 40}}))
            .await?;
        assert_eq!(
            (r["text"].as_str(), r["is_error"].as_bool()),
            (Some("42"), Some(false)),
            "{sdk}: {r}"
        );

        let r = agent
            .command(json!({"op": "call", "tool": "mcpool__call_tool", "args": {"name": "everything__echo", "arguments": {"message": "via the call tool"}}}))
            .await?;
        assert_eq!(r["is_error"], false, "{sdk}: {r}");
        assert!(
            r["text"].as_str().unwrap_or_default().contains("via the call tool"),
            "{sdk}: {r}"
        );
        let r = agent
            .command(json!({"op": "call", "tool": "mcpool__call_tool", "args": {"name": "nowhere__nothing"}}))
            .await?;
        assert_eq!(r["is_error"], true, "{sdk}: {r}");
        assert_eq!(r["text"], "mcpool has no tool named 'nowhere__nothing'.", "{sdk}");
        agent.close().await?;
    }
    Ok(())
}

#[tokio::test]
async fn the_call_tool_keeps_tool_control_and_the_recent_calls_and_hidden_tools_are_never_found() -> anyhow::Result<()>
{
    let logs = TempDir::new("search-control");
    let mut a = faulty_stdio(&logs.path().join("a.log"), &[]);
    a["disabledTools"] = json!(["slow"]);
    let config = json!({
        "mcpServers": {"a": a},
        "profiles": {"only-echo": {"tools": ["a__echo"]}}
    });
    let pool = Mcpool::start_connected(config).await?;
    let agent = pool.agent("/mcp").await?;
    let names = agent.tool_names().await?;
    assert!(
        names.contains(&"mcpool__search_tools".to_string()) && names.contains(&"a__echo".to_string()),
        "{names:?}"
    );

    let r = agent
        .call(
            "mcpool__search_tools",
            json!({"query": "sleep for some milliseconds then answer", "limit": 20}),
        )
        .await?;
    let found = found_names(r.structured_content.as_ref().unwrap_or(&Value::Null));
    assert!(
        !found.contains(&"a__slow".to_string()),
        "a disabled tool is never found: {found:?}"
    );
    let r = call_tool(&agent, "a__slow", json!({"ms": 1})).await?;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("is disabled in mcpool"), "{}", text(&r));

    let r = call_tool(&agent, "a__echo", json!({"text": "recorded"})).await?;
    assert_eq!(text(&r), "recorded");
    let calls = pool.get_json("/api/calls").await?;
    let newest = &calls[0];
    assert_eq!(
        (
            newest["server"].as_str(),
            newest["tool"].as_str(),
            newest["outcome"].as_str()
        ),
        (Some("a"), Some("echo"), Some("ok")),
        "{calls}"
    );

    for (args, sentence) in [
        (json!({}), "needs the argument 'name'"),
        (
            json!({"name": "a__echo", "arguments": "text"}),
            "'arguments' must be an object",
        ),
        (json!({"name": "mcpool__call_tool"}), "call mcpool__call_tool directly"),
    ] {
        let r = agent.call("mcpool__call_tool", args.clone()).await?;
        assert_eq!(r.is_error, Some(true), "{args}");
        assert!(text(&r).contains(sentence), "{args}: {}", text(&r));
    }
    let r = agent.call("mcpool__search_tools", json!({})).await?;
    assert!(
        r.is_error == Some(true) && text(&r).contains("needs the argument 'query'"),
        "{}",
        text(&r)
    );

    // A profile's search and call tool see only its part.
    let profile = pool.agent("/profiles/only-echo/mcp").await?;
    let r = profile
        .call("mcpool__search_tools", json!({"query": "sum of a and b", "limit": 20}))
        .await?;
    let found = found_names(r.structured_content.as_ref().unwrap_or(&Value::Null));
    assert!(found.iter().all(|n| n == "a__echo"), "{found:?}");
    let r = profile
        .call(
            "mcpool__call_tool",
            json!({"name": "a__add", "arguments": {"a": 1, "b": 2}}),
        )
        .await?;
    assert_eq!(r.is_error, Some(true));
    assert!(
        text(&r).contains("is not part of the mcpool profile 'only-echo'"),
        "{}",
        text(&r)
    );
    let r = profile
        .call("mcpool__search_tools", json!({"query": "echo text back"}))
        .await?;
    assert_eq!(
        found_names(r.structured_content.as_ref().unwrap_or(&Value::Null)),
        ["a__echo"]
    );
    Ok(())
}

#[tokio::test]
async fn kept_tools_of_a_dropped_server_are_found_and_calling_one_reconnects_it() -> anyhow::Result<()> {
    let (_logs, pool) = one_faulty("search-kept", json!({"toolListing": "search"})).await?;
    let agent = pool.agent("/mcp").await?;
    let _ = call_tool(&agent, "a__crash", json!({"message": "bye"})).await?;
    pool.wait_status("a", "failed", LIMIT).await?;

    let r = agent
        .call("mcpool__search_tools", json!({"query": "add two numbers"}))
        .await?;
    let structured = r.structured_content.clone().unwrap_or_default();
    let add = structured["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "a__add").cloned())
        .ok_or_else(|| anyhow::anyhow!("a__add not found while a is down: {structured}"))?;
    assert_eq!(add["status"], "failed", "{add}");
    let r = call_tool(&agent, "a__add", json!({"a": 1, "b": 1})).await?;
    assert_eq!(text(&r), "2", "calling a kept tool reconnects its server");
    pool.wait_status("a", "connected", LIMIT).await?;
    Ok(())
}

#[tokio::test]
async fn tools_waiting_for_approval_are_never_found_until_approved() -> anyhow::Result<()> {
    let (_logs, pool) = one_faulty("search-approval", json!({"approveNewTools": "ask"})).await?;
    let agent = pool.agent("/mcp").await?;
    let search = |query: &'static str| agent.call("mcpool__search_tools", json!({"query": query, "limit": 20}));
    let r = search("returns the sum of a and b").await?;
    let found = found_names(r.structured_content.as_ref().unwrap_or(&Value::Null));
    assert!(found.iter().all(|n| !n.starts_with("a__")), "{found:?}");
    let r = call_tool(&agent, "a__add", json!({"a": 1, "b": 1})).await?;
    assert!(
        r.is_error == Some(true) && text(&r).contains("waiting for the user's approval"),
        "{}",
        text(&r)
    );
    // The dashboard's search sees it, with its state.
    let api = pool.get_json("/api/tools/search?q=sum%20of%20a%20and%20b").await?;
    let add = api["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "a__add").cloned());
    assert_eq!(
        add.as_ref().map(|a| a["state"].clone()),
        Some(json!("changed")),
        "{api}"
    );

    let (status, _) = pool.post("/api/servers/a/tools/add/approve").await?;
    assert_eq!(status, 200);
    let r = search("returns the sum of a and b").await?;
    assert!(found_names(r.structured_content.as_ref().unwrap_or(&Value::Null)).contains(&"a__add".to_string()));
    Ok(())
}

#[tokio::test]
async fn a_2026_07_28_agent_hears_its_found_tools_through_listen_and_calls_them() -> anyhow::Result<()> {
    let (_logs, pool) = one_faulty("search-2026", json!({"toolListing": "search"})).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let agent = pool.stateless_agent("/mcp").await?;
    let mut stream = agent
        .service
        .peer()
        .listen(SubscriptionFilter::builder().tools_list_changed().build())
        .await?;
    assert!(!agent.tool_names().await?.contains(&"a__add".to_string()));
    let r = agent
        .call("mcpool__search_tools", json!({"query": "sum of two numbers"}))
        .await?;
    assert!(found_names(r.structured_content.as_ref().unwrap_or(&Value::Null)).contains(&"a__add".to_string()));
    loop {
        match tokio::time::timeout(LIMIT, stream.next()).await?? {
            Some(ServerNotification::ToolListChangedNotification(_)) => break,
            Some(_) => continue,
            None => anyhow::bail!("the listen stream ended"),
        }
    }
    assert!(agent.tool_names().await?.contains(&"a__add".to_string()));
    assert_eq!(text(&agent.call("a__add", json!({"a": 20, "b": 22})).await?), "42");
    let r = call_tool(&agent, "a__echo", json!({"text": "stateless"})).await?;
    assert_eq!(text(&r), "stateless");
    Ok(())
}

#[tokio::test]
async fn auto_lists_everything_until_the_budget_and_the_url_and_the_cli_say_the_same() -> anyhow::Result<()> {
    let logs = TempDir::new("search-auto");
    let a = faulty_stdio(&logs.path().join("a.log"), &[]);
    let pool = Mcpool::start_connected(json!({"mcpServers": {"a": a.clone()}})).await?;
    let all = pool.agent("/mcp").await?.tool_names().await?;
    assert!(
        all.contains(&"a__echo".to_string()) && all.contains(&"mcpool__search_tools".to_string()),
        "{all:?}"
    );
    let listing = pool.get_json("/api/tools/listing").await?;
    let root = &listing["endpoints"][0];
    assert_eq!(
        (root["path"].as_str(), root["mode"].as_str(), root["sent"].as_str()),
        (Some("/mcp"), Some("auto"), Some("all")),
        "{listing}"
    );
    let full_tokens = root["full_tokens"].as_u64().unwrap_or(0);
    assert!(
        full_tokens > 0 && root["sent_tokens"] == root["full_tokens"],
        "{listing}"
    );

    // A budget below the listing's cost: the search listing.
    std::fs::write(
        pool.config_path(),
        serde_json::to_vec(
            &json!({"toolListingBudget": full_tokens / 2, "pinnedTools": ["a__echo"], "mcpServers": {"a": a}}),
        )?,
    )?;
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        let names = pool.agent("/mcp").await?.tool_names().await?;
        if names
            == [
                "mcpool__search_tools",
                "mcpool__call_tool",
                "mcpool__run_script",
                "a__echo",
            ]
        {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never switched to the search listing: {names:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let all = pool.agent("/mcp?toolListing=all").await?.tool_names().await?;
    assert!(all.contains(&"a__add".to_string()), "the URL's mode wins: {all:?}");
    let own = pool.agent("/servers/a/mcp").await?.tool_names().await?;
    assert!(
        own.contains(&"add".to_string()) && !own.iter().any(|n| n.starts_with("mcpool__")),
        "{own:?}"
    );

    let out = pool.cli(&["tools", "search", "sum of a and b"], None).await?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("a__add"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = pool.cli(&["tools", "list", "--server", "a"], None).await?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("crash") && stdout.contains("TOKENS"),
        "{stdout}"
    );
    let out = pool.cli(&["tools", "list"], None).await?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("/mcp: toolListing auto") && stdout.contains("sends search"),
        "{stdout}"
    );
    Ok(())
}

#[tokio::test]
async fn the_most_used_tools_stay_listed_across_a_restart() -> anyhow::Result<()> {
    let (_logs, mut pool) = one_faulty("search-most-used", json!({"toolListing": "search", "pinMostUsed": 1})).await?;
    let agent = pool.agent("/mcp").await?;
    for _ in 0..3 {
        call_tool(&agent, "a__echo", json!({"text": "x"})).await?;
    }
    call_tool(&agent, "a__add", json!({"a": 1, "b": 1})).await?;
    drop(agent);
    pool.restart().await?;
    pool.wait_status("a", "connected", LIMIT).await?;
    let names = pool.agent("/mcp").await?.tool_names().await?;
    assert_eq!(
        names,
        [
            "mcpool__search_tools",
            "mcpool__call_tool",
            "mcpool__run_script",
            "a__echo"
        ],
        "counts survive a restart"
    );
    let usage = std::fs::read_to_string(
        pool.data_dir()
            .join("usage")
            .join(format!("{}.json", profile_for(pool.dir.path()))),
    )?;
    assert!(
        usage.contains("echo") && !usage.contains("\"x\""),
        "counts only: {usage}"
    );
    Ok(())
}

#[tokio::test]
async fn nothing_fits_a_named_service_not_in_reach_and_the_pointer_to_status_works() -> anyhow::Result<()> {
    let logs = TempDir::new("search-nothing");
    let config = json!({
        "toolListing": "search",
        "mcpServers": {"a": faulty_stdio(&logs.path().join("a.log"), &[]), "everything": everything()},
    });
    let pool = Mcpool::start_connected(config).await?;
    let agent = pool.agent("/mcp").await?;

    // A task for a service no server is: nothing, and the answer says why.
    let r = agent
        .call(
            "mcpool__search_tools",
            json!({"query": "reply in that Slack thread that I'm on it"}),
        )
        .await?;
    assert_eq!(
        found_names(r.structured_content.as_ref().unwrap_or(&Value::Null)),
        Vec::<String>::new()
    );
    let said = text(&r);
    assert!(said.contains("No server behind mcpool is Slack"), "{said}");
    // The same words without the service find the echo tools.
    let r = agent
        .call("mcpool__search_tools", json!({"query": "echo back a message"}))
        .await?;
    assert!(
        !found_names(r.structured_content.as_ref().unwrap_or(&Value::Null)).is_empty(),
        "{}",
        text(&r)
    );

    // The pointer is true: a search listing lacks mcpool__status, and
    // mcpool__call_tool reaches it.
    assert!(!agent.tool_names().await?.iter().any(|n| n == "mcpool__status"));
    assert!(
        said.contains("mcpool__call_tool {\"name\": \"mcpool__status\"}"),
        "{said}"
    );
    let status = agent
        .call("mcpool__call_tool", json!({"name": "mcpool__status"}))
        .await?;
    assert_ne!(status.is_error, Some(true), "{}", text(&status));
    let status = text(&status);
    assert!(
        status.contains("everything") && status.contains("connected"),
        "{status}"
    );

    // A line says what a tool with an output schema returns.
    let r = agent
        .call(
            "mcpool__search_tools",
            json!({"query": "get structured content", "limit": 10}),
        )
        .await?;
    let said = text(&r);
    let line = said
        .lines()
        .find(|l| l.contains("everything__get-structured-content"))
        .ok_or_else(|| anyhow::anyhow!("not found: {said}"))?;
    assert!(line.contains(" Returns: {"), "{line}");
    Ok(())
}
