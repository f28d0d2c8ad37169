//! What the MCP paths check and answer around rmcp's Streamable HTTP service:
//! the body read whole within `--max-request-bytes` (HTTP 413 with a
//! JSON-RPC error past it, 400 when it cannot be read), a body rmcp refused
//! told apart as a parse error (-32700) or an invalid request (-32600),
//! `DELETE` of an unknown session (404), and the sentence for a known
//! method whose params do not fit (-32602).
//!
//! The happy path costs one read of the body, which rmcp would make anyway,
//! and no parse of ours: a body is looked at only once rmcp refused it.

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{header, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt as _, LengthLimitError, Limited};
use rmcp::transport::streamable_http_server::session::SessionId;
use serde_json::{json, Value};

use super::cached_list::CachedList;
use super::sessions::PoolSessionManager;
use super::McpService;

/// The request limit when nothing else is set (`MCPOOL_MAX_REQUEST_BYTES`).
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 4 << 20;

const PARSE_ERROR: i32 = -32700;
const INVALID_REQUEST: i32 = -32600;

/// Serves one request of an MCP path through `service`, the endpoint's
/// rmcp service, whose sessions `sessions` holds; a `tools/list` that
/// `cached` answers does not reach rmcp.
pub(super) async fn serve(
    request: Request,
    limit: usize,
    service: &McpService,
    sessions: &PoolSessionManager,
    cached: Option<&CachedList>,
) -> Response {
    match *request.method() {
        Method::POST => {}
        Method::DELETE => {
            let id = request
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
                .map(|id| SessionId::from(id.to_string()));
            // rmcp ends any id it is given, known or not, and says 202.
            if let Some(id) = id {
                if !sessions.knows(&id).await {
                    return (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
                }
            }
            return service.handle(request).await.map(Body::new);
        }
        _ => return service.handle(request).await.map(Body::new),
    }
    let json = is_json(&request);
    let (parts, body) = request.into_parts();
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let bytes = match read_body(body, declared, limit).await {
        Ok(bytes) => bytes,
        Err(BodyError::TooLarge) => return too_large(limit),
        Err(BodyError::Unreadable(why)) => return unreadable(&why),
    };
    let session = parts.headers.contains_key("mcp-session-id");
    let bytes = match json.then(|| for_rmcp(&bytes, session)).flatten() {
        Some(kept) => Bytes::from(kept),
        None => bytes,
    };
    if let Some(cached) = cached.filter(|_| json) {
        if let Some(response) = cached.answer(&parts, &bytes, sessions).await {
            return response;
        }
    }
    // Only a sessionless request other than `initialize` (a 2026-07-28
    // one) is streamed when slow: rmcp answers a session's request with
    // its stream's headers at once, and the reply to `initialize` carries
    // the new session's id in headers that exist only once it is made;
    // sent early without it, the agent's next message has no session.
    let slow_may_stream = !session && super::accepts_stream(&parts.headers) && !is_initialize(&bytes);
    let request = Request::from_parts(parts, Body::from(bytes.clone()));
    let response = if slow_may_stream {
        let service = service.clone();
        super::slow_reply::stream_when_slow(async move { service.handle(request).await.map(Body::new) }).await
    } else {
        service.handle(request).await.map(Body::new)
    };
    // rmcp answers 415 for a JSON body it cannot take as a message.
    if json && response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE {
        let (code, id, message) = classify(&bytes);
        return rpc_error(StatusCode::BAD_REQUEST, code, id, &message);
    }
    response
}

/// Whether `bytes` is an `initialize` request (looked at closely only
/// when it names the method at all).
fn is_initialize(bytes: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Method<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
    }
    memchr::memmem::find(bytes, b"\"initialize\"").is_some()
        && serde_json::from_slice::<Method<'_>>(bytes).is_ok_and(|m| m.method.as_deref() == Some("initialize"))
}

/// What rmcp's model of an agent's request would lose, kept: a
/// `tools/call`'s unknown params (2025-11-25's `task`) folded into its
/// `_meta` (kept/), and a session agent's 2025-11-25 `tasks/*` renamed
/// so rmcp hands it over whole (session/tasks.rs). `None`: as it came.
fn for_rmcp(bytes: &[u8], session: bool) -> Option<Vec<u8>> {
    if let Some(folded) = crate::kept::fold_request(bytes) {
        return Some(folded);
    }
    if !session {
        return None;
    }
    memchr::memmem::find(bytes, b"tasks/")?;
    let mut message: Value = serde_json::from_slice(bytes).ok()?;
    let method = message.get("method").and_then(Value::as_str)?;
    if !matches!(method, "tasks/get" | "tasks/result" | "tasks/list" | "tasks/cancel") {
        return None;
    }
    message["method"] = Value::String(format!("{}{method}", super::session::TASKS_SESSION_PREFIX));
    serde_json::to_vec(&message).ok()
}

