//! The dashboard's live parts in a real headless Chromium against the real
//! binary: a config problem at the top (file, server, field), "Connected …
//! ago", a local server's stderr tail folded and redacted, a retry
//! countdown that ticks during a 429's backoff, and an agent's call showing
//! up in Recent calls without its argument. The browser side is
//! tests/ui/activity.mjs.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context};
use mcpool_tests::secrets::new_secret;
use mcpool_tests::*;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

const LIMIT: Duration = Duration::from_secs(20);

#[tokio::test]
async fn countdown_stderr_last_connected_and_calls_in_a_real_browser() -> anyhow::Result<()> {
    assert!(
        Path::new("/usr/bin/chromium").exists(),
        "chromium is missing: run scripts/test-env.sh"
    );
    let playwright = node_modules().join("playwright-core/index.mjs");
    assert!(
        playwright.exists(),
        "{} is missing: run scripts/test-env.sh",
        playwright.display()
    );
    let dir = TempDir::new("dashboard-activity");
    let secret = new_secret("literal");
    let argument = format!("argument-{}", new_secret("argument"));
    let script = dir.path().join("f.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"starting with SERVICE_TOKEN=$SERVICE_TOKEN\" >&2\necho 'listening on stdio' >&2\nexec '{}' stdio\n",
            bin("mcpool-faulty").display()
        ),
    )?;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))?;
    let (_limited, limited_url) = faulty_http(&dir.path().join("limited.log"), &[]).await?;
    control(&limited_url, json!({"mode": "429", "retry_after": 120})).await?;
    let pool = Mcpool::start(json!({"mcpServers": {
        "f": {"command": script, "env": {"SERVICE_TOKEN": secret}},
        "limited": {"url": limited_url},
        "broken": {"command": "x", "timeout": "soon"},
    }}))
    .await?;
    pool.wait_status("f", "connected", LIMIT).await?;
    pool.wait_status("limited", "failed", LIMIT).await?;

    let out = pool.cli(&["ui", "--no-open"], None).await?;
    let link = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(link.starts_with(&pool.url("/ui/login?code=")), "{link}");
    let mut node = Command::new("node")
        .arg(repo_root().join("tests/ui/activity.mjs"))
        .env("LINK", &link)
        .env("USER_DATA_DIR", dir.path().join("chromium-profile"))
        .env(
            "SCREENSHOT",
            std::env::var_os("MCPOOL_ACTIVITY_SCREENSHOT").unwrap_or_else(|| dir.path().join("activity.png").into()),
        )
        .env("PLAYWRIGHT_CORE", &playwright)
        .env("SECRET", &secret)
        .env("ARGUMENT", &argument)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("cannot run node")?;
    let mut input = node.stdin.take().context("stdin")?;
    let mut lines = BufReader::new(node.stdout.take().context("stdout")?).lines();
    let mut stderr = node.stderr.take().context("stderr")?;
    let errors = tokio::spawn(async move {
        let mut s = String::new();
        let _ = tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut s).await;
        s
    });
    let mut steps = Vec::new();
    let driven = tokio::time::timeout(Duration::from_secs(90), async {
        while let Some(line) = lines.next_line().await? {
            if line.trim() == "STEP ready" {
                let agent = pool.agent("/mcp").await?;
                let r = agent.call("f__echo", json!({"text": argument})).await?;
                assert_eq!(text(&r), argument);
                input.write_all(b"called\n").await?;
                input.flush().await?;
            }
            steps.push(line);
        }
        Ok::<_, anyhow::Error>(())
    })
    .await;
    drop(input);
    let status = tokio::time::timeout(Duration::from_secs(30), node.wait()).await??;
    let errors = errors.await.unwrap_or_default();
    match driven {
        Ok(Ok(())) if status.success() => {}
        Ok(Ok(())) => bail!("the browser script failed ({status}) after {steps:?}:\n{errors}"),
        Ok(Err(e)) => bail!("{e:#} after {steps:?}:\n{errors}"),
        Err(_) => bail!("the browser script timed out after {steps:?}:\n{errors}"),
    }
    assert_eq!(steps, ["STEP ready", "STEP called", "OK"]);
    Ok(())
}
