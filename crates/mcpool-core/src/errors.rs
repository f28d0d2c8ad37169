//! Why an attempt or a request failed: the classification of rule 10 and the
//! one-sentence messages of rule 9 that agents read.

use std::error::Error as StdError;
use std::time::{Duration, SystemTime};

use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError, StreamableHttpError,
};

use crate::backoff::parse_retry_after;
use crate::error_text::cause;
pub use crate::error_text::{brief, chain_text, excerpt, MAX_ERROR_TEXT, MAX_EXCERPT};
use crate::lifecycle::{FailureKind, Refusal};

/// Why one connection attempt failed.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("cannot start '{command}': {source}")]
    Spawn { command: String, source: std::io::Error },
    #[error("invalid URL: {0}")]
    InvalidUrl(String),
    #[error("no answer to initialize within {} ms", .0.as_millis())]
    Timeout(Duration),
    #[error("{message}")]
    Http {
        status: u16,
        retry_after: Option<Duration>,
        message: String,
    },
    #[error("{0}")]
    Network(String),
    /// A `${keyring:NAME}` the keyring does not have.
    #[error("{0}")]
    Secret(crate::secrets::ResolveError),
    /// A local server that ended before `initialize` completed.
    #[error("{}", crate::stderr_tail::with_stderr(.reason, .stderr))]
    Exited { reason: String, stderr: Vec<String> },
    /// A legacy SSE stream whose `endpoint` event names another origin
    /// than the stream's own: the configured headers are never sent there.
    #[error(
        "server '{server}': its SSE stream at {stream} named a POST endpoint at {endpoint}, another origin; \
         refused so that its headers are not sent there"
    )]
    ForeignEndpoint {
        server: String,
        stream: String,
        endpoint: String,
    },
    #[error("{0}")]
    Other(String),
}

impl ConnectError {
    /// A short clause for a sentence: a local server's last stderr line
    /// says more than its exit status alone.
    pub fn summary(&self) -> String {
        match self {
            ConnectError::Exited { reason, stderr } => match stderr.iter().rev().find(|l| !l.trim().is_empty()) {
                Some(last) => format!("{}: {}", clause(reason), clause(last)),
                None => clause(reason),
            },
            other => clause(&other.to_string()),
        }
    }

    pub fn kind(&self) -> FailureKind {
        match self {
            ConnectError::Spawn { .. }
            | ConnectError::InvalidUrl(_)
            | ConnectError::Secret(_)
            | ConnectError::ForeignEndpoint { .. } => FailureKind::Permanent,
            ConnectError::Http { status: 401, .. } => FailureKind::Auth,
            ConnectError::Http {
                status: 403 | 404 | 405 | 410,
                ..
            } => FailureKind::Permanent,
            ConnectError::Http { retry_after, .. } => FailureKind::Transient {
                retry_after: *retry_after,
            },
            ConnectError::Timeout(_)
            | ConnectError::Network(_)
            | ConnectError::Other(_)
            | ConnectError::Exited { .. } => FailureKind::Transient { retry_after: None },
        }
    }

