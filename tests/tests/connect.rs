//! `mcpool connect CLIENT` (behaviour.md §2): each client's snippet names the running
//! instance's URL and token, in the shape that client reads, and what it
//! names really connects.

use std::process::{Output, Stdio};
use std::time::Duration;

use mcpool_tests::*;
use serde_json::{json, Value};
use tokio::process::Command;

async fn connect(client: &str, listen: &str, token: &str, data: &std::path::Path) -> anyhow::Result<Output> {
    let out = Command::new(bin("mcpool"))
        .args(["connect", client])
        .env("MCPOOL_LISTEN", listen)
        .env("MCPOOL_TOKEN", token)
        .env("MCPOOL_PROFILE", profile_for(data))
        .env("XDG_DATA_HOME", data.join("data"))
        .env("XDG_CONFIG_HOME", data.join("config"))
        .env("XDG_CACHE_HOME", data.join("cache"))
        .env_remove("MCPOOL_CONFIG")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    Ok(tokio::time::timeout(Duration::from_secs(30), out).await??)
}

/// Splits a shell command line: whitespace, with single and double quotes.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// The Python SDK agent reaches the endpoint with exactly this URL and header.
async fn pings(url: &str, authorization: &str) -> anyhow::Result<()> {
    let header = format!("Authorization: {authorization}");
    let report = python_agent(&["--url", url, "--header", &header, "--scenario", "ping"]).await?;
    assert!(report.get("error").is_none(), "{report}");
    Ok(())
}

#[tokio::test]
async fn every_snippet_names_the_instance_and_its_token() -> anyhow::Result<()> {
    let (dir, log) = TempDir::with_spawn_log("connect");
    let pool = Mcpool::start(json!({"mcpServers": {"f": faulty_stdio(&log, &[])}})).await?;
    let listen = format!("127.0.0.1:{}", pool.port);
    let bearer = format!("Bearer {}", pool.token);

    for client in ["claude-code", "cursor", "vscode", "opencode"] {
        // Clients that search tools themselves get every tool; the others
        // `auto`, every tool while it fits (README, "Which clients get which listing").
        let mode = if client == "vscode" { "auto" } else { "all" };
        let url = pool.url(&format!("/mcp?toolListing={mode}"));
        let o = connect(client, &listen, &pool.token, dir.path()).await?;
        let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "{client}: {stderr}");
        assert!(stdout.contains(&url), "{client}: {stdout}");
        assert!(stdout.contains(&bearer), "{client}: {stdout}");
        if client == "claude-code" {
            continue;
        }
        // stdout is the snippet alone: valid JSON, ready to paste or pipe.
        let v: Value =
            serde_json::from_str(&stdout).map_err(|e| anyhow::anyhow!("{client}: not JSON ({e}): {stdout}"))?;
        let entry = match client {
            "cursor" => {
                assert_eq!(v["mcpServers"]["mcpool"]["url"], url.as_str(), "{v}");
                &v["mcpServers"]["mcpool"]
            }
            "vscode" => {
                assert_eq!(v["servers"]["mcpool"]["type"], "http", "{v}");
                assert_eq!(v["servers"]["mcpool"]["url"], url.as_str(), "{v}");
                &v["servers"]["mcpool"]
            }
            _ => {
                assert_eq!(v["mcp"]["mcpool"]["type"], "remote", "{v}");
                assert_eq!(v["mcp"]["mcpool"]["url"], url.as_str(), "{v}");
                assert_ne!(v["mcp"]["mcpool"]["enabled"], false, "{v}");
                &v["mcp"]["mcpool"]
            }
        };
        assert_eq!(entry["headers"]["Authorization"], bearer.as_str(), "{client}: {v}");
        pings(
            entry["url"].as_str().unwrap_or_default(),
            entry["headers"]["Authorization"].as_str().unwrap_or_default(),
        )
        .await?;
    }

    // claude-code: one `claude mcp add` command line, over HTTP, the URL
    // quoted (a `?` is a glob to the shell).
    let url = pool.url("/mcp?toolListing=all");
    let o = connect("claude-code", &listen, &pool.token, dir.path()).await?;
    assert!(String::from_utf8_lossy(&o.stdout).contains(&format!("\"{url}\"")));
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    let lines: Vec<&str> = stdout.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    let words = shell_words(lines[0]);
    assert_eq!(words[..3], ["claude", "mcp", "add"], "{words:?}");
    let after = |flag: &str| {
        words
            .iter()
            .position(|w| w == flag)
            .and_then(|i| words.get(i + 1))
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(after("--transport"), "http", "{words:?}");
    assert_eq!(after("--header"), format!("Authorization: {bearer}"), "{words:?}");
    let positional: Vec<&String> = words[3..]
        .iter()
        .enumerate()
        .filter(|(i, w)| !w.starts_with("--") && !words[3 + i - 1].starts_with("--"))
        .map(|(_, w)| w)
        .collect();
    assert_eq!(positional, [&"mcpool".to_string(), &url], "{words:?}");
    pings(&url, &bearer).await?;

    // The wrong token in a snippet would not get in: the ping above is real.
    let report = python_agent(&[
        "--url",
        &url,
        "--header",
        "Authorization: Bearer not-the-token",
        "--scenario",
        "ping",
    ])
    .await;
    assert!(report.is_err(), "{report:?}");
    Ok(())
}

