//! The real tray app on a real (virtual) desktop: run it on the throwaway
//! desktop of `scripts/desktop.sh` (xvfb-run, dbus-run-session, a keyring),
//! as scripts/test.sh does.
//!
//! The test owns the session bus's desktop side: a fake
//! `org.kde.StatusNotifierWatcher` (so libayatana-appindicator exports the
//! tray item and its dbusmenu) and a fake `org.freedesktop.Notifications`
//! that records every notification and can activate one. It reads the menu
//! and clicks it as a panel would, reads the item's icon back, checks the
//! pool through the app's own `/api/servers`, finds the dashboard window by
//! its title, screenshots the display, and stops the app with SIGTERM.
//! A second app then signs a server in from the tray (signin.rs).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _};
use serde_json::{json, Value};
use tokio::process::Child;
use zbus::zvariant::OwnedObjectPath;
use zbus::Connection;

mod desktop;
mod signin;
mod support;
mod x11;

use desktop::{MenuNode, Notifications, TrayMenu, Watcher};
use mcpool_tests::{alive, control, faulty_http, faulty_stdio, first_line, spawned_pids};
use support::*;

pub const TOKEN: &str = "tray-test-token";
/// Servers that will all ask for sign-in at once.
const AUTH_SERVERS: [&str; 3] = ["auth-a", "auth-b", "auth-c"];
const LOCAL: &str = "local";