    /// Classifies an error from rmcp's client or transport by walking its
    /// source chain for the HTTP status, then for network causes.
    pub fn from_transport(err: &(dyn StdError + 'static)) -> ConnectError {
        let text = chain_text(err);
        let mut source: Option<&(dyn StdError + 'static)> = Some(err);
        while let Some(e) = source {
            if e.downcast_ref::<AuthRequiredError>().is_some() {
                return http(401, None, text);
            }
            // A sign-in whose refresh was refused: needs_auth, like a 401.
            if let Some(rmcp::transport::auth::AuthError::AuthorizationRequired) =
                e.downcast_ref::<rmcp::transport::auth::AuthError>()
            {
                return http(401, None, text);
            }
            if e.downcast_ref::<InsufficientScopeError>().is_some() {
                return http(403, None, text);
            }
            // `StreamableHttpError::HttpStatus` is transparent: the status
            // error itself is never anyone's `source()`.
            // `Client(reqwest::Error)` is not a `source()` either.
            if let Some(StreamableHttpError::Client(r)) = e.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
                if r.status().is_none() && !r.is_builder() {
                    return ConnectError::Network(network_text(r));
                }
            }
            let status = match e.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
                Some(StreamableHttpError::HttpStatus(s)) => Some(s),
                _ => e.downcast_ref::<HttpStatusError>(),
            };
            if let Some(s) = status {
                let retry = s
                    .retry_after
                    .as_deref()
                    .and_then(|v| parse_retry_after(v, SystemTime::now()));
                return http(s.status, retry, text);
            }
            if let Some(r) = e.downcast_ref::<reqwest::Error>() {
                if let Some(status) = r.status() {
                    return http(status.as_u16(), None, text);
                }
                if r.is_builder() {
                    return ConnectError::InvalidUrl(text);
                }
                return ConnectError::Network(network_text(r));
            }
            source = cause(e);
        }
        // rmcp reports 401/403/404 without a challenge as "HTTP <code> ...".
        for code in [401u16, 403, 404, 405, 410, 429, 500, 502, 503, 504] {
            if text.contains(&format!("HTTP {code}")) {
                return http(code, None, text);
            }
        }
        ConnectError::Other(text)
    }
}

/// "cannot reach URL: <the innermost cause>", e.g. "Connection refused".
fn network_text(r: &reqwest::Error) -> String {
    let mut deepest = r.to_string();
    let mut source = r.source();
    while let Some(e) = source {
        deepest = e.to_string();
        source = e.source();
    }
    let what = if r.is_timeout() {
        "timed out".to_string()
    } else {
        deepest
    };
    match r.url() {
        Some(url) => format!("cannot reach {url}: {what}"),
        None => what,
    }
}

fn http(status: u16, retry_after: Option<Duration>, message: String) -> ConnectError {
    let code = format!("HTTP {status}");
    let message = if message.contains(&code) {
        message
    } else {
        format!("{code}: {message}")
    };
    ConnectError::Http {
        status,
        retry_after,
        message,
    }
}

/// What an agent reads when a server sent neither an answer nor progress
/// for `limit` (`callTimeout`): the call was cancelled upstream.
pub fn call_timeout_sentence(server: &str, asked: &str, limit: Duration) -> String {
    format!(
        "Server '{server}' did not answer {asked} within {}; the call was cancelled.",
        human_duration(limit)
    )
}

/// "10 min", "90 s", "1.5 s", "250 ms", "2 h".
pub fn human_duration(d: Duration) -> String {
    let ms = d.as_millis();
    match ms {
        ms if ms >= 3_600_000 && ms % 3_600_000 == 0 => format!("{} h", ms / 3_600_000),
        ms if ms >= 60_000 && ms % 60_000 == 0 => format!("{} min", ms / 60_000),
        ms if ms >= 1000 && ms % 1000 == 0 => format!("{} s", ms / 1000),
        ms if ms >= 1000 => format!("{:.1} s", ms as f64 / 1000.0),
        ms => format!("{ms} ms"),
    }
}

/// Trims what would end a sentence early, so a reason can sit mid-sentence.
pub fn clause(reason: &str) -> String {
    let first_line = reason.lines().next().unwrap_or("").trim();
    first_line.trim_end_matches(['.', ' ']).to_string()
}

fn secs(d: Duration) -> u64 {
    d.as_millis().div_ceil(1000).max(1) as u64
}

/// The sentence an agent gets when a request is refused at once.
pub fn refusal_sentence(server: &str, refusal: &Refusal) -> String {
    match refusal {
        Refusal::Disabled => format!(
            "Server '{server}' is disconnected in mcpool; enable it in the mcpool tray or call mcpool__reconnect to use it."
        ),
        Refusal::Removed => format!("Server '{server}' was removed from the mcpool config."),
        Refusal::NeedsAuth { error } => format!(
            "Server '{server}' needs sign-in in the mcpool tray ({}).",
            clause(error)
        ),
        Refusal::Permanent { error } => format!(
            "Server '{server}' cannot start ({}); it will not be retried until its configuration changes or it is reconnected.",
            clause(error)
        ),
        Refusal::Backoff { error, retry_in } => format!(
            "Server '{server}' is unavailable ({}); retry in {} s.",
            clause(error),
            secs(*retry_in)
        ),
    }
}

