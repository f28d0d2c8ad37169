//! behaviour.md rule 8 against the real binary: the tool cache on disk is offered
//! at start while a server is still starting, is keyed by the connection's
//! identity, survives a transient start failure, is dropped by a permanent
//! one, ignores bad files, and goes with the server.
//!
//! The servers here are a shell wrapper around the fault server whose
//! behaviour comes from a mode file beside it (`ok`, `fail`, `sleep N`), so
//! a run can be slow or failing while its identity (command, args, env,
//! cwd) stays exactly the same.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mcpool_tests::*;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(20);
/// The config is polled every 2 s; a change shows within two polls.
const RELOAD: Duration = Duration::from_secs(10);

/// A stdio server whose start is steered by its mode file.
struct Wrapped {
    script: PathBuf,
    mode: PathBuf,
    log: PathBuf,
}

impl Wrapped {
    /// Writes `<dir>/<name>.sh`, its mode file (`ok`) and its spawn log path.
    fn new(dir: &Path, name: &str) -> anyhow::Result<Self> {
        let script = dir.join(format!("{name}.sh"));
        let mode = dir.join(format!("{name}.mode"));
        let log = dir.join(format!("{name}.log"));
        let body = format!(
            r#"#!/bin/sh
mode=$(cat '{mode}')
case "$mode" in
  fail) echo "refusing to start: the mode file says fail" >&2; exit 1 ;;
  sleep*) sleep "${{mode#sleep }}" ;;
esac
exec '{faulty}' stdio --spawn-log '{log}'
"#,
            mode = mode.display(),
            faulty = bin("mcpool-faulty").display(),
            log = log.display(),
        );
        write_script(&script, body)?;
        let w = Wrapped { script, mode, log };
        w.set("ok")?;
        Ok(w)
    }

    fn set(&self, mode: &str) -> anyhow::Result<()> {
        Ok(std::fs::write(&self.mode, mode)?)
    }

    /// The config entry; `extra` adds fields such as `env` and `cwd`.
    fn entry(&self, extra: Value) -> Value {
        let mut entry = json!({"command": self.script, "args": []});
        if let (Some(e), Value::Object(more)) = (entry.as_object_mut(), extra) {
            e.extend(more);
        }
        entry
    }
}

fn write_config(pool: &Mcpool, servers: Value) -> anyhow::Result<()> {
    Ok(std::fs::write(
        pool.config_path(),
        serde_json::to_vec_pretty(&json!({"mcpServers": servers}))?,
    )?)
}

/// Every entry of `<cache>/mcp/tools`, hidden ones included, sorted.
fn cache_files(pool: &Mcpool) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(pool.cache_dir().join("mcp").join("tools"))
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.sort();
    files
}

