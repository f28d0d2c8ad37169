//! The control API's registry part: `GET /api/registry/search?q=&limit=`
//! (every configured registry at once; when none answers, `offline` and the
//! last results this instance had for the same query) and `GET
//! /api/registry/server?name=&version=[&choice=]` (the add form of one
//! server, with the runtime it needs and whether this machine has it), and
//! `POST /api/registry/add` (the form filled in and written through
//! `editing::add`, secrets to the keyring, as `mcpool registry add` does).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use super::AppState;
use crate::registry::{self, view, Choice, RegistryClient, RegistryError};
use crate::sync::lock;

/// Most results a search answers with.
pub const MAX_LIMIT: usize = 100;
const DEFAULT_LIMIT: usize = 30;
/// Queries whose last results are kept for when the registries are offline.
const REMEMBERED: usize = 64;

/// The client and, per query, the last results a registry gave.
#[derive(Default)]
struct Registries {
    client: RegistryClient,
    last: Mutex<BTreeMap<String, Vec<Value>>>,
}

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/registry/search", get(search))
        .route("/api/registry/server", get(server))
        .route("/api/registry/add", post(add))
        .layer(Extension(Arc::new(Registries::default())))
}

fn bases(state: &AppState) -> Vec<String> {
    registry::bases(state.pool.config_state().borrow().registries.as_deref())
}

#[derive(Debug, Deserialize)]
struct SearchQuery {
    #[serde(default)]
    q: String,
    limit: Option<usize>,
}

async fn search(
    State(state): State<AppState>,
    Extension(registries): Extension<Arc<Registries>>,
    Query(query): Query<SearchQuery>,
) -> Response {
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
    let q = query.q.trim().to_string();
    let searched = registries.client.search(&bases(&state), &q, limit).await;
    let key = q.to_lowercase();
    let offline = searched.offline();
    let servers = if offline {
        lock(&registries.last).get(&key).cloned().unwrap_or_default()
    } else {
        let servers: Vec<Value> = searched.servers.iter().map(view::summary).collect();
        let mut last = lock(&registries.last);
        if last.len() >= REMEMBERED && !last.contains_key(&key) {
            last.pop_first();
        }
        last.insert(key, servers.clone());
        servers
    };
    Json(json!({
        "servers": servers,
        "offline": offline,
        "error": searched.error_sentence(),
    }))
    .into_response()
}

#[derive(Debug, Deserialize)]
struct ServerQuery {
    #[serde(default)]
    name: String,
    version: Option<String>,
    choice: Option<String>,
}

fn refuse(status: StatusCode, error: String, offline: bool) -> Response {
    (status, Json(json!({"error": error, "offline": offline}))).into_response()
}

async fn server(
    State(state): State<AppState>,
    Extension(registries): Extension<Arc<Registries>>,
    Query(query): Query<ServerQuery>,
) -> Response {
    if query.name.trim().is_empty() {
        return refuse(StatusCode::BAD_REQUEST, "name a server: ?name=NAME".into(), false);
    }
    let (found, choice) = match fetch(
        &state,
        &registries,
        &query.name,
        query.version.as_deref(),
        query.choice.as_deref(),
    )
    .await
    {
        Ok(f) => f,
        Err(refused) => return refused,
    };
    match view::form_view(&found, choice, std::env::var_os("PATH").as_deref()) {
        Ok(view) => Json(view).into_response(),
        Err(e) => refuse(StatusCode::UNPROCESSABLE_ENTITY, e.to_string(), false),
    }
}

/// The server `name` at `version` (else the latest) from the first
/// registry that has it, and the package or remote `choice` names; a
/// refusal answer when either cannot be had.
async fn fetch(
    state: &AppState,
    registries: &Registries,
    name: &str,
    version: Option<&str>,
    choice: Option<&str>,
) -> Result<(registry::Found, Option<Choice>), Response> {
    let choice = match choice.filter(|c| !c.is_empty()) {
        None => None,
        Some(text) => Some(Choice::parse(text).ok_or_else(|| {
            refuse(
                StatusCode::BAD_REQUEST,
                format!("'{text}' is not a choice (package:N or remote:N)"),
                false,
            )
        })?),
    };
    let version = version.filter(|v| !v.is_empty());
    match registries.client.server(&bases(state), name.trim(), version).await {
        Ok(found) => Ok((found, choice)),
        Err(e @ RegistryError::NotFound { .. }) => Err(refuse(StatusCode::NOT_FOUND, e.to_string(), false)),
        Err(e) => Err(refuse(StatusCode::BAD_GATEWAY, e.to_string(), true)),
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

async fn add(
    State(state): State<AppState>,
    Extension(registries): Extension<Arc<Registries>>,
    body: axum::body::Bytes,
) -> Response {
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
    let (found, choice) = match fetch(
        &state,
        &registries,
        &body.name,
        body.version.as_deref(),
        body.choice.as_deref(),
    )
    .await
    {
        Ok(f) => f,
        Err(refused) => return refused,
    };
    let filled = registry::form(&found.server, choice).and_then(|form| {
        let filled = registry::apply(&form, &body.values)?;
        Ok((form, filled))
    });
    let (form, filled) = match filled {
        Ok(f) => f,
        Err(e) => return refuse(StatusCode::UNPROCESSABLE_ENTITY, e.to_string(), false),
    };
    let runtime = registry::runtime_for(&filled.entry, std::env::var_os("PATH").as_deref());
    let change = crate::editing::ServerChange {
        name: body
            .local
            .filter(|l| !l.trim().is_empty())
            .unwrap_or(form.suggested_name),
        entry: filled.entry,
        secret_env: filled.secret_env,
        secret_headers: filled.secret_headers,
        ..Default::default()
    };
    match super::api_servers::write(&state, move |path, store| crate::editing::add(path, change, store)).await {
        Ok(written) => {
            let mut answer = super::api_servers::written(written);
            if let Some(obj) = answer.as_object_mut() {
                obj.insert("runtime".into(), json!(runtime.and_then(|r| r.missing_sentence())));
            }
            Json(answer).into_response()
        }
        Err(e) => super::api_servers::error(super::api_servers::status_of(&e), &e),
    }
}
