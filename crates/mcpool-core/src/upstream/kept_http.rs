//! The Streamable HTTP client of a server's connection. rmcp's own client
//! parses a JSON reply into its types where it reads it, which drops every
//! field those types do not model (a tool's `execution`, a vendor's field);
//! this one reads a POST's reply itself and folds those fields first
//! (kept/), and folds each event of the streams rmcp's client opens.
//! What a reply means (202, a session gone, a sign-in asked for, a JSON-RPC
//! error, 429 and 5xx) is told as rmcp's client tells it.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use http::header::{ACCEPT, CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use http::{HeaderName, HeaderValue, StatusCode};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError, StreamableHttpClient, StreamableHttpError,
    StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::{Error as SseError, Sse, SseStream};

use crate::kept;

type Error = StreamableHttpError<reqwest::Error>;
type Events = BoxStream<'static, Result<Sse, SseError>>;

/// rmcp's reqwest client, with the replies' unknown fields kept.
#[derive(Clone)]
pub struct KeptClient {
    inner: reqwest::Client,
}

impl KeptClient {
    pub fn new(inner: reqwest::Client) -> Self {
        KeptClient { inner }
    }
}

/// `events` with each message's unknown fields folded.
fn folded(events: Events) -> Events {
    events
        .map(|event| {
            event.map(|mut event| {
                let folded = event.data.as_deref().and_then(|d| kept::fold_text(d.as_bytes()));
                if let Some(text) = folded.and_then(|f| String::from_utf8(f).ok()) {
                    event.data = Some(text);
                }
                event
            })
        })
        .boxed()
}

/// Whether `message` expects no reply (a notification, a response).
fn awaits_no_response(message: &ClientJsonRpcMessage) -> bool {
    !matches!(message, ClientJsonRpcMessage::Request(_))
}

fn is_discover(message: &ClientJsonRpcMessage) -> bool {
    matches!(message, ClientJsonRpcMessage::Request(r) if matches!(r.request, ClientRequest::DiscoverRequest(_)))
}

/// The scope a `403 insufficient_scope` challenge asks for.
fn challenge_scope(header: &str) -> Option<String> {
    let at = header.to_ascii_lowercase().find("scope=")? + "scope=".len();
    let rest = &header[at..];
    let scope = match rest.strip_prefix('"') {
        Some(quoted) => &quoted[..quoted.find('"')?],
        None => &rest[..rest.find([',', ';', ' ', '\t']).unwrap_or(rest.len())],
    };
    (!scope.is_empty()).then(|| scope.to_string())
}

