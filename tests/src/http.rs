//! Plain HTTP to an instance's API with its bearer token: for [`Mcpool`]
//! and for an instance the tests run otherwise (under Wine).
//!
//! [`Mcpool`]: crate::Mcpool

use serde_json::{json, Value};

use crate::Mcpool;

/// `GET url` with `token`; the JSON of a 2xx answer.
pub async fn get_json_with(url: &str, token: &str) -> anyhow::Result<Value> {
    let r = reqwest::Client::new().get(url).bearer_auth(token).send().await?;
    Ok(r.error_for_status()?.json().await?)
}

/// `GET url` as a browser's first request for a link: no token, and a
/// redirect is not followed but answered.
pub async fn get_unfollowed(url: &str) -> anyhow::Result<reqwest::Response> {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    Ok(client.get(url).send().await?)
}

/// A 2025-06-18 `initialize` request (id 1) from a client named `t`.
pub fn initialize_request() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
}

impl Mcpool {
    /// `GET path` with the token, answered as it is (any status).
    pub async fn get(&self, path: &str) -> anyhow::Result<reqwest::Response> {
        Ok(reqwest::Client::new()
            .get(self.url(path))
            .bearer_auth(&self.token)
            .send()
            .await?)
    }

    /// POSTs the JSON-RPC `message` to the MCP endpoint `path` as an agent
    /// does (the token, and an accept of JSON and SSE), answered as it is.
    pub async fn post_mcp(&self, path: &str, message: &Value) -> anyhow::Result<reqwest::Response> {
        Ok(reqwest::Client::new()
            .post(self.url(path))
            .bearer_auth(&self.token)
            .header("accept", "application/json, text/event-stream")
            .json(message)
            .send()
            .await?)
    }
}
