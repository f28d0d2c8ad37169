//! Signing in from the dashboard in a real headless Chromium against the
//! real binary and the fault server's OAuth mode (an authorization server
//! that approves at once): the card's "Sign in" opens the authorization page
//! in a new tab, the browser comes back through mcpool's loopback redirect,
//! and the server connects; "Sign out" forgets the tokens. The browser side
//! is tests/ui/signin.mjs.

use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context};
use mcpool_tests::*;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

#[tokio::test]
async fn the_dashboard_signs_a_server_in_through_the_browser() -> anyhow::Result<()> {
    let playwright = node_modules().join("playwright-core/index.mjs");
    let scratch = TempDir::new("dashboard-signin");
    let (_faulty, url) = faulty_http(&scratch.path().join("spawn.log"), &["--oauth"]).await?;
    let pool = Mcpool::start(json!({"mcpServers": {"remote": {"url": url}}})).await?;
    pool.wait_status("remote", "needs_auth", Duration::from_secs(20))
        .await?;
    let out = pool.cli(&["ui", "--no-open"], None).await?;
    anyhow::ensure!(out.status.success(), "mcpool ui failed");
    let link = String::from_utf8_lossy(&out.stdout).trim().to_string();

    let mut node = Command::new("node")
        .arg(repo_root().join("tests/ui/signin.mjs"))
        .env("LINK", &link)
        .env("SERVER", "remote")
        .env("USER_DATA_DIR", scratch.path().join("chromium-profile"))
        .env("PLAYWRIGHT_CORE", &playwright)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("cannot run node")?;
    let mut lines = BufReader::new(node.stdout.take().context("stdout")?).lines();
    let mut stderr = node.stderr.take().context("stderr")?;
    let errors = tokio::spawn(async move {
        let mut s = String::new();
        let _ = tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut s).await;
        s
    });
    let mut steps = Vec::new();
    let finished = tokio::time::timeout(Duration::from_secs(120), async {
        while let Some(line) = lines.next_line().await? {
            if line.trim() == "OK" {
                return Ok::<_, anyhow::Error>(true);
            }
            steps.push(line.trim().to_string());
        }
        Ok(false)
    })
    .await;
    let status = tokio::time::timeout(Duration::from_secs(30), node.wait()).await??;
    let errors = errors.await.unwrap_or_default();
    match finished {
        Ok(Ok(true)) if status.success() => {}
        _ => bail!(
            "the browser script failed ({status}) after {steps:?}:\n{errors}\n{}",
            pool.logs()
        ),
    }
    assert_eq!(
        steps,
        [
            "STEP needs-sign-in",
            "STEP redirected",
            "STEP connected",
            "STEP signed-out"
        ]
    );
    let server = pool.server("remote").await?;
    assert_eq!(server["status"], "needs_auth", "{server}");
    assert_eq!(server["auth"]["signed_in"], false, "{server}");
    Ok(())
}
