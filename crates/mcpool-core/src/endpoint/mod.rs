//! The local HTTP endpoint: MCP at `/mcp`, `/servers/NAME/mcp` and
//! `/profiles/NAME/mcp`, the control API under `/api`, the dashboard at
//! `/ui` and the Prometheus metrics at `/metrics`, all behind the Origin
//! check and the bearer token (or, for `/ui` and `/api`, a browser session
//! from a one-time link); a change through `/api` needs the control
//! credential or a session. `router` is a pure builder, tested with
//! `oneshot`.

pub mod api;
pub mod browser;
pub mod connect;
mod guard;
pub mod mcp;
pub mod ui;

use std::sync::Arc;

use axum::extract::State;
use axum::middleware;
use axum::response::Response;
use axum::Router;
use tokio_util::sync::CancellationToken;

use crate::agent_config::Dirs;
use crate::control::Control;
use crate::pool::Pool;
use crate::telemetry::Metrics;
use guard::guard;
use mcp::session_store::SessionFile;
use mcp::sessions::{self, SessionBook};
use mcp::McpEndpoints;

#[derive(Clone)]
pub struct EndpointOptions {
    /// The agents' token: MCP, the meta-tools, reading the control API.
    pub token: String,
    /// The control credential of mcpool's own CLI (see
    /// [`control_credential`](crate::control_credential)): every change
    /// through the control API, and whatever the agents' token opens.
    pub control: String,
    /// The token came from `MCPOOL_TOKEN` (see [`ServiceOptions`](crate::service::ServiceOptions)).
    pub token_fixed: bool,
    /// Where the agents' own configs live.
    pub client_dirs: Arc<Dirs>,
    /// Accept any `Host` header (only with `--allow-non-loopback`).
    pub any_host: bool,
    /// The largest request body the MCP paths take (`--max-request-bytes`).
    pub max_request_bytes: usize,
    /// Cancelled at shutdown: closes every agent session.
    pub shutdown: CancellationToken,
    /// The dashboard's one-time links and sessions, shared with whoever
    /// else issues links in this process (the tray's window).
    pub dashboard: Arc<browser::BrowserAuth>,
}

/// How many agent sessions may be open, how long one may stay idle, and
/// where they are saved to survive a restart (none: they end with the
/// process).
#[derive(Clone)]
pub struct SessionOptions {
    pub max: usize,
    pub idle: std::time::Duration,
    pub file: Option<Arc<SessionFile>>,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            max: sessions::DEFAULT_MAX_SESSIONS,
            idle: sessions::DEFAULT_SESSION_IDLE,
            file: None,
        }
    }
}

#[derive(Clone)]
pub struct AppState {
    pub pool: Pool,
    /// The pool's operations, which the API's handlers translate to.
    pub control: Control,
    /// Shared, not copied: axum clones the state for every request (the
    /// options hold the token, a `String`).
    options: Arc<EndpointOptions>,
    /// The MCP paths' rmcp services and the agent sessions they hold.
    mcp: Arc<McpEndpoints>,
    metrics: Arc<Metrics>,
}

/// How the guard let a request in; handlers that care read it as an extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// The agents' token.
    Bearer,
    /// The control credential, as mcpool's own CLI sends it.
    Control,
    /// A dashboard session cookie.
    Session,
    /// A path that needs neither (the sign-in link, static files).
    Public,
}

pub fn router(pool: Pool, options: EndpointOptions) -> Router {
    router_with_sessions(pool, options, SessionOptions::default())
}

/// [`router`] with a session limit and a session file of the caller's.
pub fn router_with_sessions(pool: Pool, options: EndpointOptions, sessions: SessionOptions) -> Router {
    let metrics = Metrics::watch(&pool);
    router_with_metrics(Control::new(pool), options, sessions, metrics)
}

/// [`router_with_sessions`] for the pool of `control` (which the caller
/// shares, as the tray does), whose `GET /metrics` answers `metrics` (which
/// a `--metrics-listen` listener shares).
pub fn router_with_metrics(
    control: Control,
    options: EndpointOptions,
    sessions: SessionOptions,
    metrics: Arc<Metrics>,
) -> Router {
    let pool = control.pool().clone();
    let book = Arc::new(SessionBook::new(sessions.max, sessions.idle, options.shutdown.clone()));
    let mcp = McpEndpoints::new(&pool, &options, book, sessions.file);
    let state = AppState {
        pool,
        control,
        options: Arc::new(options),
        mcp: Arc::new(mcp),
        metrics,
    };
    Router::new()
        .merge(mcp::routes(&state))
        .route("/metrics", axum::routing::get(metrics_text))
        .merge(api::routes())
        .merge(ui::routes())
        .with_state(state.clone())
        .layer(middleware::from_fn(mcp::session_end))
        .layer(middleware::from_fn_with_state(state, guard))
}

