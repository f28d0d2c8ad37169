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

use desktop::{MenuNode, Note, Notifications, TrayMenu, Watcher};
use mcpool_tests::{alive, announced, control, faulty_http, faulty_stdio, first_line, live_pids_naming, spawned_pids};
use support::*;

pub const TOKEN: &str = "tray-test-token";
/// Servers that will all ask for sign-in at once.
const AUTH_SERVERS: [&str; 3] = ["auth-a", "auth-b", "auth-c"];
const LOCAL: &str = "local";
const ALL: [&str; 4] = [LOCAL, "auth-a", "auth-b", "auth-c"];

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
    // Sandboxed, writing only its spawn log's folder: the app that starts
    // it must stay unrestricted (reconnect_local checks both).
    let mut local = faulty_stdio(&local_log, &[]);
    local["sandbox"] = json!({"mode": "standard", "allowWrite": [&dir]});
    servers.insert(LOCAL.into(), local);
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

/// What the steps share: the app, its API, its tray item and the desktop.
struct Run<'a> {
    app: &'a mut Child,
    desktop: &'a Connection,
    notes: &'a Notifications,
    remotes: &'a [(Child, String)],
    local_log: &'a Path,
    dir: &'a Path,
    api: Api,
    endpoint: String,
    tray: zbus::Proxy<'a>,
    menu: TrayMenu<'a>,
}

/// One named step: its name is printed as it starts and heads its failure.
async fn step<T>(name: &str, work: impl std::future::Future<Output = anyhow::Result<T>>) -> anyhow::Result<T> {
    eprintln!("step: {name}");
    work.await.with_context(|| format!("step {name:?} failed"))
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
    let mut run = step(
        "the app starts and its tray item registers",
        start(app, desktop, watcher, notes, remotes, local_log, dir),
    )
    .await?;
    let run = &mut run;
    step("the menu lists every server, connected", every_server_in_the_menu(run)).await?;
    step(
        "Open at login writes the login item, a second click removes it",
        open_at_login(run),
    )
    .await?;
    step("a second launch hands over to the first and exits", second_launch(run)).await?;
    let local = step("Reconnect in local's menu starts one new process", reconnect_local(run)).await?;
    step("the dashboard window draws", dashboard_draws(run)).await?;
    let note = step(
        "three servers needing sign-in give one notification",
        sign_in_burst(run),
    )
    .await?;
    step(
        "activating the notification shows the dashboard at the first server",
        activate_burst_note(run, note.id),
    )
    .await?;
    step("closing the window destroys it and keeps the app", close_window(run)).await?;
    step("Open dashboard and Copy endpoint URL", open_and_copy(run)).await?;
    step(
        "a dead local server gives one down notice; Reconnect all failed heals it",
        local_down(run, local),
    )
    .await?;
    step("SIGTERM ends the app and its servers", sigterm(run)).await?;
    step(
        "a second app signs in from the notification and the tray",
        signin::sign_in_from_the_tray(desktop, watcher, notes, dir),
    )
    .await
}

/// The first line ("mcpool listening on http://127.0.0.1:PORT/mcp"), every
/// server connected, and the tray item the app registered with the watcher.
async fn start<'a>(
    app: &'a mut Child,
    desktop: &'a Connection,
    watcher: &Watcher,
    notes: &'a Notifications,
    remotes: &'a [(Child, String)],
    local_log: &'a Path,
    dir: &'a Path,
) -> anyhow::Result<Run<'a>> {
    let line = first_line(app, Duration::from_secs(60))
        .await
        .context("the app did not start listening")?;
    let endpoint = announced(&line, "mcpool listening on ")?;
    let api = Api::at(&endpoint);
    api.wait_status(&ALL, "connected").await?;
    let (dest, item_path) = eventually("a StatusNotifierItem registered", PATIENCE, || async {
        Ok(watcher.items.lock().ok().and_then(|i| i.first().cloned()))
    })
    .await?;
    let tray = tray_item(desktop, dest.clone(), item_path).await?;
    let menu_path: OwnedObjectPath = tray
        .get_property("Menu")
        .await
        .context("the tray item has no Menu property")?;
    let menu = TrayMenu {
        conn: desktop,
        dest,
        path: menu_path,
    };
    Ok(Run {
        app,
        desktop,
        notes,
        remotes,
        local_log,
        dir,
        api,
        endpoint,
        tray,
        menu,
    })
}

