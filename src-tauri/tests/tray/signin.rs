//! The tray's sign-in, against the fault server's OAuth mode (an
//! authorization server that approves at once) with `BROWSER` set to a
//! script that follows the redirects as a user clicking "Allow" would: the
//! needs-sign-in notification's "Sign in" signs the server in without a
//! window of ours, "Sign out" in its menu forgets the tokens, and
//! "Sign in to NAME…" signs it in again.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _};
use serde_json::{json, Value};
use zbus::zvariant::OwnedObjectPath;
use zbus::Connection;

use crate::desktop::{MenuNode, Notifications, TrayMenu, Watcher};
use crate::support::*;
use mcpool_tests::{announced, faulty_http, first_line};

const SERVER: &str = "oauth";

async fn oauth_stats(mcp_url: &str) -> anyhow::Result<Value> {
    let url = format!("{}/oauth/stats", mcp_url.trim_end_matches("/mcp"));
    Ok(reqwest::get(url).await?.error_for_status()?.json().await?)
}

fn exchanges(stats: &Value) -> u64 {
    stats["code_exchanges"].as_u64().unwrap_or_default()
}

/// Runs a second app (the first has quit) with one OAuth server.
pub async fn sign_in_from_the_tray(
    desktop: &Connection,
    watcher: &Watcher,
    notes: &Notifications,
    dir: &Path,
) -> anyhow::Result<()> {
    let dir = dir.join("signin");
    std::fs::create_dir_all(&dir)?;
    let (_faulty, url) = faulty_http(&dir.join("oauth.log"), &["--oauth"]).await?;
    let browser = dir.join("browser.sh");
    std::fs::write(&browser, "#!/bin/sh\nexec curl -sSL -o /dev/null \"$1\"\n")?;
    std::fs::set_permissions(&browser, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    std::fs::write(
        dir.join("config.json"),
        serde_json::to_vec(&json!({"mcpServers": {SERVER: {"url": url}}}))?,
    )?;
    let items_before = watcher.items.lock().map(|i| i.len()).unwrap_or_default();
    let notes_before = notes.recorded().len();
    let mut app = app_command(&dir)?
        .env("BROWSER", &browser)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(dir.join("app.log"))?)
        .spawn()?;
    let line = first_line(&mut app, Duration::from_secs(60))
        .await
        .context("the second app did not start listening")?;
    let api = Api::at(&announced(&line, "mcpool listening on ")?);
    api.wait_status(&[SERVER], "needs_auth").await?;

    // The notification's one button signs in: no dashboard, no question.
    let got = wait_notes(notes, notes_before + 1, Duration::from_secs(15)).await;
    let note = got.get(notes_before).context("no sign-in notification")?;
    assert_eq!(note.summary, format!("{SERVER} needs sign-in"), "{note:?}");
    assert!(
        note.actions
            .iter()
            .any(|(key, label)| key == "default" && label == "Sign in"),
        "the notification's action says Sign in: {note:?}"
    );
    activate(desktop, note.id, "a sign-in started", || async {
        let servers = api.servers().await?;
        let login = servers
            .iter()
            .find(|s| s["name"] == SERVER)
            .map(|s| s["auth"]["login"].clone())
            .unwrap_or_default();
        if login == "idle" {
            bail!("login {login}");
        }
        Ok(Some(()))
    })
    .await?;
    api.wait_status(&[SERVER], "connected")
        .await
        .context("activating the notification signs the server in")?;
    assert_eq!(exchanges(&oauth_stats(&url).await?), 1);

    // Its menu: Sign out, then Sign in to NAME… again.
    let (dest, item_path) = eventually("the second app's StatusNotifierItem", PATIENCE, || async {
        Ok(watcher
            .items
            .lock()
            .ok()
            .and_then(|i| i.get(items_before..).and_then(|new| new.first().cloned())))
    })
    .await?;
    let item = tray_item(desktop, dest.clone(), item_path).await?;
    let menu_path: OwnedObjectPath = item.get_property("Menu").await?;
    let menu = TrayMenu {
        conn: desktop,
        dest,
        path: menu_path,
    };
    let line = |status: &'static str| move |m: &MenuNode| m.child(&format!("{SERVER}: {status}")).is_some();
    let shown = menu.wait_for("the server connected", line("connected")).await?;
    let sign_out = shown
        .child(&format!("{SERVER}: connected"))
        .and_then(|s| s.child("Sign out"))
        .context("a signed-in server's menu has Sign out")?;
    menu.click(sign_out.id).await?;
    api.wait_status(&[SERVER], "needs_auth").await?;
    let shown = menu
        .wait_for("the server needing sign-in", line("needs sign-in"))
        .await?;
    let sign_in = shown
        .child(&format!("{SERVER}: needs sign-in"))
        .and_then(|s| s.child(&format!("Sign in to {SERVER}")))
        .context("a server that needs sign-in has Sign in to NAME…")?;
    menu.click(sign_in.id).await?;
    api.wait_status(&[SERVER], "connected")
        .await
        .context("Sign in to NAME… signs the server in")?;
    assert_eq!(exchanges(&oauth_stats(&url).await?), 2);

    let pid = app.id().context("app pid")?;
    std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()?;
    let status = tokio::time::timeout(Duration::from_secs(20), app.wait())
        .await
        .map_err(|_| anyhow!("the second app did not exit within 20 s of SIGTERM"))??;
    assert_eq!(status.code(), Some(0), "{status:?}");
    Ok(())
}
