//! The control API's server list changes (the `editing` room over HTTP):
//! `POST /api/servers` (add), `PUT /api/servers/{name}` (change),
//! `DELETE /api/servers/{name}`, `GET /api/servers/{name}/entry` (the
//! entry as the file has it, for an edit form) and `POST
//! /api/servers/test` (one connection with what was typed, nothing kept).
//! Every write edits the config file, which the pool then loads at once.

use std::path::PathBuf;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use super::AppState;
use crate::editing::{self, EditError, ServerChange};
use crate::secrets::SecretStore;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/servers", post(add))
        .route("/api/servers/test", post(test))
        .route("/api/servers/{name}", put(change).delete(remove))
        .route("/api/servers/{name}/entry", get(entry))
}

pub(super) fn error(status: StatusCode, e: &EditError) -> Response {
    let body = match e {
        EditError::Field { field, message } => json!({"error": message, "field": field}),
        other => json!({"error": other.to_string(), "field": null}),
    };
    (status, Json(body)).into_response()
}

pub(super) fn status_of(e: &EditError) -> StatusCode {
    match e {
        EditError::Field { .. } => StatusCode::BAD_REQUEST,
        EditError::Conflict(_) => StatusCode::CONFLICT,
        EditError::NotFound(_) => StatusCode::NOT_FOUND,
        EditError::Failed(_) => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

fn answer<T>(result: Result<T, EditError>, ok: impl FnOnce(T) -> Value) -> Response {
    match result {
        Ok(v) => Json(ok(v)).into_response(),
        Err(e) => error(status_of(&e), &e),
    }
}

/// The file writes go to, or why there is none.
fn config_path(state: &AppState) -> Result<PathBuf, EditError> {
    state
        .pool
        .config_state()
        .borrow()
        .path
        .clone()
        .ok_or_else(|| EditError::Conflict("mcpool has no config file to write to".into()))
}

fn parse_body(body: &Bytes) -> Result<ServerChange, EditError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| EditError::Field {
        field: None,
        message: format!("the request body is not JSON: {e}"),
    })?;
    ServerChange::from_body(&value)
}

/// Runs a blocking edit (file and keyring) off the runtime, then loads the
/// file so the pool follows at once instead of at its next poll.
pub(super) async fn write<T: Send + 'static>(
    state: &AppState,
    edit: impl FnOnce(&std::path::Path, &dyn SecretStore) -> Result<T, EditError> + Send + 'static,
) -> Result<T, EditError> {
    let path = config_path(state)?;
    let store: Arc<dyn SecretStore> = state.pool.secrets();
    let p = path.clone();
    let (result, loaded) = tokio::task::spawn_blocking(move || {
        let result = edit(&p, store.as_ref());
        let loaded = result.is_ok().then(|| crate::config::load(&p));
        (result, loaded)
    })
    .await
    .map_err(|e| EditError::Failed(format!("the edit did not finish: {e}")))?;
    if let Some(loaded) = loaded {
        state.pool.config_loaded(&path, loaded.as_ref());
    }
    result
}

pub(super) fn written(w: editing::Written) -> Value {
    json!({
        "ok": true,
        "name": w.name,
        "backup": w.backup.map(|b| b.display().to_string()),
        "secrets": w.secrets,
    })
}

async fn add(State(state): State<AppState>, body: Bytes) -> Response {
    let change = match parse_body(&body) {
        Ok(c) => c,
        Err(e) => return error(StatusCode::BAD_REQUEST, &e),
    };
    answer(
        write(&state, move |path, store| editing::add(path, change, store)).await,
        written,
    )
}

async fn change(State(state): State<AppState>, Path(name): Path<String>, body: Bytes) -> Response {
    let change = match parse_body(&body) {
        Ok(c) => c,
        Err(e) => return error(StatusCode::BAD_REQUEST, &e),
    };
    answer(
        write(&state, move |path, store| {
            editing::replace_server(path, &name, change, store)
        })
        .await,
        written,
    )
}

#[derive(Debug, Deserialize)]
struct RemoveQuery {
    /// `remove`: the keyring entries only this server used go too.
    secrets: Option<String>,
}

async fn remove(State(state): State<AppState>, Path(name): Path<String>, Query(q): Query<RemoveQuery>) -> Response {
    let with_secrets = q.secrets.as_deref() == Some("remove");
    answer(
        write(&state, move |path, store| {
            editing::remove(path, &name, with_secrets, store)
        })
        .await,
        |r| {
            json!({
                "ok": true,
                "backup": r.backup.map(|b| b.display().to_string()),
                "removed_secrets": r.removed_secrets,
            })
        },
    )
}

async fn entry(State(state): State<AppState>, Path(name): Path<String>) -> Response {
    let path = match config_path(&state) {
        Ok(p) => p,
        Err(e) => return error(status_of(&e), &e),
    };
    let store = state.pool.secrets();
    let viewed = tokio::task::spawn_blocking(move || editing::entry_view(&path, &name, store.as_ref()))
        .await
        .unwrap_or_else(|e| Err(EditError::Failed(e.to_string())));
    answer(viewed, |v| serde_json::to_value(v).unwrap_or_default())
}

/// One connection with exactly what was typed; nothing is written or kept.
async fn test(State(state): State<AppState>, body: Bytes) -> Response {
    let mut change = match parse_body(&body) {
        Ok(c) => c,
        Err(e) => return error(StatusCode::BAD_REQUEST, &e),
    };
    if change.name.is_empty() {
        change.name = "untitled".into();
    }
    let path = config_path(&state).unwrap_or_else(|_| PathBuf::from("config.json"));
    let spec = match change.spec(&path) {
        Ok(s) => s,
        Err(e) => return error(status_of(&e), &e),
    };
    let probe = state.pool.probe(spec, &change.secret_values()).await;
    Json(probe).into_response()
}
