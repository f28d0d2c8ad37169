//! Commands that talk to a running instance over its control API.

use std::process::ExitCode;

use anyhow::{anyhow, Context};
use mcpool_core::control_credential;
use mcpool_core::os::paths;
use mcpool_core::service::Setup;
use mcpool_core::token;
use serde::Deserialize;

use crate::Instance;

#[derive(Deserialize)]
struct ServerRow {
    name: String,
    status: String,
    error: Option<String>,
    tools: Vec<serde_json::Value>,
    #[serde(default)]
    retry_in_ms: Option<u64>,
}

/// The token, from `MCPOOL_TOKEN` or the profile's keyring (or its fallback
/// file); `create` makes one when none exists. A fallback warning goes to
/// stderr.
pub async fn load_token(setup: &Setup, create: bool) -> anyhow::Result<Option<String>> {
    let fixed = setup.fixed_token().map(str::to_string);
    let keyring = setup.keyring();
    let resolved =
        tokio::task::spawn_blocking(move || token::resolve(fixed, &keyring, &paths::data_dir(), create)).await??;
    Ok(resolved.map(|t| {
        if let Some(w) = t.warning {
            eprintln!("mcpool: warning: {w}");
        }
        t.value
    }))
}

async fn instance_token(setup: &Setup) -> anyhow::Result<String> {
    load_token(setup, false)
        .await?
        .ok_or_else(|| anyhow!("no token: set MCPOOL_TOKEN or start `mcpool serve` once to make one"))
}

/// [`send`], and the error a refused credential gets.
pub(crate) async fn send_accepted(
    instance: &Instance,
    method: reqwest::Method,
    path: &str,
) -> anyhow::Result<reqwest::Response> {
    send_json(instance, method, path, None).await
}

/// [`send_accepted`] with a JSON body.
pub(crate) async fn send_json(
    instance: &Instance,
    method: reqwest::Method,
    path: &str,
    body: Option<&serde_json::Value>,
) -> anyhow::Result<reqwest::Response> {
    let (response, credential) = request(instance, method, path, body).await?;
    match response.status() {
        reqwest::StatusCode::UNAUTHORIZED => Err(anyhow!(
            "the instance at {} refused the token (check MCPOOL_TOKEN)",
            instance.listen
        )),
        reqwest::StatusCode::FORBIDDEN if credential == Credential::AgentToken => Err(anyhow!(
            "the instance at {} takes changes only from mcpool's own commands, which read its control credential from {}; that file is missing, unreadable or left by an earlier instance (is the instance running as this user?)",
            instance.listen,
            control_credential::file(instance.listen.port()).display()
        )),
        _ => Ok(response),
    }
}

/// Which credential a request carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Credential {
    /// The control credential of the instance on that port.
    Control,
    /// The agents' token (no control credential could be read).
    AgentToken,
}

/// One request to the instance, with its control credential when this user
/// can read it (every change needs it), else the agents' token (enough to
/// read, reconnect and disconnect).
pub(crate) async fn send(
    instance: &Instance,
    method: reqwest::Method,
    path: &str,
) -> anyhow::Result<reqwest::Response> {
    Ok(request(instance, method, path, None).await?.0)
}

async fn request(
    instance: &Instance,
    method: reqwest::Method,
    path: &str,
    body: Option<&serde_json::Value>,
) -> anyhow::Result<(reqwest::Response, Credential)> {
    let url = format!("http://{}{path}", instance.listen);
    if let Some(control) = control_credential::read(instance.listen.port()) {
        let response = attempt(instance, method.clone(), &url, &control, body).await?;
        // A refused control credential is a file an instance killed on this
        // port left behind: the agents' token may still read.
        if response.status() != reqwest::StatusCode::UNAUTHORIZED {
            return Ok((response, Credential::Control));
        }
    }
    let token = instance_token(&instance.setup).await?;
    let response = attempt(instance, method, &url, &token, body).await?;
    Ok((response, Credential::AgentToken))
}

async fn attempt(
    instance: &Instance,
    method: reqwest::Method,
    url: &str,
    secret: &str,
    body: Option<&serde_json::Value>,
) -> anyhow::Result<reqwest::Response> {
    let mut request = reqwest::Client::new().request(method, url).bearer_auth(secret);
    if let Some(body) = body {
        request = request.json(body);
    }
    request.send().await.map_err(|e| {
        if e.is_connect() {
            anyhow!(
                "no mcpool instance is running at {} (start one with `mcpool serve`)",
                instance.listen
            )
        } else {
            anyhow!("cannot reach mcpool at {}: {e}", instance.listen)
        }
    })
}

