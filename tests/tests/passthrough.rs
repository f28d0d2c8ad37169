//! What passes between agents and an upstream through mcpool besides plain
//! calls: sampling, progress, logging, resource updates, completion,
//! cancellation and `list_changed`, against our fault-injecting server over
//! stdio; and distinct names for servers whose names sanitise alike.

use std::time::Duration;

use mcpool_tests::*;
use rmcp::model::ServerResult;
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(10);
/// Longer than the pool's re-listing after a connect (500 ms), so any
/// `list_changed` it would send has arrived.
const SETTLE: Duration = Duration::from_millis(1500);

fn result_text(result: ServerResult) -> String {
    match result {
        ServerResult::CallToolResult(r) => text(&r),
        other => panic!("not a tool result: {other:?}"),
    }
}

#[tokio::test]
async fn sampling_goes_to_the_agent_whose_call_asked_for_it() -> anyhow::Result<()> {
    let (pool, _) = Mcpool::start_with_faulty("sampling", "f", &[]).await?;
    // `idle` connects first, so a pool that picked "any agent" would pick it.
    let idle = pool.agent("/mcp").await?;
    let caller = pool.agent("/mcp").await?;

    let r = caller.call("f__sample", json!({"prompt": "write a haiku"})).await?;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    let answer = caller.handler.sampling_answer().expect("the calling agent was asked");
    assert!(answer.starts_with("sampled: "), "{answer}");
    assert_eq!(text(&r), answer, "the tool returns what the agent sampled");
    assert_eq!(idle.handler.sampling_answer(), None, "the idle agent was asked");

    // The other way round, on the per-server endpoint.
    let per_server = pool.agent("/servers/f/mcp").await?;
    let r = per_server.call("sample", json!({"prompt": "again"})).await?;
    assert_eq!(Some(text(&r)), per_server.handler.sampling_answer());
    assert_eq!(idle.handler.sampling_answer(), None);
    Ok(())
}

