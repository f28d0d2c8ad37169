//! The 2026-07-28 revision on the bridge: which of the agent's messages are
//! stateless requests (no session: each carries its revision in `_meta`,
//! and `server/discover` opens nothing), and the HTTP headers the endpoint
//! requires of them (the protocol version, and SEP-2243's `Mcp-Method` and
//! `Mcp-Name`), which a stdio agent cannot send itself.

use base64::Engine as _;
use serde_json::Value;

/// Where a 2026-07-28 request names its revision.
const VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";
/// The first revision without `initialize`.
const STATELESS_FROM: &str = "2026-07-28";
const DISCOVER: &str = "server/discover";

/// The revision a stateless request names in `_meta` (`None` for a
/// `server/discover` without one: mcpool says what is missing).
fn meta_version(message: &Value) -> Option<&str> {
    message.pointer("/params/_meta")?.get(VERSION_META)?.as_str()
}

/// A request of the stateless revisions: `server/discover`, or one whose
/// `_meta` names 2026-07-28 or later. It needs no session on mcpool.
pub fn is_stateless(message: &Value) -> bool {
    let Some(method) = message.get("method").and_then(Value::as_str) else {
        return false;
    };
    if message.get("id").is_none() {
        return false;
    }
    method == DISCOVER || meta_version(message).is_some_and(|v| v >= STATELESS_FROM)
}

/// The headers a stateless request travels with: what an HTTP agent of that
/// revision sends, and what mcpool checks against the body.
pub fn headers(message: &Value) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if let Some(version) = meta_version(message) {
        out.push(("mcp-protocol-version", version.to_string()));
    }
    let Some(method) = message.get("method").and_then(Value::as_str) else {
        return out;
    };
    out.push(("mcp-method", method.to_string()));
    if let Some(name) = routing_name(method, message.get("params")) {
        out.push(("mcp-name", header_value(name)));
    }
    out
}

/// SEP-2243's `Mcp-Name`: the tool or prompt, the resource, or the task a
/// request is about.
fn routing_name<'a>(method: &str, params: Option<&'a Value>) -> Option<&'a str> {
    let key = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => "uri",
        "tasks/get" | "tasks/update" | "tasks/cancel" => "taskId",
        _ => return None,
    };
    params?.get(key)?.as_str()
}

/// A value as a header can carry it: as it is, or as `=?base64?…?=` when it
/// has outer blanks, characters outside visible ASCII, or the wrapper's own
/// shape (the encoding mcpool decodes).
fn header_value(value: &str) -> String {
    let outer_blank = value.starts_with([' ', '\t']) || value.ends_with([' ', '\t']);
    let unsafe_char = value.chars().any(|c| !(' '..='~').contains(&c));
    let looks_wrapped = value.starts_with("=?base64?") && value.ends_with("?=");
    if outer_blank || unsafe_char || looks_wrapped {
        let encoded = base64::engine::general_purpose::STANDARD.encode(value);
        format!("=?base64?{encoded}?=")
    } else {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(method: &str, params: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    }

    fn meta() -> Value {
        json!({VERSION_META: "2026-07-28", "io.modelcontextprotocol/clientInfo": {"name": "a", "version": "1"}})
    }

    #[test]
    fn stateless_requests_are_discover_and_those_naming_a_stateless_revision() {
        assert!(is_stateless(&request(DISCOVER, json!({}))));
        assert!(is_stateless(&request("tools/list", json!({"_meta": meta()}))));
        let old = json!({"_meta": {VERSION_META: "2025-11-25"}});
        assert!(!is_stateless(&request("tools/list", old)));
        assert!(!is_stateless(&request("tools/list", json!({}))));
        assert!(!is_stateless(&request(
            "initialize",
            json!({"protocolVersion": "2026-07-28"})
        )));
        let notification = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"_meta": meta()}});
        assert!(!is_stateless(&notification));
    }

    #[test]
    fn headers_name_the_revision_the_method_and_what_it_is_about() {
        let call = request(
            "tools/call",
            json!({"name": "f__echo", "arguments": {}, "_meta": meta()}),
        );
        assert_eq!(
            headers(&call),
            vec![
                ("mcp-protocol-version", "2026-07-28".to_string()),
                ("mcp-method", "tools/call".to_string()),
                ("mcp-name", "f__echo".to_string()),
            ]
        );
        let read = request("resources/read", json!({"uri": "file:///tmp/é", "_meta": meta()}));
        assert_eq!(
            headers(&read)[2],
            ("mcp-name", "=?base64?ZmlsZTovLy90bXAvw6k=?=".to_string())
        );
        let list = request("tools/list", json!({"_meta": meta()}));
        assert_eq!(headers(&list).len(), 2);
        // A discover without `_meta` goes as it is: mcpool names what is missing.
        assert_eq!(
            headers(&request(DISCOVER, json!({}))),
            vec![("mcp-method", DISCOVER.to_string())]
        );
    }

    #[test]
    fn only_values_a_header_cannot_carry_are_wrapped() {
        for (value, sent) in [
            ("plain-name_1", "plain-name_1"),
            ("a b", "a b"),
            (" a", "=?base64?IGE=?="),
            ("line\nbreak", "=?base64?bGluZQpicmVhaw==?="),
            ("=?base64?x?=", "=?base64?PT9iYXNlNjQ/eD89?="),
        ] {
            assert_eq!(header_value(value), sent, "{value:?}");
        }
    }
}
