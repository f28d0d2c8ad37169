//! The dashboard's tool search and token costs in a real headless Chromium
//! against the real binary: the listing summary says what `/mcp` sends and a
//! server card its tools' estimated tokens; the search box finds tools as
//! you type (a paraphrase finds `add`, `slow` shows switched off, nothing
//! found says so, an older answer never replaces a newer one); the switch in
//! a result turns `slow` on (written into the config file, listed to agents
//! again); once the config says `toolListing: "search"`, the summary says
//! so without a reload of the page (the reload's `config` event refreshes
//! the dashboard). The browser side is tests/ui/search.mjs.

use std::time::Duration;

use anyhow::{bail, Context};
use mcpool_tests::browser::{screenshot_path, BrowserScript};
use mcpool_tests::*;
use serde_json::{json, Value};

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
    let dir = TempDir::new("dashboard-search");
    let mut a = faulty_stdio(&dir.path().join("a.log"), &[]);
    a["disabledTools"] = json!(["slow"]);
    let pool = Mcpool::start_connected(json!({"mcpServers": {"a": a}})).await?;
    let agent = pool.agent("/mcp").await?;
    let names = agent.tool_names().await?;
    assert!(
        names.contains(&"a__add".to_string()) && !names.contains(&"a__slow".to_string()),
        "slow starts off: {names:?}"
    );
    assert_eq!(disabled_tools(&read_config(&pool)?), ["slow"]);

    let browser = BrowserScript::open(
        &pool,
        "search.mjs",
        &[(
            "SCREENSHOT",
            screenshot_path("MCPOOL_SEARCH_SCREENSHOT", dir.path().join("search.png")),
        )],
    )
    .await?;
    let steps = browser
        .drive(&pool, Duration::from_secs(120), async |line| {
            if line == "STEP switched" {
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
                eventually(
                    LIMIT,
                    "the config's toolListing applied",
                    async || pool.get_json("/api/tools/listing").await,
                    |listing| listing["endpoints"][0]["sent"] == "search",
                )
                .await?;
                return Ok(Some("search-mode"));
            }
            Ok(None)
        })
        .await?;
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