async fn every_server_in_the_menu(run: &mut Run<'_>) -> anyhow::Result<()> {
    let connected = |m: &MenuNode| {
        ALL.iter().all(|n| {
            m.child(&format!("{n}: connected"))
                .is_some_and(|c| !c.children.is_empty())
        })
    };
    let shown = run.menu.wait_for("every server connected", connected).await?;
    let mut text = String::new();
    shown.render(0, &mut text);
    eprintln!("tray menu:\n{text}");
    // The icon says "all connected".
    wait_icon(&run.tray, "connected.png").await?;
    let labels: Vec<&str> = shown
        .children
        .iter()
        .filter(|c| !c.separator)
        .map(|c| c.label.as_str())
        .collect();
    assert_eq!(
        labels.len(),
        ALL.len() + 6,
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
    assert_eq!(top[6], format!("Copy endpoint URL ({})", run.endpoint), "{text}");
    assert_eq!(top[7], "Open at login", "{text}");
    assert_eq!(top[8], "Quit mcpool", "{text}");
    Ok(())
}

async fn open_at_login(run: &mut Run<'_>) -> anyhow::Result<()> {
    let dir = run.dir;
    assert!(autostart_entries(dir).is_empty(), "no login item before the click");
    let shown = run.menu.layout().await?;
    let item = shown.child("Open at login").context("no Open at login")?;
    assert_eq!(item.checked, Some(false), "Open at login starts unchecked");
    run.menu.click(item.id).await?;
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
    // Each click rebuilds the menu (new dbusmenu ids): read it afresh.
    let shown = run
        .menu
        .wait_for("Open at login checked", |m| {
            m.child("Open at login").is_some_and(|c| c.checked == Some(true))
        })
        .await?;
    let item = shown.child("Open at login").context("no Open at login")?;
    run.menu.click(item.id).await?;
    let entries = wait_autostart(dir, false).await;
    assert!(
        entries.is_empty(),
        "the second click removed the login item: {entries:?}"
    );
    run.menu
        .wait_for("Open at login unchecked", |m| {
            m.child("Open at login").is_some_and(|c| c.checked == Some(false))
        })
        .await?;
    Ok(())
}

/// A second launch with the same environment hands over to this one and
/// exits 0 at once, without starting a pool of its own.
async fn second_launch(run: &mut Run<'_>) -> anyhow::Result<()> {
    let second_log = run.dir.join("second.log");
    let second = app_command(run.dir)?
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
    assert!(run.app.try_wait()?.is_none(), "the first instance exited");
    run.api.wait_status(&ALL, "connected").await?;
    let app_log = run.dir.join("app.log");
    eventually("the first instance told of the second launch", PATIENCE, || async {
        let log = std::fs::read_to_string(&app_log)?;
        Ok(log.contains("another launch: showing the dashboard").then_some(()))
    })
    .await
}

/// Clicks local's Reconnect as a panel would: a new process serves it and
/// the old one is stopped. Gives both pids (as this test sees them: the
/// server logs the one it has in its sandbox's own PID namespace).
async fn reconnect_local(run: &mut Run<'_>) -> anyhow::Result<Vec<i32>> {
    let before = spawned_pids(run.local_log);
    assert_eq!(before.len(), 1, "one local process so far: {before:?}");
    let old = live_pids_naming(run.local_log);
    assert_eq!(old.len(), 1, "one local process runs: {old:?}");
    let shown = run.menu.layout().await?;
    let reconnect = shown
        .child("local: ")
        .and_then(|s| s.child("Reconnect"))
        .context("no Reconnect under local")?;
    run.menu.click(reconnect.id).await?;
    let after = eventually("a second local process", PATIENCE, || async {
        let pids = spawned_pids(run.local_log);
        Ok((pids.len() >= 2).then_some(pids))
    })
    .await?;
    assert_eq!(after.len(), 2, "clicking Reconnect started one new process: {after:?}");
    run.api.wait_status(&[LOCAL], "connected").await?;
    let new = eventually("the new local process, as this test sees it", PATIENCE, || async {
        let live = live_pids_naming(run.local_log);
        Ok(live.into_iter().find(|p| !old.contains(p)))
    })
    .await?;
    let after = vec![old[0], new];
    // The sandbox is the server's alone: it runs with no_new_privs (and
    // Landlock), the app that started it does not.
    let no_new_privs = |pid: u32| -> anyhow::Result<bool> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
        Ok(status.contains("NoNewPrivs:\t1"))
    };
    assert!(
        no_new_privs(after[1] as u32)?,
        "the local server {} is sandboxed",
        after[1]
    );
    let app = run.app.id().context("the app's pid")?;
    assert!(!no_new_privs(app)?, "the tray app {app} is not restricted");
    eventually(
        &format!("the old local process {} stopped", after[0]),
        PATIENCE,
        || async { Ok((!alive(after[0])).then_some(())) },
    )
    .await?;
    Ok(after)
}

