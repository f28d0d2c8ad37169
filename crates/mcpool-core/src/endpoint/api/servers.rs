//! The API's server list changes ([`crate::control::Edits`] over HTTP):
//! `POST /api/servers` (add), `PUT /api/servers/{name}` (change),
//! `DELETE /api/servers/{name}`, `GET /api/servers/{name}/entry` (the
//! entry as the file has it, for an edit form) and `POST
//! /api/servers/test` (one connection with what was typed, nothing kept),
//! `POST /api/servers/{name}/sandbox/allow` (a grant a sandbox refused).

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use super::AppState;
use crate::control::{EditError, ServerChange, Written};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/servers", post(add))
        .route("/api/servers/test", post(test))
        .route("/api/servers/{name}", put(change).delete(remove))
        .route("/api/servers/{name}/entry", get(entry))
        .route("/api/servers/{name}/sandbox/allow", post(allow))
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

fn parse_body(body: &Bytes) -> Result<ServerChange, EditError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| EditError::Field {
        field: None,
        message: format!("the request body is not JSON: {e}"),
    })?;
    ServerChange::from_body(&value)
}

pub(super) fn written(w: Written) -> Value {
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
    answer(state.control.edits().add(change).await, written)
}

async fn change(State(state): State<AppState>, Path(name): Path<String>, body: Bytes) -> Response {
    let change = match parse_body(&body) {
        Ok(c) => c,
        Err(e) => return error(StatusCode::BAD_REQUEST, &e),
    };
    answer(state.control.edits().replace(&name, change).await, written)
}

#[derive(Debug, Deserialize)]
struct RemoveQuery {
    /// `remove`: the keyring entries only this server used go too.
    secrets: Option<String>,
}

async fn remove(State(state): State<AppState>, Path(name): Path<String>, Query(q): Query<RemoveQuery>) -> Response {
    let with_secrets = q.secrets.as_deref() == Some("remove");
    answer(state.control.edits().remove(&name, with_secrets).await, |r| {
        json!({
            "ok": true,
            "backup": r.backup.map(|b| b.display().to_string()),
            "removed_secrets": r.removed_secrets,
        })
    })
}

async fn entry(State(state): State<AppState>, Path(name): Path<String>) -> Response {
    answer(state.control.edits().entry(&name).await, |v| {
        serde_json::to_value(v).unwrap_or_default()
    })
}

#[derive(Debug, Deserialize)]
struct AllowBody {
    access: String,
    path: Option<String>,
}

/// `{"access": "read"|"write"|"network", "path"}`: the grant a sandboxed
/// server was refused, written into its entry (it restarts with it).
async fn allow(State(state): State<AppState>, Path(name): Path<String>, body: Bytes) -> Response {
    let parsed = serde_json::from_slice::<AllowBody>(&body)
        .map_err(|e| e.to_string())
        .and_then(|b| crate::sandbox::Allowance::parse(&b.access, b.path.as_deref()));
    let allowance = match parsed {
        Ok(a) => a,
        Err(message) => {
            let e = EditError::Field {
                field: Some("sandbox".into()),
                message,
            };
            return error(StatusCode::BAD_REQUEST, &e);
        }
    };
    answer(state.control.edits().allow(&name, allowance).await, written)
}

/// One connection with exactly what was typed; nothing is written or kept.
async fn test(State(state): State<AppState>, body: Bytes) -> Response {
    let change = match parse_body(&body) {
        Ok(c) => c,
        Err(e) => return error(StatusCode::BAD_REQUEST, &e),
    };
    answer(state.control.edits().test(change).await, |probe| {
        serde_json::to_value(probe).unwrap_or_default()
    })
}
