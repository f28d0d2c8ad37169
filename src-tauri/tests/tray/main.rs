//! The real tray app on a real (virtual) desktop: run it under
//! `xvfb-run -a dbus-run-session --` (scripts/test-tray.sh does).
//!
//! The test owns the session bus's desktop side: a fake
//! `org.kde.StatusNotifierWatcher` (so libayatana-appindicator exports the
//! tray item and its dbusmenu) and a fake `org.freedesktop.Notifications`
//! that records every notification. It then reads the menu and clicks it as
//! a panel would, checks the pool through the app's own `/api/servers`,
//! screenshots the dashboard window, and stops the app with SIGTERM.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use zbus::zvariant::OwnedObjectPath;
use zbus::Connection;

mod desktop;

use desktop::{MenuNode, Note, Notifications, TrayMenu, Watcher};

const TOKEN: &str = "tray-test-token";
/// Servers that will all ask for sign-in at once.
const AUTH_SERVERS: [&str; 3] = ["auth-a", "auth-b", "auth-c"];
const LOCAL: &str = "local";

// ---------------------------------------------------------------- helpers

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn faulty_bin() -> PathBuf {
    std::env::var_os("MCPOOL_FAULTY")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/debug/mcpool-faulty"))
}

fn temp_dir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("mcpool-tray-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// The fault-injecting server over HTTP; returns it and its MCP URL.
async fn faulty_http(log: &Path) -> anyhow::Result<(Child, String)> {
    let mut child = Command::new(faulty_bin())
        .args(["http", "--listen", "127.0.0.1:0", "--spawn-log"])
        .arg(log)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("cannot start {}", faulty_bin().display()))?;
    let stdout = child.stdout.take().context("stdout")?;
    let line = tokio::time::timeout(Duration::from_secs(20), BufReader::new(stdout).lines().next_line())
        .await??
        .context("no LISTENING line")?;
    let url = line
        .strip_prefix("LISTENING ")
        .context("unexpected first line")?
        .to_string();
    Ok((child, url))
}

async fn control(mcp_url: &str, body: Value) -> anyhow::Result<()> {
    reqwest::Client::new()
        .post(mcp_url.replace("/mcp", "/control"))
        .json(&body)
        .send()
        .await?
        .error_for_status()?;
    Ok(())
}

struct Api {
    base: String,
    http: reqwest::Client,
}

impl Api {
    async fn servers(&self) -> anyhow::Result<Vec<Value>> {
        Ok(self
            .http
            .get(format!("{}/api/servers", self.base))
            .bearer_auth(TOKEN)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?)
    }

    async fn status(&self, name: &str) -> anyhow::Result<String> {
        let servers = self.servers().await?;
        let s = servers
            .iter()
            .find(|s| s["name"] == name)
            .with_context(|| format!("no server {name} in /api/servers"))?;
        Ok(s["status"].as_str().unwrap_or_default().to_string())
    }

    async fn wait_status(&self, names: &[&str], want: &str) -> anyhow::Result<()> {
        for _ in 0..150 {
            let servers = self.servers().await?;
            let ok = names.iter().all(|n| {
                servers
                    .iter()
                    .any(|s| s["name"] == *n && s["status"].as_str() == Some(want))
            });
            if ok {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        bail!("{names:?} never all {want}: {:#}", Value::from(self.servers().await?))
    }
}

/// `start <pid>` lines of a faulty server's spawn log: one per process.
fn starts(log: &Path) -> Vec<u32> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("start ")?.trim().parse().ok())
        .collect()
}

fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // A zombie has exited; only its parent's wait is missing.
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Colours in a screenshot of the whole X display.
fn screenshot_colours(png: &Path) -> anyhow::Result<u64> {
    let shot = std::process::Command::new("import")
        .args(["-window", "root"])
        .arg(png)
        .output()
        .context("cannot run `import` (imagemagick)")?;
    if !shot.status.success() {
        bail!("import failed: {}", String::from_utf8_lossy(&shot.stderr));
    }
    let count = std::process::Command::new("identify")
        .args(["-format", "%k"])
        .arg(png)
        .output()
        .context("cannot run `identify` (imagemagick)")?;
    let text = String::from_utf8_lossy(&count.stdout);
    text.trim()
        .parse()
        .with_context(|| format!("identify printed {text:?}"))
}

