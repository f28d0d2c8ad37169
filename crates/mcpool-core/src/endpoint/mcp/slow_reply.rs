//! A reply that has not begun within [`PEEK`] goes out as a stream
//! (behaviour.md rule 16's transport). rmcp holds a 2026-07-28 request's
//! headers until the handler's first message, so an agent whose call runs
//! long would see nothing at all until its result: no headers, so no sign
//! the request was taken. After [`PEEK`] the reply's headers go out as
//! `text/event-stream` and its messages follow as events, whatever rmcp
//! later makes of them (an SSE stream passes as it is; a JSON body becomes
//! one event). The request stays rmcp's: closing the reply drops it, which
//! cancels the call at the server.

use std::future::Future;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use futures::StreamExt;
use tokio_util::task::AbortOnDropHandle;

use super::json_reply::PEEK;

/// Marks a reply made here: already a stream, not to be turned into JSON.
#[derive(Clone, Copy)]
pub struct Streamed;

/// `reply`, as it came when it begins within [`PEEK`]; else a stream now.
pub async fn stream_when_slow<F>(reply: F) -> Response
where
    F: Future<Output = Response> + Send + 'static,
{
    let mut task = AbortOnDropHandle::new(tokio::spawn(reply));
    match tokio::time::timeout(PEEK, &mut task).await {
        Ok(Ok(response)) => return response,
        Ok(Err(e)) => {
            tracing::warn!("an MCP request's reply failed: {e}");
            return Response::builder()
                .status(StatusCode::INTERNAL_SERVER_ERROR)
                .body(Body::from("the request's reply failed\n"))
                .unwrap_or_default();
        }
        Err(_) => {}
    }
    // Dropping the body (the agent closed the request) drops `task`, and
    // with it rmcp's request.
    let events = futures::stream::once(task).flat_map(|done| match done {
        Ok(response) => as_events(response),
        Err(e) => {
            tracing::warn!("an MCP request's reply failed: {e}");
            futures::stream::empty().boxed()
        }
    });
    let mut response = Response::new(Body::from_stream(events));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response.extensions_mut().insert(Streamed);
    response
}

type Events = futures::stream::BoxStream<'static, Result<Bytes, axum::Error>>;

/// rmcp's late reply as SSE bytes: its stream as it is, a JSON message as
/// one event; anything else (no JSON-RPC message) is left out, logged.
fn as_events(response: Response) -> Events {
    let kind = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let status = response.status();
    let body = response.into_body();
    if kind.starts_with("text/event-stream") {
        return body.into_data_stream().boxed();
    }
    futures::stream::once(async move {
        let bytes = axum::body::to_bytes(body, usize::MAX).await?;
        if !kind.starts_with("application/json") || serde_json::from_slice::<serde_json::Value>(&bytes).is_err() {
            tracing::warn!(%status, "an MCP request's late reply held no JSON-RPC message; the stream ends empty");
            return Ok(Bytes::new());
        }
        let mut event = Vec::with_capacity(bytes.len() + 8);
        event.extend_from_slice(b"data: ");
        event.extend_from_slice(&bytes);
        event.extend_from_slice(b"\n\n");
        Ok(Bytes::from(event))
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn json(text: &'static str) -> Response {
        let mut r = Response::new(Body::from(text));
        r.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        r
    }

    async fn body(response: Response) -> String {
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn a_quick_reply_is_passed_as_it_came() {
        let r = stream_when_slow(async { json("{\"id\":1}") }).await;
        assert!(r.extensions().get::<Streamed>().is_none());
        assert_eq!(r.headers()[header::CONTENT_TYPE], "application/json");
        assert_eq!(body(r).await, "{\"id\":1}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_json_reply_becomes_one_event_of_a_stream() {
        let r = stream_when_slow(async {
            tokio::time::sleep(Duration::from_secs(3)).await;
            json("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}")
        })
        .await;
        assert!(r.extensions().get::<Streamed>().is_some());
        assert_eq!(r.headers()[header::CONTENT_TYPE], "text/event-stream");
        assert_eq!(body(r).await, "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n");
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_stream_passes_as_it_is_and_text_is_left_out() {
        let r = stream_when_slow(async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let mut r = Response::new(Body::from("event: x\ndata: {}\n\n"));
            r.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
            r
        })
        .await;
        assert_eq!(body(r).await, "event: x\ndata: {}\n\n");
        let r = stream_when_slow(async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Response::new(Body::from("not json"))
        })
        .await;
        assert_eq!(body(r).await, "");
    }

    #[tokio::test(start_paused = true)]
    async fn closing_the_stream_drops_the_request() {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let r = stream_when_slow(async move {
            let _held = tx;
            std::future::pending::<Response>().await
        })
        .await;
        drop(r);
        // The request's future is dropped with the task: its sender closes.
        assert!(rx.await.is_err());
    }
}
