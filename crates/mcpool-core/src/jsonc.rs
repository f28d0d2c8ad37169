//! JSONC as VS Code, opencode and mcpool's own config write it (`//` and
//! `/* */` comments, trailing commas), read with the `jsonc-parser` crate
//! (the same one `agent_config` edits files with): the value, and every key
//! repeated in one object, which JSON parsers resolve silently (the last
//! one wins) and a config that says the same thing twice deserves to hear
//! about. Anything else JSON5 allows (single quotes, bare names, hex
//! numbers) is refused, as a JSON parser would.

use jsonc_parser::ast;
use jsonc_parser::cst::{CstInputValue, CstObjectProp};
use jsonc_parser::{CollectOptions, ParseOptions};
use serde_json::{Map, Number, Value};

/// Why the text is not JSONC, and where (1-based, as editors count).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at line {line}, column {column}")]
pub struct JsoncError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// The text's value (`Null` for empty text) and the path of every repeated
/// key, e.g. `["mcpServers", "github", "env", "TOKEN"]`, in document order.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub value: Value,
    pub repeated: Vec<Vec<String>>,
}

/// JSONC as the clients and mcpool write it: comments and trailing commas,
/// nothing looser (a missing comma is an error, not a guess). The same for
/// reading here and for editing a client's file (`agent_config/json.rs`).
pub fn options() -> ParseOptions {
    ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

/// Reads `text` as JSONC.
pub fn parse(text: &str) -> Result<Parsed, JsoncError> {
    let parsed = jsonc_parser::parse_to_ast(text, &CollectOptions::default(), &options()).map_err(|e| JsoncError {
        line: e.line_display(),
        column: e.column_display(),
        message: e.kind().to_string(),
    })?;
    let mut repeated = Vec::new();
    let value = match parsed.value {
        Some(v) => convert(v, &mut Vec::new(), &mut repeated),
        None => Value::Null,
    };
    Ok(Parsed { value, repeated })
}

/// Reads `text` as JSONC, for callers that need the value only.
pub fn value(text: &str) -> Result<Value, JsoncError> {
    parse(text).map(|p| p.value)
}

fn convert(value: ast::Value<'_>, path: &mut Vec<String>, repeated: &mut Vec<Vec<String>>) -> Value {
    match value {
        ast::Value::StringLit(s) => Value::String(s.value.into_owned()),
        // The parser checked the digits; serde_json keeps what fits exactly.
        ast::Value::NumberLit(n) => serde_json::from_str::<Number>(n.value).map_or(Value::Null, Value::Number),
        ast::Value::BooleanLit(b) => Value::Bool(b.value),
        ast::Value::NullKeyword(_) => Value::Null,
        ast::Value::Array(a) => Value::Array(
            a.elements
                .into_iter()
                .enumerate()
                .map(|(i, v)| {
                    path.push(i.to_string());
                    let v = convert(v, path, repeated);
                    path.pop();
                    v
                })
                .collect(),
        ),
        ast::Value::Object(o) => {
            let mut map = Map::new();
            for prop in o.properties {
                let key = prop.name.into_string();
                path.push(key.clone());
                // Said where the second key is, before what is inside it.
                if map.contains_key(&key) {
                    repeated.push(path.clone());
                }
                let v = convert(prop.value, path, repeated);
                map.insert(key, v);
                path.pop();
            }
            Value::Object(map)
        }
    }
}

/// Removes an entry with the comment lines right above it (they describe
/// it); a comment that ends the line of the entry before stays with that one.
pub fn remove_entry(prop: CstObjectProp) {
    let mut comments = Vec::new();
    let mut node = prop.previous_sibling();
    while let Some(n) = node {
        if n.is_whitespace() || n.is_newline() {
            node = n.previous_sibling();
            continue;
        }
        let Some(comment) = n.as_comment() else { break };
        let own_line = n
            .previous_siblings()
            .find(|p| !p.is_whitespace())
            .is_none_or(|p| p.is_newline());
        if !own_line {
            break;
        }
        node = n.previous_sibling();
        comments.push(comment);
    }
    for comment in comments {
        // A line comment goes with its indentation and the line break before
        // it by itself; a block comment is told to.
        if !comment.is_line_comment() {
            while let Some(ws) = comment.previous_sibling().filter(|p| p.is_whitespace()) {
                ws.remove();
            }
            if let Some(newline) = comment.previous_sibling().filter(|p| p.is_newline()) {
                newline.remove();
            }
        }
        comment.remove();
    }
    prop.remove();
}

/// A JSON value as the CST editor inserts it.
pub fn to_input(v: &Value) -> CstInputValue {
    match v {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(to_input).collect()),
        Value::Object(map) => CstInputValue::Object(map.iter().map(|(k, v)| (k.clone(), to_input(v))).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn comments_and_trailing_commas_are_read() {
        let text =
            "// mcpool\n{\n  /* servers */ \"a\": [1, 2.5, -3e2,],\n  \"b\": {\"s\": \"x // not a comment\",},\n}\n";
        let parsed = parse(text).unwrap();
        assert_eq!(
            parsed.value,
            json!({"a": [1, 2.5, -300.0], "b": {"s": "x // not a comment"}})
        );
        assert!(parsed.repeated.is_empty());
        assert_eq!(parse("  ").unwrap().value, Value::Null);
    }

    #[test]
    fn repeated_keys_are_found_at_every_depth_and_the_last_wins() {
        let text = r#"{"a": 1, "s": {"k": {"x": 1, "x": 2}}, "a": 3, "l": [{"y": 0, "y": 1}]}"#;
        let parsed = parse(text).unwrap();
        assert_eq!(
            parsed.repeated,
            vec![
                vec!["s".to_string(), "k".into(), "x".into()],
                vec!["a".to_string()],
                vec!["l".to_string(), "0".into(), "y".into()],
            ]
        );
        assert_eq!(parsed.value["a"], 3);
        assert_eq!(parsed.value["s"]["k"]["x"], 2);
    }

    #[test]
    fn what_json_refuses_is_refused_with_its_place() {
        for bad in [
            "{'a': 1}",
            "{a: 1}",
            "{\"a\": 0x10}",
            "{\"a\": 1 \"b\": 2}",
            "{\"a\": +1}",
            "{\"a\": 1",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let e = parse("{\n  \"a\": 1,\n  \"b\" 2\n}").unwrap_err();
        assert_eq!((e.line, e.column > 0), (3, true), "{e}");
        assert!(e.to_string().contains("at line 3, column"), "{e}");
    }
}