/// The dashboard window (opened by --dashboard) is on the screen.
async fn dashboard_draws(run: &mut Run<'_>) -> anyhow::Result<()> {
    let png = run.dir.join("screen.png");
    let colours = eventually(
        "a screenshot with more than 16 colours",
        Duration::from_secs(60),
        || async {
            let colours = screenshot_colours(&png)?;
            if colours > 16 {
                return Ok(Some(colours));
            }
            bail!("{} has {colours} colours: no window drew", png.display())
        },
    )
    .await?;
    eprintln!("screenshot {}: {colours} colours", png.display());
    Ok(())
}

/// Three servers lose their sign-in at once: one notification for the
/// burst, the menu and the icon say so. Gives the notification.
async fn sign_in_burst(run: &mut Run<'_>) -> anyhow::Result<Note> {
    let notes = run.notes;
    assert!(
        notes.recorded().is_empty(),
        "no notification before: {:?}",
        notes.recorded()
    );
    for (_, url) in run.remotes {
        control(url, json!({"mode": "401"})).await?;
    }
    let reconnects = AUTH_SERVERS.map(|name| {
        let http = run.api.http.clone();
        let url = format!("{}/api/servers/{name}/reconnect", run.api.base);
        async move { http.post(url).bearer_auth(TOKEN).send().await }
    });
    let _answers = futures_join(reconnects).await;
    run.api.wait_status(&AUTH_SERVERS, "needs_auth").await?;
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
    run.menu
        .wait_for("three servers needing sign-in", |m| {
            AUTH_SERVERS
                .iter()
                .all(|n| m.child(&format!("{n}: needs sign-in")).is_some())
                && m.children
                    .first()
                    .is_some_and(|c| c.label == "mcpool: 1 of 4 servers connected, 3 need sign-in")
        })
        .await?;
    wait_icon(&run.tray, "needs-sign-in.png").await?;
    let note = got[0].clone();
    assert!(
        note.actions.iter().any(|(key, _)| key == "default"),
        "the notification can be activated: {note:?}"
    );
    Ok(note)
}

async fn activate_burst_note(run: &mut Run<'_>, id: u32) -> anyhow::Result<()> {
    let display = x11::Display::open()?;
    assert!(
        display.shown("mcpool")?,
        "the dashboard window (from --dashboard) is shown"
    );
    assert!(display.find("mcpool — auth-a")?.is_none(), "no window at auth-a yet");
    activate(run.desktop, id, "the window at auth-a shown", || async {
        Ok(display.shown("mcpool — auth-a")?.then_some(()))
    })
    .await
}

