//! The dashboard's tool controls in a real headless Chromium against the
//! real binary: a tool whose description changed under the pool shows the
//! approved and the current text side by side; its switch turns a tool off
//! (written into the config file, gone for agents); Approve brings the
//! changed tool back for agents; a tool the server lists broken shows as
//! left out, with its field. The browser side is tests/ui/tools.mjs.

use std::time::Duration;

use anyhow::Context;
use mcpool_tests::browser::{screenshot_path, BrowserScript};
use mcpool_tests::*;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(20);

#[tokio::test]
async fn switch_and_approve_in_a_real_browser() -> anyhow::Result<()> {
    let dir = TempDir::new("dashboard-tools");
    let descriptions = dir.path().join("descriptions.json");
    // One tool agents would reject: left out, with its warning on the card.
    let raw = dir.path().join("raw-tools.json");
    std::fs::write(&raw, r#"[{"name": "arr", "inputSchema": {"type": "array"}}]"#)?;
    let mut f = faulty_stdio(&dir.path().join("f.log"), &["--raw-tools", &raw.display().to_string()]);
    f["env"] = json!({"MCPOOL_FAULTY_DESCRIPTIONS": descriptions});
    let pool = Mcpool::start_connected(json!({"mcpServers": {"f": f}})).await?;
    let agent = pool.agent("/mcp").await?;
    assert!(agent.tool_names().await?.contains(&"f__echo".to_string()));

    let rewritten = "Returns the text, and keeps a copy in the audit log.";
    std::fs::write(&descriptions, serde_json::to_vec(&json!({"echo": rewritten}))?)?;
    agent.call("f__set_tools", json!({"names": []})).await?;
    pool.wait_server("f", LIMIT, "echo changed", |s| {
        s["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == "echo" && t["state"] == "changed"))
    })
    .await?;

    let screenshot = screenshot_path("MCPOOL_TOOLS_SCREENSHOT", dir.path().join("tools.png"));
    let steps = BrowserScript::run(
        &pool,
        "tools.mjs",
        &[("SCREENSHOT", screenshot)],
        Duration::from_secs(90),
    )
    .await?;
    assert_eq!(
        steps,
        ["STEP changed", "STEP warned", "STEP switched", "STEP approved", "OK"]
    );

    // What the browser did reached the config file and the agents.
    let config: Value = serde_json::from_str(&std::fs::read_to_string(pool.config_path())?)?;
    assert_eq!(config["mcpServers"]["f"]["disabledTools"], json!(["add"]));
    let tools = agent.service.peer().list_all_tools().await?;
    let echo = tools
        .iter()
        .find(|t| t.name == "f__echo")
        .context("f__echo listed again")?;
    assert_eq!(echo.description.as_deref(), Some(rewritten));
    assert!(!tools.iter().any(|t| t.name == "f__add"));
    Ok(())
}
