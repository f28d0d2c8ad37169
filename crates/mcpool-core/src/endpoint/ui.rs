//! The dashboard at `/ui`: its files, embedded in the binary, the one-time
//! sign-in link, and the API calls only the dashboard needs (`/api/token`,
//! `/api/connect` (in `connect.rs`), `/api/ui/link`).

use axum::extract::{Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde_json::json;

use super::browser::{self, CODE_TTL};
use super::{connect, AppState, Auth};

const INDEX_HTML: &str = include_str!("../../../../ui/index.html");
const SIGNIN_HTML: &str = include_str!("../../../../ui/signin.html");

const JS: &str = "text/javascript; charset=utf-8";

/// `(name, content type, text)` of each file under `/ui/`: every module of
/// ui/ must be here, or the page that imports it breaks (a test checks).
macro_rules! assets {
    ($(($name:literal, $ty:expr)),* $(,)?) => {
        &[$(($name, $ty, include_str!(concat!("../../../../ui/", $name)))),*]
    };
}
const ASSETS: &[(&str, &str, &str)] = assets![
    ("app.js", JS),
    ("lib.js", JS),
    ("cards.js", JS),
    ("activity.js", JS),
    ("search.js", JS),
    ("servers.js", JS),
    ("server_form.js", JS),
    ("connect.js", JS),
    ("registry.js", JS),
    ("plots.js", JS),
    ("history.js", JS),
    ("logs.js", JS),
    ("style.css", "text/css; charset=utf-8"),
    ("icon.svg", "image/svg+xml"),
];

/// Scripts and styles from these files only: no inline script, no framing.
pub const CSP: &str = "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

const HTML: &str = "text/html; charset=utf-8";

pub fn routes() -> Router<AppState> {
    let mut router = Router::new()
        .route("/ui", get(index))
        .route("/ui/", get(index))
        .route("/ui/login", get(login));
    for &(name, ty, body) in ASSETS {
        router = router.route(&format!("/ui/{name}"), get(move || async move { asset(ty, body) }));
    }
    router
        .route("/api/ui/link", post(link))
        .route("/api/token", get(token))
        .route("/api/connect", get(connect::get_snippets))
        .route("/api/connect/{client}", post(connect::write))
}

/// Paths the guard lets through without a token or session: the sign-in
/// itself and files that hold nothing private (the sign-in page uses them).
pub fn is_public(path: &str) -> bool {
    matches!(path, "/ui/login" | "/ui/style.css" | "/ui/icon.svg")
}

/// Whether `path` belongs to the dashboard (a session cookie may open it).
pub fn is_browser_path(path: &str) -> bool {
    path == "/ui" || path.starts_with("/ui/") || path.starts_with("/api/")
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

async fn index() -> Response {
    asset(HTML, INDEX_HTML)
}

/// The page a browser gets without a session.
pub fn signin_page(status: StatusCode) -> Response {
    let mut response = asset(HTML, SIGNIN_HTML);
    *response.status_mut() = status;
    response
}

#[derive(Deserialize)]
struct LoginQuery {
    code: Option<String>,
}

async fn login(State(state): State<AppState>, headers: HeaderMap, Query(q): Query<LoginQuery>) -> Response {
    let Some(session) = q.code.as_deref().and_then(|c| state.options.dashboard.redeem(c)) else {
        return signin_page(StatusCode::UNAUTHORIZED);
    };
    let name = browser::cookie_name(headers.get(header::HOST).and_then(|h| h.to_str().ok()));
    let Ok(cookie) = HeaderValue::from_str(&browser::set_cookie(&name, &session)) else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    (
        StatusCode::SEE_OTHER,
        [
            (header::SET_COOKIE, cookie),
            (header::LOCATION, HeaderValue::from_static("/ui")),
            (header::REFERRER_POLICY, HeaderValue::from_static("no-referrer")),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
    )
        .into_response()
}

pub fn forbidden(why: &str) -> Response {
    (StatusCode::FORBIDDEN, Json(json!({"error": why}))).into_response()
}

/// `POST /api/ui/link`: a one-time dashboard link, for `mcpool ui` (the
/// control credential only: a session may change anything, so the agents'
/// token must not open one).
async fn link(State(state): State<AppState>, Extension(auth): Extension<Auth>, headers: HeaderMap) -> Response {
    if auth != Auth::Control {
        return forbidden("a dashboard link is given to mcpool's own CLI only (run `mcpool ui`)");
    }
    let path = state.options.dashboard.issue_link_path();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1");
    (
        [(header::CACHE_CONTROL, "no-store")],
        Json(json!({"url": format!("http://{host}{path}"), "path": path, "expires_in_s": CODE_TTL.as_secs()})),
    )
        .into_response()
}

/// `GET /api/token`: for the dashboard's copy button (session only: a bearer
/// client has it already).
async fn token(State(state): State<AppState>, Extension(auth): Extension<Auth>) -> Response {
    if auth != Auth::Session {
        return forbidden("the token is given to a signed-in dashboard only");
    }
    (
        [(header::CACHE_CONTROL, "no-store")],
        Json(json!({"token": state.options.token})),
    )
        .into_response()
}

/// Extra rules for a request that a session cookie authenticates: it must
/// come from this dashboard. A page on another site never gets the cookie
/// (SameSite=Strict), but another port of this host is the same site, so
/// anything that changes state or reads the token must be same-origin.
/// The `Err` is the reason, for a 403 ([`forbidden`]).
pub fn check_session_request(request: &Request, any_host: bool) -> Result<(), &'static str> {
    let headers = request.headers();
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if !any_host && !get("host").is_some_and(crate::loopback::is_loopback_authority) {
        return Err("the dashboard is served on loopback addresses only");
    }
    let fetch_site = get("sec-fetch-site");
    if fetch_site == Some("cross-site") {
        return Err("cross-site requests are refused");
    }
    let sensitive = !matches!(*request.method(), Method::GET | Method::HEAD) || request.uri().path() == "/api/token";
    if sensitive {
        if fetch_site.is_some_and(|s| s != "same-origin") {
            return Err("only the dashboard itself may do this");
        }
        // The guard already refused a non-loopback Origin; a state change
        // must name one.
        if request.method() != Method::GET && get("origin").is_none() {
            return Err("a dashboard request must carry an Origin header");
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "ui_tests.rs"]
mod tests;
