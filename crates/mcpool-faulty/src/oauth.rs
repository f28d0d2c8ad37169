//! OAuth mode (`http --oauth`): a small authorization server beside `/mcp`
//! (protected-resource and authorization-server metadata, dynamic
//! registration, an authorize endpoint that approves at once and redirects,
//! PKCE-checked code exchange, rotating refresh tokens) and the bearer check
//! of `/mcp`. `POST /oauth/control` sets the token lifetime or refuses
//! refreshes; `GET /oauth/stats` counts what happened.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use axum::extract::{Form, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Default)]
struct Grant {
    challenge: String,
    redirect_uri: String,
}

struct Inner {
    base: String,
    lifetime: Duration,
    refuse_refresh: bool,
    codes: HashMap<String, Grant>,
    /// access token → when it ends
    access: HashMap<String, Instant>,
    /// the one refresh token that is still good (rotation)
    refresh: Option<String>,
    counter: u64,
    stats: Value,
}

#[derive(Clone)]
pub struct OAuthServer(Arc<Mutex<Inner>>);

fn lock(m: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl OAuthServer {
    pub fn new(base: &str) -> Self {
        OAuthServer(Arc::new(Mutex::new(Inner {
            base: base.to_string(),
            lifetime: Duration::from_secs(3600),
            refuse_refresh: false,
            codes: HashMap::new(),
            access: HashMap::new(),
            refresh: None,
            counter: 0,
            stats: json!({"registrations": 0, "authorizations": 0, "code_exchanges": 0, "refreshes": 0, "rejected_tokens": 0}),
        })))
    }

    /// Whether `/mcp` may serve this request; else the 401 to answer.
    pub fn check(&self, headers: &HeaderMap) -> Result<(), Box<Response>> {
        let mut inner = lock(&self.0);
        let token = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        let valid = token.is_some_and(|t| inner.access.get(t).is_some_and(|end| *end > Instant::now()));
        if valid {
            return Ok(());
        }
        if token.is_some() {
            bump(&mut inner.stats, "rejected_tokens");
        }
        let challenge = format!(
            "Bearer error=\"invalid_token\", resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
            inner.base
        );
        Err(Box::new(
            (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, challenge)],
                "unauthorized",
            )
                .into_response(),
        ))
    }

    pub fn routes(&self) -> Router {
        Router::new()
            .route("/.well-known/oauth-protected-resource/mcp", get(prm))
            .route("/.well-known/oauth-authorization-server", get(as_metadata))
            .route("/register", post(register))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .route("/oauth/control", post(control))
            .route("/oauth/stats", get(stats))
            .with_state(self.clone())
    }
}

fn bump(stats: &mut Value, key: &str) {
    let n = stats[key].as_u64().unwrap_or(0) + 1;
    stats[key] = json!(n);
}

async fn prm(State(s): State<OAuthServer>) -> Json<Value> {
    let base = lock(&s.0).base.clone();
    Json(json!({"resource": format!("{base}/mcp"), "authorization_servers": [base], "scopes_supported": ["tools"]}))
}

async fn as_metadata(State(s): State<OAuthServer>) -> Json<Value> {
    let base = lock(&s.0).base.clone();
    Json(json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": ["tools"],
        "authorization_response_iss_parameter_supported": true,
    }))
}

async fn register(State(s): State<OAuthServer>, Json(body): Json<Value>) -> Response {
    let mut inner = lock(&s.0);
    bump(&mut inner.stats, "registrations");
    inner.counter += 1;
    let id = format!("client-{}", inner.counter);
    (
        StatusCode::CREATED,
        Json(json!({"client_id": id, "redirect_uris": body["redirect_uris"], "token_endpoint_auth_method": "none"})),
    )
        .into_response()
}

#[derive(Deserialize)]
struct AuthorizeQuery {
    redirect_uri: String,
    state: String,
    code_challenge: String,
    code_challenge_method: String,
    resource: Option<String>,
}

