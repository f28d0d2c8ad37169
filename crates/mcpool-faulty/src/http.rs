//! Streamable HTTP serving: the `/mcp` endpoint behind a fault layer, plus `/control` and `/stats`.
//!
//! Faults are switched at runtime through `POST /control`, so a test can flip
//! a running server between healthy and failing without restarting it.

use std::{
    collections::HashSet,
    net::SocketAddr,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
};

use anyhow::Context as _;
use axum::{
    extract::{Request, State},
    http::{header, HeaderMap, HeaderValue, StatusCode},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::{get, post},
    Json, Router,
};
use rmcp::transport::streamable_http_server::{
    session::local::LocalSessionManager, SessionManager as _, StreamableHttpServerConfig, StreamableHttpService,
};
use serde::{Deserialize, Serialize};
use tokio::{io::AsyncWriteExt as _, net::TcpListener};

use crate::{oauth::OAuthServer, server::Faulty, shared::Shared};

const SESSION_HEADER: &str = "mcp-session-id";
const DEFAULT_RETRY_AFTER_SECS: u64 = 2;

/// How `/mcp` answers, as set by `/control`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mode {
    #[serde(rename = "ok")]
    Ok,
    #[serde(rename = "401")]
    Unauthorized,
    #[serde(rename = "403")]
    Forbidden,
    #[serde(rename = "404")]
    NotFound,
    #[serde(rename = "429")]
    TooManyRequests,
    #[serde(rename = "500")]
    ServerError,
    /// 400 with a 64 KiB JSON body that echoes the request's headers, as
    /// careless servers and proxies do.
    #[serde(rename = "400-echo")]
    BadRequestEcho,
    /// 400 with a plain-text body of the request's header values, over and
    /// over: wherever a client cuts it, a value is cut in two.
    #[serde(rename = "400-echo-text")]
    BadRequestEchoText,
}

impl Mode {
    fn status(self) -> Option<StatusCode> {
        match self {
            Mode::Ok => None,
            Mode::Unauthorized => Some(StatusCode::UNAUTHORIZED),
            Mode::Forbidden => Some(StatusCode::FORBIDDEN),
            Mode::NotFound => Some(StatusCode::NOT_FOUND),
            Mode::TooManyRequests => Some(StatusCode::TOO_MANY_REQUESTS),
            Mode::ServerError => Some(StatusCode::INTERNAL_SERVER_ERROR),
            Mode::BadRequestEcho | Mode::BadRequestEchoText => Some(StatusCode::BAD_REQUEST),
        }
    }
}

/// Body of `POST /control`; absent fields leave the current setting alone.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControlRequest {
    pub mode: Option<Mode>,
    pub retry_after: Option<u64>,
    #[serde(default)]
    pub expire_sessions: bool,
}

/// The fault settings in force, returned by `POST /control`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Faults {
    pub mode: Mode,
    pub retry_after: u64,
    /// Sessions forgotten through `expire_sessions`, since start.
    pub expired_sessions: usize,
}

/// Options that only make sense over HTTP.
#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    pub require_bearer: Option<String>,
    pub hang_at_start: bool,
    /// Names accepted in `Host` besides loopback and the bound address.
    pub allow_hosts: Vec<String>,
    /// Serve a small OAuth authorization server and require its tokens.
    pub oauth: bool,
}

