//! A bare Streamable HTTP agent: JSON-RPC over reqwest with the session id
//! in hand, for tests that open, reuse and end sessions by id.

use anyhow::{bail, Context};
use serde_json::{json, Value};

use crate::Mcpool;

const VERSION: &str = "2025-06-18";

/// One session on `path` (`/mcp` or `/servers/NAME/mcp`).
pub struct RawSession {
    http: reqwest::Client,
    url: String,
    token: String,
    pub id: String,
}

/// What the endpoint answered a request of a session.
#[derive(Debug)]
pub struct RawReply {
    pub status: u16,
    /// The JSON-RPC message of the response (SSE or JSON), if any.
    pub message: Option<Value>,
    pub body: String,
}

impl RawSession {
    /// `initialize` and `notifications/initialized`.
    pub async fn open(mcpool: &Mcpool, path: &str) -> anyhow::Result<Self> {
        Self::open_declaring(mcpool, path, json!({})).await
    }

    /// [`Self::open`] for an agent that declares `capabilities`.
    pub async fn open_declaring(mcpool: &Mcpool, path: &str, capabilities: Value) -> anyhow::Result<Self> {
        let http = reqwest::Client::new();
        let url = mcpool.url(path);
        let init = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": VERSION,
                "capabilities": capabilities,
                "clientInfo": {"name": "mcpool-tests-raw", "version": "1"}
            }
        });
        let response = http
            .post(&url)
            .bearer_auth(&mcpool.token)
            .header("accept", "application/json, text/event-stream")
            .json(&init)
            .send()
            .await?;
        let status = response.status();
        let id = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = response.text().await?;
        let Some(id) = id.filter(|_| status.is_success()) else {
            bail!("initialize answered {status}: {body}");
        };
        let session = RawSession {
            http,
            url,
            token: mcpool.token.clone(),
            id,
        };
        let reply = session
            .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        if reply.status != 202 {
            bail!("notifications/initialized answered {}: {}", reply.status, reply.body);
        }
        Ok(session)
    }

    /// The same session id, as another client (or the same one after a
    /// restart) would send it.
    pub fn with_id(mcpool: &Mcpool, path: &str, id: &str) -> Self {
        RawSession {
            http: reqwest::Client::new(),
            url: mcpool.url(path),
            token: mcpool.token.clone(),
            id: id.to_string(),
        }
    }

    pub async fn send(&self, message: Value) -> anyhow::Result<RawReply> {
        let response = self
            .http
            .post(&self.url)
            .bearer_auth(&self.token)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", VERSION)
            .json(&message)
            .send()
            .await?;
        let status = response.status().as_u16();
        let body = response.text().await?;
        let message = body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m.get("id").is_some())
            .or_else(|| serde_json::from_str(&body).ok());
        Ok(RawReply { status, message, body })
    }

    /// `ping`; Ok with the HTTP status (200 with a result, or 404 when the
    /// session is unknown).
    pub async fn ping(&self) -> anyhow::Result<u16> {
        let reply = self.send(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})).await?;
        if reply.status == 200 {
            let message = reply.message.context("no JSON-RPC message in the ping reply")?;
            if message.get("result").is_none() {
                bail!("ping failed: {message}");
            }
        }
        Ok(reply.status)
    }

    /// `DELETE` with the session id; the HTTP status.
    pub async fn delete(&self) -> anyhow::Result<u16> {
        let response = self
            .http
            .delete(&self.url)
            .bearer_auth(&self.token)
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", VERSION)
            .send()
            .await?;
        Ok(response.status().as_u16())
    }
}

impl Mcpool {
    /// `GET /api/sessions`.
    pub async fn sessions(&self) -> anyhow::Result<Value> {
        let r = reqwest::Client::new()
            .get(self.url("/api/sessions"))
            .bearer_auth(&self.token)
            .send()
            .await?;
        Ok(r.error_for_status()?.json().await?)
    }

    /// Polls `/api/sessions` until `key` is `want` (sessions end
    /// asynchronously after a DELETE answers), or fails after `limit`.
    pub async fn wait_sessions(&self, key: &str, want: u64, limit: std::time::Duration) -> anyhow::Result<()> {
        let what = format!("{key} = {want} in /api/sessions");
        crate::eventually(limit, &what, async || self.sessions().await, |s| s[key] == want).await?;
        Ok(())
    }
}

/// An HTTP/1.1 exchange byte for byte, for requests no HTTP client sends
/// (two `Host` headers, a broken chunked body): `request` is written as it
/// is to `127.0.0.1:port`, then the reply is read until the server closes
/// the connection (send `Connection: close`). The status and the body.
pub async fn exchange(port: u16, request: &[u8]) -> anyhow::Result<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    tcp.write_all(request).await?;
    let mut reply = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(10), tcp.read_to_end(&mut reply))
        .await
        .context("the server kept the connection open")??;
    let text = String::from_utf8_lossy(&reply).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("no HTTP status in {text:?}"))?;
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok((status, body))
}
