//! What to add to each agent so it uses mcpool, as `GET /api/connect` gives
//! it to the dashboard (with whether the agent is on this machine), and
//! `POST /api/connect/{client}`, the dashboard's "Add to" button: the same
//! edit as `mcpool connect CLIENT --write --yes`. The shapes come from
//! [`crate::agent_config`], as `mcpool connect CLIENT` prints them.

use std::time::SystemTime;

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use serde_json::json;

use super::AppState;
use crate::agent_config::{self as agents, Change, Client, Connection, Dirs, WriteError};

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Snippet {
    /// The `mcpool connect` name: `claude-code`, `claude-desktop`, `cursor`,
    /// `vscode`, `opencode`, `gemini`, `codex`.
    pub client: &'static str,
    pub label: &'static str,
    pub text: String,
    /// The client's user config file.
    pub path: String,
    /// Whether the client seems installed here (its config file or folder
    /// exists): the dashboard offers "Add to" for these.
    pub found: bool,
}

/// How an agent reaches this endpoint, seen from a request's `Host`.
/// `token_fixed`: the token came from `MCPOOL_TOKEN`, which a client does
/// not pass on to the stdio bridge it starts.
pub fn connection(host: &str, token: &str, token_fixed: bool) -> Connection {
    let listen = host
        .parse::<std::net::SocketAddr>()
        .ok()
        .or_else(|| {
            let port = host.rsplit_once(':')?.1.parse::<u16>().ok()?;
            Some(std::net::SocketAddr::from(([127, 0, 0, 1], port)))
        })
        .map(|a| a.to_string());
    let mut stdio = vec![agents::mcpool_exe(), "stdio".to_string()];
    if let Some(listen) = listen.filter(|l| l != crate::os::paths::DEFAULT_LISTEN) {
        stdio.extend(["--listen".to_string(), listen]);
    }
    Connection {
        url: format!("http://{host}/mcp"),
        token: token.to_string(),
        stdio,
        stdio_token: token_fixed,
    }
}

/// Every client's snippet for `conn`, with where its config lives in `dirs`.
pub fn snippets(conn: &Connection, dirs: &Dirs) -> Vec<Snippet> {
    Client::ALL
        .into_iter()
        .map(|client| {
            let conn = &conn.with_listing(client.default_listing());
            let (path, _) = dirs.location(client);
            let hint = match client {
                Client::ClaudeCode => "# Run this once:".to_string(),
                Client::Codex => format!("# Add to {}:", path.display()),
                _ => format!("// Add to {}:", path.display()),
            };
            Snippet {
                client: client.name(),
                label: client.label(),
                text: format!("{hint}\n{}", agents::snippet(client, conn)),
                path: path.display().to_string(),
                found: dirs.found(client),
            }
        })
        .collect()
}

fn host(headers: &HeaderMap) -> String {
    headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1")
        .to_string()
}

/// `GET /api/connect`: the endpoint URL and every client's snippet.
pub async fn get_snippets(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let conn = connection(&host(&headers), &state.options.token, state.options.token_fixed);
    let dirs = state.options.client_dirs.clone();
    let url = conn.url.clone();
    let snippets = tokio::task::spawn_blocking(move || snippets(&conn, &dirs))
        .await
        .unwrap_or_default();
    (
        [(header::CACHE_CONTROL, "no-store")],
        Json(json!({"url": url, "snippets": snippets})),
    )
        .into_response()
}

/// `POST /api/connect/{client}`: adds mcpool to that client's user config
/// (a backup first; servers it already has are left alone) and answers the
/// plan that was carried out.
pub async fn write(State(state): State<AppState>, Path(name): Path<String>, headers: HeaderMap) -> Response {
    let Some(client) = Client::from_name(&name) else {
        let known: Vec<_> = Client::ALL.iter().map(|c| c.name()).collect();
        return (
            StatusCode::NOT_FOUND,
            Json(json!({"error": format!("unknown client '{name}' (one of {})", known.join(", "))})),
        )
            .into_response();
    };
    let conn = connection(&host(&headers), &state.options.token, state.options.token_fixed)
        .with_listing(client.default_listing());
    let dirs = state.options.client_dirs.clone();
    let done = tokio::task::spawn_blocking(move || {
        let plan = agents::plan(client, &dirs, &conn, &[], false, SystemTime::now())?;
        let text = agents::describe(&plan, &conn);
        let written = agents::apply(&plan)?;
        Ok::<_, WriteError>((plan, text, written))
    })
    .await;
    match done {
        Ok(Ok((plan, text, written))) => {
            let changes: Vec<String> = plan
                .changes
                .iter()
                .map(|c| match c {
                    Change::Add => "added mcpool".to_string(),
                    Change::Update => "updated mcpool".to_string(),
                    Change::Disable(n) => format!("disabled {n}"),
                    Change::Remove(n) => format!("removed {n}"),
                })
                .collect();
            Json(json!({
                "client": client.name(),
                "path": plan.path.display().to_string(),
                "up_to_date": plan.up_to_date(),
                "changes": changes,
                "backup": written.backup.map(|b| b.display().to_string()),
                "plan": text,
            }))
            .into_response()
        }
        Ok(Err(
            e @ (WriteError::Parse { .. }
            | WriteError::Shape { .. }
            | WriteError::Changed { .. }
            | WriteError::Locked(_)),
        )) => (StatusCode::CONFLICT, Json(json!({"error": e.to_string()}))).into_response(),
        Ok(Err(e)) => (StatusCode::INTERNAL_SERVER_ERROR, Json(json!({"error": e.to_string()}))).into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_client_gets_url_and_header() {
        let dir = std::env::temp_dir().join("mcpool-no-such-home");
        let dirs = Dirs {
            home: dir.clone(),
            platform_config: dir.join(".config"),
            xdg_config: dir.join(".config"),
            claude_config_dir: None,
            codex_home: None,
        };
        let all = snippets(&connection("127.0.0.1:7410", "T0K", false), &dirs);
        let names: Vec<_> = all.iter().map(|s| s.client).collect();
        assert_eq!(
            names,
            [
                "claude-code",
                "claude-desktop",
                "cursor",
                "vscode",
                "opencode",
                "gemini",
                "codex"
            ]
        );
        for s in all.iter().filter(|s| s.client != "claude-desktop") {
            assert!(s.text.contains("http://127.0.0.1:7410/mcp"), "{}", s.text);
            assert!(s.text.contains("Bearer T0K"), "{}", s.text);
            assert!(!s.found);
        }
        let json_part: String = all[3].text.lines().skip(1).collect();
        let v: serde_json::Value = serde_json::from_str(&json_part).unwrap();
        assert_eq!(v["servers"]["mcpool"]["type"], "http");
        let desktop = connection("localhost:9000", "T", false);
        assert_eq!(desktop.stdio[1..], ["stdio", "--listen", "127.0.0.1:9000"]);
    }
}
