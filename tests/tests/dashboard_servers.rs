//! The dashboard's server editing in a real headless Chromium against the
//! real binary, the real keyring and a config file with comments: an empty
//! command, a name clash and a bad URL each show their sentence next to
//! the field and write nothing; Add server with a secret env value, Test
//! (its tools), Save (the card connects: the server starts only with the
//! secret, which it got from the keyring), Edit of its args, an edit
//! refused because the file changed behind the open form (then reloaded),
//! Duplicate and Remove with its keyring entry; then the official
//! server-everything from npm added the same way. The file holds only a `${keyring:…}`
//! reference, keeps its comments through every write, and gets a backup.
//! The browser side is tests/ui/servers.mjs.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{ensure, Context};
use mcpool_core::secrets::{Keyring, SecretStore};
use mcpool_tests::browser::{screenshot_path, BrowserScript};
use mcpool_tests::secrets::*;
use mcpool_tests::*;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(20);
const TOP_COMMENT: &str = "// the dashboard's edits keep this comment";
const BLOCK_COMMENT: &str = "/* and this one, about server a */";
const LINE_COMMENT: &str = "// a's own line";

/// The config file, JSONC: comments and a trailing comma.
fn config_text(a: &Value) -> anyhow::Result<String> {
    Ok(format!(
        "{TOP_COMMENT}\n{{\n  {BLOCK_COMMENT}\n  \"mcpServers\": {{\n    \"a\": {}, {LINE_COMMENT}\n  }},\n}}\n",
        serde_json::to_string(a)?
    ))
}

fn config(pool: &Mcpool) -> anyhow::Result<(String, Value)> {
    let text = std::fs::read_to_string(pool.config_path())?;
    let value = mcpool_core::jsonc::value(&text).with_context(|| format!("the config file:\n{text}"))?;
    Ok((text, value))
}

fn assert_comments(text: &str) {
    for comment in [TOP_COMMENT, BLOCK_COMMENT] {
        assert!(text.contains(comment), "the file lost {comment:?}:\n{text}");
    }
}