pub async fn status(instance: &Instance, json: bool) -> anyhow::Result<ExitCode> {
    let response = send_accepted(instance, reqwest::Method::GET, "/api/servers").await?;
    let text = response.error_for_status()?.text().await?;
    if json {
        println!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<ServerRow> = serde_json::from_str(&text).context("unexpected answer from /api/servers")?;
    print!("{}", table(&rows));
    Ok(ExitCode::SUCCESS)
}

fn table(rows: &[ServerRow]) -> String {
    if rows.is_empty() {
        return "No servers configured.\n".to_string();
    }
    let name_w = rows.iter().map(|r| r.name.len()).max().unwrap_or(4).max(6);
    let mut out = format!("{:<name_w$}  {:<10}  {:>5}  {}\n", "SERVER", "STATUS", "TOOLS", "ERROR");
    for r in rows {
        // The cause in one line: the stderr excerpt's telling line, not
        // its heading (the whole error is in `status --json` and doctor).
        let mut error = r
            .error
            .as_deref()
            .map(mcpool_core::stderr_tail::cause)
            .unwrap_or_default();
        if let Some(ms) = r.retry_in_ms {
            error = format!("{error} [retry in {} s]", ms.div_ceil(1000));
        }
        out.push_str(&format!(
            "{:<name_w$}  {:<10}  {:>5}  {}\n",
            r.name,
            r.status,
            r.tools.len(),
            error.trim()
        ));
    }
    out
}

pub async fn action(instance: &Instance, name: &str, verb: &str) -> anyhow::Result<ExitCode> {
    let response = send(instance, reqwest::Method::POST, &format!("/api/servers/{name}/{verb}")).await?;
    let status = response.status();
    let body: serde_json::Value = response.json().await.unwrap_or_default();
    if status == reqwest::StatusCode::NOT_FOUND {
        return Err(anyhow!("{}", body["error"].as_str().unwrap_or("no such server")));
    }
    if body["ok"].as_bool() == Some(true) {
        let s = &body["server"];
        println!(
            "{name}: {} ({} tools)",
            s["status"].as_str().unwrap_or("?"),
            s["tools"].as_array().map_or(0, Vec::len)
        );
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("{}", body["error"].as_str().unwrap_or("the action failed"));
        Ok(ExitCode::FAILURE)
    }
}

/// `mcpool ui`: asks the instance for a one-time dashboard link, prints it
/// and (unless `no_open`) opens it in the default browser.
pub async fn ui(instance: &Instance, no_open: bool) -> anyhow::Result<ExitCode> {
    let response = send_accepted(instance, reqwest::Method::POST, "/api/ui/link").await?;
    let body: serde_json::Value = response.error_for_status()?.json().await?;
    let path = body["path"]
        .as_str()
        .filter(|p| p.starts_with("/ui/"))
        .context("unexpected answer from /api/ui/link")?;
    let url = format!("http://{}{path}", instance.listen);
    println!("{url}");
    if !no_open {
        eprintln!("The link works once, for two minutes.");
        if let Err(e) = mcpool_core::os::opener::open_url_checked(&url, std::time::Duration::from_secs(3)) {
            eprintln!("mcpool: no browser opened ({e}); open the link above in a browser yourself");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The token agents need: the instance's, made now if none exists yet.
pub async fn token_or_create(setup: &Setup) -> anyhow::Result<String> {
    let (token, warning) = mcpool_core::service::token_or_create(setup).await?;
    if let Some(w) = warning {
        eprintln!("mcpool: warning: {w}");
    }
    Ok(token)
}

pub async fn print_token(setup: &Setup) -> anyhow::Result<ExitCode> {
    println!("{}", token_or_create(setup).await?);
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_table() {
        let rows: Vec<ServerRow> = serde_json::from_str(
            r#"[{"name":"everything","status":"connected","error":null,"tools":[{"name":"echo","state":"live"}]},
                {"name":"fs","status":"failed","error":"the process exited with status 3\nstderr","tools":[],"retry_in_ms":1500}]"#,
        )
        .unwrap();
        expect_test::expect![[r#"
            SERVER      STATUS      TOOLS  ERROR
            everything  connected       1  
            fs          failed          0  the process exited with status 3 [retry in 2 s]
        "#]]
        .assert_eq(&table(&rows));
    }
}