#[derive(Clone)]
pub struct AppState {
    shared: Arc<Shared>,
    sessions: Arc<LocalSessionManager>,
    options: Arc<HttpOptions>,
    faults: Arc<Mutex<Faults>>,
    expired: Arc<Mutex<HashSet<String>>>,
    oauth: Option<OAuthServer>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Binds `listen`, announces the URL on stdout, and serves until killed.
pub async fn serve(shared: Arc<Shared>, listen: SocketAddr, options: HttpOptions) -> anyhow::Result<()> {
    let listener = TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let addr = listener.local_addr().context("no local address")?;
    let oauth = options.oauth.then(|| OAuthServer::new(&format!("http://{addr}")));
    let app = router_with(shared, options, &addr.ip().to_string(), oauth);
    let mut stdout = tokio::io::stdout();
    stdout
        .write_all(format!("LISTENING http://{addr}/mcp\n").as_bytes())
        .await?;
    stdout.flush().await?;
    axum::serve(listener, app).await.context("http server failed")
}

/// The whole app; `host` is added to the hosts rmcp accepts in `Host`.
#[cfg(test)]
pub fn router(shared: Arc<Shared>, options: HttpOptions, host: &str) -> Router {
    router_with(shared, options, host, None)
}

fn router_with(shared: Arc<Shared>, options: HttpOptions, host: &str, oauth: Option<OAuthServer>) -> Router {
    let sessions = Arc::new(LocalSessionManager::default());
    let hosts = ["localhost", "127.0.0.1", "::1", host]
        .into_iter()
        .map(str::to_owned)
        .chain(options.allow_hosts.iter().cloned());
    let config = StreamableHttpServerConfig::default().with_allowed_hosts(hosts);
    let factory_shared = shared.clone();
    let mcp = StreamableHttpService::new(
        move || Ok(Faulty::new(factory_shared.clone())),
        sessions.clone(),
        config,
    );
    let state = AppState {
        shared,
        sessions,
        options: Arc::new(options),
        faults: Arc::new(Mutex::new(Faults {
            mode: Mode::Ok,
            retry_after: DEFAULT_RETRY_AFTER_SECS,
            expired_sessions: 0,
        })),
        expired: Arc::new(Mutex::new(HashSet::new())),
        oauth: oauth.clone(),
    };
    let mcp_routes = Router::new()
        .route_service("/mcp", mcp)
        .layer(middleware::from_fn_with_state(state.clone(), fault_layer));
    let app = Router::new()
        .route("/control", post(control))
        .route("/stats", get(stats))
        .with_state(state)
        .merge(mcp_routes);
    match oauth {
        Some(oauth) => app.merge(oauth.routes()),
        None => app,
    }
}

/// Answers `/mcp` with the configured fault instead of MCP, or passes it on.
async fn fault_layer(State(state): State<AppState>, request: Request, next: Next) -> Response {
    state.shared.record_http_request();
    if state.options.hang_at_start {
        return std::future::pending().await;
    }
    let faults = lock(&state.faults).clone();
    if faults.mode == Mode::BadRequestEcho {
        return echo_response(request.headers());
    }
    if faults.mode == Mode::BadRequestEchoText {
        return echo_text_response(request.headers());
    }
    if let Some(status) = faults.mode.status() {
        return fault_response(status, faults.retry_after);
    }
    let authorized = match &state.options.require_bearer {
        Some(token) => has_bearer(request.headers(), token),
        None => true,
    };
    if !authorized {
        return fault_response(StatusCode::UNAUTHORIZED, faults.retry_after);
    }
    if let Some(oauth) = &state.oauth {
        if let Err(refused) = oauth.check(request.headers()) {
            return *refused;
        }
    }
    let expired = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|session| lock(&state.expired).contains(session));
    if expired {
        return (StatusCode::NOT_FOUND, "Not Found: Session expired").into_response();
    }
    next.run(request).await
}

fn has_bearer(headers: &HeaderMap, token: &str) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .is_some_and(|given| given.trim() == token)
}

/// The size of the `400-echo` body.
const ECHO_BODY_BYTES: usize = 64 * 1024;

fn echo_response(headers: &HeaderMap) -> Response {
    let echoed: serde_json::Map<String, serde_json::Value> = headers
        .iter()
        .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
        .collect();
    let mut body = serde_json::json!({
        "error": {"message": "faulty: injected 400, the request was not understood", "request_headers": echoed},
    });
    let used = body.to_string().len();
    body["padding"] = "x".repeat(ECHO_BODY_BYTES.saturating_sub(used + 16)).into();
    (StatusCode::BAD_REQUEST, Json(body)).into_response()
}

