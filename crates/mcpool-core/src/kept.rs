//! Fields rmcp's types do not model, kept across the pool: a tool's
//! `execution`, a result's or a definition's fields from a newer revision
//! or a vendor. Where a server's message comes in (the stdio line reader,
//! the Streamable HTTP client) they are folded into a reserved `_meta` key
//! before rmcp's typed parse would drop them; where a message goes out to
//! an agent (the MCP endpoint's bodies) they are unfolded back into their
//! object. In between, `_meta` travels with the tool, prompt, resource or
//! result as it already does (docs/behaviour.md §4).
//!
//! Which fields are unknown is rmcp's own answer: an object's shape (its
//! arrays and objects emptied, so a large result costs nothing) is parsed
//! as rmcp's type and written back, and the keys that did not come back are
//! the ones folded.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use rmcp::model::{
    CallToolResult, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, Prompt, ReadResourceResult, Resource, ResourceTemplate, Tool,
};

/// The `_meta` key that carries an object's unmodelled fields through the
/// pool. Within it, `"_meta": false` records that the object had no `_meta`
/// of its own.
pub const KEY: &str = "io.mcpool/kept";

/// Folds the unknown fields of a server's response (`{"result": …}`): of
/// the result itself and of each tool, prompt, resource and template it
/// lists. Whether anything was folded.
pub fn fold_message(message: &mut Value) -> bool {
    let Some(result) = message.get_mut("result").and_then(Value::as_object_mut) else {
        return false;
    };
    let mut folded = false;
    for (list, fold_item) in ITEMS {
        if let Some(Value::Array(items)) = result.get_mut(*list) {
            for item in items.iter_mut().filter_map(Value::as_object_mut) {
                folded |= fold_item(item);
            }
        }
    }
    if let Some(fold_result) = result_kind(result) {
        folded |= fold_result(result);
    }
    folded
}

/// Folds one JSON-RPC message given as text (a stdio line, an SSE event's
/// data, a JSON body): the text again when something was folded, `None`
/// when it passes as it is (most messages: no result, or nothing unknown).
pub fn fold_text(text: &[u8]) -> Option<Vec<u8>> {
    memchr::memmem::find(text, b"\"result\"")?;
    let mut message: Value = serde_json::from_slice(text).ok()?;
    if !fold_message(&mut message) {
        return None;
    }
    serde_json::to_vec(&message).ok()
}

type Fold = fn(&mut Map<String, Value>) -> bool;

/// The lists a result may hold, each item with its own type.
const ITEMS: &[(&str, Fold)] = &[
    ("tools", fold_as::<Tool>),
    ("prompts", fold_as::<Prompt>),
    ("resources", fold_as::<Resource>),
    ("resourceTemplates", fold_as::<ResourceTemplate>),
];

/// Which result `result` is, told by the fields only that result has.
fn result_kind(result: &Map<String, Value>) -> Option<Fold> {
    let has = |key: &str| result.contains_key(key);
    Some(if has("tools") {
        fold_as::<ListToolsResult>
    } else if has("prompts") {
        fold_as::<ListPromptsResult>
    } else if has("resources") {
        fold_as::<ListResourcesResult>
    } else if has("resourceTemplates") {
        fold_as::<ListResourceTemplatesResult>
    } else if has("contents") {
        fold_as::<ReadResourceResult>
    } else if has("messages") {
        fold_as::<GetPromptResult>
    } else if has("content") || has("structuredContent") || has("isError") {
        fold_as::<CallToolResult>
    } else {
        return None;
    })
}

/// Moves the fields of `object` that rmcp's `T` does not keep into
/// `_meta[KEY]`. An object `T` cannot parse is left as it is (rmcp will
/// say what is wrong with it).
fn fold_as<T: DeserializeOwned + Serialize>(object: &mut Map<String, Value>) -> bool {
    let shape: Map<String, Value> = object.iter().map(|(k, v)| (k.clone(), emptied(v))).collect();
    let Ok(typed) = serde_json::from_value::<T>(Value::Object(shape)) else {
        return false;
    };
    let Ok(Value::Object(back)) = serde_json::to_value(&typed) else {
        return false;
    };
    let unknown: Vec<String> = object
        .keys()
        .filter(|k| *k != "_meta" && !back.contains_key(*k))
        .cloned()
        .collect();
    if unknown.is_empty() || object.get("_meta").is_some_and(|m| !m.is_object()) {
        return false;
    }
    let mut kept: Map<String, Value> = unknown.iter().filter_map(|k| object.remove_entry(k)).collect();
    if !object.contains_key("_meta") {
        kept.insert("_meta".into(), Value::Bool(false));
    }
    if let Value::Object(meta) = object.entry("_meta").or_insert_with(|| Value::Object(Map::new())) {
        meta.insert(KEY.into(), Value::Object(kept));
    }
    true
}

/// `value` with its arrays and objects emptied: the shape rmcp's types are
/// checked against, whatever the size of what they hold.
fn emptied(value: &Value) -> Value {
    match value {
        Value::Array(_) => Value::Array(Vec::new()),
        Value::Object(_) => Value::Object(Map::new()),
        other => other.clone(),
    }
}