/// The value between the first pair of double quotes after `key = `.
fn toml_string(line: &str, key: &str) -> Option<String> {
    let rest = line.strip_prefix(key)?.trim_start().strip_prefix('=')?.trim_start();
    let rest = rest.strip_prefix('"')?;
    Some(rest[..rest.find('"')?].to_string())
}

#[tokio::test]
async fn gemini_codex_and_claude_desktop_snippets_connect() -> anyhow::Result<()> {
    let (dir, log) = TempDir::with_spawn_log("connect-more");
    let pool = Mcpool::start(json!({"mcpServers": {"f": faulty_stdio(&log, &[])}})).await?;
    let listen = format!("127.0.0.1:{}", pool.port);
    let url = pool.url("/mcp?toolListing=auto");
    let bearer = format!("Bearer {}", pool.token);

    // Gemini CLI: Streamable HTTP is `httpUrl` (its `url` means SSE).
    let o = connect("gemini", &listen, &pool.token, dir.path()).await?;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout)?;
    let entry = &v["mcpServers"]["mcpool"];
    assert_eq!(entry["httpUrl"], url.as_str(), "{v}");
    assert!(entry.get("url").is_none(), "{v}");
    assert_eq!(entry["headers"]["Authorization"], bearer.as_str(), "{v}");
    pings(entry["httpUrl"].as_str().unwrap_or(""), &bearer).await?;

    // Codex: a TOML table with url and http_headers.
    let o = connect("codex", &listen, &pool.token, dir.path()).await?;
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "[mcp_servers.mcpool]", "{stdout}");
    let toml_url = lines.iter().find_map(|l| toml_string(l, "url")).unwrap_or_default();
    let header = lines
        .iter()
        .find_map(|l| l.strip_prefix("http_headers = { "))
        .and_then(|l| toml_string(l, "Authorization"))
        .unwrap_or_default();
    assert_eq!(toml_url, url, "{stdout}");
    assert_eq!(header, bearer, "{stdout}");
    pings(&toml_url, &header).await?;

    // Claude Desktop: stdio only, so the entry runs this mcpool's bridge.
    let o = connect("claude-desktop", &listen, &pool.token, dir.path()).await?;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout)?;
    let entry = &v["mcpServers"]["mcpool"];
    assert_eq!(entry["command"], bin("mcpool").display().to_string().as_str(), "{v}");
    assert_eq!(
        entry["args"],
        json!(["stdio", "--listen", listen, "--tool-listing", "auto"]),
        "{v}"
    );
    // The token came from MCPOOL_TOKEN, which the client would not pass on.
    assert_eq!(entry["env"]["MCPOOL_TOKEN"], pool.token.as_str(), "{v}");
    let stdio_cmd = format!(
        "{} stdio --listen {listen} --tool-listing auto",
        bin("mcpool").display()
    );
    let report = python_agent_with_env(
        &["--stdio-cmd", &stdio_cmd, "--scenario", "ping"],
        &[
            ("MCPOOL_TOKEN", entry["env"]["MCPOOL_TOKEN"].as_str().unwrap_or("")),
            ("MCPOOL_PROFILE", &profile_for(dir.path())),
        ],
    )
    .await?;
    assert!(report.get("error").is_none(), "{report}");
    Ok(())
}
