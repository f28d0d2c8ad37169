//! Errors as short text for people and models: an error's chain on one
//! line without rmcp's wrapper types ([`chain_text`]), and a long upstream
//! text cut to its lead and an excerpt, redacted first ([`brief`]). Used on
//! every floor (the registry client, sign-in, connections), so it names no
//! room above the bottom one; `errors.rs` builds its sentences on it.

use std::error::Error as StdError;

use rmcp::service::ClientInitializeError;
use rmcp::transport::DynamicTransportError;
use rmcp::ServiceError;

/// The next error in the chain. rmcp's `ClientInitializeError` keeps the
/// transport's error out of `source()`, which would hide the HTTP status (and
/// a 401's challenge) of a failed `initialize`.
pub(crate) fn cause<'a>(err: &'a (dyn StdError + 'static)) -> Option<&'a (dyn StdError + 'static)> {
    match err.downcast_ref::<ClientInitializeError>() {
        Some(ClientInitializeError::TransportError { error, .. }) => Some(error),
        Some(ClientInitializeError::LegacyFallbackFailed { fallback, .. }) => Some(fallback.as_ref()),
        _ => err.source(),
    }
}

/// Whether `err` only wraps its cause under the name of one of rmcp's
/// internal types ("Transport [rmcp::transport::worker::WorkerTransport<...>]
/// error: ..."), which says nothing to a person or a model.
fn is_wrapper(err: &(dyn StdError + 'static)) -> bool {
    err.is::<DynamicTransportError>()
        || matches!(err.downcast_ref::<ServiceError>(), Some(ServiceError::TransportSend(_)))
        || matches!(
            err.downcast_ref::<ClientInitializeError>(),
            Some(ClientInitializeError::TransportError { .. })
        )
}

/// An error and its causes on one line, without rmcp's type-named wrappers
/// and without repeating a cause that the outer message already quotes; a
/// long upstream text is cut to an excerpt (see [`brief`]).
pub fn chain_text(err: &(dyn StdError + 'static)) -> String {
    brief(&full_chain_text(err))
}

/// The longest upstream text an error keeps; the whole goes to the log.
pub const MAX_ERROR_TEXT: usize = 300;
/// The longest excerpt of an upstream body (its JSON `error` or `message`).
pub const MAX_EXCERPT: usize = 200;
/// The most of one upstream error the log keeps.
const MAX_LOGGED: usize = 16 * 1024;

/// Keeps an upstream error one readable sentence. An HTTP error body or a
/// server's page can be kilobytes, echo request headers, and would reach
/// agents and the dashboard whole: a long text becomes its lead ("HTTP 400")
/// and an excerpt, the `error`/`message` field of a JSON body when there is
/// one, and the full text (cut at 16 KiB) is logged.
pub fn brief(text: &str) -> String {
    // Redacted before it is cut: a cut secret is no longer found whole.
    let text = &crate::secrets::redact_resolved(text);
    if text.chars().count() <= MAX_ERROR_TEXT {
        return text.to_string();
    }
    tracing::warn!(
        "upstream error in full (shortened in status and agent errors): {}",
        cut(text, MAX_LOGGED)
    );
    let (lead, excerpt) = match text.find('{') {
        Some(at) => match json_message(&text[at..]) {
            Some(message) => (&text[..at], message),
            None => (&text[..at], text[at..].to_string()),
        },
        None => ("", text.to_string()),
    };
    let lead = cut(lead.trim_end(), 100);
    let excerpt = cut(
        excerpt.split_whitespace().collect::<Vec<_>>().join(" ").as_str(),
        MAX_EXCERPT,
    );
    format!("{lead} {excerpt} (more in the mcpool log)")
        .trim_start()
        .to_string()
}

/// The human part of a JSON error body: `error` (a string, or an object's
/// `message`), `message`, `error_description` or `detail`.
fn json_message(body: &str) -> Option<String> {
    let value = serde_json::Deserializer::from_str(body)
        .into_iter::<serde_json::Value>()
        .next()?
        .ok()?;
    let field = |v: &serde_json::Value, key: &str| v.get(key).and_then(|f| f.as_str()).map(str::to_string);
    field(&value, "error_description")
        .or_else(|| value.get("error").and_then(|e| field(e, "message")))
        .or_else(|| field(&value, "error"))
        .or_else(|| field(&value, "message"))
        .or_else(|| field(&value, "detail"))
}

/// Text from outside (a server's output, an error body) shortened for a
/// log line or a status: every known secret redacted first, then cut to at
/// most `max` characters, so no part of a secret is left behind.
pub fn excerpt(text: &str, max: usize) -> String {
    cut(&crate::secrets::redact_resolved(text), max)
}

/// `text` cut to at most `max` characters, with "…" when cut.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

fn full_chain_text(err: &(dyn StdError + 'static)) -> String {
    let mut text = String::new();
    let mut current = Some(err);
    while let Some(e) = current {
        current = cause(e);
        if is_wrapper(e) && current.is_some() {
            continue;
        }
        let s = e.to_string();
        if !text.contains(&s) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&s);
        }
    }
    text
}
