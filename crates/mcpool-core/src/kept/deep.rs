//! Unknown fields below an object's own: an annotation's vendor key, an
//! embedded resource's newer field, an icon's. The object's shape keeps
//! its nested objects and arrays to a depth; what rmcp's type did not give
//! back at any depth is taken out as a partial copy of the object (only
//! the missing keys, on the paths that lead to them), and put back by
//! merging that copy into the object again.

use serde_json::{Map, Value};

/// How deep a definition's or a content block's shape goes: deep enough
/// for `icons[i]`, `annotations` and an embedded resource's fields.
pub(super) const ITEM_DEPTH: usize = 4;

/// Fields whose value is any JSON the object's author chose (a schema, a
/// tool's arguments or structured result, `_meta`): rmcp keeps them whole,
/// so their shape stays empty, whatever their size.
const FREE_FORM: &[&str] = &[
    "_meta",
    "inputSchema",
    "outputSchema",
    "structuredContent",
    "arguments",
    "requestedSchema",
    "experimental",
];

fn free_form(key: &str) -> bool {
    FREE_FORM.contains(&key)
}

/// The longest string a shape keeps (a tag such as `"type": "text"`); a
/// longer one (a text, a blob) is checked as an empty one.
const SHAPE_STRING: usize = 64;

/// The shape of `object`'s fields that rmcp's type is checked against:
/// nested objects and arrays kept `depth` levels down, deeper ones and free
/// fields emptied, long strings cut, so a large text costs nothing.
pub(super) fn shape_fields(object: &Map<String, Value>, depth: usize) -> Map<String, Value> {
    object
        .iter()
        .map(|(key, value)| (key.clone(), shape(value, if free_form(key) { 0 } else { depth })))
        .collect()
}

fn shape(value: &Value, depth: usize) -> Value {
    match value {
        Value::Object(_) if depth == 0 => Value::Object(Map::new()),
        Value::Object(object) => Value::Object(shape_fields(object, depth - 1)),
        Value::Array(_) if depth == 0 => Value::Array(Vec::new()),
        Value::Array(items) => Value::Array(items.iter().map(|item| shape(item, depth)).collect()),
        Value::String(text) if text.len() > SHAPE_STRING => Value::String(String::new()),
        other => other.clone(),
    }
}

/// Takes out of `object` what its shape had and rmcp's type did not give
/// back (`back`), down to the depth [`shape_fields`] kept, leaving `skip`
/// alone: the missing fields whole, and a partial copy of each nested
/// object or array that lost some of its own.
pub(super) fn take_unknown(
    object: &mut Map<String, Value>,
    back: &Map<String, Value>,
    depth: usize,
    skip: &str,
) -> Map<String, Value> {
    let mut taken = Map::new();
    let keys: Vec<String> = object.keys().filter(|k| *k != skip).cloned().collect();
    for key in keys {
        let Some(returned) = back.get(&key) else {
            if let Some(value) = object.remove(&key) {
                taken.insert(key, value);
            }
            continue;
        };
        if depth == 0 || free_form(&key) {
            continue;
        }
        let Some(value) = object.get_mut(&key) else { continue };
        if let Some(partial) = take_nested(value, returned, depth - 1) {
            taken.insert(key, partial);
        }
    }
    taken
}

/// What a nested object, or each object of a nested array, lost.
fn take_nested(value: &mut Value, back: &Value, depth: usize) -> Option<Value> {
    match (value, back) {
        (Value::Object(object), Value::Object(back)) => {
            let taken = take_unknown(object, back, depth, "");
            (!taken.is_empty()).then_some(Value::Object(taken))
        }
        (Value::Array(items), Value::Array(back)) if items.len() == back.len() => {
            let taken: Vec<Value> = items
                .iter_mut()
                .zip(back)
                .map(|(item, back)| take_nested(item, back, depth).unwrap_or_else(|| Value::Object(Map::new())))
                .collect();
            taken
                .iter()
                .any(|t| t.as_object().is_some_and(|t| !t.is_empty()))
                .then_some(Value::Array(taken))
        }
        _ => None,
    }
}

/// Puts what [`take_unknown`] took back into `object`: a missing field
/// whole, a partial copy merged into its object or array. Never over a
/// field the object has.
pub(super) fn put_back(object: &mut Map<String, Value>, taken: Map<String, Value>) {
    for (key, field) in taken {
        match object.get_mut(&key) {
            None => {
                object.insert(key, field);
            }
            Some(present) => merge(present, field),
        }
    }
}

fn merge(present: &mut Value, taken: Value) {
    match (present, taken) {
        (Value::Object(object), Value::Object(taken)) => put_back(object, taken),
        (Value::Array(items), Value::Array(taken)) if items.len() == taken.len() => {
            for (item, taken) in items.iter_mut().zip(taken) {
                merge(item, taken);
            }
        }
        _ => {}
    }
}