/// Files beside the config file that look like its backups.
fn backups(pool: &Mcpool) -> Vec<PathBuf> {
    let config = pool.config_path();
    let Some(dir) = config.parent() else { return Vec::new() };
    let name = config
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("config.json")
        .to_string();
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    let file = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
                    file != name && file.starts_with(&name) && file.contains("bak")
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

/// The keyring name that `${keyring:NAME}` in `value` refers to.
fn reference(value: &Value) -> anyhow::Result<String> {
    let text = value.as_str().context("a string")?;
    let name = text
        .strip_prefix("${keyring:")
        .and_then(|rest| rest.strip_suffix('}'))
        .with_context(|| format!("not a keyring reference: {text}"))?;
    Ok(name.to_string())
}

#[tokio::test]
async fn add_edit_and_remove_a_server_in_a_real_browser() -> anyhow::Result<()> {
    let bin_dir = TempDir::new("dashboard-servers-bin");
    let dir = TempDir::new("dashboard-servers");
    let secret = new_secret("dashboard");
    let (keyed, _log) = key_checking_server(bin_dir.path(), "keyed", &secret, false)?;
    let a = faulty_stdio(&dir.path().join("a.log"), &[]);
    let original = config_text(&a)?;
    std::fs::write(dir.path().join("config.json"), &original)?;
    let profile = profile_for(dir.path());
    let keyring = Keyring::for_profile(&profile);
    let pool = Mcpool::start_in_dir(dir, &[]).await?;
    pool.wait_status("a", "connected", LIMIT).await?;

    let screenshot = screenshot_path("MCPOOL_SERVERS_SCREENSHOT", bin_dir.path().join("servers.png"));
    let browser = BrowserScript::open(
        &pool,
        "servers.mjs",
        &[
            ("SCREENSHOT", screenshot),
            ("COMMAND", keyed.clone().into()),
            ("SECRET", secret.clone().into()),
            ("EVERYTHING", everything_js().into()),
        ],
    )
    .await?;
    let mut said = Value::Null;
    let mut key_name = String::new();
    let steps = browser
        .drive(&pool, Duration::from_secs(150), async |line| {
            if let Some(json) = line.strip_prefix("SAID ") {
                said = serde_json::from_str(json)?;
                return Ok(None);
            }
            match line {
                "STEP errors" => {
                    // Three refused saves wrote nothing: not the file, not a
                    // backup, not the keyring.
                    let now = std::fs::read_to_string(pool.config_path())?;
                    ensure!(now == original, "a refused save changed the file:\n{now}");
                    ensure!(
                        backups(&pool).is_empty(),
                        "a refused save made a backup: {:?}",
                        backups(&pool)
                    );
                    let listed = pool.cli(&["secret", "list"], None).await?;
                    ensure!(listed.stdout.is_empty(), "{}", String::from_utf8_lossy(&listed.stdout));
                }
                "STEP added" => {
                    let (text, value) = config(&pool)?;
                    assert_clean("the config file", text.as_bytes(), &[&secret]);
                    assert_comments(&text);
                    let k = &value["mcpServers"]["k"];
                    ensure!(k["command"] == json!(keyed), "{text}");
                    ensure!(k["args"] == json!(["--extra-tools", "1"]), "{text}");
                    ensure!(k["sandbox"] == "off", "the sandbox chosen: {text}");
                    key_name = reference(&k["env"]["API_KEY"]).with_context(|| text.clone())?;
                    let stored = keyring.get(&key_name)?;
                    ensure!(
                        stored.as_deref() == Some(secret.as_str()),
                        "the keyring holds {key_name}"
                    );
                    ensure!(
                        !backups(&pool).is_empty(),
                        "no backup beside {}",
                        pool.config_path().display()
                    );
                    ensure!(value["mcpServers"]["a"] == a, "a is unchanged: {text}");
                    let k = pool.server("k").await?;
                    ensure!(k["status"] == "connected", "{k}");
                }
                "STEP edited" => {
                    let (text, value) = config(&pool)?;
                    assert_clean("the config file", text.as_bytes(), &[&secret]);
                    assert_comments(&text);
                    let k = &value["mcpServers"]["k"];
                    ensure!(k["args"] == json!(["--extra-tools", "2"]), "{text}");
                    ensure!(
                        reference(&k["env"]["API_KEY"])? == key_name,
                        "the reference stays: {text}"
                    );
                    ensure!(keyring.get(&key_name)?.as_deref() == Some(secret.as_str()));
                }
                "STEP editing" => {
                    // A hand edit of k behind the open form: 2 becomes 3.
                    let text = std::fs::read_to_string(pool.config_path())?;
                    let at = text.find("\"--extra-tools\"").context("k's args")?;
                    let two = at + text[at..].find("\"2\"").context("k's 2")?;
                    let edited = format!("{}\"3\"{}", &text[..two], &text[two + 3..]);
                    std::fs::write(pool.config_path(), edited)?;
                    pool.wait_server("k", LIMIT, "the hand edit applied", |k| {
                        let listed = k["tools"]
                            .as_array()
                            .is_some_and(|t| t.iter().any(|t| t["name"] == "extra_2"));
                        listed && k["status"] == "connected"
                    })
                    .await?;
                }
                "STEP everything" => {
                    let (text, value) = config(&pool)?;
                    assert_clean("the config file", text.as_bytes(), &[&secret]);
                    assert_comments(&text);
                    let e = &value["mcpServers"]["everything"];
                    ensure!(e["command"] == "node", "{text}");
                    ensure!(e["sandbox"] == "standard", "a new server's default: {text}");
                    let name = reference(&e["env"]["EVERYTHING_TOKEN"]).with_context(|| text.clone())?;
                    ensure!(
                        keyring.get(&name)?.as_deref() == Some(secret.as_str()),
                        "the keyring holds {name}"
                    );
                    let s = pool.server("everything").await?;
                    ensure!(s["status"] == "connected", "{s}");
                    ensure!(s["sandbox"]["state"] == "enforced", "{s}");
                }
                "STEP removed" => {
                    let (text, value) = config(&pool)?;
                    assert_comments(&text);
                    ensure!(value["mcpServers"].get("k").is_none(), "k is still there: {text}");
                    ensure!(value["mcpServers"]["a"] == a, "a stays: {text}");
                    ensure!(keyring.get(&key_name)?.is_none(), "{key_name} is still in the keyring");
                }
                _ => {}
            }
            if line.starts_with("STEP ") {
                return Ok(Some("checked"));
            }
            Ok(None)
        })
        .await?;
    assert_eq!(
        steps,
        [
            "STEP errors",
            "STEP added",
            "STEP edited",
            "STEP editing",
            "STEP removed",
            "STEP everything",
            "OK"
        ]
    );
    // The sentences shown are the API's own.
    for field in ["command", "name", "url"] {
        assert!(said[field].as_str().is_some_and(|s| !s.is_empty()), "{said}");
    }
    assert_clean("mcpool's log", pool.logs().as_bytes(), &[&secret]);
    Ok(())
}
