//! The dashboard's Activity view and plots in a real headless Chromium
//! against the real binary and the real activity file: the log's entries
//! arrive live and the filters narrow them; each card plots its calls per
//! minute and a 24-hour status band with the drop of a crash marked; the
//! per-tool table counts the calls. Neither a secret nor an argument
//! shows. The browser side is tests/ui/history.mjs; its screenshot is the
//! README's (`MCPOOL_HISTORY_SCREENSHOT=docs/activity.png`).

use std::time::Duration;

use mcpool_tests::browser::{screenshot_path, BrowserScript};
use mcpool_tests::secrets::{new_secret, Keyed};
use mcpool_tests::*;
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(20);

#[tokio::test]
async fn the_activity_view_filters_live_entries_and_cards_plot_calls_and_drops() -> anyhow::Result<()> {
    let Keyed { dir, scripts, key } = Keyed::new("dashboard-history", "hist-key").await?;
    let argument = format!("argument-{}", new_secret("history"));
    let mut f = faulty_stdio(&scripts.path().join("f.log"), &[]);
    f["env"] = json!({"API_KEY": "${keyring:hist-key}"});
    let pool = Mcpool::start_in(dir, json!({"mcpServers": {"f": f}}), &[]).await?;
    pool.wait_status("f", "connected", LIMIT).await?;

    let browser = BrowserScript::open(
        &pool,
        "history.mjs",
        &[
            (
                "SCREENSHOT",
                screenshot_path("MCPOOL_HISTORY_SCREENSHOT", pool.dir.path().join("history.png")),
            ),
            ("SECRET", std::ffi::OsString::from(&key)),
            ("ARGUMENT", std::ffi::OsString::from(&argument)),
        ],
    )
    .await?;
    let agent = pool.agent("/mcp").await?;
    let steps = browser
        .drive(&pool, Duration::from_secs(120), async |line| match line {
            "STEP ready" => {
                agent.call("f__echo", json!({"text": argument})).await?;
                agent.call("f__echo", json!({"text": argument})).await?;
                let bad = agent.call("f__add", json!({"a": argument, "b": 1})).await;
                anyhow::ensure!(bad.is_err(), "{bad:?}");
                Ok(Some("called"))
            }
            "STEP counted" => {
                let _ = agent.call("f__crash", json!({"message": "gone"})).await;
                pool.wait_status("f", "failed", LIMIT).await?;
                // The next call reconnects it on demand.
                agent.call("f__echo", json!({"text": "again"})).await?;
                pool.wait_status("f", "connected", LIMIT).await?;
                Ok(Some("crashed"))
            }
            _ => Ok(None),
        })
        .await?;
    assert_eq!(
        steps,
        ["STEP ready", "STEP filtered", "STEP counted", "STEP crashed", "OK"]
    );
    Ok(())
}
