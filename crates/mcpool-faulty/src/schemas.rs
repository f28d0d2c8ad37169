//! The JSON schemas of the fault server's tools.

use std::sync::Arc;

use rmcp::model::JsonObject;
use serde_json::{json, Value};

/// `value` as a schema object (empty when it is not an object).
pub(crate) fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

/// An object schema with `properties`, of which `required` must be given.
pub(crate) fn object(properties: Value, required: &[&str]) -> Arc<JsonObject> {
    schema(json!({ "type": "object", "properties": properties, "required": required }))
}

/// The schema of a tool that takes no arguments.
pub(crate) fn no_arguments() -> Arc<JsonObject> {
    object(json!({}), &[])
}

/// The schema of a tool that takes one count, `field`, optional unless
/// `required`.
pub(crate) fn count_schema(field: &str, required: bool) -> Arc<JsonObject> {
    let required: &[&str] = if required { &[field] } else { &[] };
    object(json!({ field: { "type": "integer", "minimum": 0 } }), required)
}

/// The schema of a tool that takes one string, `field`, described as
/// `description`.
pub(crate) fn text_schema(field: &str, description: &str) -> Arc<JsonObject> {
    object(
        json!({ field: { "type": "string", "description": description } }),
        &[field],
    )
}
