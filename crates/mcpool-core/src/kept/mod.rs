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
//!
//! The same carries 2025-11-25's tasks, which rmcp's model (the 2026-07-28
//! tasks) has no room for: a server's `tasks` capability (kept in
//! `experimental`), a task result kept whole ([`WHOLE`]), and an agent's
//! `task` on a call, folded where the request comes in
//! ([`fold_request`]) and unfolded where it goes on to the server.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use rmcp::model::{
    CallToolResult, ContentBlock, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, Prompt, ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Tool,
};

mod deep;

/// The `_meta` key that carries an object's unmodelled fields through the
/// pool. Within it, `"_meta": false` records that the object had no `_meta`
/// of its own.
pub const KEY: &str = "io.mcpool/kept";

/// Folds the unknown fields of a server's response (`{"result": …}`): of
/// the result itself and of each tool, prompt, resource and template it
/// lists. Whether anything was folded.
pub fn fold_message(message: &mut Value) -> bool {
    if message.get("method").and_then(Value::as_str) == Some(TASK_STATUS) {
        return keep_whole_params(message);
    }
    let Some(result) = message.get_mut("result").and_then(Value::as_object_mut) else {
        return false;
    };
    if let Some(whole) = task_result(result) {
        *result = whole;
        return true;
    }
    let mut folded = false;
    if let Some(Value::Object(capabilities)) = result.get_mut("capabilities") {
        folded |= fold_capabilities(capabilities);
    }
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
    let result = memchr::memmem::find(text, b"\"result\"").is_some();
    let task_status = memchr::memmem::find(text, TASK_STATUS.as_bytes()).is_some();
    if !result && !task_status && !may_name_key(text) {
        return None;
    }
    let mut message: Value = serde_json::from_slice(text).ok()?;
    let stripped = strip_reserved(&mut message);
    if !(fold_message(&mut message) || stripped) {
        return None;
    }
    serde_json::to_vec(&message).ok()
}

/// Whether `text` may name [`KEY`]: as it is, or with a JSON escape in it
/// (`io.mcpool\u002fkept` names it too once parsed).
fn may_name_key(text: &[u8]) -> bool {
    memchr::memmem::find(text, KEY.as_bytes()).is_some() || memchr::memmem::find(text, b"\\u").is_some()
}

/// Removes [`KEY`] wherever a server or an agent put it: only mcpool's own
/// folds may carry it, or a message could rewrite what mcpool checked (a
/// tool's listed name, a call's tool) when it is unfolded. Whether any was
/// there.
pub fn strip_reserved(value: &mut Value) -> bool {
    match value {
        Value::Array(items) => items.iter_mut().fold(false, |any, item| strip_reserved(item) | any),
        Value::Object(object) => {
            let mut any = object.remove(KEY).is_some();
            for field in object.values_mut() {
                any |= strip_reserved(field);
            }
            any
        }
        _ => false,
    }
}

/// The key under [`KEY`] that holds a whole result to give back in place
/// of the object rmcp parsed.
pub const WHOLE: &str = "$result";

/// A task's status notification.
pub const TASK_STATUS: &str = "notifications/tasks/status";

/// A 2025-11-25 `notifications/tasks/status`'s params kept whole beside
/// what rmcp's 2026-07-28 model of it takes (rmcp moves a notification's
/// `_meta` aside, where the handler finds it).
fn keep_whole_params(message: &mut Value) -> bool {
    let Some(params) = message.get_mut("params").and_then(Value::as_object_mut) else {
        return false;
    };
    if params.contains_key("resultType") || params.get("_meta").is_some_and(|m| !m.is_object()) {
        return false;
    }
    let whole = Value::Object(params.clone());
    let meta = params.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert(KEY.into(), serde_json::json!({WHOLE: whole}));
    }
    true
}

/// A 2025-11-25 task result, which rmcp's model (the 2026-07-28 tasks)
/// cannot hold, as an object rmcp parses that carries the result whole:
/// `{"task": {…}}` (a task-augmented call's answer) as an empty call result;
/// a task's own state (`tasks/get`, `tasks/cancel`) as it is, its whole
/// self kept beside. `None` for any other result.
fn task_result(result: &Map<String, Value>) -> Option<Map<String, Value>> {
    if result.contains_key("resultType") {
        return None;
    }
    let created = result.get("task").and_then(|t| t.get("taskId")).is_some() && !result.contains_key("content");
    let state = result.contains_key("taskId") && result.contains_key("status");
    if !(created || state) {
        return None;
    }
    let whole = Value::Object(result.clone());
    if created {
        let mut call = Map::new();
        call.insert("content".into(), Value::Array(Vec::new()));
        call.insert("_meta".into(), serde_json::json!({KEY: {WHOLE: whole}}));
        return Some(call);
    }
    let mut state = result.clone();
    let meta = state.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
    meta.as_object_mut()?
        .insert(KEY.into(), serde_json::json!({WHOLE: whole}));
    Some(state)
}

/// A server's capabilities that rmcp does not model (2025-11-25's `tasks`)
/// kept in `experimental` under [`KEY`], the one place of the capabilities
/// that takes any object.
fn fold_capabilities(capabilities: &mut Map<String, Value>) -> bool {
    fold_into::<rmcp::model::ServerCapabilities>(capabilities, "experimental", deep::ITEM_DEPTH)
}

/// The capabilities a server declared that rmcp does not model, as
/// [`fold_capabilities`] kept them (`tasks`, say).
pub fn kept_capabilities(capabilities: &rmcp::model::ServerCapabilities) -> Option<&Map<String, Value>> {
    capabilities.experimental.as_ref()?.get(KEY)
}

