//! The agents' adapter: MCP over Streamable HTTP at `/mcp` (every server),
//! `/servers/NAME/mcp` (one) and `/profiles/NAME/mcp` (a profile's subset).
//! rmcp serves the transport; [`session::AgentSession`] answers each agent
//! from the pool; `sessions` and `session_store` keep the agents' sessions
//! (bounded, idle ones closed, saved across a restart); `request_check`,
//! `json_reply` and [`session_end`] fix what rmcp answers differently from
//! what clients expect; `builtin` is the aggregated endpoint's own tools.

pub mod builtin;
mod cached_list;
mod found;
pub mod json_reply;
pub mod request_check;
pub mod session;
pub mod session_store;
pub mod sessions;
pub mod slow_reply;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use futures::StreamExt;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use super::{AppState, EndpointOptions};
use crate::hub::Scope;
use crate::pool::Pool;
use crate::sync::lock;
use session::AgentSession;
use session_store::{ScopedStore, SessionFile};
use sessions::{PoolSessionManager, SessionBook};

type McpService = StreamableHttpService<AgentSession, PoolSessionManager>;

/// Every MCP path's service: the aggregated one, and one per server and per
/// profile made when first asked for; all share one session book.
pub(super) struct McpEndpoints {
    aggregated: McpEndpoint,
    per_server: Mutex<HashMap<String, McpEndpoint>>,
    per_profile: Mutex<HashMap<String, McpEndpoint>>,
    pub(super) shared: Shared,
}

/// What every MCP path shares: the agent sessions (open, and saved), and
/// the tools found by agents that have no session.
pub(super) struct Shared {
    pub(super) book: Arc<SessionBook>,
    pub(super) file: Option<Arc<SessionFile>>,
    found: Arc<found::FoundBook>,
}

impl McpEndpoints {
    pub(super) fn new(
        pool: &Pool,
        options: &EndpointOptions,
        book: Arc<SessionBook>,
        file: Option<Arc<SessionFile>>,
    ) -> McpEndpoints {
        let shared = Shared {
            book,
            file,
            found: Arc::default(),
        };
        McpEndpoints {
            aggregated: mcp_service(pool, Scope::All, options, &shared),
            per_server: Mutex::default(),
            per_profile: Mutex::default(),
            shared,
        }
    }

    /// The service of a server's or a profile's path, made when first asked.
    fn scoped(&self, state: &AppState, scope: Scope) -> McpEndpoint {
        let (map, name) = match &scope {
            Scope::One(name) => (&self.per_server, name.clone()),
            Scope::Profile(name) => (&self.per_profile, name.clone()),
            Scope::All => return self.aggregated.clone(),
        };
        lock(map)
            .entry(name)
            .or_insert_with(|| mcp_service(&state.pool, scope, &state.options, &self.shared))
            .clone()
    }
}

/// The three MCP paths.
pub(super) fn routes(state: &AppState) -> Router<AppState> {
    Router::new()
        .nest_service("/mcp", any(aggregated_mcp).with_state(state.clone()))
        .route("/servers/{name}/mcp", any(per_server_mcp))
        .route("/profiles/{name}/mcp", any(per_profile_mcp))
}

/// One MCP path's rmcp service and its sessions.
#[derive(Clone)]
struct McpEndpoint {
    service: McpService,
    sessions: Arc<PoolSessionManager>,
    /// The aggregated and profile paths' `tools/list` from serialised bytes.
    cached: Option<cached_list::CachedList>,
}

impl McpEndpoint {
    async fn serve(&self, request: Request, options: &EndpointOptions) -> Response {
        let response = request_check::serve(
            request,
            options.max_request_bytes,
            &self.service,
            &self.sessions,
            self.cached.as_ref(),
        )
        .await;
        // What a burst of requests freed goes back to the system once
        // the agents are quiet.
        crate::os::memory::note_work(1);
        response
    }
}

