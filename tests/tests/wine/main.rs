//! The Windows programs under Wine, driven from Linux: `mcpool.exe serve`
//! with a Windows stdio upstream (`mcpool-faulty.exe`) and a
//! `${keyring:…}` env value from the Windows Credential Manager, listed and
//! called by a Linux rmcp agent; a crash and its reconnect; a `.cmd` shim
//! found through `PATHEXT` whose argument `"&calc` arrives literally;
//! disconnect, shutdown and `kill -9` leaving no process (a grandchild that
//! ignores its stdin closing included: the Job Object); `mcpool.exe stdio`
//! as a bridge; `add`/`remove`/`list`; `secret set/list/rm`; `connect
//! --write`; code mode's engine (a script's calls, a runaway loop and a
//! memory bomb ended alone).
//!
//! `scripts/windows.sh test` runs these with `MCPOOL_WINE_BIN_DIR` (the
//! programs of dist/windows) and `MCPOOL_WINEPREFIX` (its private prefix)
//! set; CI runs that script. A plain `cargo test` leaves this file out
//! (`test = false` in tests/Cargo.toml); named without those variables, it
//! fails saying how to run it.

mod harness;

use std::path::PathBuf;

use anyhow::{bail, Context};
use harness::*;
use mcpool_tests::*;
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::{json, Value};

/// The Windows programs and the prefix, when `scripts/windows.sh test` runs us.
fn wine() -> Option<(PathBuf, PathBuf)> {
    let bins = std::env::var_os("MCPOOL_WINE_BIN_DIR")?;
    let prefix = std::env::var_os("MCPOOL_WINEPREFIX")?;
    Some((PathBuf::from(bins), PathBuf::from(prefix)))
}

macro_rules! wine_or_fail {
    () => {
        match wine() {
            Some(w) => w,
            None => bail!(
                "MCPOOL_WINE_BIN_DIR and MCPOOL_WINEPREFIX are not set: `bash scripts/windows.sh test` runs these under Wine"
            ),
        }
    };
}

#[tokio::test]
async fn serve_lists_and_calls_a_windows_upstream_with_a_keyring_value_and_reconnects() -> anyhow::Result<()> {
    let (bins, prefix) = wine_or_fail!();
    let dir = TempDir::new("wine-serve");
    let t = tag("serve");
    let set = cli(
        &bins,
        &prefix,
        dir.path(),
        &["secret", "set", "f-token"],
        Some("s3cret-value\n"),
    )
    .await?;
    assert!(set.ok, "secret set: {set:?}");
    let config = json!({"mcpServers": {"f": faulty(&bins, &t, json!({"API_TOKEN": "${keyring:f-token}"}))}});
    let mut pool = WinePool::start(&bins, &prefix, dir.path(), &config).await?;
    pool.wait_status("f", "connected").await?;
    let agent = pool.agent().await?;
    let names = agent.tool_names().await?;
    assert!(names.contains(&"f__getenv".to_string()), "{names:?}");
    let r = agent.call("f__getenv", json!({"name": "API_TOKEN"})).await?;
    assert_eq!(text(&r), "s3cret-value", "the keyring value reached the Windows server");
    assert!(!pool.logs().contains("s3cret-value"), "the secret reached the log");
    // A crash keeps the tools; the next call reconnects.
    let _ = agent.call("f__crash", json!({"message": "gone"})).await;
    let names = agent.tool_names().await?;
    assert!(names.contains(&"f__echo".to_string()), "tools kept: {names:?}");
    let r = agent.call("f__echo", json!({"text": "back"})).await?;
    assert_eq!(text(&r), "back");
    pool.wait_status("f", "connected").await?;
    drop(agent);
    pool.interrupt().await?;
    none_left(&t).await
}

#[tokio::test]
async fn code_mode_runs_a_script_and_ends_a_runaway_one_alone() -> anyhow::Result<()> {
    let (bins, prefix) = wine_or_fail!();
    let dir = TempDir::new("wine-script");
    let t = tag("script");
    let config = json!({"mcpServers": {"f": faulty(&bins, &t, json!({}))}});
    let mut pool = WinePool::start(&bins, &prefix, dir.path(), &config).await?;
    pool.wait_status("f", "connected").await?;
    let agent = pool.agent().await?;
    let run = |code: &'static str, timeout_ms: u64| {
        agent.call("mcpool__run_script", json!({"code": code, "timeoutMs": timeout_ms}))
    };
    let r = run(
        "const [a, b] = await Promise.all([tools.f__add({a: 1, b: 2}), tools.f__echo({text: 'x'})]);\nreturn a + b;",
        30_000,
    )
    .await?;
    let structured = r.structured_content.clone().unwrap_or_default();
    assert_eq!(structured["value"], "3x", "{structured}");
    let r = run("while (true) {}", 500).await?;
    let structured = r.structured_content.clone().unwrap_or_default();
    assert_eq!(structured["error"]["code"], "TIMEOUT", "{structured}");
    let r = run("const a = []; for (;;) a.push('x'.repeat(4096) + a.length);", 30_000).await?;
    let structured = r.structured_content.clone().unwrap_or_default();
    assert_eq!(structured["error"]["code"], "MEMORY", "{structured}");
    let r = agent.call("f__echo", json!({"text": "still here"})).await?;
    assert_eq!(text(&r), "still here");
    drop(agent);
    pool.interrupt().await?;
    none_left(&t).await
}