fn is_json(request: &Request) -> bool {
    request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
}

#[derive(Debug, PartialEq)]
enum BodyError {
    TooLarge,
    Unreadable(String),
}

/// The whole body, refused as soon as it (or its declared length) passes
/// `limit` (`http_body_util::Limited` stops reading there).
async fn read_body(body: Body, declared: Option<u64>, limit: usize) -> Result<Bytes, BodyError> {
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(BodyError::TooLarge);
    }
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => Err(BodyError::TooLarge),
        Err(e) => Err(BodyError::Unreadable(e.to_string())),
    }
}

fn rpc_error(status: StatusCode, code: i32, id: Value, message: &str) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    (status, axum::Json(body)).into_response()
}

fn too_large(limit: usize) -> Response {
    rpc_error(
        StatusCode::PAYLOAD_TOO_LARGE,
        INVALID_REQUEST,
        Value::Null,
        &too_large_sentence(limit),
    )
}

fn too_large_sentence(limit: usize) -> String {
    let size = if limit >= 1 << 20 && limit.is_multiple_of(1 << 20) {
        format!("{limit} bytes ({} MiB)", limit >> 20)
    } else {
        format!("{limit} bytes")
    };
    format!(
        "The request is larger than mcpool's limit of {size}; send a smaller one, or raise the limit with --max-request-bytes or MCPOOL_MAX_REQUEST_BYTES."
    )
}

fn unreadable(why: &str) -> Response {
    rpc_error(
        StatusCode::BAD_REQUEST,
        PARSE_ERROR,
        Value::Null,
        &format!("Parse error: the request body could not be read ({why})."),
    )
}

/// What is wrong with a body rmcp refused: not JSON at all (-32700), or
/// JSON that is no JSON-RPC message (-32600, with the request's id when it
/// has a usable one), and a sentence saying which.
fn classify(body: &[u8]) -> (i32, Value, String) {
    let value: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            return (
                PARSE_ERROR,
                Value::Null,
                format!("Parse error: the request body is not valid JSON ({e})."),
            )
        }
    };
    let id = match value.get("id") {
        Some(id @ Value::String(_)) => id.clone(),
        Some(id @ Value::Number(n)) if n.is_i64() || n.is_u64() => id.clone(),
        _ => Value::Null,
    };
    (
        INVALID_REQUEST,
        id,
        format!("Invalid Request: {}.", what_is_wrong(&value)),
    )
}

fn what_is_wrong(value: &Value) -> &'static str {
    let message = match value {
        Value::Array(a) if a.is_empty() => return "an empty batch; send one JSON-RPC message, a JSON object",
        Value::Array(_) => {
            return "mcpool takes one JSON-RPC message per request, not a batch (a JSON array); send each message in a request of its own"
        }
        Value::Object(m) => m,
        _ => return "the body must be one JSON-RPC message, a JSON object",
    };
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return "\"jsonrpc\" must be \"2.0\"";
    }
    match message.get("method") {
        Some(Value::String(_)) => {}
        Some(_) => return "\"method\" must be a string",
        None if message.contains_key("result") || message.contains_key("error") => {}
        None => {
            return "a message needs \"method\" (a request or a notification) or \"result\" or \"error\" (a response)"
        }
    }
    match message.get("id") {
        None | Some(Value::String(_)) => {}
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => {}
        Some(_) => return "\"id\" must be a string or an integer",
    }
    match message.get("params") {
        None | Some(Value::Object(_)) => {}
        Some(_) => return "\"params\" must be an object",
    }
    "the message is neither a request, a notification nor a response as JSON-RPC 2.0 and MCP define them"
}

