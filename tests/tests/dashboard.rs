//! behaviour.md §2 "web UI": the dashboard in a real headless Chromium against the
//! real binary. `mcpool ui --no-open` gives a one-time link; the browser
//! signs in with it, follows a crash of a stdio server live (failed, stderr
//! tail, tools kept), reconnects it with the card's button, shows a config
//! file that stopped parsing, and a second use of the link is refused. The browser side is tests/ui/dashboard.mjs.
//!
//! The screenshot goes to the test's temp dir; with
//! `MCPOOL_UPDATE_SCREENSHOT=1` it replaces docs/dashboard.png.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context};
use mcpool_tests::*;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

const CHROMIUM: &str = "/usr/bin/chromium";

#[tokio::test]
async fn the_dashboard_follows_a_crash_and_reconnects_in_a_real_browser() -> anyhow::Result<()> {
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: run scripts/test-env.sh (apt package chromium)"
    );
    let playwright = node_modules().join("playwright-core/index.mjs");
    assert!(
        playwright.exists(),
        "{} is missing: run scripts/test-env.sh",
        playwright.display()
    );
    let dir = TempDir::new("dashboard");
    let log = dir.path().join("spawns.log");
    let docs_log = dir.path().join("docs-spawns.log");
    let mut old = faulty_stdio(&dir.path().join("old-spawns.log"), &[]);
    old["disabled"] = json!(true);
    let pool = Mcpool::start(json!({"mcpServers": {
        "f": faulty_stdio(&log, &[]),
        "docs": faulty_stdio(&docs_log, &[]),
        "old": old,
    }}))
    .await?;
    pool.wait_status("f", "connected", Duration::from_secs(20)).await?;
    pool.wait_status("docs", "connected", Duration::from_secs(20)).await?;

    let out = pool.cli(&["ui", "--no-open"], None).await?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "mcpool ui failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let link = stdout.trim().to_string();
    assert!(
        link.starts_with(&pool.url("/ui/login?code=")),
        "one line, the link: {link}"
    );
    assert!(!link.contains(&pool.token), "the token never goes into a URL");

    let screenshot = match std::env::var_os("MCPOOL_UPDATE_SCREENSHOT") {
        Some(v) if v == "1" => repo_root().join("docs/dashboard.png"),
        _ => dir.path().join("dashboard.png"),
    };
    let profile = dir.path().join("chromium-profile");
    let mut node = Command::new("node")
        .arg(repo_root().join("tests/ui/dashboard.mjs"))
        .env("LINK", &link)
        .env("TOKEN", &pool.token)
        .env("SCREENSHOT", &screenshot)
        .env("USER_DATA_DIR", &profile)
        .env("PLAYWRIGHT_CORE", &playwright)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("cannot run node")?;
    let mut input = node.stdin.take().context("stdin")?;
    let mut lines = BufReader::new(node.stdout.take().context("stdout")?).lines();
    let mut stderr = node.stderr.take().context("stderr")?;
    let stderr_text = tokio::spawn(async move {
        let mut s = String::new();
        let _ = tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut s).await;
        s
    });

    let mut steps = Vec::new();
    let driven = tokio::time::timeout(Duration::from_secs(120), async {
        while let Some(line) = lines.next_line().await? {
            match line.trim() {
                "STEP connected" => {
                    let agent = pool.agent("/mcp").await?;
                    let r = agent.call("f__crash", json!({"message": "disk on fire"})).await?;
                    assert_eq!(r.is_error, Some(true));
                    input.write_all(b"crashed\n").await?;
                    input.flush().await?;
                }
                "STEP targeted" => {
                    std::fs::write(pool.config_path(), "{\"mcpServers\": {")?;
                    input.write_all(b"config-broken\n").await?;
                    input.flush().await?;
                }
                "OK" => return Ok::<_, anyhow::Error>(true),
                _ => {}
            }
            steps.push(line);
        }
        Ok(false)
    })
    .await;
    drop(input);
    let status = tokio::time::timeout(Duration::from_secs(30), node.wait()).await??;
    let errors = stderr_text.await.unwrap_or_default();
    match driven {
        Ok(Ok(true)) if status.success() => {}
        Ok(Ok(_)) => bail!("the browser script failed ({status}) after {steps:?}:\n{errors}"),
        Ok(Err(e)) => bail!("{e:#} after {steps:?}:\n{errors}"),
        Err(_) => bail!("the browser script timed out after {steps:?}:\n{errors}"),
    }
    assert_eq!(
        steps,
        [
            "STEP connected",
            "STEP failed",
            "STEP reconnected",
            "STEP enabled",
            "STEP targeted",
            "STEP config",
            "STEP refused"
        ]
    );
    let png = std::fs::read(&screenshot)?;
    assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");

    // The link cannot be used from outside the browser either.
    let again = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?
        .get(&link)
        .send()
        .await?;
    assert_eq!(again.status(), reqwest::StatusCode::UNAUTHORIZED);
    Ok(())
}
