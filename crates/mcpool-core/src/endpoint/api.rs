//! The control API: server snapshots, explicit actions, and a stream of
//! status changes for the tray and the dashboard.

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

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/servers", get(list))
        .route("/api/servers/{name}/reconnect", post(reconnect))
        .route("/api/servers/{name}/disconnect", post(disconnect))
        .route("/api/servers/{name}/enable", post(enable))
        .route("/api/events", get(events))
}

async fn list(State(state): State<AppState>) -> Response {
    Json(state.pool.snapshot()).into_response()
}

fn unknown(name: &str) -> Response {
    (
        StatusCode::NOT_FOUND,
        Json(json!({"error": format!("mcpool has no server named '{name}'")})),
    )
        .into_response()
}

async fn reconnect(State(state): State<AppState>, Path(name): Path<String>) -> Response {
    let Some(sup) = state.pool.server(&name) else {
        return unknown(&name);
    };
    match sup.reconnect().await {
        Ok(()) => Json(json!({"ok": true, "server": sup.snapshot()})).into_response(),
        Err(u) => (
            StatusCode::BAD_GATEWAY,
            Json(json!({"ok": false, "error": u.sentence, "server": sup.snapshot()})),
        )
            .into_response(),
    }
}

async fn disconnect(State(state): State<AppState>, Path(name): Path<String>) -> Response {
    let Some(sup) = state.pool.server(&name) else {
        return unknown(&name);
    };
    sup.disconnect();
    Json(json!({"ok": true, "server": sup.snapshot()})).into_response()
}

async fn enable(State(state): State<AppState>, Path(name): Path<String>) -> Response {
    // Enabling is a reconnect of a disabled server: it starts at once.
    reconnect(State(state), Path(name)).await
}

async fn events(State(state): State<AppState>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let mut rx = state.pool.subscribe();
    let stream = async_stream(move |tx| async move {
        loop {
            match rx.recv().await {
                Ok(event) => {
                    let data = serde_json::to_string(&event).unwrap_or_default();
                    if tx.send(Ok(Event::default().event("status").data(data))).await.is_err() {
                        break;
                    }
                }
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => break,
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

/// A stream fed by a task, ended when the client goes away.
fn async_stream<F, Fut>(f: F) -> impl Stream<Item = Result<Event, Infallible>>
where
    F: FnOnce(tokio::sync::mpsc::Sender<Result<Event, Infallible>>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    tokio::spawn(f(tx));
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|item| (item, rx)) })
}
