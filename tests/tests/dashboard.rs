//! behaviour.md §2 "web UI": the dashboard in a real headless Chromium against the
//! real binary. `mcpool ui --no-open` gives a one-time link; the browser
//! signs in with it, follows a crash of a stdio server live (failed, stderr
//! tail, tools kept), reconnects it with the card's button, shows a config
//! file that stopped parsing, and a second use of the link is refused. The browser side is tests/ui/dashboard.mjs.
//!
//! The screenshot goes to the test's temp dir; with
//! `MCPOOL_UPDATE_SCREENSHOT=1` it replaces docs/dashboard.png.

use std::time::Duration;

use mcpool_tests::browser::BrowserScript;
use mcpool_tests::*;
use serde_json::json;

#[tokio::test]
async fn the_dashboard_follows_a_crash_and_reconnects_in_a_real_browser() -> anyhow::Result<()> {
    let (dir, log) = TempDir::with_spawn_log("dashboard");
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

    let screenshot = match std::env::var_os("MCPOOL_UPDATE_SCREENSHOT") {
        Some(v) if v == "1" => repo_root().join("docs/dashboard.png"),
        _ => dir.path().join("dashboard.png"),
    };
    let env = [
        ("TOKEN", pool.token.clone().into()),
        ("SCREENSHOT", screenshot.clone().into()),
    ];
    let browser = BrowserScript::open(&pool, "dashboard.mjs", &env).await?;
    let link = browser.link.clone();
    assert!(!link.contains(&pool.token), "the token never goes into a URL");
    let steps = browser
        .drive(&pool, Duration::from_secs(120), async |line| match line {
            "STEP connected" => {
                let agent = pool.agent("/mcp").await?;
                let r = agent.call("f__crash", json!({"message": "disk on fire"})).await?;
                assert_eq!(r.is_error, Some(true));
                Ok(Some("crashed"))
            }
            "STEP targeted" => {
                std::fs::write(pool.config_path(), "{\"mcpServers\": {")?;
                Ok(Some("config-broken"))
            }
            _ => Ok(None),
        })
        .await?;
    assert_eq!(
        steps,
        [
            "STEP connected",
            "STEP failed",
            "STEP reconnected",
            "STEP enabled",
            "STEP targeted",
            "STEP config",
            "STEP refused",
            "OK"
        ]
    );
    let png = std::fs::read(&screenshot)?;
    assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");

    // The link cannot be used from outside the browser either.
    let again = get_unfollowed(&link).await?;
    assert_eq!(again.status(), reqwest::StatusCode::UNAUTHORIZED);
    Ok(())
}
