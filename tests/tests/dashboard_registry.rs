//! The dashboard's "Browse servers" in a real headless Chromium against the
//! real binary and a stub registry on loopback (the official registry API:
//! `/v0/servers?search=` and `/v0/servers/{name}/versions/{version}`),
//! configured through `registries`: results as you type (name,
//! description, version, remote, what it needs); the picked server opens
//! the Add form with one input per variable (the required secret token
//! marked so); saved, the token goes to the keyring and the server (our
//! fault server, which wants that bearer token) connects. With the registry
//! gone, the same search says it is unreachable and shows the last results.
//! The browser side is tests/ui/registry.mjs.

use std::time::Duration;

use anyhow::{ensure, Context};
use mcpool_core::secrets::{Keyring, SecretStore};
use mcpool_tests::browser::BrowserScript;
use mcpool_tests::secrets::*;
use mcpool_tests::*;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const LIMIT: Duration = Duration::from_secs(20);
const NAME: &str = "io.github.mcpool-test/echo-remote";

/// The stub registry's one server: a Streamable HTTP remote whose bearer
/// token is a required secret variable.
fn server_json(url: &str) -> Value {
    json!({
        "name": NAME,
        "description": "An echo server for the browse test",
        "version": "1.2.3",
        "remotes": [{
            "type": "streamable-http",
            "url": url,
            "headers": [{
                "name": "Authorization",
                "value": "Bearer {token}",
                "isRequired": true,
                "isSecret": true,
                "variables": {"token": {"description": "Your API token", "isRequired": true, "isSecret": true}}
            }]
        }]
    })
}

/// Serves `server` as a registry would until the task is aborted: every
/// search lists it, and its version answer is it.
async fn stub_registry(server: Value) -> anyhow::Result<(tokio::task::JoinHandle<()>, String)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let task = tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let server = server.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&head);
                let path = text.split_whitespace().nth(1).unwrap_or_default().to_string();
                let (status, body) = if path.contains("/versions/") {
                    ("200 OK", json!({"server": server, "_meta": {}}))
                } else if path.starts_with("/v0/servers") {
                    (
                        "200 OK",
                        json!({"servers": [{"server": server, "_meta": {}}], "metadata": {"count": 1}}),
                    )
                } else {
                    ("404 Not Found", json!({"error": "not found"}))
                };
                let body = body.to_string();
                let reply = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    Ok((task, base))
}

#[tokio::test]
async fn browse_the_registry_and_add_a_server_in_a_real_browser() -> anyhow::Result<()> {
    let bin_dir = TempDir::new("dashboard-registry-bin");
    let token = new_secret("registry");
    let (_remote, url) = faulty_http(&bin_dir.path().join("remote.log"), &["--require-bearer", &token]).await?;
    let (mut registry, base) = stub_registry(server_json(&url)).await?;
    let dir = TempDir::new("dashboard-registry");
    let keyring = Keyring::for_profile(&profile_for(dir.path()));
    let pool = Mcpool::start_in(dir, json!({"registries": [base], "mcpServers": {}}), &[]).await?;

    let browser = BrowserScript::open(
        &pool,
        "registry.mjs",
        &[
            ("NAME", NAME.into()),
            ("URL", url.clone().into()),
            ("TOKEN", token.clone().into()),
        ],
    )
    .await?;
    let steps = browser
        .drive(&pool, Duration::from_secs(120), async |line| {
            if line == "STEP added" {
                let text = std::fs::read_to_string(pool.config_path())?;
                assert_clean("the config file", text.as_bytes(), &[&token]);
                let config: Value = mcpool_core::jsonc::value(&text)?;
                let entry = &config["mcpServers"]["echo-remote"];
                ensure!(entry["url"] == json!(url), "{text}");
                let header = entry["headers"]["Authorization"].as_str().unwrap_or_default();
                let name = header
                    .strip_prefix("${keyring:")
                    .and_then(|r| r.strip_suffix('}'))
                    .with_context(|| format!("not a reference: {text}"))?;
                ensure!(
                    keyring.get(name)?.as_deref() == Some(format!("Bearer {token}").as_str()),
                    "the keyring holds the header"
                );
                pool.wait_status("echo-remote", "connected", LIMIT).await?;
                // The registry goes away: the next search is answered
                // from the last results.
                registry.abort();
                let _ = (&mut registry).await;
            }
            if line.starts_with("STEP ") {
                return Ok(Some("checked"));
            }
            Ok(None)
        })
        .await?;
    assert_eq!(steps, ["STEP found", "STEP added", "STEP offline", "OK"]);
    Ok(())
}
