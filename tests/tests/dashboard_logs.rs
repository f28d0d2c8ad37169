//! A server's log panel in a real headless Chromium against the real
//! binary: the card's Logs button, stderr and mcpool lines told apart and
//! redacted, a line arriving live, the filter, the download. The browser
//! side is tests/ui/logs.mjs. With `MCPOOL_SCREENSHOT_DIR` set the panel's
//! screenshot is written there as `logs.png` (docs/screenshots/ holds the
//! committed one); else into the test's temp dir.

use std::time::Duration;

use mcpool_tests::browser::BrowserScript;
use mcpool_tests::secrets::{new_secret, token_printing_server};
use mcpool_tests::*;
use serde_json::json;

#[tokio::test]
async fn the_log_panel_shows_follows_filters_and_downloads() -> anyhow::Result<()> {
    let dir = TempDir::new("dashboard-logs");
    let secret = new_secret("literal");
    let script = token_printing_server(dir.path())?;
    let pool = Mcpool::start_connected(json!({"mcpServers": {
        "f": {"command": script, "env": {"SERVICE_TOKEN": secret}},
    }}))
    .await?;
    let screenshot = match std::env::var_os("MCPOOL_SCREENSHOT_DIR") {
        Some(d) => std::path::PathBuf::from(d).join("logs.png"),
        None => dir.path().join("logs.png"),
    };
    let browser = BrowserScript::open(
        &pool,
        "logs.mjs",
        &[
            ("SCREENSHOT", screenshot.clone().into_os_string()),
            ("SECRET", std::ffi::OsString::from(&secret)),
        ],
    )
    .await?;
    let steps = browser
        .drive(&pool, Duration::from_secs(90), async |line| {
            if line != "STEP opened" {
                return Ok(None);
            }
            let agent = pool.agent("/mcp").await?;
            let r = agent.call("f__crash", json!({"message": "live-marker"})).await?;
            assert_eq!(r.is_error, Some(true));
            Ok(Some("written"))
        })
        .await?;
    assert_eq!(
        steps,
        ["STEP opened", "STEP live", "STEP filtered", "STEP downloaded", "OK"]
    );
    let png = std::fs::read(&screenshot)?;
    assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
    Ok(())
}