#[tokio::test]
async fn a_cmd_shim_is_found_by_pathext_and_a_batch_argument_arrives_literally() -> anyhow::Result<()> {
    let (bins, prefix) = wine_or_fail!();
    let dir = TempDir::new("wine-shim");
    let t = tag("shim");
    // What `npx` is on Windows: a batch file that runs the real program.
    let shims = dir.path().join("shims");
    std::fs::create_dir_all(&shims)?;
    let body = format!("@\"{}\" %*\r\n", win(&bins.join("mcpool-faulty.exe")));
    std::fs::write(shims.join("faultyshim.cmd"), body)?;
    let tricky = "\"&calc";
    let config = json!({"mcpServers": {"s": {
        "command": "faultyshim",
        "args": ["stdio", "--name", t, "--stderr-at-start", tricky],
        "env": {"PATH": format!("{};C:\\windows\\system32;C:\\windows", win(&shims))},
    }}});
    let mut pool = WinePool::start(&bins, &prefix, dir.path(), &config).await?;
    pool.wait_status("s", "connected").await?;
    let agent = pool.agent().await?;
    let r = agent.call("s__argv", json!({})).await?;
    let argv: Vec<String> = serde_json::from_str(&text(&r))?;
    assert_eq!(argv, ["stdio", "--name", t.as_str(), "--stderr-at-start", tricky]);
    drop(agent);
    pool.interrupt().await?;
    none_left(&t).await
}

#[tokio::test]
async fn a_batch_argument_that_cannot_pass_is_refused_with_a_sentence() -> anyhow::Result<()> {
    let (bins, prefix) = wine_or_fail!();
    let dir = TempDir::new("wine-refuse");
    let shims = dir.path().join("shims");
    std::fs::create_dir_all(&shims)?;
    std::fs::write(shims.join("faultyshim.cmd"), "@echo off\r\n")?;
    let config = json!({"mcpServers": {"s": {
        "command": "faultyshim",
        "args": ["stdio", "line\nbreak"],
        "env": {"PATH": win(&shims)},
    }}});
    let mut pool = WinePool::start(&bins, &prefix, dir.path(), &config).await?;
    pool.wait_status("s", "failed").await?;
    let servers: Vec<Value> = serde_json::from_value(get_json_with(&pool.url("/api/servers"), &pool.token).await?)?;
    let error = servers[0]["error"].as_str().unwrap_or_default().to_string();
    assert!(error.contains("batch file arguments are invalid"), "{error}");
    pool.interrupt().await?;
    Ok(())
}

#[tokio::test]
async fn disconnect_and_shutdown_leave_no_process() -> anyhow::Result<()> {
    let (bins, prefix) = wine_or_fail!();
    let dir = TempDir::new("wine-stop");
    let t = tag("stop");
    let config = json!({"mcpServers": {"f": faulty(&bins, &t, json!({}))}});
    let mut pool = WinePool::start(&bins, &prefix, dir.path(), &config).await?;
    pool.wait_status("f", "connected").await?;
    let agent = pool.agent().await?;
    // A grandchild that ignores its stdin closing.
    let r = agent.call("f__spawn", json!({})).await?;
    assert!(text(&r).parse::<u32>().is_ok(), "{}", text(&r));
    let linger = format!("linger stdio --name {t}");
    wait_for("the grandchild", START, || !processes_with(&linger).is_empty()).await?;
    assert_eq!(pool.post("/api/servers/f/disconnect").await?, 200);
    none_left(&t).await?;
    // Connected again (a disconnect holds until Reconnect), with a
    // grandchild again; then the pool stops.
    assert_eq!(pool.post("/api/servers/f/reconnect").await?, 200);
    pool.wait_status("f", "connected").await?;
    let r = agent.call("f__spawn", json!({})).await?;
    assert!(text(&r).parse::<u32>().is_ok(), "{}", text(&r));
    wait_for("the grandchild", START, || !processes_with(&linger).is_empty()).await?;
    drop(agent);
    pool.interrupt().await?;
    none_left(&t).await
}

