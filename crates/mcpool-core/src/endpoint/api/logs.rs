//! The control API's server logs (the `server_logs` room over HTTP): `GET
//! /api/servers/{name}/logs?q=TEXT&limit=N` (the last lines containing
//! `q`), `?download=1` (the whole retained log as a file) and
//! `/api/servers/{name}/logs/stream` (each line as it is written, SSE).

use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;

use super::AppState;
use crate::server_logs::{file::safe_stem, DEFAULT_LIMIT, MAX_LIMIT};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/servers/{name}/logs", get(lines))
        .route("/api/servers/{name}/logs/stream", get(stream))
}

#[derive(Debug, Deserialize)]
struct LogsQuery {
    #[serde(default)]
    q: String,
    limit: Option<usize>,
    download: Option<String>,
}

fn unknown(name: &str) -> Response {
    (
        StatusCode::NOT_FOUND,
        Json(json!({"error": format!("mcpool has no server named '{name}'")})),
    )
        .into_response()
}

fn failed(name: &str, e: impl std::fmt::Display) -> Response {
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        Json(json!({"error": format!("cannot read the log of server '{name}': {e}")})),
    )
        .into_response()
}

async fn lines(State(state): State<AppState>, Path(name): Path<String>, Query(query): Query<LogsQuery>) -> Response {
    if state.pool.server(&name).is_none() {
        return unknown(&name);
    }
    let logs = state.pool.server_logs().cloned();
    let download = query.download.as_deref().is_some_and(|d| !d.is_empty() && d != "0");
    if download {
        let server = name.clone();
        let read = tokio::task::spawn_blocking(move || logs.map(|l| l.download(&server)).transpose()).await;
        let body = match read {
            Ok(Ok(body)) => body.unwrap_or_default(),
            Ok(Err(e)) => return failed(&name, e),
            Err(e) => return failed(&name, e),
        };
        let disposition = format!("attachment; filename=\"{}.log\"", safe_stem(&name).replace('"', "%22"));
        return (
            [
                (header::CONTENT_TYPE, "text/plain; charset=utf-8".to_string()),
                (header::CONTENT_DISPOSITION, disposition),
            ],
            body,
        )
            .into_response();
    }
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
    let server = name.clone();
    let q = query.q;
    let read = tokio::task::spawn_blocking(move || logs.map(|l| l.search(&server, &q, limit)).transpose()).await;
    let (lines, truncated) = match read {
        Ok(Ok(found)) => found.unwrap_or_default(),
        Ok(Err(e)) => return failed(&name, e),
        Err(e) => return failed(&name, e),
    };
    Json(json!({"server": name, "lines": lines, "truncated": truncated})).into_response()
}

/// Each line of `name` as it is written, as an SSE `line` event.
async fn stream(State(state): State<AppState>, Path(name): Path<String>) -> Response {
    if state.pool.server(&name).is_none() {
        return unknown(&name);
    }
    let Some(logs) = state.pool.server_logs() else {
        return Sse::new(super::async_stream(|_| async {})).into_response();
    };
    let mut rx = logs.subscribe();
    let stream = super::async_stream(move |tx| async move {
        loop {
            let received = tokio::select! {
                r = rx.recv() => r,
                // The client went away while the log was quiet.
                _ = tx.closed() => break,
            };
            match received {
                Ok(written) if written.server == name => {
                    let data = serde_json::to_string(&written.line).unwrap_or_default();
                    if tx.send(Ok(Event::default().event("line").data(data))).await.is_err() {
                        break;
                    }
                }
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => break,
            }
        }
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}
