//! 2026-07-28 agents: no `initialize`, no session; each request carries
//! its revision, client info and capabilities in `_meta`. An rmcp client
//! pinned to that revision (`server/discover` lifecycle), and a bare one
//! over reqwest that shows the wire (headers, `ttlMs`, error codes).

use anyhow::Context;
use rmcp::model::ProtocolVersion;
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use serde_json::{json, Value};

use crate::{Agent, AgentHandler, Mcpool};

/// Fault-server arguments for a server that speaks 2026-07-28 only (it
/// refuses `initialize`).
pub const STATELESS_ONLY: [&str; 4] = [
    "--min-protocol-version",
    "2026-07-28",
    "--max-protocol-version",
    "2026-07-28",
];

pub const REVISION: &str = "2026-07-28";

/// What the endpoint answered one stateless request.
#[derive(Debug)]
pub struct StatelessReply {
    pub status: u16,
    /// Every JSON-RPC message of the reply (the SSE events, or the JSON body).
    pub messages: Vec<Value>,
    pub body: String,
}

impl StatelessReply {
    /// The response (the message with the request's id).
    pub fn response(&self) -> anyhow::Result<&Value> {
        self.messages
            .iter()
            .find(|m| m.get("result").is_some() || m.get("error").is_some())
            .with_context(|| format!("no response in {}: {}", self.status, self.body))
    }
}

impl Mcpool {
    /// An rmcp agent on `path` that speaks 2026-07-28 only.
    pub async fn stateless_agent(&self, path: &str) -> anyhow::Result<Agent> {
        self.stateless_agent_with(path, AgentHandler::default()).await
    }

    /// [`Self::stateless_agent`] with a handler of the caller's.
    pub async fn stateless_agent_with(&self, path: &str, handler: AgentHandler) -> anyhow::Result<Agent> {
        let counters = handler.clone();
        let transport = self.client_transport(path);
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        let service = handler.serve_with_lifecycle(transport, lifecycle).await?;
        Ok(Agent {
            service,
            handler: counters,
        })
    }

    /// One 2026-07-28 request, by hand: `_meta` with the revision, client
    /// info and capabilities (plus `extra_meta`), and the standard headers
    /// (`Mcp-Protocol-Version`, `Mcp-Method`, `Mcp-Name`).
    pub async fn stateless_request(
        &self,
        path: &str,
        method: &str,
        params: Value,
        extra_meta: Value,
    ) -> anyhow::Result<StatelessReply> {
        let response = self.stateless_open(path, method, params, extra_meta).await?;
        let status = response.status().as_u16();
        let body = response.text().await?;
        let mut messages: Vec<Value> = body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .collect();
        if messages.is_empty() {
            messages.extend(serde_json::from_str::<Value>(&body).ok());
        }
        Ok(StatelessReply { status, messages, body })
    }

    /// [`Self::stateless_request`]'s request, given back once the reply's
    /// headers came (its body unread: dropping it closes the request).
    pub async fn stateless_open(
        &self,
        path: &str,
        method: &str,
        mut params: Value,
        extra_meta: Value,
    ) -> anyhow::Result<reqwest::Response> {
        let mut meta = json!({
            "io.modelcontextprotocol/protocolVersion": REVISION,
            "io.modelcontextprotocol/clientInfo": {"name": "mcpool-tests-stateless", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        if let (Some(meta), Value::Object(extra)) = (meta.as_object_mut(), extra_meta) {
            meta.extend(extra);
        }
        params["_meta"] = meta;
        let name = params
            .get("name")
            .or_else(|| params.get("uri"))
            .or_else(|| params.get("taskId"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut request = reqwest::Client::new()
            .post(self.url(path))
            .bearer_auth(&self.token)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", REVISION)
            .header("mcp-method", method);
        if let Some(name) = name {
            request = request.header("mcp-name", name);
        }
        Ok(request.json(&body).send().await?)
    }
}
