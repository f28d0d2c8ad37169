//! Named secrets over HTTP ([`Control::set_secret`](crate::control::Control)
//! and its siblings): `GET /api/secrets` (names only, never values), `POST
//! /api/secrets` (`{"name", "value"}`) and `DELETE /api/secrets/{name}`.
//! A `profile` query names the keyring profile the caller means; another
//! instance's profile is refused (409), so nothing lands in the wrong one.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;

use super::{status_of, AppState};
use crate::control::ControlError;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/secrets", get(list).post(set))
        .route("/api/secrets/{name}", delete(remove))
}

#[derive(Deserialize)]
struct Profile {
    profile: Option<String>,
}

#[derive(Deserialize)]
struct NewSecret {
    name: String,
    value: String,
}

/// A 409 when the caller means another keyring profile than this pool's.
fn other_profile(state: &AppState, asked: &Profile) -> Option<Response> {
    let ours = state.control.profile();
    let theirs = asked.profile.as_deref().filter(|p| *p != ours)?;
    let sentence = format!("this instance keeps the secrets of profile '{ours}', not '{theirs}'");
    Some((StatusCode::CONFLICT, Json(json!({"error": sentence, "profile": ours}))).into_response())
}

fn failure(e: &ControlError) -> Response {
    (status_of(e), Json(json!({"ok": false, "error": e.to_string()}))).into_response()
}

async fn list(State(state): State<AppState>, Query(asked): Query<Profile>) -> Response {
    if let Some(refused) = other_profile(&state, &asked) {
        return refused;
    }
    match state.control.secret_names().await {
        Ok(names) => Json(json!({"profile": state.control.profile(), "names": names})).into_response(),
        Err(e) => failure(&e),
    }
}

async fn set(State(state): State<AppState>, Query(asked): Query<Profile>, Json(new): Json<NewSecret>) -> Response {
    if let Some(refused) = other_profile(&state, &asked) {
        return refused;
    }
    if new.value.is_empty() {
        let sentence = format!("no value given for '{}' (nothing stored)", new.name);
        return (StatusCode::BAD_REQUEST, Json(json!({"ok": false, "error": sentence}))).into_response();
    }
    match state.control.set_secret(&new.name, new.value).await {
        Ok(()) => Json(json!({"ok": true, "name": new.name})).into_response(),
        Err(e) => failure(&e),
    }
}

async fn remove(State(state): State<AppState>, Path(name): Path<String>, Query(asked): Query<Profile>) -> Response {
    if let Some(refused) = other_profile(&state, &asked) {
        return refused;
    }
    match state.control.remove_secret(&name).await {
        Ok(true) => Json(json!({"ok": true, "name": name})).into_response(),
        Ok(false) => {
            let sentence = format!("there is no secret named '{name}'");
            (StatusCode::NOT_FOUND, Json(json!({"ok": false, "error": sentence}))).into_response()
        }
        Err(e) => failure(&e),
    }
}