#[tokio::test]
async fn kill_9_of_mcpool_leaves_no_grandchild() -> anyhow::Result<()> {
    let (bins, prefix) = wine_or_fail!();
    let dir = TempDir::new("wine-kill");
    let t = tag("kill");
    let config = json!({"mcpServers": {"f": faulty(&bins, &t, json!({}))}});
    let mut pool = WinePool::start(&bins, &prefix, dir.path(), &config).await?;
    pool.wait_status("f", "connected").await?;
    let agent = pool.agent().await?;
    let _ = agent.call("f__spawn", json!({})).await?;
    let linger = format!("linger stdio --name {t}");
    wait_for("the grandchild", START, || !processes_with(&linger).is_empty()).await?;
    assert!(!processes_with(&t).is_empty());
    pool.child.kill().await?;
    none_left(&t).await
}

#[tokio::test]
async fn mcpool_exe_stdio_bridges_a_linux_agent() -> anyhow::Result<()> {
    let (bins, prefix) = wine_or_fail!();
    let dir = TempDir::new("wine-bridge");
    let t = tag("bridge");
    let config = json!({"mcpServers": {"f": faulty(&bins, &t, json!({}))}});
    let mut pool = WinePool::start(&bins, &prefix, dir.path(), &config).await?;
    pool.wait_status("f", "connected").await?;
    let mut bridge = wine_cmd(&bins, &prefix, "mcpool", dir.path());
    bridge
        .arg("stdio")
        .env("MCPOOL_LISTEN", format!("127.0.0.1:{}", pool.port))
        .env("MCPOOL_TOKEN", &pool.token);
    let client = ().serve(TokioChildProcess::new(bridge)?).await?;
    let names: Vec<String> = client
        .peer()
        .list_all_tools()
        .await?
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(names.contains(&"f__echo".to_string()), "{names:?}");
    let mut params = rmcp::model::CallToolRequestParams::new("f__echo".to_string());
    if let Value::Object(args) = json!({"text": "through the bridge"}) {
        params = params.with_arguments(args);
    }
    let r = client.peer().call_tool(params).await?;
    assert_eq!(text(&r), "through the bridge");
    client.cancel().await?;
    pool.interrupt().await?;
    none_left(&t).await
}

#[tokio::test]
async fn add_remove_list_and_secrets_on_the_command_line() -> anyhow::Result<()> {
    let (bins, prefix) = wine_or_fail!();
    let dir = TempDir::new("wine-cli");
    std::fs::write(dir.path().join("config.json"), "{\"mcpServers\": {}}\n")?;
    let faulty_exe = win(&bins.join("mcpool-faulty.exe"));
    let o = cli(
        &bins,
        &prefix,
        dir.path(),
        &["add", "files", "--", &faulty_exe, "stdio"],
        None,
    )
    .await?;
    assert!(o.ok, "add: {o:?}");
    let written: Value = serde_json::from_slice(&std::fs::read(dir.path().join("config.json"))?)?;
    assert_eq!(written["mcpServers"]["files"]["command"], faulty_exe.as_str());
    let o = cli(&bins, &prefix, dir.path(), &["list"], None).await?;
    assert!(o.ok && o.stdout.contains("files"), "list: {o:?}");
    let o = cli(&bins, &prefix, dir.path(), &["remove", "files"], None).await?;
    assert!(o.ok, "remove: {o:?}");
    let o = cli(&bins, &prefix, dir.path(), &["list"], None).await?;
    assert!(o.ok && !o.stdout.contains("files"), "list after remove: {o:?}");

    let o = cli(
        &bins,
        &prefix,
        dir.path(),
        &["secret", "set", "gh-token"],
        Some("ghp-wine-value\n"),
    )
    .await?;
    assert!(o.ok, "secret set: {o:?}");
    let o = cli(&bins, &prefix, dir.path(), &["secret", "list"], None).await?;
    assert!(o.ok && o.stdout.contains("gh-token"), "secret list: {o:?}");
    assert!(!o.stdout.contains("ghp-wine-value") && !o.stderr.contains("ghp-wine-value"));
    let o = cli(&bins, &prefix, dir.path(), &["secret", "rm", "gh-token"], None).await?;
    assert!(o.ok, "secret rm: {o:?}");
    let o = cli(&bins, &prefix, dir.path(), &["secret", "list"], None).await?;
    assert!(o.ok && !o.stdout.contains("gh-token"), "secret list after rm: {o:?}");
    Ok(())
}

