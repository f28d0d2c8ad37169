//! Who may use the endpoint: one `Host` and a loopback one (DNS
//! rebinding), a loopback `Origin` or none, then the bearer token, else a
//! dashboard session for `/ui` and `/api` (behaviour.md "endpoint auth");
//! and who may change things through `/api`: the control credential or a
//! session, never the agents' token alone ("control API").

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use crate::loopback::{is_loopback_authority, is_loopback_origin};

use super::{ui, AppState, Auth};

/// Origin first (a browser page elsewhere gets 403 whatever it sends), then
/// the bearer token, else a dashboard session for `/ui` and `/api` (401).
pub(super) async fn guard(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    if let Err(why) = one_host(&request) {
        return (StatusCode::BAD_REQUEST, why).into_response();
    }
    // DNS rebinding: a page on another name that resolves to 127.0.0.1
    // sends its own Host. rmcp checks it for MCP; this covers every path.
    if !state.options.any_host && !request.headers().get(header::HOST).is_none_or(is_loopback_host) {
        return (StatusCode::FORBIDDEN, "mcpool accepts only loopback Host names\n").into_response();
    }
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        if !is_loopback_origin(origin.to_str().unwrap_or("")) {
            return (
                StatusCode::FORBIDDEN,
                "mcpool accepts requests only from loopback origins\n",
            )
                .into_response();
        }
    }
    let path = request.uri().path().to_string();
    // The control credential first: it opens everything the token does.
    let auth = if has_token(request.headers(), &state.options.control) {
        Auth::Control
    } else if has_token(request.headers(), &state.options.token) {
        Auth::Bearer
    } else if ui::is_public(&path) {
        Auth::Public
    } else if ui::is_browser_path(&path) && state.options.dashboard.has_session(request.headers()) {
        if let Err(why) = ui::check_session_request(&request, state.options.any_host) {
            return ui::forbidden(why);
        }
        Auth::Session
    } else if path == "/ui" || path.starts_with("/ui/") {
        return ui::signin_page(StatusCode::UNAUTHORIZED);
    } else {
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer realm=\"mcpool\"")],
            "mcpool needs `Authorization: Bearer TOKEN` (see `mcpool token`)\n",
        )
            .into_response();
    };
    if auth == Auth::Bearer && is_change(request.method(), &path) {
        return ui::forbidden(NEEDS_CONTROL);
    }
    request.extensions_mut().insert(auth);
    next.run(request).await
}

/// What a change through `/api` with only the agents' token gets (403).
const NEEDS_CONTROL: &str = "the agents' token may only read the control API; make this change in the dashboard (`mcpool ui`) or with mcpool's own commands (`mcpool add`, `mcpool secret`, `mcpool login`, ...)";

/// Whether a request changes something through the control API: anything
/// but `GET` and `HEAD` under `/api/`, except a server's `reconnect` and
/// `disconnect`, which agents may do anyway (`mcpool__reconnect`).
fn is_change(method: &Method, path: &str) -> bool {
    let Some(rest) = path.strip_prefix("/api/") else {
        return false;
    };
    if matches!(*method, Method::GET | Method::HEAD) {
        return false;
    }
    let either = rest
        .strip_prefix("servers/")
        .and_then(|server| server.rsplit_once('/'))
        .is_some_and(|(name, verb)| {
            !name.is_empty() && !name.contains('/') && matches!(verb, "reconnect" | "disconnect")
        });
    !(either && *method == Method::POST)
}

/// RFC 9112 §3.2: an HTTP/1.1 request has exactly one `Host`; HTTP/2 may
/// carry its authority in the URI instead (HTTP/1.0 may have none). Two
/// could be read differently by the Host check and by what comes after it.
fn one_host(request: &Request) -> Result<(), &'static str> {
    let mut hosts = request.headers().get_all(header::HOST).iter();
    let (first, second) = (hosts.next(), hosts.next());
    if second.is_some() {
        return Err("mcpool takes exactly one Host header; this request has several\n");
    }
    let needs_host = match request.version() {
        axum::http::Version::HTTP_09 | axum::http::Version::HTTP_10 => false,
        axum::http::Version::HTTP_11 => true,
        _ => request.uri().authority().is_none(),
    };
    if first.is_none() && needs_host {
        return Err("mcpool needs a Host header on HTTP/1.1 requests\n");
    }
    Ok(())
}

pub(super) fn has_token(headers: &HeaderMap, token: &str) -> bool {
    let Some(value) = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    // The scheme is case-insensitive (RFC 9110 §11.1): `BEARER x` is fine.
    let Some((scheme, given)) = value.trim_start().split_once(' ') else {
        return false;
    };
    // Compared in constant time: how far a guess matches never shows in
    // the timing (only its length does, which the token's format gives away).
    scheme.eq_ignore_ascii_case("bearer") && bool::from(given.trim().as_bytes().ct_eq(token.as_bytes()))
}

/// A `Host` header of `localhost`, `127.x.x.x` or `[::1]`, with any port.
fn is_loopback_host(host: &axum::http::HeaderValue) -> bool {
    host.to_str().is_ok_and(is_loopback_authority)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_are_every_api_write_but_reconnect_and_disconnect() {
        let change = |m: Method, p: &str| is_change(&m, p);
        for path in [
            "/api/servers",
            "/api/servers/test",
            "/api/servers/fs",
            "/api/servers/fs/sandbox/allow",
            "/api/servers/fs/enable",
            "/api/servers/fs/login",
            "/api/servers/fs/logout",
            "/api/servers/fs/tools/read/disable",
            "/api/servers/fs/tools/reconnect/reconnect",
            "/api/secrets",
            "/api/secrets/NAME",
            "/api/registry/add",
            "/api/connect/cursor",
            "/api/ui/link",
            "/api/servers//reconnect",
        ] {
            assert!(change(Method::POST, path), "{path}");
        }
        assert!(change(Method::PUT, "/api/servers/fs"));
        assert!(change(Method::DELETE, "/api/servers/fs"));
        assert!(change(Method::DELETE, "/api/servers/fs/reconnect"));
        assert!(change(Method::PATCH, "/api/servers/fs"));
        assert!(change(Method::OPTIONS, "/api/servers"));
        for path in ["/api/servers/fs/reconnect", "/api/servers/fs/disconnect"] {
            assert!(!change(Method::POST, path), "{path}");
        }
        for (method, path) in [
            (Method::GET, "/api/servers"),
            (Method::HEAD, "/api/servers"),
            (Method::GET, "/api/events"),
            (Method::POST, "/mcp"),
            (Method::DELETE, "/mcp"),
            (Method::POST, "/servers/fs/mcp"),
            (Method::POST, "/ui/login"),
        ] {
            assert!(!change(method.clone(), path), "{method} {path}");
        }
    }

    #[test]
    fn the_token_matches_only_whole() {
        let headers = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::AUTHORIZATION, v.parse().unwrap());
            h
        };
        assert!(has_token(&headers("Bearer s3cret"), "s3cret"));
        assert!(has_token(&headers("bearer  s3cret "), "s3cret"));
        for wrong in [
            "Bearer s3cre",
            "Bearer s3cret!",
            "Bearer s3creT",
            "Bearer ",
            "Basic s3cret",
            "s3cret",
        ] {
            assert!(!has_token(&headers(wrong), "s3cret"), "{wrong}");
        }
        assert!(!has_token(&HeaderMap::new(), "s3cret"));
    }
}