/// Closing the window (as its close button does) closes it for real, so
/// WebKit's memory goes with it, and keeps the app, its pool and the tray.
async fn close_window(run: &mut Run<'_>) -> anyhow::Result<()> {
    let display = x11::Display::open()?;
    display.close("mcpool — auth-a")?;
    display.wait_shown("mcpool — auth-a", false).await?;
    eventually("the closed window destroyed, not kept hidden", PATIENCE, || async {
        Ok(display.find("mcpool — auth-a")?.is_none().then_some(()))
    })
    .await?;
    assert!(run.app.try_wait()?.is_none(), "closing the window ended the app");
    assert_eq!(run.api.status(LOCAL).await?, "connected", "the pool still serves");
    Ok(())
}

/// "Open dashboard" opens the closed window again; "Copy endpoint URL"
/// puts the endpoint on the clipboard.
async fn open_and_copy(run: &mut Run<'_>) -> anyhow::Result<()> {
    let open = run.menu.layout().await?;
    let open = open.child("Open dashboard").context("no Open dashboard")?;
    run.menu.click(open.id).await?;
    let copy = run.menu.layout().await?;
    let copy = copy.child("Copy endpoint URL").context("no Copy endpoint URL")?;
    run.menu.click(copy.id).await?;
    let display = x11::Display::open()?;
    let pasted = eventually("text on the clipboard", PATIENCE, || display.clipboard_text()).await?;
    assert_eq!(pasted, run.endpoint, "the clipboard after Copy endpoint URL");
    display
        .wait_shown("mcpool", true)
        .await
        .context("\"Open dashboard\" shows the closed window again")
}

/// local's process dies and nothing brings it back within the grace (3 s
/// here): one short "down" notice. "Reconnect all failed" (enabled now)
/// brings local back; the servers waiting for sign-in are left alone.
async fn local_down(run: &mut Run<'_>, pids: Vec<i32>) -> anyhow::Result<()> {
    let dead = *pids.last().context("local pid")?;
    std::process::Command::new("kill")
        .args(["-KILL", &dead.to_string()])
        .status()?;
    run.api.wait_status(&[LOCAL], "failed").await?;
    let got = wait_notes(run.notes, 2, Duration::from_secs(20)).await;
    assert_eq!(got.len(), 2, "one down notice after the sign-in one: {got:?}");
    assert_eq!(got[1].summary, "local is down", "{got:?}");
    // Three wait for sign-in and the fourth is down: nothing answers.
    wait_icon(&run.tray, "unreachable.png").await?;
    let shown = run
        .menu
        .wait_for("Reconnect all failed enabled", |m| {
            m.child("Reconnect all failed").is_some_and(|c| c.enabled)
        })
        .await?;
    let all_failed = shown.child("Reconnect all failed").context("no Reconnect all failed")?;
    run.menu.click(all_failed.id).await?;
    run.api.wait_status(&[LOCAL], "connected").await?;
    assert_eq!(spawned_pids(run.local_log).len(), 3, "one new local process");
    for name in AUTH_SERVERS {
        assert_eq!(run.api.status(name).await?, "needs_auth", "{name} left alone");
    }
    Ok(())
}

/// SIGTERM ends the app as Quit does: children stopped, exit code 0.
async fn sigterm(run: &mut Run<'_>) -> anyhow::Result<()> {
    let pid = run.app.id().context("app pid")?;
    let live = live_pids_naming(run.local_log);
    assert_eq!(live.len(), 1, "one local process runs: {live:?}");
    let local_pid = live[0];
    assert!(alive(local_pid), "local runs before SIGTERM");
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()?;
    assert!(kill.success());
    let status = tokio::time::timeout(Duration::from_secs(20), run.app.wait())
        .await
        .map_err(|_| anyhow!("the app did not exit within 20 s of SIGTERM"))??;
    assert_eq!(status.code(), Some(0), "exit status after SIGTERM: {status:?}");
    assert!(!alive(local_pid), "the local server {local_pid} outlived the app");
    let log = std::fs::read_to_string(run.dir.join("app.log"))?;
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