/// The body of `response`, at most `limit` bytes.
async fn body_within(response: reqwest::Response, limit: usize) -> Result<Vec<u8>, Error> {
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: limit });
    }
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(StreamableHttpError::Client)?;
        if body.len() + chunk.len() > limit {
            return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// An SSE body whose events may not outgrow `limit` bytes each: the bytes
/// since the last blank line are counted, and past the limit the stream
/// ends with an error (as rmcp's client bounds it).
fn bounded<S>(bytes: S, limit: usize) -> impl Stream<Item = Result<axum::body::Bytes, std::io::Error>>
where
    S: Stream<Item = Result<axum::body::Bytes, reqwest::Error>>,
{
    let mut size = 0usize;
    let mut last = 0u8;
    bytes.map(move |chunk| {
        let chunk = chunk.map_err(std::io::Error::other)?;
        for &b in chunk.iter() {
            if b == b'\n' && last == b'\n' {
                size = 0;
            } else {
                size += 1;
            }
            if size > limit {
                return Err(std::io::Error::other(format!("an SSE event over {limit} bytes")));
            }
            if b != b'\r' {
                last = b;
            }
        }
        Ok(chunk)
    })
}

impl StreamableHttpClient for KeptClient {
    type Error = reqwest::Error;

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<Events, Error> {
        let events = self
            .inner
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await?;
        Ok(folded(events))
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<Events, Error> {
        let events = self
            .inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await?;
        Ok(folded(events))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let limits = StreamableHttpResponseLimits::default();
        self.post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits)
            .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let mut request = self
            .inner
            .post(uri.as_ref())
            .header(ACCEPT, "text/event-stream, application/json");
        if let Some(token) = &auth_header {
            request = request.bearer_auth(token);
        }
        for (name, value) in &custom_headers {
            request = request.header(name, value);
        }
        if let Some(id) = &session_id {
            request = request.header("mcp-session-id", id.as_ref());
        }
        // What the pool kept of an agent's request goes back in place.
        let body = serde_json::to_vec(&message).map_err(StreamableHttpError::Deserialize)?;
        let body = kept::unfold_body(&body).unwrap_or(body);
        let response = request
            .header(CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await
            .map_err(StreamableHttpError::Client)?;
        let status = response.status();
        let header = |name: HeaderName| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let challenge = header(WWW_AUTHENTICATE);
        match (status, challenge) {
            (StatusCode::UNAUTHORIZED, Some(challenge)) => {
                return Err(StreamableHttpError::AuthRequired(AuthRequiredError::new(challenge)));
            }
            (StatusCode::FORBIDDEN, Some(challenge)) => {
                let scope = challenge_scope(&challenge);
                return Err(StreamableHttpError::InsufficientScope(InsufficientScopeError::new(
                    challenge, scope,
                )));
            }
            _ => {}
        }
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        let kind = header(CONTENT_TYPE).unwrap_or_default();
        let new_session = header(HeaderName::from_static("mcp-session-id"));
        let json = kind.starts_with("application/json");
        if !status.is_success() {
            // A server from before `server/discover` refuses it in many
            // ways; rmcp's client knows them, and asking again is harmless.
            if is_discover(&message) {
                return self
                    .inner
                    .post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits)
                    .await;
            }
            let retry_after = header(RETRY_AFTER);
            let body = body_within(response, limits.max_json_response_size)
                .await
                .unwrap_or_default();
            if json {
                if let Ok(error @ ServerJsonRpcMessage::Error(_)) =
                    serde_json::from_slice::<ServerJsonRpcMessage>(&body)
                {
                    return Ok(StreamableHttpPostResponse::Json(error, new_session));
                }
            }
            if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
                return Err(HttpStatusError::new(status.as_u16(), retry_after).into());
            }
            let text = String::from_utf8_lossy(&body[..body.len().min(limits.max_error_response_size)]).into_owned();
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(format!(
                "HTTP {status}: {text}"
            ))));
        }
        if kind.starts_with("text/event-stream") {
            let events = SseStream::from_bytes_stream(bounded(response.bytes_stream(), limits.max_sse_event_size));
            return Ok(StreamableHttpPostResponse::Sse(folded(events.boxed()), new_session));
        }
        if json {
            let body = body_within(response, limits.max_json_response_size).await?;
            let folded = kept::fold_text(&body);
            return match serde_json::from_slice::<ServerJsonRpcMessage>(folded.as_deref().unwrap_or(&body)) {
                Ok(parsed) => Ok(StreamableHttpPostResponse::Json(parsed, new_session)),
                Err(_) if awaits_no_response(&message) => Ok(StreamableHttpPostResponse::Accepted),
                Err(e) => Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(format!(
                    "the server's reply is not a JSON-RPC message: {e}"
                )))),
            };
        }
        if awaits_no_response(&message) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        Err(StreamableHttpError::UnexpectedContentType(
            Some(kind).filter(|k| !k.is_empty()),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_challenges_scope_is_read_quoted_or_bare() {
        let quoted = r#"Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="x""#;
        assert_eq!(challenge_scope(quoted).as_deref(), Some("files:read files:write"));
        assert_eq!(challenge_scope("Bearer scope=admin, error=x").as_deref(), Some("admin"));
        assert_eq!(challenge_scope("Bearer error=\"insufficient_scope\""), None);
    }

    #[tokio::test]
    async fn an_sse_event_over_the_limit_ends_the_stream_and_small_ones_pass() {
        let chunks: Vec<Result<axum::body::Bytes, reqwest::Error>> = vec![
            Ok(axum::body::Bytes::from_static(b"data: 12345\n\n")),
            Ok(axum::body::Bytes::from_static(b"data: 1234")),
            Ok(axum::body::Bytes::from_static(b"5678901234567890\n\n")),
        ];
        let out: Vec<_> = bounded(futures::stream::iter(chunks), 16).collect().await;
        assert!(out[0].is_ok() && out[1].is_ok());
        assert!(out[2].is_err(), "the second event is over 16 bytes");
    }
}
