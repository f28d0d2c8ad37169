//! The dashboard's API under `/api`: server snapshots, the pool's
//! operations (each one a call into [`crate::control`], translated from HTTP
//! and back), and a stream of status changes. Reading needs the agents'
//! token; a change, the control credential or a session (the guard's). No logic of its own lives
//! here: what an operation does is the control room's.

mod activity;
mod logs;
mod registry;
mod secrets;
mod servers;
mod tools;

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures::Stream;
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;

use super::AppState;
use crate::control::{ControlError, ToolAction};
use crate::secrets::SecretError;
use crate::supervisor::ServerSnapshot;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/servers", get(list))
        .route("/api/servers/{name}/reconnect", post(reconnect))
        .route("/api/servers/{name}/disconnect", post(disconnect))
        .route("/api/servers/{name}/enable", post(enable))
        .route("/api/servers/{name}/login", post(login))
        .route("/api/servers/{name}/logout", post(logout))
        .route("/api/servers/{name}/tools/{tool}/{action}", post(tool_action))
        .route("/api/events", get(events))
        .route("/api/config", get(config))
        .route("/api/sessions", get(sessions))
        .route("/api/calls", get(calls))
        .merge(tools::routes())
        .merge(activity::routes())
        .merge(registry::routes())
        .merge(servers::routes())
        .merge(secrets::routes())
        .merge(logs::routes())
}

/// The last tool calls agents made, newest first: names and timings only.
async fn calls(State(state): State<AppState>) -> Response {
    Json(state.pool.recent_calls().recent()).into_response()
}

/// Agent sessions on the HTTP endpoint: how many are open, the limit, how
/// many were closed to stay within it, and how many the hub still holds
/// (every one of them open: an ended session leaves nothing behind).
async fn sessions(State(state): State<AppState>) -> Response {
    Json(json!({
        "open": state.mcp.shared.book.open_count(),
        "limit": state.mcp.shared.book.max(),
        "closed_for_limit": state.mcp.shared.book.closed_for_limit(),
        "hub_agents": state.pool.hub().agent_count(),
        "saved": state.mcp.shared.file.as_ref().map(|f| f.len()),
    }))
    .into_response()
}

/// The config file and what is wrong with it: a whole-file error (the
/// running servers are kept) and each entry left out or repeated, by file,
/// server and field.
async fn config(State(state): State<AppState>) -> Response {
    Json(config_view(&state.pool.config_state().borrow())).into_response()
}

fn config_view(state: &crate::pool::ConfigState) -> serde_json::Value {
    let problem = |p: &crate::config::ConfigProblem| {
        json!({
            "file": p.file.display().to_string(),
            "server": p.server,
            "field": p.field,
            "message": p.message,
            "severity": if p.warning { "warning" } else { "error" },
            "text": p.to_string(),
        })
    };
    json!({
        "path": state.path.as_ref().map(|p| p.display().to_string()),
        "file_error": state.file_error.as_ref().map(problem),
        "problems": state.problems.iter().map(problem).collect::<Vec<_>>(),
    })
}

async fn list(State(state): State<AppState>) -> Response {
    Json(state.pool.snapshot()).into_response()
}