fn mcp_service(pool: &Pool, scope: Scope, options: &EndpointOptions, shared: &Shared) -> McpEndpoint {
    // No priming events: without an event store there is nothing to resume,
    // and each one costs a write per request.
    // A 2026-07-28 request answered by its response alone gets it as JSON
    // (rmcp keeps the stream when anything comes first); session replies
    // go through `json_reply` in `session_end`.
    let mut config = StreamableHttpServerConfig::default()
        .with_sse_retry(None)
        .with_json_response(true)
        .with_max_request_body_bytes(options.max_request_bytes)
        .with_cancellation_token(options.shutdown.child_token());
    if options.any_host {
        config = config.disable_allowed_hosts();
    }
    // A session opened on one endpoint is restored only on that endpoint.
    let endpoint = match &scope {
        Scope::All => "/mcp".to_string(),
        Scope::One(name) => format!("/servers/{name}/mcp"),
        Scope::Profile(name) => format!("/profiles/{name}/mcp"),
    };
    let store = shared.file.as_ref().map(|f| ScopedStore::new(f.clone(), endpoint));
    if let Some(store) = &store {
        config.session_store = Some(Arc::new(store.clone()));
    }
    let cached = match &scope {
        Scope::All => Some(None),
        Scope::Profile(name) => Some(Some(name.clone())),
        Scope::One(_) => None,
    }
    .map(|profile| cached_list::CachedList {
        pool: pool.clone(),
        profile,
    });
    let pool = pool.clone();
    let found = shared.found.clone();
    let sessions = PoolSessionManager::new(shared.book.clone(), store);
    let service = StreamableHttpService::new(
        move || Ok(AgentSession::new(pool.clone(), scope.clone(), found.clone())),
        sessions.clone(),
        config,
    );
    McpEndpoint {
        service,
        sessions,
        cached,
    }
}

/// Where rmcp's status codes differ from what clients expect: ending a
/// session (`DELETE` with `Mcp-Session-Id`) answers 204, not 202, which
/// clients such as the Python SDK report as a failed termination (bodies
/// rmcp refuses are `request_check`'s, and so is a 2026-07-28 request's
/// reply that has not begun within 50 ms, which goes out as a stream then:
/// `slow_reply`). A reply whose SSE stream holds only its response is sent
/// as JSON (`json_reply`).
pub(super) async fn session_end(request: Request, next: Next) -> Response {
    // Nested services see their path without the prefix; the original
    // is kept in an extension.
    let path = request
        .extensions()
        .get::<axum::extract::OriginalUri>()
        .map_or_else(|| request.uri().path(), |o| o.path());
    let mcp_path =
        path == "/mcp" || ((path.starts_with("/servers/") || path.starts_with("/profiles/")) && path.ends_with("/mcp"));
    let json_reply = mcp_path && json_reply::may_answer_json(request.method(), request.headers().get(header::ACCEPT));
    let delete = request.method() == axum::http::Method::DELETE;
    let mut response = next.run(request).await;
    if delete && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    if json_reply && response.extensions().get::<slow_reply::Streamed>().is_none() {
        response = json_reply::json_when_whole(response).await;
    }
    if mcp_path {
        response = unfolded(response).await;
    }
    response
}

/// A reply with the fields that the pool kept for its servers' messages
/// put back where they were (kept/): a JSON body whole, an event stream
/// event by event (rmcp writes each event as one frame).
async fn unfolded(response: Response) -> Response {
    let kind = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let stream = kind.starts_with("text/event-stream");
    if !stream && !kind.starts_with("application/json") {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    if stream {
        let frames = body
            .into_data_stream()
            .map(|frame| frame.map(|bytes| crate::kept::unfold_body(&bytes).map_or(bytes, axum::body::Bytes::from)));
        return Response::from_parts(parts, axum::body::Body::from_stream(frames));
    }
    let bytes = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(bytes) => bytes,
        Err(e) => {
            tracing::warn!("an MCP reply could not be read: {e}");
            return (StatusCode::INTERNAL_SERVER_ERROR, "the request's reply failed\n").into_response();
        }
    };
    match crate::kept::unfold_body(&bytes) {
        Some(unfolded) => {
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, axum::body::Body::from(unfolded))
        }
        None => Response::from_parts(parts, axum::body::Body::from(bytes)),
    }
}

/// Whether the agent takes an SSE reply (every Streamable HTTP client does).
fn accepts_stream(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|m| m.trim().starts_with("text/event-stream")))
}

async fn aggregated_mcp(State(state): State<AppState>, request: Request) -> Response {
    state.mcp.aggregated.serve(request, &state.options).await
}

async fn per_server_mcp(State(state): State<AppState>, Path(name): Path<String>, request: Request) -> Response {
    if state.pool.server(&name).is_none() {
        return (StatusCode::NOT_FOUND, format!("mcpool has no server named '{name}'\n")).into_response();
    }
    let service = state.mcp.scoped(&state, Scope::One(name));
    service.serve(request, &state.options).await
}

/// A profile's endpoint: the URL picks the profile, so a stateless agent
/// gets the same subset on every request.
async fn per_profile_mcp(State(state): State<AppState>, Path(name): Path<String>, request: Request) -> Response {
    if state.pool.tool_control().profile(&name).is_none() {
        return (StatusCode::NOT_FOUND, format!("mcpool has no profile named '{name}'\n")).into_response();
    }
    let service = state.mcp.scoped(&state, Scope::Profile(name));
    service.serve(request, &state.options).await
}