/// `GET /metrics`: the Prometheus metrics, behind the token like `/api`.
async fn metrics_text(State(state): State<AppState>, headers: axum::http::HeaderMap) -> Response {
    let accept = headers.get(axum::http::header::ACCEPT).and_then(|h| h.to_str().ok());
    crate::telemetry::scrape::answer(&state.metrics, accept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::StatusCode;
    use tower::ServiceExt;

    const CONTROL: &str = "c0ntrol";

    fn app(token: &str) -> Router {
        router(
            Pool::default(),
            EndpointOptions {
                token: token.into(),
                control: CONTROL.into(),
                token_fixed: false,
                client_dirs: Arc::new(Dirs::from_env()),
                any_host: false,
                max_request_bytes: mcp::request_check::DEFAULT_MAX_REQUEST_BYTES,
                shutdown: CancellationToken::new(),
                dashboard: Arc::default(),
            },
        )
    }

    async fn status(app: Router, headers: &[(&str, &str)]) -> StatusCode {
        let mut req = axum::http::Request::builder().uri("/api/servers");
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            req = req.header("host", "127.0.0.1:7410");
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        app.oneshot(req.body(Body::empty()).unwrap()).await.unwrap().status()
    }

    #[tokio::test]
    async fn token_and_origin_rules() {
        let bearer = ("authorization", "Bearer s3cret");
        let cases: [(&[(&str, &str)], StatusCode); 6] = [
            (&[], StatusCode::UNAUTHORIZED),
            (&[("authorization", "Bearer nope")], StatusCode::UNAUTHORIZED),
            (&[bearer], StatusCode::OK),
            (&[bearer, ("origin", "https://evil.example")], StatusCode::FORBIDDEN),
            (&[("origin", "http://evil.example")], StatusCode::FORBIDDEN),
            (&[bearer, ("origin", "http://127.0.0.1:5173")], StatusCode::OK),
        ];
        for (headers, expected) in cases {
            assert_eq!(status(app("s3cret"), headers).await, expected, "{headers:?}");
        }
    }

    #[tokio::test]
    async fn the_scheme_is_case_insensitive_and_hosts_must_be_loopback() {
        let ok = [("authorization", "BEARER s3cret")];
        assert_eq!(status(app("s3cret"), &ok).await, StatusCode::OK);
        assert_eq!(
            status(app("s3cret"), &[("authorization", "bEaReR s3cret")]).await,
            StatusCode::OK
        );
        assert_eq!(
            status(app("s3cret"), &[("authorization", "Basic s3cret")]).await,
            StatusCode::UNAUTHORIZED
        );
        for host in ["127.0.0.1:7410", "localhost", "[::1]:9"] {
            let headers = [("authorization", "Bearer s3cret"), ("host", host)];
            assert_eq!(status(app("s3cret"), &headers).await, StatusCode::OK, "{host}");
        }
        for host in [
            "evil.example",
            "attacker.test:7410",
            "127.0.0.1.nip.io",
            "localhost@evil",
        ] {
            let headers = [("authorization", "Bearer s3cret"), ("host", host)];
            assert_eq!(status(app("s3cret"), &headers).await, StatusCode::FORBIDDEN, "{host}");
        }
    }

    #[tokio::test]
    async fn one_host_header_exactly_on_http_1_1() {
        use axum::http::Version;
        let request = |version: Version, hosts: &[&str]| {
            let mut r = axum::http::Request::get("/api/servers")
                .version(version)
                .header("authorization", "Bearer s3cret");
            for h in hosts {
                r = r.header("host", *h);
            }
            r.body(Body::empty()).unwrap()
        };
        let status = |r: axum::http::Request<Body>| async { app("s3cret").oneshot(r).await.unwrap().status() };
        assert_eq!(status(request(Version::HTTP_11, &["127.0.0.1"])).await, StatusCode::OK);
        assert_eq!(status(request(Version::HTTP_11, &[])).await, StatusCode::BAD_REQUEST);
        assert_eq!(
            status(request(Version::HTTP_11, &["127.0.0.1", "127.0.0.1"])).await,
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            status(request(Version::HTTP_11, &["127.0.0.1", "evil.example"])).await,
            StatusCode::BAD_REQUEST
        );
        assert_eq!(status(request(Version::HTTP_10, &[])).await, StatusCode::OK);
    }

    #[tokio::test]
    async fn a_malformed_json_body_is_400_with_a_parse_error() {
        let request = axum::http::Request::post("/mcp")
            .header("authorization", "Bearer s3cret")
            .header("host", "127.0.0.1")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(Body::from("{not json"))
            .unwrap();
        let response = app("s3cret").oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let body = axum::body::to_bytes(response.into_body(), 4096).await.unwrap();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["error"]["code"], -32700, "{body}");
    }
}
