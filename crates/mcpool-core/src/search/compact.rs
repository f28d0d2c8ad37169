//! The short forms of a tool that a search answers with, and what a
//! listing costs: one line of description, the input schema cut down to
//! what a call needs, and the estimated tokens of a definition (one token
//! per 4 bytes of its JSON, the usual rate of GPT and Claude tokenizers on
//! English text and JSON; good to about ±25 %).

use rmcp::model::{JsonObject, Tool};
use serde_json::{Map, Value};

/// Estimated tokens of `bytes` of JSON or English text.
pub fn tokens_of_bytes(bytes: usize) -> usize {
    bytes.div_ceil(4)
}

/// Estimated tokens of one tool definition as `tools/list` sends it.
pub fn tool_tokens(tool: &Tool) -> usize {
    tokens_of_bytes(serde_json::to_vec(tool).map(|v| v.len()).unwrap_or(0))
}

/// Estimated tokens of a whole listing (the `tools` array and its commas).
pub fn listing_tokens(tools: &[Tool]) -> usize {
    tokens_of_bytes(serde_json::to_vec(tools).map(|v| v.len()).unwrap_or(0))
}

/// The first line of `text`, its first sentence when that is shorter, cut
/// to at most `max` characters (with "…").
pub fn one_line(text: &str, max: usize) -> String {
    let line = text.trim().lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let sentence = line
        .match_indices(". ")
        .map(|(i, _)| &line[..=i])
        .find(|s| s.chars().count() >= 20)
        .unwrap_or(line);
    cut(sentence, max)
}

fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.truncate(out.trim_end().len());
    out.push('…');
    out
}

/// Longest description of one parameter in a compact schema.
const PARAM_DESCRIPTION: usize = 80;
/// Most enum values kept.
const ENUM_VALUES: usize = 8;

/// The input schema with what a call needs: each parameter's type, a short
/// description, enum values, `required`; one level of nested objects and
/// array items. Titles, examples, defaults and `$schema` go.
pub fn compact_schema(schema: &JsonObject) -> Value {
    compact(schema, 0)
}

fn compact(schema: &Map<String, Value>, depth: usize) -> Value {
    let mut out = Map::new();
    if let Some(t) = schema.get("type") {
        out.insert("type".into(), t.clone());
    }
    if let Some(d) = schema.get("description").and_then(Value::as_str).filter(|_| depth > 0) {
        out.insert("description".into(), Value::String(one_line(d, PARAM_DESCRIPTION)));
    }
    if let Some(Value::Array(values)) = schema.get("enum") {
        out.insert(
            "enum".into(),
            Value::Array(values.iter().take(ENUM_VALUES).cloned().collect()),
        );
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(variants)) = schema.get(key) {
            let types: Vec<Value> = variants
                .iter()
                .filter_map(|v| v.get("type").cloned())
                .filter(|t| t != "null")
                .collect();
            if !types.is_empty() && !out.contains_key("type") {
                out.insert(
                    "type".into(),
                    if types.len() == 1 {
                        types[0].clone()
                    } else {
                        Value::Array(types)
                    },
                );
            }
        }
    }
    if depth < 2 {
        if let Some(Value::Object(props)) = schema.get("properties") {
            let props: Map<String, Value> = props
                .iter()
                .map(|(k, v)| {
                    let v = match v {
                        Value::Object(m) => compact(m, depth + 1),
                        other => other.clone(),
                    };
                    (k.clone(), v)
                })
                .collect();
            out.insert("properties".into(), Value::Object(props));
        }
        if let Some(Value::Object(items)) = schema.get("items") {
            out.insert("items".into(), compact(items, depth + 1));
        }
    }
    if let Some(Value::Array(required)) = schema.get("required") {
        if !required.is_empty() {
            out.insert("required".into(), Value::Array(required.clone()));
        }
    }
    Value::Object(out)
}

/// The arguments in one line: `url*: string, fullPage: boolean, type:
/// "png"|"jpeg"` (`*`: required).
pub fn signature(schema: &JsonObject) -> String {
    let Some(Value::Object(props)) = schema.get("properties") else {
        return String::new();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    props
        .iter()
        .map(|(name, prop)| {
            let star = if required.contains(&name.as_str()) { "*" } else { "" };
            format!("{name}{star}: {}", type_of(prop))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn type_of(prop: &Value) -> String {
    if let Some(Value::Array(values)) = prop.get("enum") {
        let shown: Vec<String> = values.iter().take(ENUM_VALUES).map(|v| v.to_string()).collect();
        return shown.join("|");
    }
    match prop.get("type") {
        Some(Value::String(t)) if t == "array" => {
            let item = prop.get("items").map(type_of).unwrap_or_else(|| "any".into());
            format!("{item}[]")
        }
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("|"),
        _ => match prop.get("anyOf").or(prop.get("oneOf")) {
            Some(Value::Array(vs)) => vs
                .iter()
                .map(type_of)
                .filter(|t| t != "null")
                .collect::<Vec<_>>()
                .join("|"),
            _ => "any".into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> JsonObject {
        match v {
            Value::Object(m) => m,
            _ => panic!("not an object"),
        }
    }

    #[test]
    fn one_line_takes_the_first_sentence_of_the_first_line() {
        assert_eq!(
            one_line("Take a screenshot of the page. Use it to see.", 200),
            "Take a screenshot of the page."
        );
        assert_eq!(one_line("\n  First line\nsecond", 200), "First line");
        assert_eq!(
            one_line("Go. Then more words follow here.", 200),
            "Go. Then more words follow here."
        );
        assert_eq!(one_line("abcdefghij", 5), "abcd…");
        assert_eq!(one_line("", 5), "");
    }

    #[test]
    fn a_compact_schema_keeps_what_a_call_needs() {
        let schema = obj(json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {
                "url": {"type": "string", "title": "URL", "description": "The URL to open in the browser. It must be absolute.", "examples": ["https://x"]},
                "kind": {"type": "string", "enum": ["png", "jpeg"], "default": "png"},
                "opts": {"type": "object", "properties": {"w": {"type": "integer", "properties": {"deep": {}}}}},
                "tags": {"type": "array", "items": {"type": "string"}},
                "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}]}
            },
            "required": ["url"],
            "additionalProperties": false
        }));
        assert_eq!(
            compact_schema(&schema),
            json!({
                "type": "object",
                "properties": {
                    "url": {"type": "string", "description": "The URL to open in the browser."},
                    "kind": {"type": "string", "enum": ["png", "jpeg"]},
                    "opts": {"type": "object", "properties": {"w": {"type": "integer"}}},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "maybe": {"type": "string"}
                },
                "required": ["url"]
            })
        );
        assert_eq!(
            signature(&schema),
            "url*: string, kind: \"png\"|\"jpeg\", opts: object, tags: string[], maybe: string"
        );
    }

    #[test]
    fn tokens_are_a_quarter_of_the_bytes() {
        assert_eq!(tokens_of_bytes(0), 0);
        assert_eq!(tokens_of_bytes(1), 1);
        assert_eq!(tokens_of_bytes(8), 2);
        let t = Tool::new("a", "b", std::sync::Arc::new(JsonObject::new()));
        assert_eq!(tool_tokens(&t), tokens_of_bytes(serde_json::to_vec(&t).unwrap().len()));
    }
}