// ---------------------------------------------------------------- the test

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tray_menu_clicks_notifications_window_and_sigterm() -> anyhow::Result<()> {
    if std::env::var_os("DISPLAY").is_none() || std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_none() {
        bail!("needs an X display and a private session bus: run `bash scripts/desktop.sh cargo test -p mcpool-app`");
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
    servers.insert(LOCAL.into(), faulty_stdio(&local_log, &[]));
    for name in AUTH_SERVERS {
        let (child, url) = faulty_http(&dir.join(format!("{name}.log")), &[]).await?;
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
    let line = first_line(app, Duration::from_secs(60))
        .await
        .context("the app did not start listening")?;
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
    // Uncached: AppIndicator announces a new icon with its own NewIcon
    // signal, not PropertiesChanged, so a cache would go stale.
    let tray: zbus::Proxy = zbus::proxy::Builder::new(desktop)
        .destination(dest.as_str())?
        .path(item_path.as_str())?
        .interface("org.kde.StatusNotifierItem")?
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await?;
    let item = &tray;
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
    // The icon says "all connected".
    wait_icon(item, "connected.png").await?;
    let labels: Vec<&str> = shown
        .children
        .iter()
        .filter(|c| !c.separator)
        .map(|c| c.label.as_str())
        .collect();
    assert_eq!(
        labels.len(),
        all.len() + 6,
        "the summary, one line per server, then the fixed entries:\n{text}"
    );
    // The summary heads the menu (an AppIndicator shows no tooltip).
    assert_eq!(labels[0], "mcpool: 4 of 4 servers connected", "{text}");
    assert!(!shown.children[0].enabled, "the summary is not clickable:\n{text}");
    let top = &labels[1..];
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
    // It starts the very binary that was clicked, by absolute path: an
    // installed app (scripts/install.sh, the .deb) starts itself at login.
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_mcpool-app"))?;
    let exec = desktop_entry.lines().find_map(|l| l.strip_prefix("Exec="));
    assert_eq!(
        exec.and_then(|e| e.split_whitespace().next()),
        exe.to_str(),
        "the login item starts this app:\n{desktop_entry}"
    );
    // Named by the root tauri.conf.json's productName: the app was built
    // from the config at the repo root, as the design places it.
    let root_conf: Value = serde_json::from_str(&std::fs::read_to_string(repo_root().join("tauri.conf.json"))?)?;
    let product = root_conf["productName"].as_str().context("productName")?;
    assert!(
        desktop_entry.lines().any(|l| l == format!("Name={product}")),
        "the login item is named {product:?}:\n{desktop_entry}"
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
    let before = spawned_pids(local_log);
    assert_eq!(before.len(), 1, "one local process so far: {before:?}");
    let reconnect = shown
        .child("local: ")
        .and_then(|s| s.child("Reconnect"))
        .with_context(|| format!("no Reconnect under local:\n{text}"))?;
    menu.click(reconnect.id).await?;
    let mut after = spawned_pids(local_log);
    for _ in 0..100 {
        if after.len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        after = spawned_pids(local_log);
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
            && m.children
                .first()
                .is_some_and(|c| c.label == "mcpool: 1 of 4 servers connected, 3 need sign-in")
    })
    .await?;
    wait_icon(&tray, "needs-sign-in.png").await?;

    // Activating the notification opens the dashboard at the first server.
    let note = &got[0];
    assert!(
        note.actions.iter().any(|(key, _)| key == "default"),
        "the notification can be activated: {note:?}"
    );
    let display = x11::Display::open()?;
    assert!(
        display.shown("mcpool")?,
        "the dashboard window (from --dashboard) is shown"
    );
    assert!(display.find("mcpool — auth-a")?.is_none(), "no window at auth-a yet");
    let iface = desktop
        .object_server()
        .interface::<_, Notifications>("/org/freedesktop/Notifications")
        .await?;
    Notifications::action_invoked(iface.signal_emitter(), note.id, "default").await?;
    display
        .wait_shown("mcpool — auth-a", true)
        .await
        .context("activating the notification shows the dashboard at auth-a")?;

    // Closing the window (as its close button does) closes it for real, so
    // WebKit's memory goes with it, and keeps the app, its pool and the
    // tray; "Open dashboard" opens it again.
    display.close("mcpool — auth-a")?;
    display.wait_shown("mcpool — auth-a", false).await?;
    let mut destroyed = false;
    for _ in 0..50 {
        destroyed = display.find("mcpool — auth-a")?.is_none();
        if destroyed {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(destroyed, "the closed window was destroyed, not kept hidden");
    assert!(app.try_wait()?.is_none(), "closing the window ended the app");
    assert_eq!(api.status(LOCAL).await?, "connected", "the pool still serves");
    let open = menu.layout().await?;
    let open = open.child("Open dashboard").context("no Open dashboard")?;
    menu.click(open.id).await?;

    // "Copy endpoint URL" puts the endpoint on the clipboard.
    let copy = menu.layout().await?;
    let copy = copy.child("Copy endpoint URL").context("no Copy endpoint URL")?;
    menu.click(copy.id).await?;
    let mut pasted = None;
    for _ in 0..50 {
        pasted = display.clipboard_text().await?;
        if pasted.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        pasted.as_deref(),
        Some(endpoint),
        "the clipboard after Copy endpoint URL"
    );
    display
        .wait_shown("mcpool", true)
        .await
        .context("\"Open dashboard\" shows the closed window again")?;

    // local's process dies and nothing brings it back within the grace
    // (3 s here): one short "down" notice.
    let dead = *after.last().context("local pid")?;
    std::process::Command::new("kill")
        .args(["-KILL", &dead.to_string()])
        .status()?;
    api.wait_status(&[LOCAL], "failed").await?;
    let got = wait_notes(notes, 2, Duration::from_secs(20)).await;
    assert_eq!(got.len(), 2, "one down notice after the sign-in one: {got:?}");
    assert_eq!(got[1].summary, "local is down", "{got:?}");
    // Three wait for sign-in and the fourth is down: nothing answers.
    wait_icon(&tray, "unreachable.png").await?;
    // "Reconnect all failed" (enabled now) brings local back; the servers
    // waiting for sign-in are not failed and are left alone.
    let shown = menu
        .wait_for("Reconnect all failed enabled", |m| {
            m.child("Reconnect all failed").is_some_and(|c| c.enabled)
        })
        .await?;
    let all_failed = shown.child("Reconnect all failed").context("no Reconnect all failed")?;
    menu.click(all_failed.id).await?;
    api.wait_status(&[LOCAL], "connected").await?;
    assert_eq!(spawned_pids(local_log).len(), 3, "one new local process");
    for name in AUTH_SERVERS {
        assert_eq!(api.status(name).await?, "needs_auth", "{name} left alone");
    }

    // SIGTERM ends the app as Quit does: children stopped, exit code 0.
    let pid = app.id().context("app pid")?;
    let local_pid = *spawned_pids(local_log).last().context("local pid")?;
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

    signin::sign_in_from_the_tray(desktop, watcher, notes, dir).await
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
