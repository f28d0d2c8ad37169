//! Who may use the endpoint: one `Host` and a loopback one (DNS
//! rebinding), a loopback `Origin` or none, then the bearer token, else a
//! dashboard session for `/ui` and `/api` (behaviour.md "endpoint auth").

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
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
    let auth = if has_token(request.headers(), &state.options.token) {
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
    request.extensions_mut().insert(auth);
    next.run(request).await
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
