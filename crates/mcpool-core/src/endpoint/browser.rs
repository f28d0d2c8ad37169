//! Browser sign-in for the dashboard: one-time codes that `mcpool ui` asks
//! for with the bearer token, and the session cookies they turn into.
//!
//! A code is good once and for [`CODE_TTL`]; a session for [`SESSION_TTL`] or
//! until the instance stops (nothing is written to disk). Time is
//! `tokio::time`, so the expiry tests run with paused time.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use axum::http::{header, HeaderMap};
use rand::RngCore;
use tokio::time::Instant;

use crate::sync::lock;

/// How long a one-time link stays valid.
pub const CODE_TTL: Duration = Duration::from_secs(120);
/// How long a browser session lasts.
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 60 * 60);
/// Cookie names start with this; the port follows, because browsers share
/// cookies across the ports of one host and two instances must not clobber
/// each other's session.
pub const COOKIE_PREFIX: &str = "mcpool_session";
/// Bounds memory if something keeps asking for links.
const MAX_ENTRIES: usize = 256;

#[derive(Default)]
pub struct BrowserAuth {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    codes: HashMap<String, Instant>,
    sessions: HashMap<String, Instant>,
}

impl BrowserAuth {
    /// A new one-time code.
    pub fn issue_code(&self) -> String {
        let code = random_hex();
        {
            let mut inner = lock(&self.inner);
            let now = Instant::now();
            prune(&mut inner.codes, now);
            inner.codes.insert(code.clone(), now + CODE_TTL);
        }
        code
    }

    /// A new one-time sign-in path, `/ui/login?code=…`: what `POST
    /// /api/ui/link` answers and the tray's window opens.
    pub fn issue_link_path(&self) -> String {
        format!("/ui/login?code={}", self.issue_code())
    }

    /// Spends `code`: a new session id if it was issued, unused and fresh.
    pub fn redeem(&self, code: &str) -> Option<String> {
        let mut inner = lock(&self.inner);
        let now = Instant::now();
        // Removed whatever the outcome: a code is never good twice.
        let expires = inner.codes.remove(code)?;
        if expires <= now {
            return None;
        }
        prune(&mut inner.sessions, now);
        let session = random_hex();
        inner.sessions.insert(session.clone(), now + SESSION_TTL);
        Some(session)
    }

    /// Whether any `mcpool_session*` cookie in `headers` is a live session.
    pub fn has_session(&self, headers: &HeaderMap) -> bool {
        let inner = lock(&self.inner);
        let now = Instant::now();
        session_cookies(headers).any(|value| inner.sessions.get(value).is_some_and(|exp| *exp > now))
    }
}

/// Drops expired entries, then the oldest ones beyond [`MAX_ENTRIES`].
fn prune(map: &mut HashMap<String, Instant>, now: Instant) {
    map.retain(|_, exp| *exp > now);
    while map.len() >= MAX_ENTRIES {
        let Some(oldest) = map.iter().min_by_key(|(_, exp)| **exp).map(|(k, _)| k.clone()) else {
            break;
        };
        map.remove(&oldest);
    }
}

fn random_hex() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// The values of every `mcpool_session*` cookie of a request.
fn session_cookies(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(name, _)| name.starts_with(COOKIE_PREFIX))
        .map(|(_, value)| value.trim())
}

/// The cookie name for an instance reached through `host` (`127.0.0.1:7410`).
pub fn cookie_name(host: Option<&str>) -> String {
    let port = host
        .and_then(|h| h.rsplit_once(':'))
        .map(|(_, p)| p)
        .filter(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    match port {
        Some(p) => format!("{COOKIE_PREFIX}_{p}"),
        None => COOKIE_PREFIX.to_string(),
    }
}

/// The `Set-Cookie` value of a new session.
pub fn set_cookie(name: &str, session: &str) -> String {
    format!(
        "{name}={session}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}",
        SESSION_TTL.as_secs()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn cookie(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, HeaderValue::from_str(value).unwrap());
        h
    }

    #[tokio::test(start_paused = true)]
    async fn a_code_is_good_once() {
        let auth = BrowserAuth::default();
        let code = auth.issue_code();
        assert_eq!(code.len(), 64);
        let session = auth.redeem(&code).unwrap();
        assert!(auth.redeem(&code).is_none());
        assert!(auth.redeem("nope").is_none());
        assert!(auth.has_session(&cookie(&format!("other=1; mcpool_session_7410={session}"))));
        assert!(!auth.has_session(&cookie(&format!("unrelated={session}"))));
        assert!(!auth.has_session(&cookie("mcpool_session_7410=forged")));
        assert!(!auth.has_session(&HeaderMap::new()));
    }

    #[tokio::test(start_paused = true)]
    async fn codes_and_sessions_expire() {
        let auth = BrowserAuth::default();
        let late = auth.issue_code();
        let fresh = auth.issue_code();
        let session = auth.redeem(&fresh).unwrap();
        tokio::time::advance(CODE_TTL + Duration::from_secs(1)).await;
        assert!(auth.redeem(&late).is_none(), "an expired code is refused");
        let jar = cookie(&format!("mcpool_session={session}"));
        assert!(auth.has_session(&jar));
        tokio::time::advance(SESSION_TTL).await;
        assert!(!auth.has_session(&jar), "an expired session is refused");
    }

    #[tokio::test(start_paused = true)]
    async fn codes_are_bounded() {
        let auth = BrowserAuth::default();
        let first = auth.issue_code();
        for _ in 0..MAX_ENTRIES {
            tokio::time::advance(Duration::from_millis(1)).await;
            auth.issue_code();
        }
        assert!(auth.redeem(&first).is_none(), "the oldest code made room");
        assert!(auth.inner.lock().unwrap().codes.len() <= MAX_ENTRIES);
    }

    #[test]
    fn cookie_names_and_hosts() {
        assert_eq!(cookie_name(Some("127.0.0.1:7410")), "mcpool_session_7410");
        assert_eq!(cookie_name(Some("[::1]:80")), "mcpool_session_80");
        assert_eq!(cookie_name(Some("localhost")), "mcpool_session");
        assert_eq!(cookie_name(None), "mcpool_session");
        let c = set_cookie("mcpool_session_1", "abc");
        for part in ["mcpool_session_1=abc", "HttpOnly", "SameSite=Strict", "Path=/"] {
            assert!(c.contains(part), "{c}");
        }
        assert!(crate::loopback::is_loopback_authority("127.0.0.1:7410"));
        assert!(crate::loopback::is_loopback_authority("localhost:1"));
        assert!(crate::loopback::is_loopback_authority("[::1]:1"));
        assert!(!crate::loopback::is_loopback_authority("evil.example:7410"));
    }
}
