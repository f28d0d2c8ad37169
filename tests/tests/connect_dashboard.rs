//! The dashboard's "Connect an agent" against the real binary: `GET
//! /api/connect` says which clients are on this machine, `POST
//! /api/connect/{client}` adds mcpool to that client's config (a backup
//! first, once), and the "Add to Cursor" button does it in a real headless
//! Chromium (tests/ui/connect.mjs).

use std::path::{Path, PathBuf};
use std::time::Duration;

use mcpool_tests::browser::BrowserScript;
use mcpool_tests::*;
use serde_json::{json, Value};

const CURSOR_CONFIG: &str =
    "{\n  // mine\n  \"mcpServers\": {\n    \"notes\": { \"command\": \"uvx\", \"args\": [\"notes-mcp\"] }\n  }\n}\n";

fn backups(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with("mcp.json.mcpool-backup-"))
                .count()
        })
        .unwrap_or(0)
}

async fn post(pool: &Mcpool, path: &str) -> anyhow::Result<(reqwest::StatusCode, Value)> {
    let r = reqwest::Client::new()
        .post(pool.url(path))
        .bearer_auth(pool.control()?)
        .send()
        .await?;
    Ok((r.status(), r.json().await?))
}

/// A fresh home dir `tag` where Cursor is installed with [`CURSOR_CONFIG`],
/// and Cursor's dir in it.
fn home_with_cursor(tag: &str) -> anyhow::Result<(TempDir, PathBuf)> {
    let home = TempDir::new(tag);
    let cursor_dir = home.path().join(".cursor");
    std::fs::create_dir_all(&cursor_dir)?;
    std::fs::write(cursor_dir.join("mcp.json"), CURSOR_CONFIG)?;
    Ok((home, cursor_dir))
}

#[tokio::test]
async fn the_api_adds_mcpool_to_a_client_found_here() -> anyhow::Result<()> {
    let (home, cursor_dir) = home_with_cursor("connect-api-home")?;
    std::fs::create_dir_all(home.path().join(".gemini"))?;
    std::fs::write(home.path().join(".gemini/settings.json"), "{\n  \"mcpServers\": {\n")?;
    let home_str = home.path().display().to_string();
    let pool = Mcpool::start_with(json!({"mcpServers": {}}), &[("HOME", &home_str)]).await?;

    let v = pool.get_json("/api/connect").await?;
    let found = |client: &str| {
        v["snippets"]
            .as_array()
            .and_then(|a| a.iter().find(|s| s["client"] == client))
            .map(|s| s["found"].clone())
    };
    assert_eq!(found("cursor"), Some(json!(true)), "{v}");
    assert_eq!(found("gemini"), Some(json!(true)), "{v}");
    assert_eq!(found("codex"), Some(json!(false)), "{v}");
    assert_eq!(v["snippets"].as_array().map(Vec::len), Some(7), "{v}");

    let (status, body) = post(&pool, "/api/connect/cursor").await?;
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    assert_eq!(body["changes"], json!(["added mcpool"]), "{body}");
    assert!(
        !body.to_string().contains(&pool.token),
        "the answer never holds the token: {body}"
    );
    let written = std::fs::read_to_string(cursor_dir.join("mcp.json"))?;
    assert!(
        written.starts_with("{\n  // mine\n  \"mcpServers\": {\n    \"notes\""),
        "{written}"
    );
    assert!(
        written.contains(&format!("\"Authorization\": \"Bearer {}\"", pool.token)),
        "{written}"
    );
    assert!(written.contains(&pool.url("/mcp")), "{written}");
    assert_eq!(backups(&cursor_dir), 1);
    let (status, body) = post(&pool, "/api/connect/cursor").await?;
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    assert_eq!(body["up_to_date"], true, "{body}");
    assert_eq!(backups(&cursor_dir), 1);

    // A file that does not parse is named and left alone; an unknown client is named.
    let (status, body) = post(&pool, "/api/connect/gemini").await?;
    assert_eq!(status, reqwest::StatusCode::CONFLICT, "{body}");
    let error = body["error"].as_str().unwrap_or("");
    assert!(error.contains("settings.json is not valid JSON (line 2"), "{error}");
    assert_eq!(
        std::fs::read_to_string(home.path().join(".gemini/settings.json"))?,
        "{\n  \"mcpServers\": {\n"
    );
    let (status, body) = post(&pool, "/api/connect/notepad").await?;
    assert_eq!(status, reqwest::StatusCode::NOT_FOUND, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap_or("")
            .contains("unknown client 'notepad'"),
        "{body}"
    );
    Ok(())
}

#[tokio::test]
async fn the_add_button_writes_the_config_in_a_real_browser() -> anyhow::Result<()> {
    let (home, cursor_dir) = home_with_cursor("connect-ui-home")?;
    let home_str = home.path().display().to_string();
    let pool = Mcpool::start_with(json!({"mcpServers": {}}), &[("HOME", &home_str)]).await?;
    let said = BrowserScript::run(
        &pool,
        "connect.mjs",
        &[("TOKEN", pool.token.clone().into())],
        Duration::from_secs(120),
    )
    .await?;
    assert!(
        said.iter().any(|l| l.contains("OK")),
        "the browser script said {said:?}"
    );
    let written = std::fs::read_to_string(cursor_dir.join("mcp.json"))?;
    assert!(written.contains(&format!("Bearer {}", pool.token)), "{written}");
    assert_eq!(backups(&cursor_dir), 1);
    Ok(())
}
