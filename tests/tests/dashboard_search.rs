//! The dashboard's tool search and token costs in a real headless Chromium
//! against the real binary: the listing summary says what `/mcp` sends and a
//! server card its tools' estimated tokens; the search box finds tools as
//! you type (a paraphrase finds `add`, `slow` shows switched off, nothing
//! found says so, an older answer never replaces a newer one); the switch in
//! a result turns `slow` on (written into the config file, listed to agents
//! again); once the config says `toolListing: "search"`, the summary says
//! so without a reload of the page (the reload's `config` event refreshes
//! the dashboard). The browser side is tests/ui/search.mjs.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context};
use mcpool_tests::*;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

const LIMIT: Duration = Duration::from_secs(20);

fn read_config(pool: &Mcpool) -> anyhow::Result<Value> {
    Ok(serde_json::from_str(&std::fs::read_to_string(pool.config_path())?)?)
}

fn disabled_tools(config: &Value) -> Vec<String> {
    config["mcpServers"]["a"]["disabledTools"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn search_and_token_costs_in_a_real_browser() -> anyhow::Result<()> {
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
    let dir = TempDir::new("dashboard-search");
    let mut a = faulty_stdio(&dir.path().join("a.log"), &[]);
    a["disabledTools"] = json!(["slow"]);
    let pool = Mcpool::start(json!({"mcpServers": {"a": a}})).await?;
    pool.wait_status("a", "connected", LIMIT).await?;
    let agent = pool.agent("/mcp").await?;
    let names = agent.tool_names().await?;
    assert!(
        names.contains(&"a__add".to_string()) && !names.contains(&"a__slow".to_string()),
        "slow starts off: {names:?}"
    );
    assert_eq!(disabled_tools(&read_config(&pool)?), ["slow"]);

    let out = pool.cli(&["ui", "--no-open"], None).await?;
    let link = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(link.starts_with(&pool.url("/ui/login?code=")), "{link}");
    let mut node = Command::new("node")
        .arg(repo_root().join("tests/ui/search.mjs"))
        .env("LINK", &link)
        .env("USER_DATA_DIR", dir.path().join("chromium-profile"))
        .env(
            "SCREENSHOT",
            std::env::var_os("MCPOOL_SEARCH_SCREENSHOT").unwrap_or_else(|| dir.path().join("search.png").into()),
        )
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
    let errors = tokio::spawn(async move {
        let mut s = String::new();
        let _ = tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut s).await;
        s
    });
    let mut steps = Vec::new();
    let driven = tokio::time::timeout(Duration::from_secs(120), async {
        while let Some(line) = lines.next_line().await? {
            if line.trim() == "STEP switched" {
                // The switch in the result reached the config file and the
                // agents; then the file asks for the search listing (its
                // reload sends the `config` event the dashboard follows).
                let mut config = read_config(&pool)?;
                let off = disabled_tools(&config);
                if off.contains(&"slow".to_string()) {
                    bail!("slow is still disabled in the config file: {config}");
                }
                let names = pool.agent("/mcp").await?.tool_names().await?;
                if !names.contains(&"a__slow".to_string()) {
                    bail!("agents do not see a__slow after the switch: {names:?}");
                }
                config["toolListing"] = json!("search");
                std::fs::write(pool.config_path(), serde_json::to_vec_pretty(&config)?)?;
                let deadline = tokio::time::Instant::now() + LIMIT;
                loop {
                    let listing = pool.get_json("/api/tools/listing").await?;
                    if listing["endpoints"][0]["sent"] == "search" {
                        break;
                    }
                    if tokio::time::Instant::now() > deadline {
                        bail!("the config's toolListing never applied: {listing}");
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                input.write_all(b"search-mode\n").await?;
                input.flush().await?;
            }
            let done = line.trim() == "OK";
            steps.push(line);
            if done {
                break;
            }
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
    assert_eq!(
        steps,
        [
            "STEP listed",
            "STEP found",
            "STEP disabled",
            "STEP none",
            "STEP stale",
            "STEP switched",
            "STEP search-mode",
            "OK"
        ]
    );

    // What the browser did is in the file, and the server is on there.
    let config = read_config(&pool)?;
    assert!(!disabled_tools(&config).contains(&"slow".to_string()), "{config}");
    assert_eq!(config["toolListing"], "search");
    let server = pool.server("a").await?;
    let slow = server["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "slow").cloned())
        .context("slow among a's tools")?;
    assert_eq!(slow["enabled"], true, "{server}");
    let all = pool.agent("/mcp?toolListing=all").await?.tool_names().await?;
    assert!(all.contains(&"a__slow".to_string()), "{all:?}");
    Ok(())
}
