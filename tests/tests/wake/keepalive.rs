//! Rule 12: an idle remote connection is pinged; a failed ping is a drop
//! with the tools kept, not a hang.

use std::time::Duration;

use mcpool_tests::*;
use serde_json::json;

use super::{error_of, tools_kept};

#[tokio::test]
async fn a_failed_keepalive_ping_of_an_idle_connection_is_a_drop_with_tools_kept() -> anyhow::Result<()> {
    let dir = TempDir::new("keepalive");
    let (_faulty, url) = faulty_http(&dir.path().join("r.log"), &[]).await?;
    let pool = Mcpool::start_with(
        json!({"mcpServers": {"r": {"url": url}}}),
        &[
            ("MCPOOL_KEEPALIVE_SECS", "1"),
            // No system bus: only the keepalive may notice anything.
            ("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/nonexistent/mcpool-test-bus"),
        ],
    )
    .await?;
    pool.wait_status("r", "connected", Duration::from_secs(20)).await?;
    control(&url, json!({"mode": "500"})).await?;
    let s = pool.wait_status("r", "failed", Duration::from_secs(30)).await?;
    let error = error_of(&s);
    assert!(error.contains("keepalive ping"), "{error}\n{}", pool.logs());
    assert!(tools_kept(&s), "{s}");
    assert!(pool.logs().contains("connection dropped"), "{}", pool.logs());

    // A drop, not a verdict: the next call reconnects.
    control(&url, json!({"mode": "ok"})).await?;
    let agent = pool.agent("/mcp").await?;
    let r = agent.call("r__echo", json!({"text": "back"})).await?;
    assert_eq!(text(&r), "back");
    assert_eq!(pool.server("r").await?["status"], "connected");
    Ok(())
}