/// For a method MCP defines whose params did not fit its schema (rmcp then
/// hands it over as a custom request): what the params must be, for -32602.
/// `None` for a method MCP does not define.
pub fn params_sentence(method: &str) -> Option<String> {
    let needs = match method {
        "tools/call" => {
            "params.name, a tool name string, and params.arguments, an object (or no arguments)"
        }
        "completion/complete" => {
            "params.ref, {\"type\": \"ref/prompt\", \"name\": ...} or {\"type\": \"ref/resource\", \"uri\": ...}, and params.argument, an object with a name and a value string"
        }
        "prompts/get" => "params.name, a prompt name string, and params.arguments, an object of strings (or none)",
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" | "resources/directory/read" => {
            "params.uri, a string"
        }
        "logging/setLevel" => {
            "params.level, one of debug, info, notice, warning, error, critical, alert or emergency"
        }
        "tasks/get" | "tasks/update" | "tasks/cancel" => "params.taskId, a string",
        "skills/get" => "params.name, a skill name string",
        "tools/list" | "prompts/list" | "resources/list" | "resources/templates/list" | "skills/list" => {
            "no params, or params.cursor, a string"
        }
        "ping" | "server/discover" | "subscriptions/listen" | "initialize" => "params as MCP's schema has them",
        _ => return None,
    };
    Some(format!("{method} needs {needs}."))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code_and_id(body: &str) -> (i32, Value) {
        let (code, id, message) = classify(body.as_bytes());
        assert!(message.ends_with('.'), "{message}");
        (code, id)
    }

    #[test]
    fn json_that_is_no_request_is_an_invalid_request_and_broken_json_a_parse_error() {
        for body in ["{not json", "", "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": "] {
            assert_eq!(code_and_id(body), (PARSE_ERROR, Value::Null), "{body}");
        }
        for (body, id) in [
            ("{}", Value::Null),
            ("[]", Value::Null),
            ("[{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\"}]", Value::Null),
            ("42", Value::Null),
            ("{\"jsonrpc\": \"1.0\", \"id\": 1, \"method\": \"ping\"}", json!(1)),
            ("{\"jsonrpc\": \"2.0\", \"id\": 1.5, \"method\": \"ping\"}", Value::Null),
            ("{\"jsonrpc\": \"2.0\", \"id\": \"a\", \"method\": 42}", json!("a")),
            (
                "{\"jsonrpc\": \"2.0\", \"id\": 7, \"method\": \"ping\", \"params\": 5}",
                json!(7),
            ),
        ] {
            assert_eq!(code_and_id(body), (INVALID_REQUEST, id), "{body}");
        }
    }

    #[test]
    fn each_invalid_request_says_what_is_wrong() {
        let says = |body: &str| classify(body.as_bytes()).2;
        assert!(says("[]").contains("empty batch"));
        assert!(says("[1]").contains("not a batch"));
        assert!(says("{\"jsonrpc\": \"1.0\", \"method\": \"ping\"}").contains("\"jsonrpc\" must be \"2.0\""));
        assert!(says("{\"jsonrpc\": \"2.0\", \"id\": 1.5, \"method\": \"ping\"}").contains("\"id\" must be"));
        assert!(says("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": 42}").contains("\"method\" must be a string"));
        assert!(says("{\"jsonrpc\": \"2.0\", \"id\": 1}").contains("needs \"method\""));
    }

    #[test]
    fn the_size_sentence_names_the_limit_and_the_setting() {
        let s = too_large_sentence(4 << 20);
        assert!(
            s.contains("4194304 bytes (4 MiB)") && s.contains("--max-request-bytes"),
            "{s}"
        );
        assert!(s.contains("MCPOOL_MAX_REQUEST_BYTES"), "{s}");
        assert!(too_large_sentence(1000).contains("of 1000 bytes;"));
    }

    #[test]
    fn known_methods_with_unfit_params_get_a_sentence() {
        let call = params_sentence("tools/call").unwrap();
        assert!(call.starts_with("tools/call needs params.name"), "{call}");
        assert!(params_sentence("completion/complete").unwrap().contains("params.ref"));
        assert_eq!(params_sentence("vendor/thing"), None);
    }

    fn body_of(chunks: Vec<&'static str>) -> Body {
        let stream = futures::stream::iter(chunks.into_iter().map(|c| Ok::<_, std::io::Error>(Bytes::from(c))));
        Body::from_stream(stream)
    }

    #[tokio::test]
    async fn a_body_is_read_whole_within_the_limit() {
        assert_eq!(
            read_body(body_of(vec!["ab", "cd", "e"]), None, 5).await.unwrap(),
            Bytes::from("abcde")
        );
        assert_eq!(
            read_body(body_of(vec!["abc"]), Some(3), 3).await.unwrap(),
            Bytes::from("abc")
        );
        assert_eq!(
            read_body(body_of(vec!["abc", "def"]), None, 5).await,
            Err(BodyError::TooLarge)
        );
        assert_eq!(read_body(body_of(vec![]), Some(6), 5).await, Err(BodyError::TooLarge));
        let broken = Body::from_stream(futures::stream::iter(vec![
            Ok(Bytes::from("{")),
            Err(std::io::Error::other("bad chunk")),
        ]));
        assert!(matches!(
            read_body(broken, None, 5).await,
            Err(BodyError::Unreadable(_))
        ));
    }
}
