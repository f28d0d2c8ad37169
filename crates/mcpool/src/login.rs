//! `mcpool login NAME` and `mcpool logout NAME`: the running instance runs
//! the sign-in (it owns the redirect listener and the tokens); this command
//! opens the authorization URL and waits for the outcome.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use mcpool_core::os::opener::Opened;
use serde_json::Value;

use crate::client::send_accepted;
use crate::Instance;

/// A little longer than the instance waits for the browser.
const WAIT: Duration = Duration::from_secs(330);
/// How long an opener that fails at once (no browser) has to say so.
const OPEN_WAIT: Duration = Duration::from_secs(3);

/// One control-API request; a refused token is an error that says so.
async fn call(
    instance: &Instance,
    method: reqwest::Method,
    path: &str,
) -> anyhow::Result<(reqwest::StatusCode, Value)> {
    let response = send_accepted(instance, method, path).await?;
    let status = response.status();
    Ok((status, response.json().await.unwrap_or_default()))
}

pub async fn login(instance: &Instance, name: &str) -> anyhow::Result<ExitCode> {
    let (status, body) = call(instance, reqwest::Method::POST, &format!("/api/servers/{name}/login")).await?;
    let Some(url) = body["authorize_url"].as_str().filter(|_| status.is_success()) else {
        eprintln!(
            "{}",
            body["error"]
                .as_str()
                .unwrap_or("The instance did not start the sign-in.")
        );
        return Ok(ExitCode::FAILURE);
    };
    match open(url) {
        Some(how) => eprintln!("Opened the sign-in page for '{name}' with {how}; waiting for the browser…"),
        None => {
            println!("{url}");
            eprintln!("Open the link above in a browser to sign in to '{name}'; waiting…");
        }
    }
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let (_, servers) = call(instance, reqwest::Method::GET, "/api/servers").await?;
        let server = servers
            .as_array()
            .and_then(|a| a.iter().find(|s| s["name"] == name))
            .context("the server left the config during the sign-in")?;
        let login = server["auth"]["login"].as_str().unwrap_or("idle");
        match login {
            "succeeded" if server["status"] == "connected" => {
                let tools = server["tools"].as_array().map_or(0, Vec::len);
                println!("Signed in to '{name}'; it is connected with {tools} tools.");
                return Ok(ExitCode::SUCCESS);
            }
            "succeeded" => {
                let error = server["error"].as_str().unwrap_or("no reason given");
                eprintln!(
                    "Signed in to '{name}', but it did not connect: {}",
                    error.trim_end_matches('.')
                );
                return Ok(ExitCode::FAILURE);
            }
            "failed" => {
                let error = server["auth"]["login_error"].as_str().unwrap_or("no reason given");
                eprintln!("Signing in to '{name}' failed: {}.", error.trim_end_matches('.'));
                return Ok(ExitCode::FAILURE);
            }
            "waiting" if tokio::time::Instant::now() < deadline => {}
            "waiting" => {
                eprintln!("Signing in to '{name}' got no answer from the browser in time.");
                return Ok(ExitCode::FAILURE);
            }
            _ => {
                eprintln!("The sign-in to '{name}' was replaced or cancelled.");
                return Ok(ExitCode::FAILURE);
            }
        }
    }
}

pub async fn logout(instance: &Instance, name: &str) -> anyhow::Result<ExitCode> {
    let (status, body) = call(instance, reqwest::Method::POST, &format!("/api/servers/{name}/logout")).await?;
    if status.is_success() && body["ok"] == true {
        println!("Signed out of '{name}'; its tokens are forgotten.");
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("{}", body["error"].as_str().unwrap_or("The sign-out failed."));
        Ok(ExitCode::FAILURE)
    }
}

/// Opens `url` with the one opener (`BROWSER`, else the desktop's default
/// browser), waiting a moment for it to fail; `None` when nothing showed
/// the page, so the caller prints the URL.
fn open(url: &str) -> Option<String> {
    match mcpool_core::os::opener::open_url_checked(url, OPEN_WAIT) {
        Ok(Opened::Browser(program)) => Some(format!("$BROWSER ({program})")),
        Ok(Opened::Desktop) => Some("the default browser".to_string()),
        Err(e) => {
            tracing::debug!("no browser opened for the sign-in: {e}");
            None
        }
    }
}