type Fold = fn(&mut Map<String, Value>) -> bool;

/// The lists a result may hold, each item with its own type.
const ITEMS: &[(&str, Fold)] = &[
    ("tools", fold_as::<Tool>),
    ("prompts", fold_as::<Prompt>),
    ("resources", fold_as::<Resource>),
    ("resourceTemplates", fold_as::<ResourceTemplate>),
    ("content", fold_as::<ContentBlock>),
    ("contents", fold_as::<ResourceContents>),
];

/// Which result `result` is, told by the fields only that result has.
fn result_kind(result: &Map<String, Value>) -> Option<Fold> {
    let has = |key: &str| result.contains_key(key);
    Some(if has("tools") {
        fold_list_as::<ListToolsResult>
    } else if has("prompts") {
        fold_list_as::<ListPromptsResult>
    } else if has("resources") {
        fold_list_as::<ListResourcesResult>
    } else if has("resourceTemplates") {
        fold_list_as::<ListResourceTemplatesResult>
    } else if has("contents") {
        fold_list_as::<ReadResourceResult>
    } else if has("messages") {
        fold_as::<GetPromptResult>
    } else if has("content") || has("structuredContent") || has("isError") {
        fold_list_as::<CallToolResult>
    } else {
        return None;
    })
}

/// Moves the fields of `object` that rmcp's `T` does not keep, at any
/// depth [`deep::ITEM_DEPTH`] reaches, into `_meta[KEY]`. An object `T`
/// cannot parse is left as it is (rmcp will say what is wrong with it).
fn fold_as<T: DeserializeOwned + Serialize>(object: &mut Map<String, Value>) -> bool {
    fold_into::<T>(object, "_meta", deep::ITEM_DEPTH)
}

/// [`fold_as`] for a list's result, whose items were folded each on its
/// own: its own fields only.
fn fold_list_as<T: DeserializeOwned + Serialize>(object: &mut Map<String, Value>) -> bool {
    fold_into::<T>(object, "_meta", 0)
}

/// Moves the fields of `object` that rmcp's `T` does not keep into
/// `object[holder][KEY]` (`holder` is an object field `T` keeps whole),
/// those of its nested objects `depth` levels down as partial copies
/// ([`deep`]); `"holder": false` among them records that `object` had no
/// `holder`.
fn fold_into<T: DeserializeOwned + Serialize>(object: &mut Map<String, Value>, holder: &str, depth: usize) -> bool {
    if object.get(holder).is_some_and(|h| !h.is_object()) {
        return false;
    }
    let shape = deep::shape_fields(object, depth);
    let Ok(typed) = serde_json::from_value::<T>(Value::Object(shape)) else {
        return false;
    };
    let Ok(Value::Object(back)) = serde_json::to_value(&typed) else {
        return false;
    };
    let mut kept = deep::take_unknown(object, &back, depth, holder);
    if kept.is_empty() {
        return false;
    }
    if !object.contains_key(holder) {
        kept.insert(holder.into(), Value::Bool(false));
    }
    if let Value::Object(within) = object.entry(holder).or_insert_with(|| Value::Object(Map::new())) {
        within.insert(KEY.into(), Value::Object(kept));
    }
    true
}

/// Puts back in `object` what [`fold_into`] kept in its `holder`: each
/// field it does not have, merged into those it has ([`deep::put_back`]),
/// and drops a `holder` only the fold made.
fn unfold_from(object: &mut Map<String, Value>, holder: &str) -> bool {
    let kept = match object.get_mut(holder) {
        Some(Value::Object(within)) => within.remove(KEY),
        _ => None,
    };
    let Some(Value::Object(mut kept)) = kept else {
        return false;
    };
    let had_holder = kept.remove(holder) != Some(Value::Bool(false));
    deep::put_back(object, kept);
    let empty = object.get(holder).and_then(Value::as_object).is_some_and(Map::is_empty);
    if !had_holder && empty {
        object.remove(holder);
    }
    true
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
            // Capabilities kept in `experimental`.
            any |= unfold_from(object, "experimental");
            let whole = object
                .get_mut("_meta")
                .and_then(|m| m.get_mut(KEY))
                .and_then(|k| k.as_object_mut())
                .and_then(|k| k.remove(WHOLE));
            if let Some(Value::Object(whole)) = whole {
                *object = whole;
                return true;
            }
            any |= unfold_from(object, "_meta");
            any
        }
        _ => false,
    }
}

/// An agent's request with what rmcp's model of it would drop kept: the
/// fields of a `tools/call`'s params it does not know (2025-11-25's
/// `task`, a vendor's) folded into its `_meta`, to be put back where the
/// request goes on to the server. `None` when there is nothing to keep.
pub fn fold_request(body: &[u8]) -> Option<Vec<u8>> {
    let call = memchr::memmem::find(body, b"tools/call").is_some();
    if !call && !may_name_key(body) {
        return None;
    }
    let mut message: Value = serde_json::from_slice(body).ok()?;
    let stripped = strip_reserved(&mut message);
    let folded = message.get("method").and_then(Value::as_str) == Some("tools/call")
        && message
            .get_mut("params")
            .and_then(Value::as_object_mut)
            .is_some_and(fold_as::<rmcp::model::CallToolRequestParams>);
    if !(folded || stripped) {
        return None;
    }
    serde_json::to_vec(&message).ok()
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
mod tests;
