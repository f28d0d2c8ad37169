//! Rule 11 through the real logind path: a private D-Bus daemon stands in
//! for the system bus (`DBUS_SYSTEM_BUS_ADDRESS`), and a fake owning
//! `org.freedesktop.login1` emits `PrepareForSleep`.

use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use mcpool_tests::*;
use serde_json::json;
use tokio::process::{Child, Command};

use super::{error_of, tools_kept};

const LOGIND_PATH: &str = "/org/freedesktop/login1";

/// logind's manager object, as far as mcpool listens to it.
struct Manager;

#[zbus::interface(name = "org.freedesktop.login1.Manager")]
impl Manager {
    #[zbus(signal)]
    pub(super) async fn prepare_for_sleep(
        emitter: &zbus::object_server::SignalEmitter<'_>,
        start: bool,
    ) -> zbus::Result<()>;
}

/// A private bus with a fake logind on it; the daemon dies with it.
pub(super) struct FakeLogind {
    _daemon: Child,
    pub(super) address: String,
    connection: zbus::Connection,
}

impl FakeLogind {
    pub(super) async fn start(dir: &std::path::Path) -> anyhow::Result<Self> {
        let socket = dir.join("system_bus");
        let mut daemon = Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--nopidfile", "--print-address"])
            .arg(format!("--address=unix:path={}", socket.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .context("cannot run dbus-daemon")?;
        let address = mcpool_tests::first_line(&mut daemon, Duration::from_secs(10))
            .await
            .context("dbus-daemon printed no address")?;
        let connection = zbus::connection::Builder::address(address.as_str())?
            .name("org.freedesktop.login1")?
            .serve_at(LOGIND_PATH, Manager)?
            .build()
            .await?;
        Ok(FakeLogind {
            _daemon: daemon,
            address,
            connection,
        })
    }

    pub(super) async fn prepare_for_sleep(&self, start: bool) -> anyhow::Result<()> {
        let iface = self
            .connection
            .object_server()
            .interface::<_, Manager>(LOGIND_PATH)
            .await?;
        Manager::prepare_for_sleep(iface.signal_emitter(), start).await?;
        Ok(())
    }
}

/// Starts mcpool on the fake's bus, keepalive off, and waits until its
/// logind watcher has subscribed.
async fn mcpool_on(bus: &FakeLogind, config: serde_json::Value) -> anyhow::Result<Mcpool> {
    let pool = Mcpool::start_with(
        config,
        &[
            ("DBUS_SYSTEM_BUS_ADDRESS", bus.address.as_str()),
            ("MCPOOL_KEEPALIVE_SECS", "0"),
        ],
    )
    .await?;
    wait_log(&pool, "listening for logind's sleep signals", 1).await?;
    Ok(pool)
}

async fn wait_log(pool: &Mcpool, needle: &str, n: usize) -> anyhow::Result<()> {
    wait_for(&format!("{n} log lines {needle:?}"), Duration::from_secs(20), || {
        pool.logs().matches(needle).count() >= n
    })
    .await
    .with_context(|| pool.logs())
}

async fn initializes(url: &str) -> anyhow::Result<u64> {
    Ok(stats(url).await?["initialize"].as_u64().unwrap_or(0))
}

#[tokio::test]
async fn a_remote_server_that_fails_across_a_sleep_heals_by_itself_once_it_answers() -> anyhow::Result<()> {
    let dir = TempDir::new("logind-remote");
    let bus = FakeLogind::start(dir.path()).await?;
    let (_faulty, url) = faulty_http(&dir.path().join("r.log"), &[]).await?;
    let pool = mcpool_on(&bus, json!({"mcpServers": {"r": {"url": url}}})).await?;
    pool.wait_status("r", "connected", Duration::from_secs(20)).await?;
    assert_eq!(initializes(&url).await?, 1);

    bus.prepare_for_sleep(true).await?;
    wait_log(&pool, "logind: WillSleep", 1).await?;
    // While asleep the network goes: the old session is gone, and the
    // server answers 500 to everything.
    control(&url, json!({"mode": "500", "expire_sessions": true})).await?;
    assert_eq!(pool.server("r").await?["status"], "connected", "nothing noticed yet");

    bus.prepare_for_sleep(false).await?;
    wait_log(&pool, "logind: DidWake", 1).await?;
    let s = pool.wait_status("r", "failed", Duration::from_secs(20)).await?;
    assert!(tools_kept(&s), "{s}");
    assert!(!error_of(&s).is_empty(), "{s}");

    // The healer's reconnect meets the 500 too and backs off...
    wait_log(&pool, "connection attempt failed", 1).await?;
    let s = pool.server("r").await?;
    assert_eq!(s["status"], "failed", "{s}");
    assert!(tools_kept(&s), "{s}");
    assert!(error_of(&s).contains("500"), "{s}");
    // ...and keeps retrying within the wake window: once the server answers
    // again it reconnects without any agent call or click.
    control(&url, json!({"mode": "ok"})).await?;
    let s = pool.wait_status("r", "connected", Duration::from_secs(60)).await?;
    let tools = s["tools"].as_array().cloned().unwrap_or_default();
    assert!(!tools.is_empty() && tools.iter().all(|t| t["state"] == "live"), "{s}");
    assert!(s["error"].is_null(), "{s}");
    assert!(initializes(&url).await? >= 2, "{}", stats(&url).await?);
    assert!(
        pool.logs().contains("healing 1 servers after DidWake"),
        "{}",
        pool.logs()
    );
    Ok(())
}

#[tokio::test]
async fn a_local_server_killed_during_sleep_is_failed_with_its_tools_and_the_reason_on_wake() -> anyhow::Result<()> {
    let dir = TempDir::new("logind-local");
    let bus = FakeLogind::start(dir.path()).await?;
    let log = dir.path().join("spawns.log");
    let pool = mcpool_on(&bus, json!({"mcpServers": {"f": faulty_stdio(&log, &[])}})).await?;
    pool.wait_status("f", "connected", Duration::from_secs(20)).await?;
    let pids = spawned_pids(&log);
    assert_eq!(pids.len(), 1, "{pids:?}");

    bus.prepare_for_sleep(true).await?;
    wait_log(&pool, "logind: WillSleep", 1).await?;
    // SAFETY: kills the server process this test's mcpool spawned.
    assert_eq!(unsafe { libc::kill(pids[0], libc::SIGKILL) }, 0);
    wait_for("the killed server to be reaped", Duration::from_secs(10), || {
        !alive(pids[0])
    })
    .await?;

    bus.prepare_for_sleep(false).await?;
    wait_log(&pool, "logind: DidWake", 1).await?;
    let s = pool.wait_status("f", "failed", Duration::from_secs(20)).await?;
    let error = error_of(&s);
    assert!(error.contains("killed by signal 9"), "{error}");
    assert!(error.ends_with("(tools kept; reconnects when next used)"), "{error}");
    assert!(tools_kept(&s), "{s}");
    assert_eq!(
        count_lines(&log, "start"),
        1,
        "a local server is not respawned by a wake"
    );

    // The next call reconnects it, once.
    let agent = pool.agent("/mcp").await?;
    let r = agent.call("f__echo", json!({"text": "awake"})).await?;
    assert_eq!(text(&r), "awake");
    assert_eq!(count_lines(&log, "start"), 2);
    Ok(())
}

async fn oauth_stats(url: &str) -> anyhow::Result<serde_json::Value> {
    let url = format!("{}/oauth/stats", url.trim_end_matches("/mcp"));
    Ok(reqwest::get(url).await?.error_for_status()?.json().await?)
}

#[tokio::test]
async fn a_signed_in_server_whose_token_expired_during_sleep_comes_back_without_a_browser() -> anyhow::Result<()> {
    let dir = TempDir::new("logind-signin");
    let bus = FakeLogind::start(dir.path()).await?;
    let (_faulty, url) = faulty_http(&dir.path().join("r.log"), &["--oauth"]).await?;
    let pool = mcpool_on(&bus, json!({"mcpServers": {"r": {"url": url}}})).await?;
    pool.wait_status("r", "needs_auth", Duration::from_secs(20)).await?;
    // Tokens that live 3 s; the laptop sleeps longer than that.
    let base = url.trim_end_matches("/mcp");
    reqwest::Client::new()
        .post(format!("{base}/oauth/control"))
        .json(&json!({"lifetime_secs": 3}))
        .send()
        .await?
        .error_for_status()?;
    let browser = dir.path().join("browser.sh");
    std::fs::write(&browser, "#!/bin/sh\nexec curl -sSL -o /dev/null \"$1\"\n")?;
    std::fs::set_permissions(&browser, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    let listen = format!("127.0.0.1:{}", pool.port);
    let login = mcpool_cli(
        pool.dir.path(),
        &["login", "r"],
        None,
        &[
            ("BROWSER", browser.to_str().context("path")?),
            ("MCPOOL_LISTEN", &listen),
            ("MCPOOL_TOKEN", &pool.token),
        ],
    )
    .await?;
    assert!(login.status.success(), "{}", String::from_utf8_lossy(&login.stderr));
    pool.wait_status("r", "connected", Duration::from_secs(20)).await?;
    let before = oauth_stats(&url).await?;

    bus.prepare_for_sleep(true).await?;
    wait_log(&pool, "logind: WillSleep", 1).await?;
    // Asleep past the token's end; the server forgot the session too.
    tokio::time::sleep(Duration::from_secs(5)).await;
    control(&url, json!({"expire_sessions": true})).await?;
    bus.prepare_for_sleep(false).await?;
    wait_log(&pool, "logind: DidWake", 1).await?;

    // Back without anyone signing in: the refresh token was still good.
    wait_for("a refresh after the wake", Duration::from_secs(20), || {
        pool.logs().contains("sign-in refreshed")
    })
    .await
    .with_context(|| pool.logs())?;
    let agent = pool.agent("/mcp").await?;
    let r = agent.call("r__echo", json!({"text": "morning"})).await?;
    assert_eq!(text(&r), "morning");
    let s = pool.server("r").await?;
    assert_eq!(s["status"], "connected", "{s}");
    let after = oauth_stats(&url).await?;
    assert_eq!(
        after["code_exchanges"], before["code_exchanges"],
        "no new sign-in: {after}"
    );
    assert_eq!(after["authorizations"], before["authorizations"], "no browser: {after}");
    assert!(
        after["refreshes"].as_u64() > before["refreshes"].as_u64(),
        "the token was refreshed: {before} -> {after}"
    );
    // The refresh came before the reconnect: no request went out with the
    // expired token.
    assert_eq!(
        after["rejected_tokens"], before["rejected_tokens"],
        "{before} -> {after}"
    );
    Ok(())
}
