//! The activity log against the real binary, real servers, the real
//! Secret Service and the real SQLite file (behaviour §2 "activity and
//! metrics"): every tool call, prompt get, resource read and server event
//! is kept; `GET /api/activity` filters and pages them; `mcpool activity`
//! prints and follows them; what the API showed survives a `kill -9`; a
//! corrupt file is reported once and replaced; arguments and results are
//! kept only for a server with `"logArguments": true`, and a secret never.

use std::time::Duration;

use mcpool_tests::secrets::*;
use mcpool_tests::*;
use serde_json::{json, Value};
use tokio::io::AsyncBufReadExt;

const LIMIT: Duration = Duration::from_secs(20);

async fn activity(pool: &Mcpool, query: &str) -> anyhow::Result<(String, Value)> {
    let r = reqwest::Client::new()
        .get(pool.url(&format!("/api/activity{query}")))
        .bearer_auth(&pool.token)
        .send()
        .await?;
    let status = r.status();
    let text = r.text().await?;
    anyhow::ensure!(status.is_success(), "/api/activity{query}: {status} {text}");
    Ok((text.clone(), serde_json::from_str(&text)?))
}

fn items(page: &Value) -> Vec<Value> {
    page["items"].as_array().cloned().unwrap_or_default()
}

/// Waits until `/api/activity{query}` has at least `n` items.
async fn wait_items(pool: &Mcpool, query: &str, n: usize) -> anyhow::Result<Vec<Value>> {
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        let (_, page) = activity(pool, query).await?;
        let found = items(&page);
        if found.len() >= n {
            return Ok(found);
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "{query}: {} of {n} items: {page}",
            found.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn db_bytes(pool: &Mcpool) -> Vec<u8> {
    let dir = pool.data_dir().join("activity");
    let mut all = Vec::new();
    for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        all.extend(std::fs::read(entry.path()).unwrap_or_default());
    }
    all
}

#[tokio::test]
async fn every_request_and_event_is_kept_filtered_followed_and_survives_kill_9() -> anyhow::Result<()> {
    let Keyed { dir, scripts, key } = Keyed::new("activity", "act-key").await?;
    let argument = format!("argument-{}", new_secret("quiet"));
    let logged = format!("logged-{}", new_secret("verbose"));
    let mut quiet = faulty_stdio(&scripts.path().join("quiet.log"), &[]);
    quiet["env"] = json!({"API_KEY": "${keyring:act-key}"});
    let mut verbose = faulty_stdio(&scripts.path().join("verbose.log"), &[]);
    verbose["env"] = json!({"API_KEY": "${keyring:act-key}"});
    verbose["logArguments"] = json!(true);
    let mut pool = Mcpool::start_in(dir, json!({"mcpServers": {"quiet": quiet, "verbose": verbose}}), &[]).await?;
    pool.wait_status("quiet", "connected", LIMIT).await?;
    pool.wait_status("verbose", "connected", LIMIT).await?;

    let agent = pool.agent("/mcp").await?;
    agent.call("quiet__echo", json!({"text": argument})).await?;
    let bad = agent.call("quiet__add", json!({"a": argument, "b": 1})).await;
    assert!(bad.is_err(), "{bad:?}");
    agent.call("verbose__echo", json!({"text": logged})).await?;
    // The secret itself as an argument: kept redacted even with logArguments.
    agent.call("verbose__echo", json!({"text": key})).await?;
    let peer = agent.service.peer();
    peer.get_prompt(
        rmcp::model::GetPromptRequestParams::new("quiet__greet")
            .with_arguments(serde_json::from_value(json!({"name": argument}))?),
    )
    .await?;
    peer.read_resource(rmcp::model::ReadResourceRequestParams::new("faulty://static/hello"))
        .await
        .ok();
    let one = pool.agent("/servers/quiet/mcp").await?;
    one.call("echo", json!({"text": argument})).await?;

    let tools = wait_items(&pool, "?kind=tool", 5).await?;
    let (raw, page) = activity(&pool, "?limit=1000").await?;
    let all = items(&page);
    let seen: Vec<(&str, &str, &str)> = tools
        .iter()
        .map(|i| {
            (
                i["server"].as_str().unwrap_or(""),
                i["tool"].as_str().unwrap_or(""),
                i["outcome"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("quiet", "echo", "ok"),
            ("verbose", "echo", "ok"),
            ("verbose", "echo", "ok"),
            ("quiet", "add", "protocol_error"),
            ("quiet", "echo", "ok"),
        ],
        "{raw}"
    );
    for i in &tools {
        assert_eq!(i["client"], "mcpool-test-agent", "{i}");
        assert_eq!(i["client_version"], "0", "{i}");
        assert!(i["session"].as_str().is_some_and(|s| !s.is_empty()), "{i}");
        assert!(i["duration_ms"].as_u64().is_some(), "{i}");
        assert!(i["time"].as_str().is_some_and(|t| t.len() == 24), "{i}");
    }
    assert_eq!(tools[0]["endpoint"], "/servers/quiet/mcp");
    assert_eq!(tools[1]["endpoint"], "/mcp");
    assert!(tools[4]["result_bytes"].as_u64().unwrap_or(0) > 0, "{}", tools[4]);
    assert_eq!(
        tools[3]["error"], "JSON-RPC error -32602",
        "only the code without logArguments: {}",
        tools[3]
    );
    // logArguments: the arguments and result are kept, the secret redacted.
    assert_eq!(tools[2]["arguments"], json!({"text": logged}), "{}", tools[2]);
    assert!(tools[2]["result"].to_string().contains(&logged), "{}", tools[2]);
    assert_eq!(tools[1]["arguments"], json!({"text": "[secret]"}), "{}", tools[1]);
    assert!(tools[4].get("arguments").is_none(), "{}", tools[4]);
    // The prompt, the read, and each server's events.
    let kinds = |k: &str| all.iter().filter(|i| i["kind"] == k).count();
    assert_eq!((kinds("prompt"), kinds("resource")), (1, 1), "{raw}");
    let prompt = all.iter().find(|i| i["kind"] == "prompt").cloned().unwrap_or_default();
    assert_eq!(
        (prompt["prompt"].as_str(), prompt["outcome"].as_str()),
        (Some("greet"), Some("ok"))
    );
    let events: Vec<(String, String, String)> = all
        .iter()
        .filter(|i| i["kind"] == "server" && i["server"] == "quiet")
        .map(|i| {
            let s = |k: &str| i[k].as_str().unwrap_or("").to_string();
            (s("event"), s("outcome"), s("tool"))
        })
        .rev()
        .collect();
    let config_added = ("config".to_string(), "added".to_string(), String::new());
    assert!(events.contains(&config_added), "{events:?}");
    let started = ("connect".to_string(), "start".to_string(), String::new());
    assert!(events.contains(&started), "{events:?}");
    let connected = ("status".to_string(), "connected".to_string(), String::new());
    assert!(events.contains(&connected), "{events:?}");

    // Filters.
    let quiet_only = items(&activity(&pool, "?server=quiet&kind=tool").await?.1);
    assert_eq!(quiet_only.len(), 3);
    let errors = items(&activity(&pool, "?outcome=error").await?.1);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["tool"], "add");
    let by_client = items(&activity(&pool, "?client=mcpool-test-agent&tool=echo").await?.1);
    assert_eq!(by_client.len(), 4);
    assert!(items(&activity(&pool, "?client=someone-else").await?.1).is_empty());
    assert!(items(&activity(&pool, "?until=1h").await?.1).is_empty());
    assert_eq!(items(&activity(&pool, "?since=1h&kind=tool").await?.1).len(), 5);
    let first = activity(&pool, "?kind=tool&limit=2").await?.1;
    assert_eq!(items(&first).len(), 2);
    let cursor = first["next_cursor"].as_str().unwrap_or_default().to_string();
    let second = items(&activity(&pool, &format!("?kind=tool&limit=2&cursor={cursor}")).await?.1);
    assert_eq!(second[0]["id"].as_i64(), tools[2]["id"].as_i64());
    let r = pool.get("/api/activity?limit=0").await?;
    assert_eq!(r.status(), 400);
    assert_eq!(r.json::<Value>().await?["field"], "limit");
    let r = reqwest::Client::new().get(pool.url("/api/activity")).send().await?;
    assert_eq!(r.status(), 401, "the same token as the rest of /api");

    // The CLI reads the same file, oldest first.
    let o = pool
        .cli(&["activity", "--server", "quiet", "--kind", "tool"], None)
        .await?;
    let printed = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(lines.len(), 3, "{printed}");
    assert!(
        lines[0].contains("quiet/echo mcpool-test-agent 0") && lines[0].ends_with("ok"),
        "{printed}"
    );
    assert!(
        lines[1].contains("quiet/add") && lines[1].contains("protocol_error"),
        "{printed}"
    );
    let o = pool.cli(&["activity", "--json", "--outcome", "error"], None).await?;
    let json_lines: Vec<Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    assert_eq!(json_lines.len(), 1);
    assert_eq!(json_lines[0]["tool"], "add");

    // Following: a call made now is printed as it is recorded.
    let listen = format!("127.0.0.1:{}", pool.port);
    let mut follow = tokio::process::Command::new(bin("mcpool"))
        .args(["activity", "--follow", "--json", "--kind", "tool", "--limit", "1"])
        .envs(instance_env(pool.dir.path()))
        .env("MCPOOL_LISTEN", &listen)
        .env("MCPOOL_PROFILE", profile_for(pool.dir.path()))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let mut out = tokio::io::BufReader::new(follow.stdout.take().ok_or_else(|| anyhow::anyhow!("no stdout"))?).lines();
    let newest = tokio::time::timeout(LIMIT, out.next_line()).await??.unwrap_or_default();
    assert!(
        newest.contains("/servers/quiet/mcp"),
        "the newest entry first: {newest}"
    );
    agent.call("verbose__echo", json!({"text": "followed"})).await?;
    let next = tokio::time::timeout(LIMIT, out.next_line()).await??.unwrap_or_default();
    let next: Value = serde_json::from_str(&next)?;
    assert_eq!(
        (next["server"].as_str(), next["tool"].as_str()),
        (Some("verbose"), Some("echo")),
        "{next}"
    );
    follow.kill().await?;

    // Nothing the API showed is lost to a kill -9.
    let before = wait_items(&pool, "?kind=tool", 6).await?;
    let ids: Vec<i64> = items(&activity(&pool, "?limit=1000").await?.1)
        .iter()
        .filter_map(|i| i["id"].as_i64())
        .collect();
    drop(agent);
    drop(one);
    pool.restart_on_same_port(true, &[]).await?;
    pool.wait_status("quiet", "connected", LIMIT).await?;
    // The restart's own events come after them, once the writer commits
    // (it gathers 50 ms of entries per transaction).
    let newest = ids.iter().max().copied().unwrap_or(0);
    let after = wait_items(&pool, &format!("?after={newest}"), 1).await?;
    assert!(after.iter().all(|i| i["id"].as_i64() > Some(newest)), "{after:?}");
    let all_after = items(&activity(&pool, "?limit=1000").await?.1);
    let kept: Vec<i64> = all_after.iter().filter_map(|i| i["id"].as_i64()).collect();
    for id in &ids {
        assert!(kept.contains(id), "entry {id} lost to kill -9: {all_after:?}");
    }
    assert_eq!(items(&activity(&pool, "?kind=tool").await?.1).len(), before.len());

    // A crash: the drop, then the reconnect on demand.
    let agent = pool.agent("/mcp").await?;
    let _ = agent.call("quiet__crash", json!({"message": "gone"})).await;
    pool.wait_status("quiet", "failed", LIMIT).await?;
    agent.call("quiet__echo", json!({"text": "again"})).await?;
    // The crash's events, once committed: what came after the restart's.
    let mark = all_after.iter().filter_map(|i| i["id"].as_i64()).max().unwrap_or(0);
    let deadline = tokio::time::Instant::now() + LIMIT;
    let events = loop {
        let found = items(
            &activity(&pool, &format!("?server=quiet&kind=server&after={mark}"))
                .await?
                .1,
        );
        let has = |e: &str, o: &str| found.iter().any(|i| i["event"] == e && i["outcome"] == o);
        if has("status", "failed") && has("connect", "demand") {
            break found;
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "no crash events after {mark}: {found:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let said: Vec<(&str, &str)> = events
        .iter()
        .map(|i| (i["event"].as_str().unwrap_or(""), i["outcome"].as_str().unwrap_or("")))
        .collect();
    assert!(said.contains(&("status", "failed")), "{said:?}");
    assert!(said.contains(&("connect", "demand")), "{said:?}");
    let failed = events
        .iter()
        .find(|i| i["outcome"] == "failed")
        .cloned()
        .unwrap_or_default();
    assert!(
        failed["error"].as_str().is_some_and(|e| e.contains("tools kept")),
        "{failed}"
    );

    // The quiet server's argument is nowhere; the secret nowhere at all.
    let (raw_after, _) = activity(&pool, "?limit=1000").await?;
    let bytes = db_bytes(&pool);
    for (what, text) in [
        ("/api/activity", raw.as_bytes()),
        ("/api/activity after", raw_after.as_bytes()),
        ("the database", &bytes[..]),
        ("mcpool activity", printed.as_bytes()),
    ] {
        assert!(
            !String::from_utf8_lossy(text).contains(&argument),
            "{what} holds the quiet server's argument"
        );
        assert_clean(what, text, &[key.as_str()]);
    }
    assert!(
        String::from_utf8_lossy(&bytes).contains(&logged),
        "logArguments keeps the argument"
    );
    Ok(())
}

#[tokio::test]
async fn a_corrupt_activity_file_is_reported_once_and_replaced() -> anyhow::Result<()> {
    let dir = TempDir::new("activity-corrupt");
    let logs = TempDir::new("activity-corrupt-logs");
    let file = dir
        .path()
        .join("data/mcpool/activity")
        .join(format!("{}.db", profile_for(dir.path())));
    std::fs::create_dir_all(file.parent().ok_or_else(|| anyhow::anyhow!("no parent"))?)?;
    std::fs::write(
        &file,
        b"this is not a database, just text that was once one".repeat(200),
    )?;
    let config = json!({"mcpServers": {"s": faulty_stdio(&logs.path().join("s.log"), &[])}});
    let pool = Mcpool::start_in(dir, config, &[]).await?;
    pool.wait_status("s", "connected", LIMIT).await?;
    let agent = pool.agent("/mcp").await?;
    agent.call("s__echo", json!({"text": "hello"})).await?;
    let found = wait_items(&pool, "?kind=tool", 1).await?;
    assert_eq!(found[0]["tool"], "echo");
    let (_, page) = activity(&pool, "").await?;
    let problem = page["problem"].as_str().unwrap_or_default();
    assert!(problem.contains("damaged") && problem.contains("replaced"), "{page}");
    let logs_text = pool.logs();
    assert_eq!(logs_text.matches("was damaged").count(), 1, "told once: {logs_text}");
    let aside = std::fs::read_dir(file.parent().ok_or_else(|| anyhow::anyhow!("no parent"))?)?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".corrupt-"))
        .count();
    assert_eq!(aside, 1, "the damaged file is kept aside");
    assert_eq!(pool.server("s").await?["status"], "connected", "the pool never stopped");
    Ok(())
}
