//! A tool's TypeScript declaration for code mode, written from its input
//! and output schemas: `tools.github__search_issues(args: {…}): Promise<…>`.
//! What TypeScript cannot say of a schema (`$ref`, `allOf`, `not`,
//! conditionals, tuples, pattern keys) is `unknown`: a looser type, never a
//! wrong one. Constraints TypeScript has no words for (`minimum`,
//! `pattern`, `format`) leave the type as it is: it still holds.

use serde_json::{Map, Value};

/// How deep a schema is followed before the rest is `unknown`.
const DEPTH: usize = 6;

/// `tools.NAME(args: {...}): Promise<...>`. Without an output schema a call
/// resolves to its text or to a `structuredContent` the schema does not
/// describe, so to `unknown`.
pub fn signature(public: &str, input: &Map<String, Value>, output: Option<&Map<String, Value>>) -> String {
    let args = object_type(input, 0);
    let result = output.map_or_else(|| "unknown".to_string(), |o| object_type(o, 0));
    format!("tools.{public}(args: {args}): Promise<{result}>")
}

/// A schema's type; `unknown` when it cannot be said exactly enough.
pub fn ts_type(schema: &Value, depth: usize) -> String {
    let Value::Object(s) = schema else {
        return "unknown".into();
    };
    if depth > DEPTH {
        return "unknown".into();
    }
    const UNSAYABLE: &[&str] = &[
        "$ref",
        "$dynamicRef",
        "allOf",
        "not",
        "if",
        "patternProperties",
        "prefixItems",
        "dependentSchemas",
    ];
    if UNSAYABLE.iter().any(|k| s.contains_key(*k)) {
        return "unknown".into();
    }
    let nullable = s.get("nullable") == Some(&Value::Bool(true));
    let base = if let Some(value) = s.get("const") {
        literal(value).unwrap_or_else(|| "unknown".into())
    } else if let Some(Value::Array(values)) = s.get("enum") {
        let literals: Option<Vec<String>> = values.iter().map(literal).collect();
        match literals {
            Some(l) if !l.is_empty() => union(l),
            _ => "unknown".into(),
        }
    } else if let Some(Value::Array(members)) = s.get("anyOf").or_else(|| s.get("oneOf")) {
        union(members.iter().map(|m| ts_type(m, depth + 1)).collect())
    } else {
        match s.get("type") {
            Some(Value::String(t)) => of_type(t, s, depth),
            Some(Value::Array(types)) => union(
                types
                    .iter()
                    .map(|t| t.as_str().map_or_else(|| "unknown".into(), |t| of_type(t, s, depth)))
                    .collect(),
            ),
            None if s.contains_key("properties") => object_type(s, depth),
            _ => "unknown".into(),
        }
    };
    if nullable && base != "unknown" {
        union(vec![base, "null".into()])
    } else {
        base
    }
}

fn of_type(t: &str, s: &Map<String, Value>, depth: usize) -> String {
    match t {
        "string" => "string".into(),
        "number" | "integer" => "number".into(),
        "boolean" => "boolean".into(),
        "null" => "null".into(),
        "object" => object_type(s, depth),
        "array" => match s.get("items") {
            Some(items @ Value::Object(_)) => {
                let item = ts_type(items, depth + 1);
                if item.contains(' ') {
                    format!("({item})[]")
                } else {
                    format!("{item}[]")
                }
            }
            _ => "unknown[]".into(),
        },
        _ => "unknown".into(),
    }
}

/// `{ a: T; b?: U }`: required keys without `?`; extra keys only as the
/// schema allows them.
fn object_type(s: &Map<String, Value>, depth: usize) -> String {
    if depth > DEPTH {
        return "unknown".into();
    }
    let required: Vec<&str> = s
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut fields: Vec<String> = Vec::new();
    if let Some(Value::Object(props)) = s.get("properties") {
        for (name, schema) in props {
            let optional = if required.contains(&name.as_str()) { "" } else { "?" };
            fields.push(format!("{}{optional}: {}", key(name), ts_type(schema, depth + 1)));
        }
    }
    match s.get("additionalProperties") {
        Some(Value::Bool(false)) => {}
        Some(extra @ Value::Object(_)) if fields.is_empty() => {
            fields.push(format!("[key: string]: {}", ts_type(extra, depth + 1)));
        }
        Some(_) => fields.push("[key: string]: unknown".into()),
        None if fields.is_empty() => fields.push("[key: string]: unknown".into()),
        None => {}
    }
    format!("{{ {} }}", fields.join("; "))
}

/// A property name as TypeScript writes it: bare when it is an identifier.
fn key(name: &str) -> String {
    let mut chars = name.chars();
    let ident = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if ident {
        name.to_string()
    } else {
        Value::String(name.to_string()).to_string()
    }
}

fn literal(value: &Value) -> Option<String> {
    match value {
        Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null => Some(value.to_string()),
        _ => None,
    }
}

/// `a | b`, or `unknown` when any member is.
fn union(members: Vec<String>) -> String {
    if members.is_empty() || members.iter().any(|m| m == "unknown") {
        return "unknown".into();
    }
    let mut seen: Vec<String> = Vec::new();
    for m in members {
        if !seen.contains(&m) {
            seen.push(m);
        }
    }
    seen.join(" | ")
}