/// `connect --write` edits a client's file under the Wine user's profile.
/// Which file each client has on Windows is the paths room's; this asserts
/// that the file it names is inside the prefix's `C:\users` and holds
/// mcpool's entry.
#[tokio::test]
async fn connect_write_edits_a_client_file_in_the_wine_profile() -> anyhow::Result<()> {
    let (bins, prefix) = wine_or_fail!();
    let dir = TempDir::new("wine-connect");
    // The prefix outlives a run: the file an earlier run wrote goes first,
    // so that this run's write is the one checked. `connect` alone names it.
    let o = cli(&bins, &prefix, dir.path(), &["connect", "claude-desktop"], None).await?;
    // "Add to PATH (or run `mcpool connect claude-desktop --write`):"
    let earlier = o
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("Add to "))
        .and_then(|l| l.split(" (or run").next())
        .with_context(|| format!("connect names no file: {o:?}"))?;
    let _ = std::fs::remove_file(in_prefix(&prefix, earlier.trim()));
    let o = cli(
        &bins,
        &prefix,
        dir.path(),
        &["connect", "claude-desktop", "--write", "--yes"],
        None,
    )
    .await?;
    assert!(o.ok, "connect --write: {o:?}");
    // "Wrote PATH." or "Wrote PATH (the old file is in BACKUP)."
    let line = o
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("Wrote "))
        .with_context(|| format!("no \"Wrote\" line: {o:?}"))?;
    let named = line
        .split(" (the old file")
        .next()
        .unwrap_or(line)
        .trim_end_matches('.');
    assert!(
        named.to_ascii_lowercase().starts_with("c:\\users\\"),
        "not in the Wine user's profile: {named}"
    );
    let unix = in_prefix(&prefix, named);
    let text = std::fs::read_to_string(&unix).with_context(|| format!("{named} ({})", unix.display()))?;
    assert!(text.contains("mcpool"), "{named}: {text}");
    Ok(())
}

/// The tray app, `mcpool-app.exe`, under Wine on a virtual display: the same
/// pool and endpoint as `mcpool.exe serve` (a Linux agent lists and calls
/// its Windows upstream through it); the dashboard, which has no WebView2
/// runtime to open in here, opens in the browser instead (`BROWSER`, a
/// batch file that writes down the link it is given), signed in; and a
/// `kill -9` of the app leaves no process of its servers (the Job Object).
#[tokio::test]
async fn the_tray_app_serves_the_pool_and_without_webview2_opens_the_dashboard_in_the_browser() -> anyhow::Result<()> {
    let (bins, prefix) = wine_or_fail!();
    if std::env::var_os("DISPLAY").is_none() {
        bail!("no DISPLAY: the tray app needs one (scripts/windows.sh test runs these on a virtual display)");
    }
    let dir = TempDir::new("wine-app");
    let t = tag("app");
    let got = dir.path().join("browser-got.txt");
    let browser = dir.path().join("browser.cmd");
    std::fs::write(&browser, format!("@echo %~1> \"{}\"\r\n", win(&got)))?;
    let config = json!({"mcpServers": {"f": faulty(&bins, &t, json!({}))}});
    let mut app = WinePool::start_program(
        &bins,
        &prefix,
        dir.path(),
        &config,
        "mcpool-app",
        &["--dashboard"],
        &[("BROWSER", win(&browser))],
    )
    .await?;
    app.wait_status("f", "connected").await?;
    let agent = app.agent().await?;
    let names = agent.tool_names().await?;
    assert!(names.contains(&"f__echo".to_string()), "{names:?}");
    let r = agent.call("f__echo", json!({"text": "through the tray app"})).await?;
    assert_eq!(text(&r), "through the tray app");

    wait_for("the dashboard link in the browser", START, || {
        std::fs::read_to_string(&got).is_ok_and(|s| s.contains("/ui/login?code="))
    })
    .await
    .with_context(|| format!("app log:\n{}", app.logs()))?;
    let link = std::fs::read_to_string(&got)?.trim().to_string();
    assert!(
        link.starts_with(&app.url("/ui/login?code=")),
        "the link is not to this app's endpoint: {link}"
    );
    assert!(
        app.logs().contains("opening it in the browser"),
        "the log does not say why: {}",
        app.logs()
    );
    // The link signs the browser in: a redirect to the dashboard with its
    // session cookie (a link nobody issued gets the sign-in page, 401).
    let r = get_unfollowed(&link).await?;
    assert_eq!(r.status().as_u16(), 303, "{link}");
    assert!(
        r.headers().contains_key("set-cookie"),
        "no session cookie: {:?}",
        r.headers()
    );

    let _ = agent.call("f__spawn", json!({})).await?;
    let linger = format!("linger stdio --name {t}");
    wait_for("the grandchild", START, || !processes_with(&linger).is_empty()).await?;
    drop(agent);
    app.child.kill().await?;
    none_left(&t).await
}
