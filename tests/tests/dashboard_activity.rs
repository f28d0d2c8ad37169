//! The dashboard's live parts in a real headless Chromium against the real
//! binary: a config problem at the top (file, server, field), "Connected …
//! ago", a local server's stderr tail folded and redacted, a retry
//! countdown that ticks during a 429's backoff, and an agent's call showing
//! up in Recent calls without its argument. The browser side is
//! tests/ui/activity.mjs.

use std::time::Duration;

use mcpool_tests::browser::{screenshot_path, BrowserScript};
use mcpool_tests::secrets::{new_secret, token_printing_server};
use mcpool_tests::*;
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(20);

#[tokio::test]
async fn countdown_stderr_last_connected_and_calls_in_a_real_browser() -> anyhow::Result<()> {
    let dir = TempDir::new("dashboard-activity");
    let secret = new_secret("literal");
    let argument = format!("argument-{}", new_secret("argument"));
    let script = token_printing_server(dir.path())?;
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

    let browser = BrowserScript::open(
        &pool,
        "activity.mjs",
        &[
            (
                "SCREENSHOT",
                screenshot_path("MCPOOL_ACTIVITY_SCREENSHOT", dir.path().join("activity.png")),
            ),
            ("SECRET", std::ffi::OsString::from(&secret)),
            ("ARGUMENT", std::ffi::OsString::from(&argument)),
        ],
    )
    .await?;
    let steps = browser
        .drive(&pool, Duration::from_secs(90), async |line| {
            if line != "STEP ready" {
                return Ok(None);
            }
            let agent = pool.agent("/mcp").await?;
            let r = agent.call("f__echo", json!({"text": argument})).await?;
            assert_eq!(text(&r), argument);
            Ok(Some("called"))
        })
        .await?;
    assert_eq!(steps, ["STEP ready", "STEP called", "OK"]);
    Ok(())
}