/// Puts back every folded field in `value`, at any depth: each object
/// whose `_meta` holds [`KEY`] gets its fields again (never over a field it
/// has), and loses a `_meta` that only the fold made. Whether anything was
/// put back.
pub fn unfold(value: &mut Value) -> bool {
    match value {
        Value::Array(items) => items.iter_mut().fold(false, |any, item| unfold(item) | any),
        Value::Object(object) => {
            let mut any = object.values_mut().fold(false, |any, v| unfold(v) | any);
            let kept = match object.get_mut("_meta") {
                Some(Value::Object(meta)) => meta.remove(KEY),
                _ => None,
            };
            if let Some(Value::Object(kept)) = kept {
                any = true;
                let mut had_meta = true;
                for (key, field) in kept {
                    if key == "_meta" {
                        had_meta = field != Value::Bool(false);
                    } else if !object.contains_key(&key) {
                        object.insert(key, field);
                    }
                }
                let empty = object
                    .get("_meta")
                    .and_then(Value::as_object)
                    .is_some_and(Map::is_empty);
                if !had_meta && empty {
                    object.remove("_meta");
                }
            }
            any
        }
        _ => false,
    }
}

/// A JSON body or a whole SSE frame with its folded fields put back; `None`
/// when it holds none (the fast path: one substring search).
pub fn unfold_body(bytes: &[u8]) -> Option<Vec<u8>> {
    memchr::memmem::find(bytes, KEY.as_bytes())?;
    if let Ok(mut message) = serde_json::from_slice::<Value>(bytes) {
        unfold(&mut message);
        return serde_json::to_vec(&message).ok();
    }
    // SSE: each `data:` line that holds a message.
    let text = std::str::from_utf8(bytes).ok()?;
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, end) = match line.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (line, ""),
        };
        let data = body.strip_prefix("data:").map(|d| d.strip_prefix(' ').unwrap_or(d));
        match data.and_then(|d| serde_json::from_str::<Value>(d).ok()) {
            Some(mut message) if body.contains(KEY) => {
                unfold(&mut message);
                out.push_str("data: ");
                out.push_str(&serde_json::to_string(&message).ok()?);
                out.push_str(end);
            }
            _ => out.push_str(line),
        }
    }
    Some(out.into_bytes())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn folded(mut message: Value) -> Value {
        fold_message(&mut message);
        message
    }

    #[test]
    fn a_tools_execution_and_a_vendors_field_survive_rmcps_parse_and_come_back() {
        let sent = json!({"jsonrpc": "2.0", "id": 1, "result": {
            "tools": [{
                "name": "add", "inputSchema": {"type": "object"},
                "execution": {"taskSupport": "optional"}, "x-vendor": [1, 2],
            }, {
                "name": "plain", "inputSchema": {"type": "object"}, "_meta": {"a": 1},
            }],
            "nextCursor": "c2", "x-page": true,
        }});
        let message = folded(sent.clone());
        let tool = &message["result"]["tools"][0];
        assert_eq!(tool.get("execution"), None, "folded out of rmcp's way");
        assert_eq!(tool["_meta"][KEY]["execution"], json!({"taskSupport": "optional"}));
        assert_eq!(
            message["result"]["tools"][1], sent["result"]["tools"][1],
            "nothing unknown: untouched"
        );
        // Through rmcp's types, as the pool holds it.
        let typed: rmcp::model::ServerJsonRpcMessage = serde_json::from_value(message).unwrap();
        let mut back = serde_json::to_value(&typed).unwrap();
        assert!(unfold(&mut back));
        let tool = &back["result"]["tools"][0];
        assert_eq!(tool["execution"], json!({"taskSupport": "optional"}));
        assert_eq!(tool["x-vendor"], json!([1, 2]));
        assert_eq!(tool.get("_meta"), None, "a _meta only the fold made is gone");
        assert_eq!(back["result"]["tools"][1]["_meta"], json!({"a": 1}));
        assert_eq!(back["result"]["x-page"], json!(true));
        assert_eq!(back["result"]["nextCursor"], json!("c2"));
    }

    #[test]
    fn a_call_results_unknown_field_is_kept_beside_its_own_meta_and_content() {
        let sent = json!({"jsonrpc": "2.0", "id": 7, "result": {
            "content": [{"type": "text", "text": "x".repeat(1000)}],
            "structuredContent": {"n": 1}, "_meta": {}, "x-trace": "t1",
        }});
        let message = folded(sent.clone());
        assert_eq!(message["result"]["_meta"], json!({KEY: {"x-trace": "t1"}}));
        let mut back = message.clone();
        unfold(&mut back);
        assert_eq!(back, sent, "as sent, its empty _meta too");
    }

    #[test]
    fn what_rmcp_knows_or_cannot_parse_is_not_touched() {
        for message in [
            json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [], "isError": false}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": 5}]}}),
            json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "x": 1}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-11-25", "x": 1}}),
        ] {
            assert_eq!(folded(message.clone()), message);
        }
        assert_eq!(fold_text(br#"{"jsonrpc":"2.0","method":"ping","id":1}"#), None);
    }

    #[test]
    fn an_sse_frame_and_a_json_body_are_unfolded_and_others_pass() {
        let message = folded(json!({"jsonrpc": "2.0", "id": 2, "result": {
            "prompts": [{"name": "p", "x-kind": "k"}],
        }}));
        let data = serde_json::to_string(&message).unwrap();
        let frame = format!("id: 3\ndata: {data}\n\n");
        let unfolded = String::from_utf8(unfold_body(frame.as_bytes()).unwrap()).unwrap();
        let (head, rest) = unfolded.split_once("data: ").unwrap();
        assert_eq!(head, "id: 3\n");
        let back: Value = serde_json::from_str(rest.trim_end()).unwrap();
        assert_eq!(back["result"]["prompts"][0]["x-kind"], "k");
        assert!(rest.ends_with("\n\n"));
        let body: Value = serde_json::from_slice(&unfold_body(data.as_bytes()).unwrap()).unwrap();
        assert_eq!(body, back);
        assert_eq!(unfold_body(b"data: {\"jsonrpc\":\"2.0\"}\n\n"), None);
    }
}
