//! Plain `application/json` replies to session agents' POSTs whose whole
//! answer is one response (behaviour.md rule 16's transport: a server may
//! answer a POST with either JSON or an SSE stream, and clients accept both).
//!
//! rmcp answers every request of a session with an SSE stream. Most calls
//! are request/response: the stream carries the response and ends. Such a
//! stream is turned into a JSON body here, which spares the agent an SSE
//! parser and the chunked framing. Whatever else the stream carries first
//! (progress, logging, a server→client request such as elicitation) keeps
//! the stream as it is, so nothing sent during a call changes. So does a
//! reply whose first event takes longer than [`PEEK`]: its headers go out
//! then, as they would have without the peek.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::Response;
use futures::StreamExt;

/// How long the first event of a reply is awaited before the reply is
/// passed on as the stream it is.
pub const PEEK: Duration = Duration::from_millis(50);
/// A first event larger than this is passed on as a stream.
const MAX_EVENT: usize = 64 * 1024 * 1024;

/// Whether the reply to this request may be turned into JSON: a POST that
/// accepts `application/json` (rmcp refuses POSTs that do not, but the
/// check keeps this layer honest on its own).
pub fn may_answer_json(method: &Method, accept: Option<&HeaderValue>) -> bool {
    method == Method::POST
        && accept
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.split(',').any(|m| m.trim().starts_with("application/json")))
}

