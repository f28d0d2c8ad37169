//! The control API's activity log: `GET /api/activity` (entries, filtered,
//! newest first, a page at a time, or following with `after`), and what the
//! plots draw: `GET /api/activity/series` (one server's or tool's calls per
//! minute with p50/p95), `GET /api/activity/overview` (every server's
//! series and status band, for the cards) and `GET /api/activity/tools`
//! (one series per tool).

use std::collections::BTreeMap;
use std::time::SystemTime;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

use super::AppState;
use crate::activity::{Activity, Filter, FilterError};

/// The window of the card plots: the last hour, per minute.
const MINUTES: u32 = 60;
/// The status band's window: 24 hours.
const HOURS: u32 = 24;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/activity", get(entries))
        .route("/api/activity/series", get(series))
        .route("/api/activity/overview", get(overview))
        .route("/api/activity/tools", get(tools))
}

fn bad(field: &str, message: &str) -> Response {
    (
        StatusCode::BAD_REQUEST,
        Json(json!({"error": format!("{field}: {message}"), "field": field})),
    )
        .into_response()
}

fn unreadable(sentence: String) -> Response {
    (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"error": sentence}))).into_response()
}

/// Runs a read of the file off the async threads.
async fn read<T: Send + 'static>(
    activity: Activity,
    f: impl FnOnce(&Activity) -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(move || f(&activity))
        .await
        .unwrap_or_else(|e| Err(format!("the activity log could not be read: {e}")))
}

async fn entries(State(state): State<AppState>, Query(params): Query<BTreeMap<String, String>>) -> Response {
    let filter = match Filter::from_query(&params, SystemTime::now()) {
        Ok(f) => f,
        Err(e) => return bad(&e.field, &e.message),
    };
    let activity = state.pool.activity().clone();
    let problem = activity.problem();
    let enabled = activity.is_on();
    match read(activity, move |a| a.query(&filter)).await {
        Ok(page) => Json(json!({
            "items": page.items,
            "next_cursor": page.next_cursor,
            "last_id": page.last_id,
            "enabled": enabled,
            "problem": problem,
        }))
        .into_response(),
        Err(sentence) => unreadable(sentence),
    }
}

/// A window's length from the query; the error is the 400 to answer.
fn window(params: &BTreeMap<String, String>, key: &str, default: u32, max: u32) -> Result<u32, FilterError> {
    match params.get(key).map(|v| v.trim()).filter(|v| !v.is_empty()) {
        None => Ok(default),
        Some(v) => v
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=max).contains(n))
            .ok_or_else(|| FilterError {
                field: key.to_string(),
                message: format!("expected a number from 1 to {max}"),
            }),
    }
}

async fn series(State(state): State<AppState>, Query(params): Query<BTreeMap<String, String>>) -> Response {
    let minutes = match window(&params, "minutes", MINUTES, 24 * 60) {
        Ok(m) => m,
        Err(e) => return bad(&e.field, &e.message),
    };
    let server = params.get("server").filter(|s| !s.is_empty()).cloned();
    let tool = params.get("tool").filter(|s| !s.is_empty()).cloned();
    let activity = state.pool.activity().clone();
    match read(activity, move |a| a.series(server.as_deref(), tool.as_deref(), minutes)).await {
        Ok(s) => Json(s).into_response(),
        Err(sentence) => unreadable(sentence),
    }
}

async fn overview(State(state): State<AppState>, Query(params): Query<BTreeMap<String, String>>) -> Response {
    let (minutes, hours) = match (
        window(&params, "minutes", MINUTES, 24 * 60),
        window(&params, "hours", HOURS, 24 * 30),
    ) {
        (Ok(m), Ok(h)) => (m, h),
        (Err(e), _) | (_, Err(e)) => return bad(&e.field, &e.message),
    };
    let names: Vec<String> = state.pool.servers().iter().map(|s| s.name().to_string()).collect();
    let activity = state.pool.activity().clone();
    let read_all = move |a: &Activity| Ok((a.each(minutes, false)?, a.bands(None, hours)?));
    match read(activity, read_all).await {
        Ok((series, bands)) => {
            let mut servers: BTreeMap<String, serde_json::Value> = names
                .into_iter()
                .map(|n| (n, json!({"series": null, "band": null})))
                .collect();
            for s in series {
                if let Some(name) = s.server.clone() {
                    servers.entry(name).or_insert_with(|| json!({"band": null}))["series"] = json!(s);
                }
            }
            for b in bands {
                if let Some(slot) = servers.get_mut(&b.server) {
                    slot["band"] = json!(b);
                }
            }
            Json(json!({"minutes": minutes, "hours": hours, "servers": servers})).into_response()
        }
        Err(sentence) => unreadable(sentence),
    }
}

async fn tools(State(state): State<AppState>, Query(params): Query<BTreeMap<String, String>>) -> Response {
    let minutes = match window(&params, "minutes", MINUTES, 24 * 60) {
        Ok(m) => m,
        Err(e) => return bad(&e.field, &e.message),
    };
    let activity = state.pool.activity().clone();
    match read(activity, move |a| a.each(minutes, true)).await {
        Ok(mut tools) => {
            tools.sort_by(|a, b| {
                b.calls
                    .cmp(&a.calls)
                    .then(a.server.cmp(&b.server))
                    .then(a.tool.cmp(&b.tool))
            });
            Json(json!({"minutes": minutes, "tools": tools})).into_response()
        }
        Err(sentence) => unreadable(sentence),
    }
}