fn is_cache_name(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    name.strip_suffix(".json")
        .is_some_and(|h| h.len() == 64 && h.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')))
}

/// Waits until the cache dir holds exactly `n` files, all named
/// `<sha256>.json` (no temp file left), and checks they are mode 0600 and
/// hold tools. The file is written just after the server connects.
async fn wait_cache_files(pool: &Mcpool, n: usize) -> anyhow::Result<Vec<PathBuf>> {
    let settled = || {
        let files = cache_files(pool);
        files.len() == n && files.iter().all(|f| is_cache_name(f))
    };
    if let Err(e) = wait_for(&format!("{n} cache files"), LIMIT, settled).await {
        anyhow::bail!("{e}: {:?}", cache_files(pool));
    }
    let files = cache_files(pool);
    for f in &files {
        let mode = std::fs::metadata(f)?.permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", f.display());
        let body: Value = serde_json::from_slice(&std::fs::read(f)?)?;
        assert!(
            body["tools"].as_array().is_some_and(|t| !t.is_empty()),
            "{}: {body}",
            f.display()
        );
    }
    Ok(files)
}

/// `(name, state)` of each tool `/api/servers` shows for `server`.
fn tool_states(server: &Value) -> Vec<(String, String)> {
    server["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| {
                    (
                        t["name"].as_str().unwrap_or_default().to_string(),
                        t["state"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The tool names of `server` and whether they all have `state`.
fn names_in_state(server: &Value, state: &str) -> Option<Vec<String>> {
    let tools = tool_states(server);
    tools
        .iter()
        .all(|(_, s)| s == state)
        .then(|| tools.into_iter().map(|(n, _)| n).collect())
}

/// The names of `server`'s tools once it is connected with them all live
/// (under load its listing can come a moment after its status).
async fn connected_live(pool: &Mcpool, server: &str) -> anyhow::Result<Vec<String>> {
    let snapshot = pool
        .wait_server(server, LIMIT, "connected with its tools live", |s| {
            s["status"] == "connected" && names_in_state(s, "live").is_some_and(|n| !n.is_empty())
        })
        .await?;
    Ok(names_in_state(&snapshot, "live").unwrap_or_default())
}

/// The agent's tool names that belong to `server`.
async fn agent_tools_of(pool: &Mcpool, server: &str) -> anyhow::Result<Vec<String>> {
    let agent = pool.agent("/mcp").await?;
    let prefix = format!("{server}__");
    let names = agent
        .tool_names()
        .await?
        .into_iter()
        .filter_map(|n| n.strip_prefix(&prefix).map(str::to_string))
        .collect();
    agent.service.cancel().await?;
    Ok(names)
}

#[tokio::test]
async fn cached_tools_are_offered_while_a_slow_server_starts_then_the_live_list_replaces_them() -> anyhow::Result<()> {
    let bin_dir = TempDir::new("cache-hit-bin");
    let slow = Wrapped::new(bin_dir.path(), "slow")?;
    let mut pool = Mcpool::start(json!({"mcpServers": {"slow": slow.entry(json!({}))}})).await?;

    // First run: connect, and the live list lands in exactly one file.
    let s = pool.wait_status("slow", "connected", LIMIT).await?;
    let live = names_in_state(&s, "live").unwrap_or_default();
    assert!(live.contains(&"echo".to_string()), "{s}");
    let files = wait_cache_files(&pool, 1).await?;
    assert!(
        !pool.data_dir().join("fingerprint.key").exists(),
        "the fingerprint key belongs in the keyring when one is reachable"
    );

    // Second run: the server now takes 8 s to start.
    slow.set("sleep 8")?;
    pool.restart().await?;
    let deadline = tokio::time::Instant::now() + LIMIT;
    let cached = loop {
        let s = pool.server("slow").await?;
        assert_eq!(
            s["status"], "pending",
            "no cached tools were offered before the server answered: {s}"
        );
        if !tool_states(&s).is_empty() {
            break s;
        }
        assert!(tokio::time::Instant::now() < deadline, "no cached tools: {s}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(names_in_state(&cached, "cached").as_ref(), Some(&live), "{cached}");
    // An agent's tools/list has them while the server is still pending.
    let mut listed = agent_tools_of(&pool, "slow").await?;
    listed.sort();
    let mut expected = live.clone();
    expected.sort();
    assert_eq!(listed, expected);
    let s = pool.server("slow").await?;
    assert_eq!(s["status"], "pending", "{s}");
    assert_eq!(names_in_state(&s, "cached").as_ref(), Some(&live), "{s}");
    assert_eq!(
        count_lines(&slow.log, "initialize"),
        1,
        "the second process answered already"
    );

    // Then the live list replaces them.
    let s = pool.wait_status("slow", "connected", Duration::from_secs(40)).await?;
    assert_eq!(names_in_state(&s, "live").as_ref(), Some(&live), "{s}");
    assert_eq!(count_lines(&slow.log, "start"), 2);
    assert_eq!(wait_cache_files(&pool, 1).await?, files, "same identity, same file");
    assert!(!pool.data_dir().join("fingerprint.key").exists());
    Ok(())
}

#[tokio::test]
async fn an_env_or_cwd_change_misses_the_cache_and_removal_deletes_the_file() -> anyhow::Result<()> {
    let bin_dir = TempDir::new("cache-identity-bin");
    let s = Wrapped::new(bin_dir.path(), "s")?;
    let (cwd_a, cwd_b) = (bin_dir.path().join("a"), bin_dir.path().join("b"));
    std::fs::create_dir_all(&cwd_a)?;
    std::fs::create_dir_all(&cwd_b)?;
    let entry = |tag: &str, cwd: &Path| s.entry(json!({"env": {"TAG": tag}, "cwd": cwd}));
    let mut pool = Mcpool::start(json!({"mcpServers": {"s": entry("one", &cwd_a)}})).await?;
    let live = connected_live(&pool, "s").await?;
    assert!(!live.is_empty());
    let first = wait_cache_files(&pool, 1).await?;

    // The same identity failing to start keeps the cached tools: the
    // control for the misses below.
    s.set("fail")?;
    pool.restart().await?;
    let f = pool.wait_status("s", "failed", LIMIT).await?;
    assert_eq!(names_in_state(&f, "kept").as_ref(), Some(&live), "{f}");

    // Another env value: another identity, so nothing cached is offered.
    write_config(&pool, json!({"s": entry("two", &cwd_a)}))?;
    pool.restart().await?;
    let f = pool.wait_status("s", "failed", LIMIT).await?;
    assert_eq!(tool_states(&f), vec![], "cached tools of another env value: {f}");
    assert!(agent_tools_of(&pool, "s").await?.is_empty());
    s.set("ok")?;
    let (code, body) = pool.post("/api/servers/s/reconnect").await?;
    assert_eq!(code, 200, "{body}");
    pool.wait_status("s", "connected", LIMIT).await?;
    let second = wait_cache_files(&pool, 2).await?;
    assert!(first.iter().all(|f| second.contains(f)), "{second:?}");

    // Another cwd: likewise.
    s.set("fail")?;
    write_config(&pool, json!({"s": entry("two", &cwd_b)}))?;
    pool.restart().await?;
    let f = pool.wait_status("s", "failed", LIMIT).await?;
    assert_eq!(tool_states(&f), vec![], "cached tools of another cwd: {f}");
    s.set("ok")?;
    let (code, body) = pool.post("/api/servers/s/reconnect").await?;
    assert_eq!(code, 200, "{body}");
    pool.wait_status("s", "connected", LIMIT).await?;
    let third = wait_cache_files(&pool, 3).await?;
    let current: Vec<PathBuf> = third.iter().filter(|f| !second.contains(f)).cloned().collect();
    assert_eq!(current.len(), 1, "{third:?}");

    // Removed from the config while running: its file goes.
    write_config(&pool, json!({}))?;
    wait_for("the removed server's cache file to go", RELOAD, || !current[0].exists()).await?;
    assert_eq!(
        cache_files(&pool),
        second,
        "only the removed server's current file goes"
    );
    assert!(pool.servers().await?.is_empty());
    Ok(())
}

#[tokio::test]
async fn a_header_change_misses_the_cache_of_a_remote_server() -> anyhow::Result<()> {
    let dir = TempDir::new("cache-header");
    let (_server, url) = faulty_http(&dir.path().join("http.log"), &[]).await?;
    let entry = |tag: &str| json!({"url": url, "headers": {"X-Tag": tag}});
    let mut pool = Mcpool::start(json!({"mcpServers": {"r": entry("one")}})).await?;
    let live = connected_live(&pool, "r").await?;
    assert!(!live.is_empty());
    let first = wait_cache_files(&pool, 1).await?;

    // HTTP 500 at start is transient: the same identity keeps its tools.
    control(&url, json!({"mode": "500"})).await?;
    pool.restart().await?;
    let f = pool.wait_status("r", "failed", LIMIT).await?;
    assert_eq!(names_in_state(&f, "kept").as_ref(), Some(&live), "{f}");

    // Another header value: nothing cached is offered.
    write_config(&pool, json!({"r": entry("two")}))?;
    pool.restart().await?;
    let f = pool.wait_status("r", "failed", LIMIT).await?;
    assert_eq!(tool_states(&f), vec![], "cached tools of another header value: {f}");
    control(&url, json!({"mode": "ok"})).await?;
    let (code, body) = pool.post("/api/servers/r/reconnect").await?;
    assert_eq!(code, 200, "{body}");
    pool.wait_status("r", "connected", LIMIT).await?;
    let both = wait_cache_files(&pool, 2).await?;
    assert!(both.contains(&first[0]), "{both:?}");
    Ok(())
}

/// Corrupts the one cache file with `bad`, restarts with a failing start,
/// and checks the file is ignored with one warning, then overwritten by
/// the next successful connect.
async fn bad_file_is_ignored_then_overwritten(
    pool: &mut Mcpool,
    s: &Wrapped,
    bad: &[u8],
    live: &[String],
) -> anyhow::Result<()> {
    let file = wait_cache_files(pool, 1).await?.remove(0);
    let good = std::fs::read(&file)?;
    pool.stop().await?;
    std::fs::write(&file, bad)?;
    s.set("fail")?;
    pool.restart().await?;
    let f = pool.wait_status("s", "failed", LIMIT).await?;
    assert_eq!(tool_states(&f), vec![], "a bad cache file was trusted: {f}");
    assert!(agent_tools_of(pool, "s").await?.is_empty());
    let logs = pool.logs();
    let warnings: Vec<&str> = logs
        .lines()
        .filter(|l| l.contains(&file.display().to_string()))
        .collect();
    assert_eq!(warnings.len(), 1, "{logs}");
    assert!(warnings[0].contains("WARN"), "{logs}");
    assert!(warnings[0].contains("ignoring it"), "{logs}");

    s.set("ok")?;
    let (code, body) = pool.post("/api/servers/s/reconnect").await?;
    assert_eq!(code, 200, "{body}");
    let c = pool.wait_status("s", "connected", LIMIT).await?;
    assert_eq!(names_in_state(&c, "live").as_deref(), Some(live), "{c}");
    wait_for("the bad file to be rewritten", LIMIT, || {
        std::fs::read(&file).is_ok_and(|b| b == good)
    })
    .await?;
    assert_eq!(wait_cache_files(pool, 1).await?, vec![file]);
    Ok(())
}

/// The wrapped server `s` (its script in a fresh dir `tag`, which comes
/// back first) as an instance's one server, connected with a live list:
/// the dir, the server, the instance and that list's names.
async fn wrapped_and_listed(tag: &str) -> anyhow::Result<(TempDir, Wrapped, Mcpool, Vec<String>)> {
    let bin_dir = TempDir::new(tag);
    let s = Wrapped::new(bin_dir.path(), "s")?;
    let pool = Mcpool::start(json!({"mcpServers": {"s": s.entry(json!({}))}})).await?;
    let live = connected_live(&pool, "s").await?;
    assert!(!live.is_empty());
    Ok((bin_dir, s, pool, live))
}

#[tokio::test]
async fn truncated_and_empty_cache_files_are_ignored_with_one_warning_and_overwritten() -> anyhow::Result<()> {
    let (_bin_dir, s, mut pool, live) = wrapped_and_listed("cache-corrupt-bin").await?;
    let file = wait_cache_files(&pool, 1).await?.remove(0);
    let good = std::fs::read(&file)?;

    let truncated = good[..good.len() / 2].to_vec();
    bad_file_is_ignored_then_overwritten(&mut pool, &s, &truncated, &live).await?;
    bad_file_is_ignored_then_overwritten(&mut pool, &s, b"", &live).await?;
    bad_file_is_ignored_then_overwritten(&mut pool, &s, b"{\"key\": 42, \"tools\": \"x\"}", &live).await?;
    Ok(())
}

#[tokio::test]
async fn a_transient_start_failure_keeps_cached_tools_and_a_permanent_one_drops_them() -> anyhow::Result<()> {
    let (_bin_dir, s, mut pool, live) = wrapped_and_listed("cache-failures-bin").await?;
    wait_cache_files(&pool, 1).await?;

    // Transient (the process exits before initialize): kept, as after a drop.
    s.set("fail")?;
    pool.restart().await?;
    let f = pool.wait_status("s", "failed", LIMIT).await?;
    assert_eq!(names_in_state(&f, "kept").as_ref(), Some(&live), "{f}");
    let error = f["error"].as_str().unwrap_or_default();
    assert!(error.contains("the mode file says fail"), "{error}");
    let mut listed = agent_tools_of(&pool, "s").await?;
    listed.sort();
    let mut expected = live.clone();
    expected.sort();
    assert_eq!(listed, expected, "kept tools are listed for agents");

    // Permanent (the command is gone; command, args, env and cwd, so the
    // identity, are unchanged): the cached tools are dropped.
    s.set("ok")?;
    std::fs::remove_file(&s.script)?;
    pool.restart().await?;
    let f = pool.wait_status("s", "failed", LIMIT).await?;
    let error = f["error"].as_str().unwrap_or_default();
    assert!(error.contains("cannot start"), "{error}");
    assert_eq!(
        tool_states(&f),
        vec![],
        "a permanent failure kept the cached tools: {f}"
    );
    assert!(agent_tools_of(&pool, "s").await?.is_empty());
    assert_eq!(count_lines(&s.log, "start"), 1);
    Ok(())
}
