//! A small client for the legacy HTTP+SSE transport (protocol 2024-11-05),
//! which rmcp 3 no longer ships: a GET event stream that first names the
//! POST endpoint, then carries the server's messages. The endpoint must
//! share the stream's origin: the configured headers (keyring values, a
//! bearer token) go with every POST, so a stream that names another origin
//! is refused before anything is sent there.

use std::collections::BTreeMap;

use futures::StreamExt;
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use sse_stream::SseStream;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::errors::ConnectError;

#[derive(Debug, thiserror::Error)]
pub enum SseError {
    #[error("POST to the SSE endpoint failed: {0}")]
    Post(#[from] reqwest::Error),
    #[error("POST to the SSE endpoint answered HTTP {0}")]
    Status(u16),
}

pub struct SseTransport {
    client: reqwest::Client,
    endpoint: url::Url,
    headers: reqwest::header::HeaderMap,
    incoming: mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
    stop: CancellationToken,
}

pub fn header_map(headers: &BTreeMap<String, String>) -> Result<reqwest::header::HeaderMap, ConnectError> {
    let mut map = reqwest::header::HeaderMap::new();
    for (k, v) in headers {
        let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| ConnectError::Other(format!("header '{k}' is not a valid name")))?;
        let value = reqwest::header::HeaderValue::from_str(v)
            .map_err(|_| ConnectError::Other(format!("the value of header '{k}' is not valid")))?;
        map.insert(name, value);
    }
    Ok(map)
}

/// Opens the event stream of server `server` and waits for the `endpoint`
/// event.
pub async fn open(server: &str, url: &str, headers: &BTreeMap<String, String>) -> Result<SseTransport, ConnectError> {
    let base = url::Url::parse(url).map_err(|e| ConnectError::InvalidUrl(e.to_string()))?;
    let headers = header_map(headers)?;
    let response = super::http_client::stream_client()
        .get(base.clone())
        .headers(headers.clone())
        .header(reqwest::header::ACCEPT, "text/event-stream")
        .send()
        .await
        .map_err(|e| ConnectError::from_transport(&e))?;
    let status = response.status();
    if !status.is_success() {
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| crate::backoff::parse_retry_after(v, std::time::SystemTime::now()));
        return Err(ConnectError::Http {
            status: status.as_u16(),
            retry_after,
            message: format!("HTTP {status} from the SSE stream"),
        });
    }
    // The endpoint is named relative to where the stream is (after any
    // redirect, which kept the origin).
    let base = response.url().clone();
    let mut events = SseStream::from_bytes_stream(response.bytes_stream());
    let endpoint = loop {
        match events.next().await {
            Some(Ok(event)) if event.event.as_deref() == Some("endpoint") => {
                let data = event.data.unwrap_or_default();
                break endpoint_url(server, &base, data.trim())?;
            }
            Some(Ok(_)) => continue,
            Some(Err(e)) => return Err(ConnectError::Network(format!("SSE stream error: {e}"))),
            None => {
                return Err(ConnectError::Network(
                    "the SSE stream ended before naming its endpoint".into(),
                ))
            }
        }
    };
    let (tx, incoming) = mpsc::channel(64);
    let stop = CancellationToken::new();
    let reader_stop = stop.clone();
    tokio::spawn(async move {
        loop {
            let next = tokio::select! {
                _ = reader_stop.cancelled() => break,
                next = events.next() => next,
            };
            match next {
                Some(Ok(event)) if matches!(event.event.as_deref(), None | Some("message")) => {
                    let Some(data) = event.data else { continue };
                    let folded = crate::kept::fold_text(data.as_bytes());
                    let data = folded.as_deref().unwrap_or(data.as_bytes());
                    match serde_json::from_slice::<RxJsonRpcMessage<RoleClient>>(data) {
                        Ok(message) => {
                            if tx.send(message).await.is_err() {
                                break;
                            }
                        }
                        Err(e) => tracing::warn!("ignoring an SSE message that is not JSON-RPC: {e}"),
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => break,
            }
        }
    });
    Ok(SseTransport {
        client: super::http_client::http_client(),
        endpoint,
        headers,
        incoming,
        stop,
    })
}

/// The POST endpoint that an `endpoint` event names, resolved against the
/// stream's URL; refused when it leaves the stream's origin (scheme, host
/// and port), where the configured headers must never go.
fn endpoint_url(server: &str, stream: &url::Url, data: &str) -> Result<url::Url, ConnectError> {
    let endpoint = stream
        .join(data)
        .map_err(|e| ConnectError::Other(format!("the SSE endpoint event is not a URL: {e}")))?;
    if endpoint.origin() != stream.origin() {
        return Err(ConnectError::ForeignEndpoint {
            server: server.to_string(),
            stream: stream.origin().ascii_serialization(),
            endpoint: endpoint.origin().ascii_serialization(),
        });
    }
    Ok(endpoint)
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), SseError>> + Send + 'static {
        let request = self
            .client
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .json(&item);
        async move {
            let response = request.send().await?;
            if !response.status().is_success() {
                return Err(SseError::Status(response.status().as_u16()));
            }
            Ok(())
        }
    }

    fn receive(&mut self) -> impl std::future::Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), SseError> {
        self.stop.cancel();
        Ok(())
    }
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lifecycle::FailureKind;

    fn stream() -> url::Url {
        url::Url::parse("http://127.0.0.1:8123/sse?api_key=s3cret").unwrap()
    }

    #[test]
    fn an_endpoint_on_the_streams_origin_is_kept() {
        for (data, expected) in [
            (
                "/messages/?session_id=1",
                "http://127.0.0.1:8123/messages/?session_id=1",
            ),
            ("messages", "http://127.0.0.1:8123/messages"),
            ("http://127.0.0.1:8123/m", "http://127.0.0.1:8123/m"),
            // The default port written out is the same origin.
            ("//127.0.0.1:8123/m", "http://127.0.0.1:8123/m"),
        ] {
            assert_eq!(endpoint_url("s", &stream(), data).unwrap().as_str(), expected, "{data}");
        }
        let https = url::Url::parse("https://mcp.example.com/sse").unwrap();
        let same = endpoint_url("s", &https, "https://mcp.example.com:443/post").unwrap();
        assert_eq!(same.as_str(), "https://mcp.example.com/post");
    }

    #[test]
    fn an_endpoint_on_another_origin_is_refused_naming_the_server_and_both_origins() {
        for (data, foreign) in [
            ("http://evil.example/collect", "http://evil.example"),
            ("http://127.0.0.1:9999/messages/", "http://127.0.0.1:9999"),
            ("https://127.0.0.1:8123/messages/", "https://127.0.0.1:8123"),
            ("http://localhost:8123/messages/", "http://localhost:8123"),
            ("//evil.example:8123/m", "http://evil.example:8123"),
        ] {
            let err = endpoint_url("remote", &stream(), data).unwrap_err();
            let text = err.to_string();
            assert!(matches!(err, ConnectError::ForeignEndpoint { .. }), "{data}: {err:?}");
            assert!(text.contains("'remote'"), "{text}");
            assert!(text.contains("http://127.0.0.1:8123 "), "{text}");
            assert!(text.contains(&format!("at {foreign},")), "{text}");
            // Origins only: no path or query (which may hold a secret).
            assert!(!text.contains("s3cret") && !text.contains("/messages"), "{text}");
            // Not retried in a loop: the server would name it again.
            assert_eq!(err.kind(), FailureKind::Permanent);
        }
    }
}
