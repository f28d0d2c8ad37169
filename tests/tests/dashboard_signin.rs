//! Signing in from the dashboard in a real headless Chromium against the
//! real binary and the fault server's OAuth mode (an authorization server
//! that approves at once): the card's "Sign in" opens the authorization page
//! in a new tab, the browser comes back through mcpool's loopback redirect,
//! and the server connects; "Sign out" forgets the tokens. The browser side
//! is tests/ui/signin.mjs.

use std::time::Duration;

use mcpool_tests::browser::BrowserScript;
use mcpool_tests::*;
use serde_json::json;

#[tokio::test]
async fn the_dashboard_signs_a_server_in_through_the_browser() -> anyhow::Result<()> {
    let scratch = TempDir::new("dashboard-signin");
    let (_faulty, url) = faulty_http(&scratch.path().join("spawn.log"), &["--oauth"]).await?;
    let pool = Mcpool::start(json!({"mcpServers": {"remote": {"url": url}}})).await?;
    pool.wait_status("remote", "needs_auth", Duration::from_secs(20))
        .await?;
    let steps = BrowserScript::run(
        &pool,
        "signin.mjs",
        &[("SERVER", "remote".into())],
        Duration::from_secs(120),
    )
    .await?;
    assert_eq!(
        steps,
        [
            "STEP needs-sign-in",
            "STEP redirected",
            "STEP connected",
            "STEP signed-out",
            "OK"
        ]
    );
    let server = pool.server("remote").await?;
    assert_eq!(server["status"], "needs_auth", "{server}");
    assert_eq!(server["auth"]["signed_in"], false, "{server}");
    Ok(())
}