/// Turns an SSE reply whose first event is a JSON-RPC response into that
/// response as JSON; any other reply is returned as it came.
pub async fn json_when_whole(response: Response) -> Response {
    let is_sse = response.status() == StatusCode::OK
        && response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
    if !is_sse {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let mut stream = body.into_data_stream();
    let mut seen: Vec<Bytes> = Vec::new();
    // The chunks so far as one buffer, grown as they come: a large reply
    // arrives in many chunks, and only a chunk that ends an event is a
    // reason to look for the first data (never a rescan per chunk).
    let mut buf: Vec<u8> = Vec::new();
    let first = tokio::time::timeout(PEEK, async {
        loop {
            match stream.next().await {
                Some(Ok(chunk)) => {
                    // The new bytes, and the three before them, in which an
                    // event's blank line may have begun.
                    let from = buf.len().saturating_sub(3);
                    buf.extend_from_slice(&chunk);
                    seen.push(chunk);
                    let new = &buf[from..];
                    let ends_event = new.windows(2).any(|w| w == b"\n\n" || w == b"\r\r")
                        || new.windows(4).any(|w| w == b"\r\n\r\n");
                    if ends_event {
                        if let Some(data) = first_event_data(&buf) {
                            return Some(data);
                        }
                    }
                    if buf.len() > MAX_EVENT {
                        return None;
                    }
                }
                // The stream failed or ended before one whole event.
                _ => return None,
            }
        }
    })
    .await
    .ok()
    .flatten();
    if let Some(data) = first.filter(|d| is_response(d)) {
        // The response ends the request's stream: nothing more can follow.
        parts
            .headers
            .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        parts.headers.remove(header::CACHE_CONTROL);
        parts.headers.remove("x-accel-buffering");
        parts.headers.remove(header::CONTENT_LENGTH);
        return Response::from_parts(parts, Body::from(data));
    }
    let replay = futures::stream::iter(seen.into_iter().map(Ok::<_, axum::Error>));
    Response::from_parts(parts, Body::from_stream(replay.chain(stream)))
}

/// The `data` of the first whole event in `bytes` that has any, once
/// there is one. Events without data come before it: the priming event
/// rmcp's sessions send (an id and a retry time, for resuming the stream,
/// which a JSON reply has no use for) or a comment.
fn first_event_data(bytes: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(bytes).ok()?;
    let crlf;
    let mut rest = if text.contains('\r') {
        crlf = text.replace("\r\n", "\n");
        crlf.as_str()
    } else {
        text
    };
    loop {
        let end = rest.find("\n\n")?;
        let data: Vec<&str> = rest[..end]
            .split('\n')
            .filter_map(|line| line.strip_prefix("data:"))
            .map(|value| value.strip_prefix(' ').unwrap_or(value))
            .collect();
        let data = data.join("\n");
        if !data.is_empty() {
            return Some(data);
        }
        rest = &rest[end + 2..];
    }
}

/// A JSON-RPC response or error: an `id` and a `result` or an `error`, no
/// `method` (which a request of the server's would have).
fn is_response(data: &str) -> bool {
    use serde::de::IgnoredAny;
    #[derive(serde::Deserialize)]
    struct Probe {
        id: Option<IgnoredAny>,
        method: Option<IgnoredAny>,
        result: Option<IgnoredAny>,
        error: Option<IgnoredAny>,
    }
    serde_json::from_str::<Probe>(data)
        .is_ok_and(|p| p.id.is_some() && p.method.is_none() && (p.result.is_some() || p.error.is_some()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sse(chunks: &[&'static str]) -> Response {
        let stream = futures::stream::iter(
            chunks
                .iter()
                .map(|c| Ok::<_, std::io::Error>(Bytes::from_static(c.as_bytes())))
                .collect::<Vec<_>>(),
        );
        Response::builder()
            .header(header::CONTENT_TYPE, "text/event-stream")
            .header(header::CACHE_CONTROL, "no-cache")
            .body(Body::from_stream(stream))
            .unwrap()
    }

    async fn read(response: Response) -> (String, String) {
        let ct = response.headers()[header::CONTENT_TYPE].to_str().unwrap().to_string();
        let body = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap();
        (ct, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn a_lone_response_becomes_json() {
        let r = json_when_whole(sse(&[
            "id: 0/0\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n",
        ]))
        .await;
        assert_eq!(
            read(r).await,
            (
                "application/json".into(),
                "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}".into()
            )
        );
        // Split across chunks, an error response.
        let r = json_when_whole(sse(&[
            "data: {\"jsonrpc\":\"2.0\",\"id\":\"a\",",
            "\"error\":{\"code\":-1,\"message\":\"x\"}}\n\n",
        ]))
        .await;
        assert_eq!(read(r).await.0, "application/json");
    }

    #[tokio::test]
    async fn progress_or_a_request_first_keeps_the_stream_whole() {
        let progress = "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n";
        let elicit = "data: {\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"elicitation/create\",\"params\":{}}\n\n";
        let response = "data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n";
        for first in [progress, elicit] {
            let r = json_when_whole(sse(&[first, response])).await;
            assert_eq!(
                read(r).await,
                ("text/event-stream".into(), format!("{first}{response}")),
                "{first}"
            );
        }
        // A priming event (or a comment) before the response is dropped
        // with the stream; before a notification, it stays.
        let priming = "data: \nid: 0/0\nretry: 3000\n\n";
        let r = json_when_whole(sse(&[priming, ": hi\n\n", response])).await;
        assert_eq!(
            read(r).await,
            (
                "application/json".into(),
                "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}".into()
            )
        );
        let r = json_when_whole(sse(&[priming, progress, response])).await;
        assert_eq!(
            read(r).await,
            ("text/event-stream".into(), format!("{priming}{progress}{response}"))
        );
        // A stream that ends before one whole event.
        let r = json_when_whole(sse(&["data: {\"id\":1,"])).await;
        assert_eq!(read(r).await, ("text/event-stream".into(), "data: {\"id\":1,".into()));
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_first_event_passes_as_a_stream() {
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(1);
        let response = Response::builder()
            .header(header::CONTENT_TYPE, "text/event-stream")
            .body(Body::from_stream(tokio_stream_of(rx)))
            .unwrap();
        let r = json_when_whole(response).await;
        assert_eq!(r.headers()[header::CONTENT_TYPE], "text/event-stream");
        tx.send(Ok(Bytes::from_static(b"data: {\"id\":1,\"result\":{}}\n\n")))
            .await
            .unwrap();
        drop(tx);
        assert_eq!(read(r).await.1, "data: {\"id\":1,\"result\":{}}\n\n");
    }

    fn tokio_stream_of<T: Send + 'static>(
        mut rx: tokio::sync::mpsc::Receiver<T>,
    ) -> impl futures::Stream<Item = T> + Send + 'static {
        futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
    }

    #[test]
    fn only_posts_accepting_json() {
        let both = HeaderValue::from_static("application/json, text/event-stream");
        assert!(may_answer_json(&Method::POST, Some(&both)));
        assert!(!may_answer_json(&Method::GET, Some(&both)));
        let sse_only = HeaderValue::from_static("text/event-stream");
        assert!(!may_answer_json(&Method::POST, Some(&sse_only)));
        assert!(!may_answer_json(&Method::POST, None));
    }
}
