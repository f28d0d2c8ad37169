//! The API's registry part ([`crate::control`]'s registry operations over
//! HTTP): `GET /api/registry/search?q=&limit=` (every configured registry at
//! once; when none answers, `offline` and the last results this instance had
//! for the same query), `GET /api/registry/server?name=&version=[&choice=]`
//! (the add form of one server, with the runtime it needs and whether this
//! machine has it), and `POST /api/registry/add` (the form filled in and
//! written, secrets to the keyring, as `mcpool registry add` does).

use std::collections::BTreeMap;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;

use super::AppState;
use crate::control::RegistryFailure;

/// Most results a search answers with.
pub const MAX_LIMIT: usize = 100;
const DEFAULT_LIMIT: usize = 30;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/registry/search", get(search))
        .route("/api/registry/server", get(server))
        .route("/api/registry/add", post(add))
}

#[derive(Debug, Deserialize)]
struct SearchQuery {
    #[serde(default)]
    q: String,
    limit: Option<usize>,
}

async fn search(State(state): State<AppState>, Query(query): Query<SearchQuery>) -> Response {
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
    let searched = state.control.registry_search(&query.q, limit).await;
    Json(json!({
        "servers": searched.servers,
        "offline": searched.offline,
        "error": searched.error,
    }))
    .into_response()
}

fn refuse(status: StatusCode, error: String, offline: bool) -> Response {
    (status, Json(json!({"error": error, "offline": offline}))).into_response()
}

fn failed(e: RegistryFailure) -> Response {
    match e {
        RegistryFailure::Request(s) => refuse(StatusCode::BAD_REQUEST, s, false),
        RegistryFailure::NotFound(s) => refuse(StatusCode::NOT_FOUND, s, false),
        RegistryFailure::Offline(s) => refuse(StatusCode::BAD_GATEWAY, s, true),
        RegistryFailure::Form(s) => refuse(StatusCode::UNPROCESSABLE_ENTITY, s, false),
        RegistryFailure::Edit(e) => super::servers::error(super::servers::status_of(&e), &e),
    }
}

#[derive(Debug, Deserialize)]
struct ServerQuery {
    #[serde(default)]
    name: String,
    version: Option<String>,
    choice: Option<String>,
}

async fn server(State(state): State<AppState>, Query(query): Query<ServerQuery>) -> Response {
    let form = state
        .control
        .registry_form(&query.name, query.version.as_deref(), query.choice.as_deref())
        .await;
    match form {
        Ok(view) => Json(view).into_response(),
        Err(e) => failed(e),
    }
}

/// `POST /api/registry/add`: `{"name", "version"?, "choice"?, "as"?,
/// "values": {VARIABLE: value}}`.
#[derive(Debug, Deserialize)]
struct AddBody {
    name: String,
    version: Option<String>,
    choice: Option<String>,
    #[serde(rename = "as")]
    local: Option<String>,
    #[serde(default)]
    values: BTreeMap<String, String>,
}

async fn add(State(state): State<AppState>, body: axum::body::Bytes) -> Response {
    let body: AddBody = match serde_json::from_slice(&body) {
        Ok(b) => b,
        Err(e) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                format!("the request body is not an add: {e}"),
                false,
            )
        }
    };
    let added = state
        .control
        .registry_add(
            &body.name,
            body.version.as_deref(),
            body.choice.as_deref(),
            body.local,
            &body.values,
        )
        .await;
    match added {
        Ok(added) => {
            let mut answer = super::servers::written(added.written);
            if let Some(obj) = answer.as_object_mut() {
                obj.insert("runtime".into(), json!(added.missing_runtime));
            }
            Json(answer).into_response()
        }
        Err(e) => failed(e),
    }
}