/// The HTTP status of an operation's failure.
fn status_of(e: &ControlError) -> StatusCode {
    match e {
        ControlError::UnknownServer(_) | ControlError::UnknownTool { .. } => StatusCode::NOT_FOUND,
        ControlError::Unreachable { .. } | ControlError::SignIn(_) => StatusCode::BAD_GATEWAY,
        ControlError::SignOut(_) => StatusCode::BAD_REQUEST,
        ControlError::Edit(e) => servers::status_of(e),
        ControlError::Secret(SecretError::InvalidName(_)) => StatusCode::BAD_REQUEST,
        ControlError::Secret(SecretError::Unavailable(_)) => StatusCode::SERVICE_UNAVAILABLE,
        ControlError::Secret(SecretError::Failed(_)) => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// A server operation's answer: `{"ok": true, "server": …}`, or its error
/// (with the server as it stands when the server could not be reached).
fn answer(done: Result<ServerSnapshot, ControlError>) -> Response {
    let e = match done {
        Ok(server) => return Json(json!({"ok": true, "server": server})).into_response(),
        Err(e) => e,
    };
    let status = status_of(&e);
    let body = match e {
        ControlError::UnknownServer(_) => json!({"error": e.to_string()}),
        ControlError::Unreachable { sentence, server } => json!({"ok": false, "error": sentence, "server": server}),
        e => json!({"ok": false, "error": e.to_string()}),
    };
    (status, Json(body)).into_response()
}

async fn reconnect(State(state): State<AppState>, Path(name): Path<String>) -> Response {
    answer(state.control.reconnect(&name).await)
}

async fn disconnect(State(state): State<AppState>, Path(name): Path<String>) -> Response {
    answer(state.control.disconnect(&name))
}

async fn enable(State(state): State<AppState>, Path(name): Path<String>) -> Response {
    answer(state.control.enable(&name).await)
}

/// Starts signing a remote server in: answers the URL to open in the
/// browser.
async fn login(State(state): State<AppState>, Path(name): Path<String>) -> Response {
    match state.control.sign_in(&name).await {
        Ok(url) => Json(json!({"authorize_url": url})).into_response(),
        Err(e) => (status_of(&e), Json(json!({"error": e.to_string()}))).into_response(),
    }
}

/// Forgets a server's tokens.
async fn logout(State(state): State<AppState>, Path(name): Path<String>) -> Response {
    answer(state.control.sign_out(&name).await)
}

/// A tool's switch (`enable`, `disable`) or its approval (`approve`).
async fn tool_action(
    State(state): State<AppState>,
    Path((name, tool, action)): Path<(String, String, String)>,
) -> Response {
    if state.pool.server(&name).is_none() {
        return answer(Err(ControlError::UnknownServer(name)));
    }
    let Some(action) = ToolAction::parse(&action) else {
        return (
            StatusCode::NOT_FOUND,
            Json(json!({"ok": false, "error": format!("unknown tool action '{action}' (expected enable, disable or approve)")})),
        )
            .into_response();
    };
    answer(state.control.tool(&name, &tool, action).await)
}

async fn events(State(state): State<AppState>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let mut rx = state.pool.subscribe();
    let mut held = state.pool.subscribe_held();
    let mut calls = state.pool.recent_calls().subscribe();
    let mut config = state.pool.config_state();
    config.mark_unchanged();
    let stream = async_stream(move |tx| async move {
        loop {
            let status = tokio::select! {
                status = rx.recv() => status,
                changed = config.changed() => {
                    if changed.is_err() {
                        break;
                    }
                    let data = config_view(&config.borrow_and_update()).to_string();
                    if tx.send(Ok(Event::default().event("config").data(data))).await.is_err() {
                        break;
                    }
                    continue;
                }
                call = calls.recv() => {
                    if !relay(&tx, "call", call).await {
                        break;
                    }
                    continue;
                }
                event = held.recv() => {
                    if !relay(&tx, "tools", event).await {
                        break;
                    }
                    continue;
                }
            };
            if !relay(&tx, "status", status).await {
                break;
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

/// One item of a broadcast as the event `name` on the stream; false when
/// the stream is over (the client went away, or the broadcast closed). A
/// lagging receiver skips what it missed: the next item says how things are.
async fn relay<T: serde::Serialize>(
    tx: &tokio::sync::mpsc::Sender<Result<Event, Infallible>>,
    name: &str,
    item: Result<T, RecvError>,
) -> bool {
    match item {
        Ok(item) => {
            let data = serde_json::to_string(&item).unwrap_or_default();
            tx.send(Ok(Event::default().event(name).data(data))).await.is_ok()
        }
        Err(RecvError::Lagged(_)) => true,
        Err(RecvError::Closed) => false,
    }
}

/// A stream fed by a task, ended when the client goes away.
pub(super) fn async_stream<F, Fut>(f: F) -> impl Stream<Item = Result<Event, Infallible>>
where
    F: FnOnce(tokio::sync::mpsc::Sender<Result<Event, Infallible>>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    tokio::spawn(f(tx));
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|item| (item, rx)) })
}
