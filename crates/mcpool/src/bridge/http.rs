//! The bridge's side of Streamable HTTP: one session on mcpool's `/mcp`
//! (each message POSTed, its answer read as JSON or an event stream; the
//! session's GET event stream), and stateless requests of the 2026-07-28
//! revision (POSTed on their own with the headers of that revision), with
//! failures sorted by whether the message can have reached mcpool.
//! Messages stay JSON values, relayed as they are. One HTTP client serves
//! the bridge's whole life, so messages share kept-alive connections.

use std::net::SocketAddr;
use std::time::Duration;

use futures::stream::{self, BoxStream, StreamExt};
use reqwest::header::{HeaderValue, ACCEPT, CONTENT_TYPE};
use reqwest::{Response, StatusCode};
use serde_json::Value;
use sse_stream::SseStream;

use super::relay::{Attempt, Connect, Failure};
use super::revision;

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
/// From this protocol version on, a request that names its version in the
/// header must also carry the SEP-2243 routing headers; the header is
/// optional, so such sessions go without it.
const STANDARD_HEADERS_VERSION: &str = "2026-07-28";

/// The bridge's HTTP client, for its whole life: kept-alive connections.
///
/// A connection mcpool closed (it stopped) is seen closed before it is used
/// again, and a request that finds it unusable before any byte was written
/// is sent on a new connection, which is simply refused: "never arrived".
/// A write that raced the close fails as "may have arrived", never replayed.
pub fn client() -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        .tcp_nodelay(true)
        .build()
}

/// A session (or, before one is open, just the instance) on mcpool.
pub struct Upstream {
    client: reqwest::Client,
    base: String,
    /// `/mcp`, with the listing mode the bridge was started with
    /// (`/mcp?toolListing=search`).
    mcp: String,
    token: String,
    session: Option<String>,
    version: Option<String>,
}

/// The messages mcpool sent in answer to one POST, in order.
pub type Messages = BoxStream<'static, Result<Value, String>>;

pub enum Sent {
    /// 202: nothing comes back for this message.
    Accepted,
    Messages(Messages),
}

#[derive(Debug)]
pub enum SendError {
    /// The message never reached mcpool (refused connection, unknown
    /// session, refused token).
    Undelivered(Failure),
    /// mcpool answered with this HTTP status.
    Status(u16),
    /// The exchange broke after the message may have arrived.
    Broken(String),
}

fn classify(e: &reqwest::Error) -> SendError {
    if e.is_connect() {
        SendError::Undelivered(Failure::Unreachable)
    } else {
        SendError::Broken(e.to_string())
    }
}

impl Upstream {
    pub fn new(client: reqwest::Client, addr: SocketAddr, mcp: &str, token: String) -> Self {
        Upstream {
            client,
            base: format!("http://{addr}"),
            mcp: mcp.to_string(),
            token,
            session: None,
            version: None,
        }
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let mut builder = self
            .client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token);
        if let Some(id) = &self.session {
            builder = builder.header(SESSION_HEADER, id);
        }
        if let Some(version) = self.version.as_deref().filter(|v| *v < STANDARD_HEADERS_VERSION) {
            builder = builder.header(VERSION_HEADER, version);
        }
        builder
    }

    /// POSTs one message; for a request, its answer comes as `Messages`.
    pub async fn send(&self, message: &Value) -> Result<Sent, SendError> {
        self.post(self.request(reqwest::Method::POST, &self.mcp), message).await
    }

    /// POSTs a stateless (2026-07-28) request: outside any session, with
    /// the headers an HTTP agent of that revision sends.
    pub async fn send_stateless(&self, message: &Value) -> Result<Sent, SendError> {
        let mut builder = self
            .client
            .post(format!("{}{}", self.base, self.mcp))
            .bearer_auth(&self.token);
        for (name, value) in revision::headers(message) {
            builder = builder.header(name, value);
        }
        self.post(builder, message).await
    }

    async fn post(&self, builder: reqwest::RequestBuilder, message: &Value) -> Result<Sent, SendError> {
        let body = serde_json::to_vec(message).map_err(|e| SendError::Broken(e.to_string()))?;
        let response = builder
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| classify(&e))?;
        match response.status() {
            StatusCode::ACCEPTED | StatusCode::NO_CONTENT => Ok(Sent::Accepted),
            s if s.is_success() => Ok(Sent::Messages(messages(response))),
            StatusCode::UNAUTHORIZED => Err(SendError::Undelivered(Failure::Unauthorized)),
            StatusCode::NOT_FOUND if self.session.is_some() => Err(SendError::Undelivered(Failure::Other(
                "mcpool no longer knows this session".into(),
            ))),
            s => error_answer(response, message.get("id"))
                .await
                .map(|answer| Sent::Messages(stream::once(async move { Ok(answer) }).boxed()))
                .ok_or(SendError::Status(s.as_u16())),
        }
    }

    /// The session's GET event stream: what mcpool sends outside any request.
    pub async fn events(&self) -> Result<Messages, SendError> {
        let response = self
            .request(reqwest::Method::GET, &self.mcp)
            .header(ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| classify(&e))?;
        match response.status() {
            s if s.is_success() => Ok(messages(response)),
            StatusCode::UNAUTHORIZED => Err(SendError::Undelivered(Failure::Unauthorized)),
            StatusCode::NOT_FOUND => Err(SendError::Undelivered(Failure::Other(
                "mcpool no longer knows this session".into(),
            ))),
            s => Err(SendError::Status(s.as_u16())),
        }
    }

    /// Ends the session (best effort: the agent is leaving).
    pub async fn close(&self) {
        if self.session.is_some() {
            let _ = self.request(reqwest::Method::DELETE, &self.mcp).send().await;
        }
    }
}