fn echo_text_response(headers: &HeaderMap) -> Response {
    let values: Vec<String> = headers
        .iter()
        .filter(|(k, _)| k.as_str().starts_with("x-"))
        .map(|(k, v)| format!("{k}={}", String::from_utf8_lossy(v.as_bytes())))
        .collect();
    let one = values.join(";");
    let body = format!("rejected: {}", vec![one; 64].join(";"));
    (StatusCode::BAD_REQUEST, body).into_response()
}

fn fault_response(status: StatusCode, retry_after: u64) -> Response {
    let mut response = (status, format!("faulty: injected {}", status.as_u16())).into_response();
    let headers = response.headers_mut();
    if status == StatusCode::UNAUTHORIZED {
        headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    if status == StatusCode::TOO_MANY_REQUESTS {
        headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
    }
    response
}

async fn control(State(state): State<AppState>, Json(request): Json<ControlRequest>) -> Json<Faults> {
    if request.expire_sessions {
        let expired = expire_sessions(&state).await;
        lock(&state.faults).expired_sessions += expired;
    }
    let mut faults = lock(&state.faults);
    if let Some(mode) = request.mode {
        faults.mode = mode;
    }
    if let Some(retry_after) = request.retry_after {
        faults.retry_after = retry_after;
    } else if request.mode.is_some() {
        faults.retry_after = DEFAULT_RETRY_AFTER_SECS;
    }
    Json(faults.clone())
}

/// Closes every live session; their ids are remembered and answered 404.
async fn expire_sessions(state: &AppState) -> usize {
    let ids: Vec<_> = state.sessions.sessions.read().await.keys().cloned().collect();
    lock(&state.expired).extend(ids.iter().map(|id| id.to_string()));
    for id in &ids {
        if let Err(error) = state.sessions.close_session(id).await {
            eprintln!("mcpool-faulty: closing session {id}: {error}");
        }
    }
    ids.len()
}

async fn stats(State(state): State<AppState>) -> Json<crate::shared::Stats> {
    Json(state.shared.stats())
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use tower::ServiceExt as _;

    use super::*;

    fn app(options: HttpOptions) -> Router {
        let shared = Arc::new(Shared::new("t".into(), String::new(), None, None, None));
        router(shared, options, "127.0.0.1")
    }

    fn post_json(uri: &str, body: &str) -> Request {
        Request::post(uri)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::HOST, "127.0.0.1")
            .body(Body::from(body.to_owned()))
            .unwrap()
    }

    #[tokio::test]
    async fn control_switches_mcp_to_429_with_retry_after() {
        let app = app(HttpOptions::default());
        let set = post_json("/control", r#"{"mode":"429","retry_after":7}"#);
        assert_eq!(app.clone().oneshot(set).await.unwrap().status(), StatusCode::OK);
        let response = app.clone().oneshot(post_json("/mcp", "{}")).await.unwrap();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()[header::RETRY_AFTER], "7");
        let stats = app.oneshot(Request::get("/stats").body(Body::empty()).unwrap());
        assert_eq!(stats.await.unwrap().status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn missing_bearer_is_401_with_challenge() {
        let app = app(HttpOptions {
            require_bearer: Some("sekret".into()),
            ..HttpOptions::default()
        });
        let response = app.oneshot(post_json("/mcp", "{}")).await.unwrap();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(response.headers()[header::WWW_AUTHENTICATE], "Bearer");
    }

    #[tokio::test]
    async fn unknown_mode_is_rejected() {
        let app = app(HttpOptions::default());
        let response = app.oneshot(post_json("/control", r#"{"mode":"418"}"#)).await.unwrap();
        assert!(response.status().is_client_error());
    }
}
