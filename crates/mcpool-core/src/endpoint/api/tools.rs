//! The control API's tool search and listing costs: `GET
//! /api/tools/search?q=QUERY&limit=N[&server=S][&profile=P]` (every tool a
//! server lists, disabled and held-back ones too, each with its state, for
//! the dashboard's search box and `mcpool tools search`) and `GET
//! /api/tools/listing` (what each aggregated endpoint's listing mode sends
//! and what the full listing would cost).

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;

use super::AppState;
use crate::pool::SearchScope;
use crate::search::compact::{listing_tokens, tool_tokens};
use crate::search::meta::Found;

/// Most results `/api/tools/search` answers with.
pub const MAX_LIMIT: usize = 100;
const DEFAULT_LIMIT: usize = 20;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/tools/search", get(search))
        .route("/api/tools/listing", get(listing))
}

#[derive(Debug, Deserialize)]
struct SearchQuery {
    #[serde(default)]
    q: String,
    limit: Option<usize>,
    server: Option<String>,
    profile: Option<String>,
}

async fn search(State(state): State<AppState>, Query(query): Query<SearchQuery>) -> Response {
    let profile = match &query.profile {
        Some(name) => match state.pool.tool_control().profile(name) {
            Some(p) => Some(p),
            None => {
                return (
                    StatusCode::NOT_FOUND,
                    Json(json!({"error": format!("mcpool has no profile named '{name}'")})),
                )
                    .into_response()
            }
        },
        None => None,
    };
    let scope = SearchScope {
        callable_only: false,
        server: query.server.clone().filter(|s| !s.is_empty()),
        profile,
    };
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
    let matches = state.pool.search_tools(&query.q, limit, &scope);
    let tools: Vec<serde_json::Value> = matches
        .iter()
        .map(|m| {
            let found = Found::new(
                m.public.clone(),
                m.server.clone(),
                m.status.as_str().to_string(),
                &m.tool,
            );
            let mut value = serde_json::to_value(found).unwrap_or_default();
            if let Some(obj) = value.as_object_mut() {
                let own = m
                    .public
                    .strip_prefix(&format!("{}__", crate::names::sanitize(&m.server)));
                obj.insert("tool".into(), json!(own.unwrap_or(&m.public)));
                obj.insert("state".into(), json!(m.state));
                obj.insert("enabled".into(), json!(m.enabled));
                obj.insert("tokens".into(), json!(tool_tokens(&m.tool)));
                obj.insert("score".into(), json!(m.score));
            }
            value
        })
        .collect();
    Json(json!({"query": query.q, "tools": tools})).into_response()
}

async fn listing(State(state): State<AppState>) -> Response {
    let pool = &state.pool;
    let profiles: Vec<String> = pool.tool_control().policy().profiles.into_keys().collect();
    let endpoints: Vec<serde_json::Value> = std::iter::once(None)
        .chain(profiles.iter().map(|p| Some(p.as_str())))
        .filter_map(|profile| {
            let listed = pool.listed(profile, None, &|_| false)?;
            let path = match profile {
                Some(p) => format!("/profiles/{p}/mcp"),
                None => "/mcp".to_string(),
            };
            Some(json!({
                "path": path,
                "mode": listed.listing.mode,
                "budget": listed.listing.budget,
                "sent": listed.sent,
                "full_tools": listed.full_count,
                "full_tokens": listed.full_tokens,
                "sent_tools": listed.tools.len(),
                "sent_tokens": match listed.sent {
                    crate::search::Sent::All => listed.full_tokens,
                    crate::search::Sent::Search => listing_tokens(&listed.tools),
                },
                "pinned": listed.listing.pinned,
                "pin_most_used": listed.listing.pin_most_used,
            }))
        })
        .collect();
    Json(json!({"endpoints": endpoints, "indexed_tools": pool.indexed_tools()})).into_response()
}
