//! Whether every server is reachable now (check 5): as the running instance sees it, else one
//! test connection each outside any pool (the dashboard's "Test").

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use mcpool_core::config::ServerSpec;
use mcpool_core::pool::{Pool, PoolOptions};
use mcpool_core::service::Setup;
use serde_json::Value;

use super::report::Check;

/// Test connections made at once.
const PARALLEL: usize = 4;
/// The longest one test connection may take, whatever the entry's `timeout`.
const PROBE_LIMIT: Duration = Duration::from_secs(20);

fn login_hint(name: &str) -> String {
    format!("run `mcpool login {name}`")
}

/// One line per server of a running instance's `/api/servers`.
pub fn from_instance(servers: &[Value]) -> Vec<Check> {
    if servers.is_empty() {
        return vec![Check::ok("servers", "the running instance has no servers")];
    }
    servers.iter().filter_map(instance_line).collect()
}

fn instance_line(server: &Value) -> Option<Check> {
    let name = server["name"].as_str()?;
    let check = format!("server {name}");
    let error = server["error"].as_str().map(first_line).unwrap_or_default();
    let tools = server["tools"].as_array().map_or(0, Vec::len);
    let auth = &server["auth"];
    let expired = auth["signed_in"].as_bool() == Some(true) && auth["token"].as_str() == Some("expired");
    let refreshing = auth["refreshing"].as_bool() == Some(true);
    Some(match server["status"].as_str().unwrap_or("") {
        "disabled" => Check::ok(check, "disabled in the config"),
        "connected" if expired && !refreshing => Check::warn(
            check,
            format!("connected ({tools} tools), but its sign-in's access token has expired"),
            format!("if its calls fail, {}", login_hint(name)),
        ),
        "connected" => Check::ok(check, format!("connected ({tools} tools)")),
        "needs_auth" => Check::fail(
            check,
            if error.is_empty() {
                "needs sign-in".to_string()
            } else {
                format!("needs sign-in: {error}")
            },
            login_hint(name),
        ),
        _ if expired => Check::fail(check, format!("the sign-in expired: {error}"), login_hint(name)),
        "pending" if error.is_empty() => {
            Check::warn(check, "still connecting", "run `mcpool doctor` again in a moment")
        }
        status => Check::fail(
            check,
            format!("{status}: {}", if error.is_empty() { "no error given" } else { &error }),
            format!("fix its entry or what it needs, then `mcpool reconnect {name}`"),
        ),
    })
}

/// An error on one line: its sentence, and when it quotes a process's
/// stderr, that output's last line (what it said before it ended).
fn first_line(text: &str) -> String {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("").to_string();
    match lines.next_back() {
        Some(last) => format!("{first} … {last}"),
        None => first,
    }
}

/// With no instance running: one test connection to each enabled server,
/// [`PARALLEL`] at once, each within its `timeout` (at most
/// [`PROBE_LIMIT`]); nothing is kept or cached.
pub async fn probe_all(specs: &[ServerSpec], setup: &Setup) -> Vec<Check> {
    let enabled: Vec<ServerSpec> = specs.iter().filter(|s| !s.disabled).cloned().collect();
    if enabled.is_empty() {
        return vec![Check::ok("servers", "no enabled servers in the config")];
    }
    let pool = Pool::new(PoolOptions {
        secrets: Arc::new(setup.keyring()),
        profile: setup.profile().to_string(),
        keepalive: None,
        ..PoolOptions::default()
    });
    let mut lines: Vec<(String, Check)> = futures::stream::iter(enabled)
        .map(|mut spec| {
            let pool = pool.clone();
            async move {
                spec.timeout = spec.timeout.min(PROBE_LIMIT);
                let name = spec.name.clone();
                let probe = pool.probe(spec, &[]).await;
                let check = format!("server {name}");
                let line = if probe.ok {
                    Check::ok(check, format!("connects ({} tools)", probe.tools.len()))
                } else if probe.needs_auth {
                    Check::fail(
                        check,
                        probe.error.as_deref().map_or("needs sign-in".into(), |e| {
                            first_line(e).trim_end_matches('.').to_string()
                        }),
                        format!(
                            "start mcpool (`mcpool serve` or the tray app), then {}",
                            login_hint(&name)
                        ),
                    )
                } else {
                    Check::fail(
                        check,
                        probe.error.as_deref().map_or("did not connect".into(), |e| {
                            first_line(e).trim_end_matches('.').to_string()
                        }),
                        "fix its entry or what it needs; mcpool retries it when running",
                    )
                };
                (name, line)
            }
        })
        .buffer_unordered(PARALLEL)
        .collect()
        .await;
    lines.sort_by(|a, b| a.0.cmp(&b.0));
    lines.into_iter().map(|(_, c)| c).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_instances_servers_as_lines() {
        let servers = [
            json!({"name": "files", "status": "connected", "error": null, "tools": [{}, {}]}),
            json!({"name": "broken", "status": "failed", "error": "the process exited with status 1; stderr (last 20 lines):\nline 1\nno API key\n", "tools": []}),
            json!({"name": "linear", "status": "needs_auth", "error": null, "tools": [], "auth": {"signed_in": false}}),
            json!({"name": "gh", "status": "connected", "error": null, "tools": [],
                   "auth": {"signed_in": true, "token": "expired", "refreshing": false}}),
            json!({"name": "off", "status": "disabled", "error": null, "tools": []}),
        ];
        let lines: Vec<String> = from_instance(&servers).iter().map(Check::line).collect();
        expect_test::expect![[r#"
            [
                "ok   server files: connected (2 tools)",
                "FAIL server broken: failed: the process exited with status 1; stderr (last 20 lines): … no API key — fix its entry or what it needs, then `mcpool reconnect broken`",
                "FAIL server linear: needs sign-in — run `mcpool login linear`",
                "warn server gh: connected (0 tools), but its sign-in's access token has expired — if its calls fail, run `mcpool login gh`",
                "ok   server off: disabled in the config",
            ]
        "#]]
        .assert_debug_eq(&lines);
    }
}
