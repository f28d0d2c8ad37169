//! Sign-in end to end: the real `mcpool serve`, the fault server's OAuth mode
//! (an authorization server beside a protected `/mcp`), and `mcpool login`
//! with `BROWSER` set to a script that follows the redirect as a user
//! clicking "Allow" would.

use std::path::{Path, PathBuf};
use std::time::Duration;

use mcpool_tests::{faulty_http, files_under, mcpool_cli, Mcpool, TempDir};
use serde_json::{json, Value};

async fn oauth(url: &str, path: &str, body: Option<Value>) -> anyhow::Result<Value> {
    let base = url.trim_end_matches("/mcp");
    let client = reqwest::Client::new();
    let request = match body {
        Some(b) => client.post(format!("{base}{path}")).json(&b),
        None => client.get(format!("{base}{path}")),
    };
    Ok(request.send().await?.error_for_status()?.json().await?)
}

/// Files under `dir` whose bytes contain `needle`.
fn files_containing(dir: &Path, needle: &str) -> Vec<String> {
    let holds =
        |path: &PathBuf| std::fs::read(path).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes()));
    files_under(dir)
        .iter()
        .filter(|path| holds(path))
        .map(|path| path.display().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn sign_in_stay_signed_in_and_sign_out() -> anyhow::Result<()> {
    let scratch = TempDir::new("oauth-faulty");
    let (_faulty, url) = faulty_http(&scratch.path().join("spawn.log"), &["--oauth"]).await?;
    let browser = scratch.path().join("browser.sh");
    std::fs::write(&browser, "#!/bin/sh\nexec curl -sSL -o /dev/null \"$1\"\n")?;
    std::fs::set_permissions(&browser, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    let browser = browser.display().to_string();

    let mcpool = Mcpool::start(json!({"mcpServers": {"remote": {"url": url}}})).await?;
    let listen = format!("127.0.0.1:{}", mcpool.port);
    let with_browser = [
        ("BROWSER", browser.as_str()),
        ("MCPOOL_LISTEN", listen.as_str()),
        ("MCPOOL_TOKEN", mcpool.token.as_str()),
    ];
    let limit = Duration::from_secs(20);
    let first = mcpool.wait_status("remote", "needs_auth", limit).await?;
    assert!(first["auth"]["signed_in"] == false, "{first}");

    // Short-lived tokens from the first sign-in, to cross an expiry later.
    oauth(&url, "/oauth/control", Some(json!({"lifetime_secs": 4}))).await?;
    let login = mcpool_cli(mcpool.dir.path(), &["login", "remote"], None, &with_browser).await?;
    let said = String::from_utf8_lossy(&login.stdout).to_string() + &String::from_utf8_lossy(&login.stderr);
    assert!(login.status.success(), "{said}\n{}", mcpool.logs());
    assert!(said.contains("Signed in to 'remote'; it is connected with"), "{said}");
    let server = mcpool.server("remote").await?;
    assert_eq!(server["status"], "connected", "{server}");
    assert_eq!(server["auth"]["signed_in"], true);
    assert!(!server.to_string().contains("faulty-access-"), "{server}");
    let agent = mcpool.agent("/mcp").await?;
    assert!(agent.tool_names().await?.iter().any(|t| t == "remote__echo"));
    let stats = oauth(&url, "/oauth/stats", None).await?;
    assert_eq!(
        (stats["registrations"].as_u64(), stats["code_exchanges"].as_u64()),
        (Some(1), Some(1)),
        "{stats}"
    );

    // 10 parallel calls across the expiry: one refresh at the server.
    oauth(&url, "/oauth/control", Some(json!({"lifetime_secs": 3600}))).await?;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let calls = (0..10).map(|i| agent.call("remote__echo", json!({"text": format!("call {i}")})));
    for result in futures::future::join_all(calls).await {
        let result = result?;
        assert_ne!(result.is_error, Some(true), "{result:?}");
    }
    let stats = oauth(&url, "/oauth/stats", None).await?;
    assert_eq!(stats["refreshes"], 1, "{stats}\n{}", mcpool.logs());

    // No token anywhere on disk: data, cache and config dirs.
    for hit in ["faulty-access-", "faulty-refresh-"] {
        let found = files_containing(mcpool.dir.path(), hit);
        assert!(found.is_empty(), "{hit} found in {found:?}");
        assert!(!mcpool.logs().contains(hit), "{hit} in the log");
    }

    // The server ends every token and refuses the refresh: needs_auth once,
    // with one refresh tried and no loop.
    oauth(
        &url,
        "/oauth/control",
        Some(json!({"refuse_refresh": true, "expire_all": true})),
    )
    .await?;
    let refused = agent.call("remote__echo", json!({"text": "after"})).await;
    assert!(format!("{refused:?}").contains("sign"), "{refused:?}");
    mcpool.wait_status("remote", "needs_auth", limit).await?;
    for _ in 0..3 {
        let _ = agent.call("remote__echo", json!({"text": "again"})).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let stats = oauth(&url, "/oauth/stats", None).await?;
    assert_eq!(stats["refreshes"], 2, "{stats}");
    assert_eq!(
        mcpool.logs().matches("server needs sign-in").count(),
        2,
        "{}",
        mcpool.logs()
    );

    // Sign in again, then out: needs_auth.
    oauth(&url, "/oauth/control", Some(json!({"refuse_refresh": false}))).await?;
    let again = mcpool_cli(mcpool.dir.path(), &["login", "remote"], None, &with_browser).await?;
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    let stats = oauth(&url, "/oauth/stats", None).await?;
    assert_eq!(stats["registrations"], 1, "the registered client is reused: {stats}");
    let logout = mcpool.cli(&["logout", "remote"], None).await?;
    assert!(logout.status.success(), "{}", String::from_utf8_lossy(&logout.stderr));
    let out = mcpool.wait_status("remote", "needs_auth", limit).await?;
    assert_eq!(out["auth"]["signed_in"], false, "{out}");
    Ok(())
}