/// The JSON-RPC error an HTTP error status carries for this request (a
/// 2026-07-28 request's refusals come as HTTP 400 with one), which is its
/// answer.
async fn error_answer(response: Response, id: Option<&Value>) -> Option<Value> {
    let id = id?;
    let bytes = response.bytes().await.ok()?;
    let answer: Value = serde_json::from_slice(&bytes).ok()?;
    (answer.get("error").is_some() && answer.get("id") == Some(id)).then_some(answer)
}

/// The JSON-RPC messages of a response: a JSON body, or the data of each
/// event of an event stream (keep-alives and empty events skipped).
fn messages(response: Response) -> Messages {
    let is_json = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if is_json {
        return stream::once(async move {
            let bytes = response.bytes().await.map_err(|e| e.to_string())?;
            serde_json::from_slice::<Value>(&bytes).map_err(|e| format!("mcpool sent invalid JSON: {e}"))
        })
        .boxed();
    }
    SseStream::from_bytes_stream(response.bytes_stream())
        .filter_map(|event| async move {
            match event {
                Ok(sse) => {
                    let data = sse.data.filter(|d| !d.trim().is_empty())?;
                    Some(serde_json::from_str::<Value>(&data).map_err(|e| format!("mcpool sent invalid JSON: {e}")))
                }
                Err(e) => Some(Err(e.to_string())),
            }
        })
        .boxed()
}

/// One attempt: check that an instance answers, or open a new session with
/// `connect.initialize` (and `notifications/initialized`).
pub async fn attempt(
    client: reqwest::Client,
    addr: SocketAddr,
    mcp: &str,
    token: String,
    connect: &Connect,
) -> (Attempt, Option<Upstream>) {
    let mut upstream = Upstream::new(client, addr, mcp, token);
    let Some(initialize) = &connect.initialize else {
        let probe = upstream.request(reqwest::Method::GET, "/api/servers").send().await;
        return match probe {
            Ok(r) if r.status() == StatusCode::UNAUTHORIZED => (Attempt::Failed(Failure::Unauthorized), None),
            Ok(_) => (Attempt::Up(None), None),
            Err(e) if e.is_connect() => (Attempt::Failed(Failure::Unreachable), None),
            Err(e) => (Attempt::Failed(Failure::Other(e.to_string())), None),
        };
    };
    let (answer, session) = match open(&upstream, initialize).await {
        Ok(opened) => opened,
        Err(failure) => return (Attempt::Failed(failure), None),
    };
    if let Some(error) = answer.get("error") {
        return (Attempt::Rejected(error.clone()), None);
    }
    let result = answer.get("result").cloned().unwrap_or(Value::Null);
    upstream.session = session;
    upstream.version = result["protocolVersion"].as_str().map(str::to_string);
    if connect.initialized {
        let note = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        match upstream.send(&note).await {
            Ok(_) => {}
            Err(SendError::Undelivered(f)) => return (Attempt::Failed(f), None),
            Err(SendError::Status(s)) => return (Attempt::Failed(Failure::Other(format!("HTTP {s}"))), None),
            Err(SendError::Broken(e)) => return (Attempt::Failed(Failure::Other(e)), None),
        }
    }
    (Attempt::Up(Some(result)), Some(upstream))
}

/// POSTs `initialize`; returns its answer and the new session's id.
async fn open(upstream: &Upstream, initialize: &Value) -> Result<(Value, Option<String>), Failure> {
    let response = upstream
        .request(reqwest::Method::POST, &upstream.mcp)
        .header(ACCEPT, "application/json, text/event-stream")
        .header(CONTENT_TYPE, "application/json")
        .json(initialize)
        .send()
        .await
        .map_err(|e| {
            if e.is_connect() {
                Failure::Unreachable
            } else {
                Failure::Other(e.to_string())
            }
        })?;
    match response.status() {
        StatusCode::UNAUTHORIZED => return Err(Failure::Unauthorized),
        s if !s.is_success() => return Err(Failure::Other(format!("HTTP {} to initialize", s.as_u16()))),
        _ => {}
    }
    let session = response
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v: &HeaderValue| v.to_str().ok())
        .map(str::to_string);
    let id = initialize.get("id");
    let mut answers = messages(response);
    while let Some(message) = answers.next().await {
        let message = message.map_err(Failure::Other)?;
        if message.get("method").is_none() && message.get("id") == id {
            return Ok((message, session));
        }
    }
    Err(Failure::Other(
        "mcpool closed the stream before answering initialize".into(),
    ))
}