/// The app as the test runs it: every path it writes under `dir`, so
/// `dir/home` is its HOME (and ~/.config/autostart is `dir/home/.config/autostart`).
fn app_command(dir: &Path) -> anyhow::Result<Command> {
    let home = dir.join("home");
    std::fs::create_dir_all(&home)?;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcpool-app"));
    cmd.arg("--dashboard")
        .env("HOME", &home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("MCPOOL_CONFIG", dir.join("config.json"))
        .env("MCPOOL_LISTEN", "127.0.0.1:0")
        .env("MCPOOL_CACHE_DIR", dir.join("cache"))
        .env("MCPOOL_TOKEN", TOKEN)
        .env("MCPOOL_LOG", "info,rmcp=warn")
        // Xvfb has no GPU: WebKit draws in software.
        .env("WEBKIT_DISABLE_COMPOSITING_MODE", "1")
        .env("WEBKIT_DISABLE_DMABUF_RENDERER", "1")
        .env("LIBGL_ALWAYS_SOFTWARE", "1")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    Ok(cmd)
}

/// The login items (`*.desktop`) the app wrote for "Open at login": the
/// autostart crate puts them in $HOME/.config/autostart; XDG_CONFIG_HOME
/// is checked too, in case a later version honours it.
fn autostart_entries(dir: &Path) -> Vec<PathBuf> {
    let home = dir.join("home");
    [home.join(".config/autostart"), home.join("config/autostart")]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "desktop"))
        .collect()
}

