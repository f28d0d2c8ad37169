//! A session agent's `tools/list` on `/mcp` or a profile's path, answered
//! from the listing the pool serialised once per change
//! ([`Pool::listing_json`]) rather than by rmcp, which would copy and
//! serialise every tool per request (66 ms for 5,000 tools, most of it
//! that).
//!
//! Only where the answer is the same for every agent: a listing that sends
//! every tool (`all`, or `auto` within its budget), to a session that is
//! open now, for a request rmcp would take as it is (the headers rmcp
//! checks, a plain `tools/list` with at most a cursor, which the aggregated
//! list ignores: it is one page). Anything else goes to rmcp, as before:
//! `search` listings (their found tools differ by session), 2026-07-28
//! agents (no session; their results carry cache hints), sessions saved
//! by an earlier run (rmcp restores them), and every other method.

use axum::body::Body;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use rmcp::model::{ProtocolVersion, RequestId};
use rmcp::transport::streamable_http_server::session::{SessionId, SessionManager};
use serde_json::{Map, Value};

use super::sessions::PoolSessionManager;
use crate::pool::Pool;
use crate::search::listing::{ListingMode, URL_PARAM};

/// The listing mode a URL's query asks for (`?toolListing=all`).
pub(super) fn mode_in_query(query: Option<&str>) -> Option<ListingMode> {
    url::form_urlencoded::parse(query?.as_bytes())
        .find(|(k, _)| k == URL_PARAM)
        .and_then(|(_, v)| ListingMode::parse(&v))
}

/// The aggregated endpoint (`profile` `None`) or a profile's, whose
/// `tools/list` this answers.
#[derive(Clone)]
pub(super) struct CachedList {
    pub(super) pool: Pool,
    pub(super) profile: Option<String>,
}

impl CachedList {
    /// The reply to a POST (`parts`, `body`) when it is a session's
    /// `tools/list` that the serialised listing answers; `None` for rmcp.
    pub(super) async fn answer(&self, parts: &Parts, body: &[u8], sessions: &PoolSessionManager) -> Option<Response> {
        if !headers_as_rmcp_takes(&parts.headers) {
            return None;
        }
        let id = parts.headers.get("mcp-session-id")?.to_str().ok()?;
        let request_id = tools_list_id(body)?;
        let json = self
            .pool
            .listing_json(self.profile.as_deref(), mode_in_query(parts.uri.query()))?;
        let session = SessionId::from(id.to_string());
        if !sessions.has_session(&session).await.unwrap_or(false) {
            return None;
        }
        sessions.touch(&session);
        let id = serde_json::to_vec(&request_id).ok()?;
        let mut reply = Vec::with_capacity(json.len() + id.len() + 40);
        reply.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        reply.extend_from_slice(&id);
        reply.extend_from_slice(br#","result":"#);
        reply.extend_from_slice(&json);
        reply.push(b'}');
        let mut response = Response::new(Body::from(reply));
        *response.status_mut() = StatusCode::OK;
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Some(response)
    }
}

/// Whether rmcp would take a session's POST with these headers as it is,
/// and its answer may be JSON: it accepts both JSON and SSE, sends JSON, a
/// known protocol version if any, and none of the standard headers
/// (SEP-2243) that rmcp checks against the body.
fn headers_as_rmcp_takes(headers: &HeaderMap) -> bool {
    let essences = || {
        headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(|m| m.split(';').next().unwrap_or_default().trim())
    };
    let accepts = |mime: &str| essences().any(|e| e.eq_ignore_ascii_case(mime));
    let sends_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"));
    let version_known = match headers.get("mcp-protocol-version") {
        None => true,
        Some(v) => v
            .to_str()
            .is_ok_and(|v| ProtocolVersion::KNOWN_VERSIONS.iter().any(|k| k.as_str() == v)),
    };
    let standard = headers
        .keys()
        .any(|k| k.as_str() == "mcp-method" || k.as_str() == "mcp-name" || k.as_str().starts_with("mcp-param-"));
    accepts("application/json") && accepts("text/event-stream") && sends_json && version_known && !standard
}

/// The id of `body` when it is one plain `tools/list` request: JSON-RPC
/// 2.0, no params but a string cursor and a `_meta` with at most a
/// progress token (rmcp's client sends one with every request; a list
/// answered from memory sends no progress). Any other `_meta` (a protocol
/// version of its own, say) is rmcp's to read.
fn tools_list_id(body: &[u8]) -> Option<RequestId> {
    #[derive(serde::Deserialize)]
    struct Probe {
        jsonrpc: String,
        id: RequestId,
        method: String,
        params: Option<Map<String, Value>>,
    }
    // A batch or anything else that is no single object is rmcp's.
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return None;
    }
    let probe: Probe = serde_json::from_slice(body).ok()?;
    let plain_meta = |v: &Value| v.as_object().is_some_and(|m| m.keys().all(|k| k == "progressToken"));
    let plain_params = probe.params.is_none_or(|p| {
        p.iter()
            .all(|(k, v)| (k == "cursor" && v.is_string()) || (k == "_meta" && plain_meta(v)))
    });
    (probe.jsonrpc == "2.0" && probe.method == "tools/list" && plain_params).then_some(probe.id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_plain_tools_list_is_taken() {
        let id = |body: &str| tools_list_id(body.as_bytes());
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#),
            Some(RequestId::Number(7))
        );
        assert_eq!(
            id(r#" {"jsonrpc":"2.0","id":"a","method":"tools/list","params":{"cursor":"x"}}"#),
            Some(RequestId::String("a".into()))
        );
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#),
            Some(RequestId::Number(1))
        );
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"progressToken":0}}}"#),
            Some(RequestId::Number(2))
        );
        for other in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"progressToken":1,"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":5}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":5}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","method":"tools/list"}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#,
            "not json",
        ] {
            assert_eq!(id(other), None, "{other}");
        }
    }

    #[test]
    fn only_headers_rmcp_takes_as_they_are() {
        let headers = |pairs: &[(&'static str, &'static str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.append(*k, HeaderValue::from_static(v));
            }
            h
        };
        let ok = [
            ("accept", "application/json, text/event-stream"),
            ("content-type", "application/json"),
        ];
        assert!(headers_as_rmcp_takes(&headers(&ok)));
        let mut with_version = ok.to_vec();
        with_version.push(("mcp-protocol-version", "2025-06-18"));
        assert!(headers_as_rmcp_takes(&headers(&with_version)));
        let mut unknown = ok.to_vec();
        unknown.push(("mcp-protocol-version", "1999-01-01"));
        assert!(!headers_as_rmcp_takes(&headers(&unknown)));
        let mut method = ok.to_vec();
        method.push(("mcp-method", "tools/list"));
        assert!(!headers_as_rmcp_takes(&headers(&method)));
        assert!(!headers_as_rmcp_takes(&headers(&[
            ("accept", "application/json"),
            ("content-type", "application/json")
        ])));
        assert!(!headers_as_rmcp_takes(&headers(&[(
            "accept",
            "application/json, text/event-stream"
        )])));
    }
}