async fn authorize(State(s): State<OAuthServer>, Query(q): Query<AuthorizeQuery>) -> Response {
    let mut inner = lock(&s.0);
    if q.code_challenge_method != "S256" || q.resource.is_none() {
        return (StatusCode::BAD_REQUEST, "S256 and resource are required").into_response();
    }
    bump(&mut inner.stats, "authorizations");
    inner.counter += 1;
    let code = format!("code-{}", inner.counter);
    inner.codes.insert(
        code.clone(),
        Grant {
            challenge: q.code_challenge,
            redirect_uri: q.redirect_uri.clone(),
        },
    );
    let mut url = match url_with(&q.redirect_uri) {
        Some(u) => u,
        None => return (StatusCode::BAD_REQUEST, "bad redirect_uri").into_response(),
    };
    url.push_str(&format!(
        "code={code}&state={}&iss={}",
        encode(&q.state),
        encode(&inner.base)
    ));
    Redirect::to(&url).into_response()
}

fn url_with(base: &str) -> Option<String> {
    if !base.starts_with("http://127.0.0.1:") {
        return None;
    }
    Some(if base.contains('?') {
        format!("{base}&")
    } else {
        format!("{base}?")
    })
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

async fn token(State(s): State<OAuthServer>, Form(form): Form<HashMap<String, String>>) -> Response {
    let mut inner = lock(&s.0);
    let invalid_grant = || (StatusCode::BAD_REQUEST, Json(json!({"error": "invalid_grant"}))).into_response();
    if !form.contains_key("resource") {
        return (StatusCode::BAD_REQUEST, Json(json!({"error": "invalid_target"}))).into_response();
    }
    match form.get("grant_type").map(String::as_str) {
        Some("authorization_code") => {
            let Some(grant) = form.get("code").and_then(|c| inner.codes.remove(c)) else {
                return invalid_grant();
            };
            let verifier = form.get("code_verifier").cloned().unwrap_or_default();
            if pkce_s256(&verifier) != grant.challenge || form.get("redirect_uri") != Some(&grant.redirect_uri) {
                return invalid_grant();
            }
            bump(&mut inner.stats, "code_exchanges");
        }
        Some("refresh_token") => {
            bump(&mut inner.stats, "refreshes");
            if inner.refuse_refresh || form.get("refresh_token") != inner.refresh.as_ref() {
                return invalid_grant();
            }
        }
        _ => {
            return (
                StatusCode::BAD_REQUEST,
                Json(json!({"error": "unsupported_grant_type"})),
            )
                .into_response()
        }
    }
    inner.counter += 1;
    let n = inner.counter;
    let nonce = format!(
        "{:x}",
        Instant::now().elapsed().as_nanos() ^ (n as u128 * 0x9e37_79b9_7f4a_7c15)
    );
    let access = format!("faulty-access-{n}-{nonce}");
    let refresh = format!("faulty-refresh-{n}-{nonce}");
    let end = Instant::now() + inner.lifetime;
    inner.access.insert(access.clone(), end);
    inner.refresh = Some(refresh.clone());
    Json(json!({
        "access_token": access, "token_type": "Bearer", "expires_in": inner.lifetime.as_secs(),
        "refresh_token": refresh, "scope": "tools",
    }))
    .into_response()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Control {
    lifetime_secs: Option<u64>,
    refuse_refresh: Option<bool>,
    /// Ends every access token now (as if they had expired).
    expire_all: Option<bool>,
}

async fn control(State(s): State<OAuthServer>, Json(c): Json<Control>) -> Json<Value> {
    let mut inner = lock(&s.0);
    if let Some(l) = c.lifetime_secs {
        inner.lifetime = Duration::from_secs(l);
    }
    if let Some(r) = c.refuse_refresh {
        inner.refuse_refresh = r;
    }
    if c.expire_all == Some(true) {
        inner.access.clear();
    }
    Json(inner.stats.clone())
}

async fn stats(State(s): State<OAuthServer>) -> Json<Value> {
    Json(lock(&s.0).stats.clone())
}

/// base64url(sha256(verifier)) without padding (RFC 7636).
fn pkce_s256(verifier: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(verifier.as_bytes());
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in digest.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..=chunk.len() {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn pkce_matches_rfc_7636_appendix_b() {
        assert_eq!(
            super::pkce_s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }
}