#[tokio::test]
async fn progress_reaches_the_calling_agent_under_its_own_token() -> anyhow::Result<()> {
    let (pool, _) = Mcpool::start_with_faulty("progress", "f", &[]).await?;
    let a = pool.agent("/mcp").await?;
    let b = pool.agent("/mcp").await?;
    let bystander = pool.agent("/mcp").await?;

    // Both agents' first requests after listing carry the same token value
    // from their own counters; mcpool keeps the two calls apart.
    let ha = a.start_call("f__progress", json!({"steps": 5})).await?;
    let hb = b.start_call("f__progress", json!({"steps": 3})).await?;
    let (ta, tb) = (ha.progress_token.clone(), hb.progress_token.clone());
    let (ra, rb) = futures::future::join(ha.await_response(), hb.await_response()).await;
    assert_eq!(result_text(ra?), "done");
    assert_eq!(result_text(rb?), "done");

    let (ah, bh) = (a.handler.clone(), b.handler.clone());
    wait_for("a's five progress notifications", LIMIT, || ah.progress().len() >= 5).await?;
    wait_for("b's three progress notifications", LIMIT, || bh.progress().len() >= 3).await?;
    assert_eq!(a.handler.progress(), vec![1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(b.handler.progress(), vec![1.0, 2.0, 3.0]);
    let ta = serde_json::to_value(&ta)?;
    let tb = serde_json::to_value(&tb)?;
    assert!(
        a.handler.progress_tokens().iter().all(|t| *t == ta),
        "{:?}",
        a.handler.progress_tokens()
    );
    assert!(
        b.handler.progress_tokens().iter().all(|t| *t == tb),
        "{:?}",
        b.handler.progress_tokens()
    );

    // Through the per-server endpoint as well.
    let c = pool.agent("/servers/f/mcp").await?;
    let hc = c.start_call("progress", json!({"steps": 2})).await?;
    let tc = serde_json::to_value(&hc.progress_token)?;
    assert_eq!(result_text(hc.await_response().await?), "done");
    let ch = c.handler.clone();
    wait_for("c's two progress notifications", LIMIT, || ch.progress().len() >= 2).await?;
    assert_eq!(c.handler.progress(), vec![1.0, 2.0]);
    assert!(c.handler.progress_tokens().iter().all(|t| *t == tc));

    assert!(
        bystander.handler.progress().is_empty(),
        "progress leaked to a bystander"
    );
    Ok(())
}

#[tokio::test]
async fn log_messages_reach_every_agent_that_sees_the_server() -> anyhow::Result<()> {
    let (pool, _) = Mcpool::start_with_faulty("logging", "f", &[]).await?;
    let caller = pool.agent("/mcp").await?;
    let other = pool.agent("/mcp").await?;
    let own = pool.agent("/servers/f/mcp").await?;

    let r = caller.call("f__log", json!({"message": "disk at 91%"})).await?;
    assert_eq!(text(&r), "logged");
    for (who, agent) in [("caller", &caller), ("other", &other), ("own", &own)] {
        let h = agent.handler.clone();
        wait_for(&format!("the log message at {who}"), LIMIT, || !h.logs().is_empty()).await?;
        let logs = agent.handler.logs();
        assert_eq!(logs.len(), 1, "{who}: {logs:?}");
        assert_eq!(logs[0]["data"], "disk at 91%", "{who}");
        assert_eq!(logs[0]["level"], "info", "{who}");
    }
    // On /mcp the logger names the server; on the per-server endpoint it is untouched.
    assert_eq!(caller.handler.logs()[0]["logger"], "f/faulty");
    assert_eq!(own.handler.logs()[0]["logger"], "faulty");
    Ok(())
}

#[tokio::test]
async fn resource_updates_reach_only_the_subscribed_agent() -> anyhow::Result<()> {
    let (pool, _) = Mcpool::start_with_faulty("resources", "f", &[]).await?;
    let subscriber = pool.agent("/mcp").await?;
    let other = pool.agent("/mcp").await?;
    let uri = "faulty://static/hello";

    // Not subscribed yet: the server has nothing to say.
    let r = other.call("f__touch", json!({"uri": uri})).await?;
    assert_eq!(text(&r), "not subscribed");

    subscriber.subscribe(uri).await?;
    let r = other.call("f__touch", json!({"uri": uri})).await?;
    assert_eq!(text(&r), "notified", "the subscription reached the server");
    subscriber.first_resource_update(LIMIT).await?;
    let h = subscriber.handler.clone();
    assert_eq!(subscriber.handler.resource_updates(), vec![uri.to_string()]);

    // A marker the other agent does see, sent after the update: once it is
    // there, the update would have been too.
    let _ = other.call("f__log", json!({"message": "marker"})).await?;
    let oh = other.handler.clone();
    wait_for("the marker log at the other agent", LIMIT, || !oh.logs().is_empty()).await?;
    assert!(
        other.handler.resource_updates().is_empty(),
        "{:?}",
        other.handler.resource_updates()
    );

    // A second agent subscribes and unsubscribes: the first still hears.
    other.subscribe(uri).await?;
    other.unsubscribe(uri).await?;
    let r = other.call("f__touch", json!({"uri": uri})).await?;
    assert_eq!(
        text(&r),
        "notified",
        "one agent's unsubscribe ended another's subscription"
    );
    wait_for("the second update at the subscriber", LIMIT, || {
        h.resource_updates().len() >= 2
    })
    .await?;

    // The last one out unsubscribes upstream too.
    subscriber.unsubscribe(uri).await?;
    let r = other.call("f__touch", json!({"uri": uri})).await?;
    assert_eq!(text(&r), "not subscribed");
    Ok(())
}

#[tokio::test]
async fn completion_reaches_the_prompt_server_through_mcp() -> anyhow::Result<()> {
    let (pool, _) = Mcpool::start_with_faulty("complete", "faulty", &[]).await?;
    let agent = pool.agent("/mcp").await?;
    let prompts = agent.service.peer().list_all_prompts().await?;
    assert!(prompts.iter().any(|p| p.name == "faulty__greet"), "{prompts:?}");

    let values = agent
        .service
        .peer()
        .complete_prompt_simple("faulty__greet", "name", "al")
        .await?;
    assert_eq!(values, vec!["alice".to_string(), "albert".to_string()]);
    let values = agent
        .service
        .peer()
        .complete_prompt_simple("faulty__greet", "name", "b")
        .await?;
    assert_eq!(values, vec!["bob".to_string()]);
    let unknown = agent
        .service
        .peer()
        .complete_prompt_simple("faulty__nope", "name", "a")
        .await;
    assert!(unknown.is_err(), "{unknown:?}");
    Ok(())
}

#[tokio::test]
async fn a_cancelled_call_is_cancelled_upstream_and_the_server_keeps_serving() -> anyhow::Result<()> {
    let (pool, log) = Mcpool::start_with_faulty("cancel", "f", &[]).await?;
    let agent = pool.agent("/mcp").await?;

    let handle = agent.start_call("f__hang", json!({})).await?;
    wait_for("the hang call at the server", LIMIT, || {
        count_lines(&log, "call hang") == 1
    })
    .await?;
    handle.cancel(Some("the user gave up".into())).await?;
    wait_for("notifications/cancelled at the server", LIMIT, || {
        count_lines(&log, "cancelled hang") == 1
    })
    .await?;

    let r = agent.call("f__echo", json!({"text": "still here"})).await?;
    assert_eq!(text(&r), "still here");
    assert_eq!(pool.server("f").await?["status"], "connected");
    assert_eq!(count_lines(&log, "start"), 1, "the server was restarted");
    Ok(())
}

#[tokio::test]
async fn list_changed_only_when_the_visible_tools_really_change() -> anyhow::Result<()> {
    let (pool, log) = Mcpool::start_with_faulty("listchanged", "f", &[]).await?;
    tokio::time::sleep(SETTLE).await;
    let all = pool.agent("/mcp").await?;
    let own = pool.agent("/servers/f/mcp").await?;
    let counts = || (all.handler.tool_list_changes(), own.handler.tool_list_changes());

    // An explicit reconnect that comes back with the same tools: nothing.
    let (code, body) = pool.post("/api/servers/f/reconnect").await?;
    assert_eq!(code, 200, "{body}");
    assert_eq!(count_lines(&log, "start"), 2);
    tokio::time::sleep(SETTLE).await;
    assert_eq!(counts(), (0, 0), "a reconnect with the same tools sent list_changed");

    // A drop and the reconnect on the next call: nothing either.
    let _ = all.call("f__crash", json!({})).await?;
    pool.wait_status("f", "failed", LIMIT).await?;
    assert_eq!(text(&all.call("f__echo", json!({"text": "x"})).await?), "x");
    assert_eq!(count_lines(&log, "start"), 3);
    tokio::time::sleep(SETTLE).await;
    assert_eq!(counts(), (0, 0), "a drop and reconnect sent list_changed");

    // A tool added: exactly one list_changed for each agent.
    let r = all.call("f__set_tools", json!({"names": ["extra"]})).await?;
    assert_eq!(text(&r), "tools set");
    let (ah, oh) = (all.handler.clone(), own.handler.clone());
    wait_for("list_changed at both agents", LIMIT, || {
        ah.tool_list_changes() >= 1 && oh.tool_list_changes() >= 1
    })
    .await?;
    assert!(all.tool_names().await?.contains(&"f__extra".to_string()));
    assert!(own.tool_names().await?.contains(&"extra".to_string()));
    assert_eq!(
        text(&all.call("f__extra", json!({"text": "dynamic"})).await?),
        "dynamic"
    );
    tokio::time::sleep(SETTLE).await;
    assert_eq!(counts(), (1, 1));

    // Announcing the same set again changes nothing visible.
    let r = all.call("f__set_tools", json!({"names": ["extra"]})).await?;
    assert_eq!(text(&r), "tools set");
    tokio::time::sleep(SETTLE).await;
    assert_eq!(counts(), (1, 1), "an unchanged list was announced");
    Ok(())
}

#[tokio::test]
async fn colliding_server_names_get_distinct_deterministic_tool_names() -> anyhow::Result<()> {
    let dir = TempDir::new("collide");
    let (log_space, log_under) = (dir.path().join("space.log"), dir.path().join("under.log"));
    let config = json!({"mcpServers": {
        "a b": faulty_stdio(&log_space, &[]),
        "a_b": faulty_stdio(&log_under, &[]),
    }});
    let echo_names = |tools: Vec<String>| -> Vec<String> {
        let mut names: Vec<String> = tools.into_iter().filter(|t| t.starts_with("a_b__echo")).collect();
        names.sort();
        names
    };

    let first = {
        let pool = Mcpool::start(config.clone()).await?;
        pool.wait_status("a b", "connected", Duration::from_secs(20)).await?;
        pool.wait_status("a_b", "connected", Duration::from_secs(20)).await?;
        let agent = pool.agent("/mcp").await?;
        let names = echo_names(agent.tool_names().await?);
        assert_eq!(names.len(), 2, "{names:?}");
        assert_eq!(names[0], "a_b__echo");
        let other = names[1].clone();
        assert!(other.starts_with("a_b__echo_") && other.len() <= 64, "{other}");
        assert!(other.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));

        // Each name reaches its own server.
        assert_eq!(text(&agent.call("a_b__echo", json!({"text": "one"})).await?), "one");
        assert_eq!(count_lines(&log_space, "call echo"), 1);
        assert_eq!(count_lines(&log_under, "call echo"), 0);
        assert_eq!(text(&agent.call(&other, json!({"text": "two"})).await?), "two");
        assert_eq!(count_lines(&log_under, "call echo"), 1);
        assert_eq!(count_lines(&log_space, "call echo"), 1);
        names
    };

    // Another run (the servers answering in whatever order) gives the same names.
    let pool = Mcpool::start(config).await?;
    pool.wait_status("a b", "connected", Duration::from_secs(20)).await?;
    pool.wait_status("a_b", "connected", Duration::from_secs(20)).await?;
    let agent = pool.agent("/mcp").await?;
    assert_eq!(echo_names(agent.tool_names().await?), first);
    Ok(())
}