/// The sentence an agent gets when the attempt its request made failed.
pub fn attempt_failed_sentence(server: &str, err: &ConnectError, retry_in: Option<Duration>) -> String {
    match (err.kind(), retry_in) {
        (FailureKind::Auth, _) => format!("Server '{server}' needs sign-in in the mcpool tray ({}).", err.summary()),
        (FailureKind::Permanent, _) => format!(
            "Server '{server}' cannot start ({}); it will not be retried until its configuration changes or it is reconnected.",
            err.summary()
        ),
        (FailureKind::Transient { .. }, Some(d)) => format!(
            "Server '{server}' failed to connect ({}); retry in {} s.",
            err.summary(),
            secs(d)
        ),
        (FailureKind::Transient { .. }, None) => format!(
            "Server '{server}' failed to connect ({}); it reconnects on the next call.",
            err.summary()
        ),
    }
}

/// The sentence an agent gets when the connection went away during its call.
/// The call is not sent again: it may have reached the server.
pub fn dropped_during_call_sentence(server: &str, reason: &str) -> String {
    format!(
        "Server '{server}' dropped the connection during this call ({}); the call was not retried and the server reconnects on the next call.",
        clause(reason)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::service::ClientInitializeError;
    use rmcp::transport::DynamicTransportError;

    #[test]
    fn classification() {
        let spawn = ConnectError::Spawn {
            command: "nope".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        assert_eq!(spawn.kind(), FailureKind::Permanent);
        assert_eq!(http(401, None, String::new()).kind(), FailureKind::Auth);
        assert_eq!(http(403, None, String::new()).kind(), FailureKind::Permanent);
        assert_eq!(http(404, None, String::new()).kind(), FailureKind::Permanent);
        assert_eq!(
            http(503, None, String::new()).kind(),
            FailureKind::Transient { retry_after: None }
        );
        let d = Some(Duration::from_secs(3));
        assert_eq!(
            http(429, d, String::new()).kind(),
            FailureKind::Transient { retry_after: d }
        );
        assert_eq!(
            ConnectError::Timeout(Duration::from_secs(1)).kind(),
            FailureKind::Transient { retry_after: None }
        );
    }

    #[test]
    fn status_found_in_rmcp_text() {
        let e = std::io::Error::other(
            "Send message error Transport [x] error: unexpected server response: HTTP 403 Forbidden: no",
        );
        assert!(matches!(
            ConnectError::from_transport(&e),
            ConnectError::Http { status: 403, .. }
        ));
    }

    /// What rmcp's client hands back when the HTTP transport fails `initialize`.
    fn failed_initialize(error: StreamableHttpError<reqwest::Error>) -> ClientInitializeError {
        ClientInitializeError::TransportError {
            error: DynamicTransportError::from_parts(
                "rmcp::transport::worker::WorkerTransport<Worker<Client>>",
                std::any::TypeId::of::<()>(),
                Box::new(error),
            ),
            context: "send initialize request".into(),
        }
    }

    #[test]
    fn failed_initialize_keeps_status_retry_after_and_challenge() {
        let e = failed_initialize(StreamableHttpError::HttpStatus(HttpStatusError::new(
            429,
            Some("5".into()),
        )));
        let c = ConnectError::from_transport(&e);
        assert_eq!(
            c.kind(),
            FailureKind::Transient {
                retry_after: Some(Duration::from_secs(5))
            }
        );
        assert_eq!(c.to_string(), "HTTP 429");

        let e = failed_initialize(StreamableHttpError::AuthRequired(AuthRequiredError::new(
            "Bearer".into(),
        )));
        let c = ConnectError::from_transport(&e);
        assert_eq!(c.kind(), FailureKind::Auth);
        assert_eq!(c.to_string(), "HTTP 401: Auth required: authorization required: Bearer");
        assert!(!chain_text(&e).contains("WorkerTransport"), "{}", chain_text(&e));
    }

    #[test]
    fn sentences_are_single_and_clean() {
        let s = refusal_sentence(
            "gh",
            &Refusal::Backoff {
                error: "connection refused.".into(),
                retry_in: Duration::from_millis(3200),
            },
        );
        assert_eq!(s, "Server 'gh' is unavailable (connection refused); retry in 4 s.");
        let s = dropped_during_call_sentence("fs", "process exited with status 3.\nstderr: boom");
        assert_eq!(s, "Server 'fs' dropped the connection during this call (process exited with status 3); the call was not retried and the server reconnects on the next call.");
        for s in [
            s,
            refusal_sentence(
                "x",
                &Refusal::NeedsAuth {
                    error: "HTTP 401.".into(),
                },
            ),
        ] {
            assert!(!s.contains(".."), "{s}");
            assert_eq!(s.matches(". ").count(), 0, "{s}");
        }
    }

    #[test]
    fn a_long_json_error_body_becomes_its_message() {
        let body = serde_json::json!({
            "error": {"message": "the request was malformed", "echo": {"authorization": "Bearer abc"}},
            "padding": "x".repeat(64 * 1024),
        });
        let text = format!("HTTP 400 Bad Request: {body}");
        assert_eq!(
            brief(&text),
            "HTTP 400 Bad Request: the request was malformed (more in the mcpool log)"
        );
        let oauth = format!(
            "HTTP 400: {}",
            serde_json::json!({"error": "invalid_grant", "error_description": "expired", "pad": "y".repeat(400)})
        );
        assert_eq!(brief(&oauth), "HTTP 400: expired (more in the mcpool log)");
    }

    #[test]
    fn a_long_text_body_is_cut_and_a_short_one_kept() {
        assert_eq!(brief("HTTP 404: not here"), "HTTP 404: not here");
        let page = format!("HTTP 502: <html>{}</html>", "z ".repeat(5000));
        let short = brief(&page);
        assert!(short.starts_with("HTTP 502: <html>z z"), "{short}");
        assert!(short.ends_with("… (more in the mcpool log)"), "{short}");
        assert!(short.chars().count() <= MAX_EXCERPT + 40, "{}", short.len());
        // A cut JSON body (rmcp keeps a prefix) falls back to its start.
        let cut_json = format!("HTTP 500: {{\"error\": {{\"message\": \"{}", "w".repeat(1000));
        assert!(brief(&cut_json).chars().count() <= MAX_EXCERPT + 40);
    }

    #[test]
    fn a_secret_is_redacted_before_the_excerpt_is_cut() {
        let secret = "sk-cutcutcutcutcutcutcutcutcutcut".to_string();
        crate::secrets::remember_secrets(std::slice::from_ref(&secret));
        // The secret straddles the place where the excerpt is cut.
        let body = format!("{}{secret}{}", "a ".repeat(80), "b ".repeat(400));
        let text = format!("HTTP 400: echo of X-Api-Key: {body}");
        let short = brief(&text);
        assert!(!short.contains("sk-cutcut"), "{short}");
        assert!(!short.contains("cutcutcut"), "{short}");
        let cut = excerpt(&format!("{}{secret}", "c".repeat(10)), 20);
        assert!(!cut.contains("sk-"), "{cut}");
    }

    #[test]
    fn the_call_limit_is_said_in_words() {
        assert_eq!(human_duration(Duration::from_secs(600)), "10 min");
        assert_eq!(human_duration(Duration::from_secs(90)), "90 s");
        assert_eq!(human_duration(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(human_duration(Duration::from_millis(250)), "250 ms");
        assert_eq!(human_duration(Duration::from_secs(7200)), "2 h");
        assert_eq!(
            call_timeout_sentence("x", "`tool`", Duration::from_secs(600)),
            "Server 'x' did not answer `tool` within 10 min; the call was cancelled."
        );
    }
}