async fn wait_autostart(dir: &Path, present: bool) -> Vec<PathBuf> {
    for _ in 0..100 {
        if autostart_entries(dir).is_empty() != present {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    autostart_entries(dir)
}

async fn wait_notes(notes: &Notifications, n: usize, within: Duration) -> Vec<Note> {
    let end = tokio::time::Instant::now() + within;
    while tokio::time::Instant::now() < end {
        if notes.recorded().len() >= n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    notes.recorded()
}

// ---------------------------------------------------------------- the test

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tray_menu_clicks_notifications_window_and_sigterm() -> anyhow::Result<()> {
    if std::env::var_os("DISPLAY").is_none() || std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_none() {
        bail!("needs an X display and a private session bus: run scripts/test-tray.sh (xvfb-run -a dbus-run-session -- cargo test ...)");
    }
    let dir = temp_dir()?;

    // The desktop's side of the session bus, before the app looks for it.
    let watcher = Watcher::default();
    let notes = Notifications::default();
    let desktop = zbus::connection::Builder::session()?
        .name("org.kde.StatusNotifierWatcher")?
        .name("org.freedesktop.Notifications")?
        .serve_at("/StatusNotifierWatcher", watcher.clone())?
        .serve_at("/org/freedesktop/Notifications", notes.clone())?
        .build()
        .await
        .context("cannot own the fake watcher and notification names")?;

    // One stdio server to reconnect, three HTTP ones to revoke at once.
    let local_log = dir.join("local.log");
    let mut remotes = Vec::new();
    let mut servers = serde_json::Map::new();
    servers.insert(
        LOCAL.into(),
        json!({"command": faulty_bin(), "args": ["stdio", "--spawn-log", local_log]}),
    );
    for name in AUTH_SERVERS {
        let (child, url) = faulty_http(&dir.join(format!("{name}.log"))).await?;
        servers.insert(name.into(), json!({"type": "http", "url": url}));
        remotes.push((child, url));
    }
    let config = dir.join("config.json");
    std::fs::write(&config, serde_json::to_vec_pretty(&json!({"mcpServers": servers}))?)?;

    let app_log = dir.join("app.log");
    let mut app = app_command(&dir)?
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&app_log)?)
        .spawn()?;
    let result = drive(&mut app, &desktop, &watcher, &notes, &remotes, &local_log, &dir).await;
    if result.is_ok() {
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        let _ = app.start_kill();
        eprintln!(
            "---- app log ({}) ----\n{}",
            app_log.display(),
            std::fs::read_to_string(&app_log).unwrap_or_default()
        );
    }
    result
}

async fn drive(
    app: &mut Child,
    desktop: &Connection,
    watcher: &Watcher,
    notes: &Notifications,
    remotes: &[(Child, String)],
    local_log: &Path,
    dir: &Path,
) -> anyhow::Result<()> {
    // "mcpool listening on http://127.0.0.1:PORT/mcp"
    let stdout = app.stdout.take().context("stdout")?;
    let line = tokio::time::timeout(Duration::from_secs(60), BufReader::new(stdout).lines().next_line())
        .await
        .context("the app printed nothing within 60 s")??
        .context("the app exited before listening")?;
    let endpoint = line
        .strip_prefix("mcpool listening on ")
        .with_context(|| format!("unexpected first line {line:?}"))?;
    let api = Api {
        base: endpoint.trim_end_matches("/mcp").to_string(),
        http: reqwest::Client::new(),
    };
    let all: Vec<&str> = std::iter::once(LOCAL).chain(AUTH_SERVERS).collect();
    api.wait_status(&all, "connected").await?;

    // (a) The tray item registered with the watcher and exports its menu.
    let (dest, item_path) = {
        let mut found = None;
        for _ in 0..100 {
            found = watcher.items.lock().ok().and_then(|i| i.first().cloned());
            if found.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        found.context("the app never registered a StatusNotifierItem")?
    };
    let item = zbus::Proxy::new(desktop, dest.as_str(), item_path.as_str(), "org.kde.StatusNotifierItem").await?;
    let menu_path: OwnedObjectPath = item
        .get_property("Menu")
        .await
        .context("the tray item has no Menu property")?;
    let menu = TrayMenu {
        conn: desktop,
        dest: dest.clone(),
        path: menu_path,
    };

    let connected = |m: &MenuNode| {
        all.iter().all(|n| {
            m.child(&format!("{n}: connected"))
                .is_some_and(|c| !c.children.is_empty())
        })
    };
    let shown = menu.wait_for("every server connected", connected).await?;
    let mut text = String::new();
    shown.render(0, &mut text);
    eprintln!("tray menu:\n{text}");
    let top: Vec<&str> = shown
        .children
        .iter()
        .filter(|c| !c.separator)
        .map(|c| c.label.as_str())
        .collect();
    assert_eq!(
        top.len(),
        all.len() + 5,
        "one line per server, then the fixed entries:\n{text}"
    );
    for (line, name) in top.iter().zip(["auth-a", "auth-b", "auth-c", "local"]) {
        assert!(line.starts_with(&format!("{name}: connected, ")), "{line:?} in\n{text}");
        assert!(line.ends_with(" tools") || line.ends_with(" tool"), "{line:?}");
    }
    assert_eq!(top[4], "Reconnect all failed", "{text}");
    assert!(
        !shown.child("Reconnect all failed").is_some_and(|c| c.enabled),
        "nothing failed:\n{text}"
    );
    assert_eq!(top[5], "Open dashboard", "{text}");
    assert_eq!(top[6], format!("Copy endpoint URL ({endpoint})"), "{text}");
    assert_eq!(top[7], "Open at login", "{text}");
    assert_eq!(top[8], "Quit mcpool", "{text}");

    // "Open at login": a click writes the login item, a second removes it.
    assert!(autostart_entries(dir).is_empty(), "no login item before the click");
    let item = shown.child("Open at login").context("no Open at login")?;
    assert_eq!(item.checked, Some(false), "Open at login starts unchecked:\n{text}");
    menu.click(item.id).await?;
    let entries = wait_autostart(dir, true).await;
    assert_eq!(entries.len(), 1, "one .desktop file after the click: {entries:?}");
    let desktop_entry = std::fs::read_to_string(&entries[0])?;
    assert!(
        desktop_entry.contains("mcpool-app"),
        "the login item starts the app:\n{desktop_entry}"
    );
    eprintln!("login item {}:\n{desktop_entry}", entries[0].display());
    let shown = menu
        .wait_for("Open at login checked", |m| {
            m.child("Open at login").is_some_and(|c| c.checked == Some(true))
        })
        .await?;
    let item = shown.child("Open at login").context("no Open at login")?;
    menu.click(item.id).await?;
    let entries = wait_autostart(dir, false).await;
    assert!(
        entries.is_empty(),
        "the second click removed the login item: {entries:?}"
    );
    // Each click rebuilt the menu (new dbusmenu ids): read it afresh.
    let shown = menu
        .wait_for("Open at login unchecked", |m| {
            m.child("Open at login").is_some_and(|c| c.checked == Some(false))
        })
        .await?;

    // A second launch with the same environment hands over to this one
    // and exits 0 at once, without starting a pool of its own.
    let second_log = dir.join("second.log");
    let second = app_command(dir)?
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&second_log)?)
        .spawn()?;
    let out = tokio::time::timeout(Duration::from_secs(30), second.wait_with_output())
        .await
        .map_err(|_| anyhow!("the second launch was still running after 30 s"))??;
    assert_eq!(
        out.status.code(),
        Some(0),
        "second launch: {:?}\n{}",
        out.status,
        std::fs::read_to_string(&second_log).unwrap_or_default()
    );
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        !printed.contains("listening"),
        "the second launch started a pool: {printed:?}"
    );
    assert!(app.try_wait()?.is_none(), "the first instance exited");
    api.wait_status(&all, "connected").await?;
    let mut handed_over = false;
    for _ in 0..50 {
        let log = std::fs::read_to_string(dir.join("app.log"))?;
        if log.contains("another launch: showing the dashboard") {
            handed_over = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(handed_over, "the first instance was told of the second launch");

    // Click local's Reconnect as a panel would: a new process serves it.
    let before = starts(local_log);
    assert_eq!(before.len(), 1, "one local process so far: {before:?}");
    let reconnect = shown
        .child("local: ")
        .and_then(|s| s.child("Reconnect"))
        .with_context(|| format!("no Reconnect under local:\n{text}"))?;
    menu.click(reconnect.id).await?;
    let mut after = starts(local_log);
    for _ in 0..100 {
        if after.len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        after = starts(local_log);
    }
    assert_eq!(after.len(), 2, "clicking Reconnect started one new process: {after:?}");
    api.wait_status(&[LOCAL], "connected").await?;
    assert_eq!(api.status(LOCAL).await?, "connected");
    for _ in 0..50 {
        if !alive(after[0]) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!alive(after[0]), "the old local process {} was stopped", after[0]);

    // (c) The dashboard window (opened by --dashboard) is on the screen.
    let png = dir.join("screen.png");
    let mut colours = 0;
    for _ in 0..60 {
        colours = screenshot_colours(&png)?;
        if colours > 16 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(
        colours > 16,
        "the screenshot {} has {colours} colours: no window drew",
        png.display()
    );
    eprintln!("screenshot {}: {colours} colours", png.display());

    // (b) Three servers lose their sign-in at once: one notification.
    assert!(
        notes.recorded().is_empty(),
        "no notification before: {:?}",
        notes.recorded()
    );
    for (_, url) in remotes {
        control(url, json!({"mode": "401"})).await?;
    }
    let reconnects = AUTH_SERVERS.map(|name| {
        let http = api.http.clone();
        let url = format!("{}/api/servers/{name}/reconnect", api.base);
        async move { http.post(url).bearer_auth(TOKEN).send().await }
    });
    let _answers = futures_join(reconnects).await;
    api.wait_status(&AUTH_SERVERS, "needs_auth").await?;
    let got = wait_notes(notes, 1, Duration::from_secs(15)).await;
    assert!(!got.is_empty(), "no notification for three servers needing sign-in");
    // Longer than the burst window: nothing else arrives for the same burst.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let got = notes.recorded();
    assert_eq!(got.len(), 1, "exactly one notification for the burst: {got:?}");
    assert_eq!(got[0].summary, "3 servers need sign-in", "{got:?}");
    for name in AUTH_SERVERS {
        assert!(got[0].body.contains(name), "{name} named in {:?}", got[0].body);
    }
    menu.wait_for("three servers needing sign-in", |m| {
        AUTH_SERVERS
            .iter()
            .all(|n| m.child(&format!("{n}: needs sign-in")).is_some())
    })
    .await?;

    // SIGTERM ends the app as Quit does: children stopped, exit code 0.
    let pid = app.id().context("app pid")?;
    let local_pid = *after.last().context("local pid")?;
    assert!(alive(local_pid), "local runs before SIGTERM");
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()?;
    assert!(kill.success());
    let status = tokio::time::timeout(Duration::from_secs(20), app.wait())
        .await
        .map_err(|_| anyhow!("the app did not exit within 20 s of SIGTERM"))??;
    assert_eq!(status.code(), Some(0), "exit status after SIGTERM: {status:?}");
    assert!(!alive(local_pid), "the local server {local_pid} outlived the app");
    let log = std::fs::read_to_string(dir.join("app.log"))?;
    assert!(log.contains("stopping"), "the app logged its shutdown:\n{log}");
    assert!(!log.contains(TOKEN), "the token never reaches the log");
    Ok(())
}

/// Runs the futures concurrently (no `futures` crate needed for three posts).
async fn futures_join<F, T>(futures: [F; 3]) -> [T; 3]
where
    F: std::future::Future<Output = T>,
{
    let [a, b, c] = futures;
    let (a, b, c) = tokio::join!(a, b, c);
    [a, b, c]
}
