//! Each tool a server lists, checked on its own (behaviour.md rule 18): a
//! definition with one clear meaning is repaired, one that agents would
//! reject is left out with a warning naming the tool and the field, and a
//! name listed twice is kept once, so one broken tool never costs the
//! server's other tools, nor an agent its whole listing.
//!
//! Pure: raw JSON in, tools and warnings out. `supervisor/live.rs` reads the
//! server's `tools/list` pages as raw JSON (rmcp would refuse the whole page
//! for one tool it cannot read) and hands them here.

use std::collections::BTreeSet;

use rmcp::model::Tool;
use serde::Serialize;
use serde_json::{json, Map, Value};

/// One problem with one tool, and what was done about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolWarning {
    /// The tool's name as the server gives it; `#N` (its place in the
    /// listing, from 1) when it has none.
    pub tool: String,
    /// The field at fault, e.g. `inputSchema.type`; empty for the whole tool.
    pub field: String,
    /// What is wrong and what mcpool did, e.g. `is "array", not "object"; the
    /// tool was left out`.
    pub problem: String,
    /// The tool is not offered to agents.
    pub left_out: bool,
}

impl ToolWarning {
    /// The warning as one line of the log or the dashboard.
    pub fn sentence(&self, server: &str) -> String {
        if self.field.is_empty() {
            format!("server '{server}': tool '{}': {}", self.tool, self.problem)
        } else {
            format!(
                "server '{server}': tool '{}': field '{}': {}",
                self.tool, self.field, self.problem
            )
        }
    }
}

/// A listing after its check: the tools agents get, and what was wrong.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Checked {
    pub tools: Vec<Tool>,
    pub warnings: Vec<ToolWarning>,
}

const LEFT_OUT: &str = "the tool was left out";

/// Checks every tool of a listing, in order.
pub fn check(raw: Vec<Value>) -> Checked {
    let mut checked = Checked::default();
    let mut seen = BTreeSet::new();
    for (index, value) in raw.into_iter().enumerate() {
        match check_one(index, value) {
            Ok((tool, repairs)) => {
                if !seen.insert(tool.name.to_string()) {
                    checked.warnings.push(ToolWarning {
                        tool: tool.name.to_string(),
                        field: "name".into(),
                        problem: "is listed twice; the later definition was left out".into(),
                        left_out: true,
                    });
                    continue;
                }
                checked.warnings.extend(repairs);
                checked.tools.push(tool);
            }
            Err(warning) => checked.warnings.push(warning),
        }
    }
    checked
}

/// A tool read as rmcp's type, for checking like raw JSON.
pub fn raw(tool: &Tool) -> Value {
    serde_json::to_value(tool).unwrap_or(Value::Null)
}

fn check_one(index: usize, value: Value) -> Result<(Tool, Vec<ToolWarning>), ToolWarning> {
    let place = format!("#{}", index + 1);
    let Value::Object(mut obj) = value else {
        return Err(left_out(&place, "", format!("is {}, not an object", kind(&value))));
    };
    let name = match obj.get("name") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(Value::String(_)) => return Err(left_out(&place, "name", "is empty".into())),
        None | Some(Value::Null) => return Err(left_out(&place, "name", "is missing".into())),
        Some(other) => return Err(left_out(&place, "name", format!("is {}, not a string", kind(other)))),
    };
    let mut repairs = Vec::new();
    match obj.get_mut("inputSchema") {
        None | Some(Value::Null) => {
            obj.insert("inputSchema".into(), json!({"type": "object"}));
            repairs.push(repaired(
                &name,
                "inputSchema",
                "is missing; {\"type\":\"object\"} (no arguments) is used",
            ));
        }
        Some(Value::Object(schema)) => match check_schema(schema) {
            Ok(notes) => repairs.extend(
                notes
                    .into_iter()
                    .map(|(field, note)| repaired(&name, &format!("inputSchema{field}"), note)),
            ),
            Err((field, problem)) => return Err(left_out(&name, &format!("inputSchema{field}"), problem)),
        },
        Some(other) => {
            let problem = format!("is {}, not a JSON Schema object", kind(other));
            return Err(left_out(&name, "inputSchema", problem));
        }
    }
    // An output schema only checks results: a broken one is dropped, the tool kept.
    let output_fault = match obj.get_mut("outputSchema") {
        None => None,
        Some(Value::Null) => Some(None),
        Some(Value::Object(schema)) => match check_schema(schema) {
            Ok(_) => None,
            Err((field, problem)) => Some(Some((format!("outputSchema{field}"), problem))),
        },
        Some(other) => Some(Some((
            "outputSchema".to_string(),
            format!("is {}, not an object", kind(other)),
        ))),
    };
    if let Some(fault) = output_fault {
        obj.remove("outputSchema");
        if let Some((field, problem)) = fault {
            repairs.push(repaired(
                &name,
                &field,
                &format!("{problem}; the output schema was dropped"),
            ));
        }
    }
    for field in ["title", "description"] {
        match obj.get(field) {
            None | Some(Value::String(_)) => {}
            Some(Value::Null) => {
                obj.remove(field);
            }
            Some(other) => {
                let problem = format!("is {}, not a string; it was dropped", kind(other));
                obj.remove(field);
                repairs.push(repaired(&name, field, &problem));
            }
        }
    }
    let first = match serde_json::from_value::<Tool>(Value::Object(obj.clone())) {
        Ok(tool) => return Ok((tool, repairs)),
        Err(e) => e,
    };
    // What is left to go wrong is optional: drop what rmcp cannot read.
    for optional in ["annotations", "icons", "execution", "_meta"] {
        if obj.remove(optional).is_some() {
            if let Ok(tool) = serde_json::from_value::<Tool>(Value::Object(obj.clone())) {
                repairs.push(repaired(&name, optional, "could not be read; it was dropped"));
                return Ok((tool, repairs));
            }
        }
    }
    Err(left_out(&name, "", format!("could not be read ({first})")))
}

/// Checks a tool's JSON Schema for what MCP requires of it: an object
/// schema. Repairs come back as (field, note); a schema that means
/// something else is an error, as (field, problem).
fn check_schema(schema: &mut Map<String, Value>) -> Result<Vec<(String, &'static str)>, (String, String)> {
    let mut notes = Vec::new();
    match schema.get("type") {
        Some(Value::String(t)) if t == "object" => {}
        // Without a type an object schema means an object: left as written,
        // so that a definition approved as written stays approved.
        None => {}
        Some(other) => {
            return Err((
                ".type".into(),
                format!(
                    "is {}, not \"object\" (a tool takes an object of arguments)",
                    shown(other)
                ),
            ))
        }
    }
    match schema.get("properties") {
        None | Some(Value::Object(_)) => {}
        Some(other) => return Err((".properties".into(), format!("is {}, not an object", kind(other)))),
    }
    let names = |v: &Value| v.as_array().is_some_and(|a| a.iter().all(Value::is_string));
    match schema.get("required") {
        None => {}
        Some(v) if names(v) => {}
        Some(_) => {
            schema.remove("required");
            notes.push((".required".to_string(), "is not a list of names; it was dropped"));
        }
    }
    Ok(notes)
}

fn left_out(tool: &str, field: &str, problem: String) -> ToolWarning {
    ToolWarning {
        tool: tool.to_string(),
        field: field.to_string(),
        problem: format!("{problem}; {LEFT_OUT}"),
        left_out: true,
    }
}

fn repaired(tool: &str, field: &str, note: &str) -> ToolWarning {
    ToolWarning {
        tool: tool.to_string(),
        field: field.to_string(),
        problem: note.to_string(),
        left_out: false,
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A short JSON value as written, else its kind.
fn shown(value: &Value) -> String {
    let text = value.to_string();
    if text.len() <= 40 {
        text
    } else {
        kind(value).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(checked: &Checked) -> Vec<String> {
        checked.warnings.iter().map(|w| w.sentence("s")).collect()
    }

    fn names(checked: &Checked) -> Vec<&str> {
        checked.tools.iter().map(|t| t.name.as_ref()).collect()
    }

    #[test]
    fn good_tools_pass_unchanged() {
        let good = json!({"name": "echo", "description": "Echoes", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}});
        let checked = check(vec![good.clone()]);
        assert!(checked.warnings.is_empty(), "{:?}", checked.warnings);
        assert_eq!(raw(&checked.tools[0]), good);
    }

    #[test]
    fn what_agents_would_reject_is_left_out_by_name_and_field() {
        let checked = check(vec![
            json!({"name": "ok", "inputSchema": {"type": "object"}}),
            json!({"name": "arr", "inputSchema": {"type": "array"}}),
            json!({"name": "props", "inputSchema": {"type": "object", "properties": "bad"}}),
            json!({"name": "text", "inputSchema": "a string"}),
            json!({"name": "num", "inputSchema": 42}),
            json!({"inputSchema": {"type": "object"}}),
            json!({"name": 7, "inputSchema": {"type": "object"}}),
            json!("not a tool"),
            json!({"name": "ok", "description": "again", "inputSchema": {"type": "object"}}),
        ]);
        assert_eq!(names(&checked), ["ok"]);
        assert_eq!(
            lines(&checked),
            [
                "server 's': tool 'arr': field 'inputSchema.type': is \"array\", not \"object\" (a tool takes an object of arguments); the tool was left out",
                "server 's': tool 'props': field 'inputSchema.properties': is a string, not an object; the tool was left out",
                "server 's': tool 'text': field 'inputSchema': is a string, not a JSON Schema object; the tool was left out",
                "server 's': tool 'num': field 'inputSchema': is a number, not a JSON Schema object; the tool was left out",
                "server 's': tool '#6': field 'name': is missing; the tool was left out",
                "server 's': tool '#7': field 'name': is a number, not a string; the tool was left out",
                "server 's': tool '#8': is a string, not an object; the tool was left out",
                "server 's': tool 'ok': field 'name': is listed twice; the later definition was left out",
            ]
        );
        assert!(checked.warnings.iter().all(|w| w.left_out));
    }

    #[test]
    fn what_has_one_clear_meaning_is_repaired() {
        let checked = check(vec![
            json!({"name": "none"}),
            json!({"name": "null", "inputSchema": null}),
            json!({"name": "untyped", "inputSchema": {"properties": {"a": {"type": "string"}}}}),
            json!({"name": "req", "inputSchema": {"type": "object", "required": "a"}}),
            json!({"name": "out", "inputSchema": {"type": "object"}, "outputSchema": {"type": "string"}}),
            json!({"name": "desc", "description": 5, "inputSchema": {"type": "object"}}),
            json!({"name": "ann", "inputSchema": {"type": "object"}, "annotations": "x"}),
        ]);
        assert_eq!(
            names(&checked),
            ["none", "null", "untyped", "req", "out", "desc", "ann"]
        );
        for tool in checked.tools.iter().filter(|t| t.name != "untyped") {
            assert_eq!(tool.input_schema.get("type"), Some(&json!("object")), "{}", tool.name);
        }
        // An object schema without `type` stays as written (and as approved).
        assert_eq!(checked.tools[2].input_schema.get("type"), None);
        assert!(checked.tools[4].output_schema.is_none());
        assert!(checked.tools[5].description.is_none());
        assert!(checked.tools[6].annotations.is_none());
        assert!(checked.tools[3].input_schema.get("required").is_none());
        assert_eq!(
            lines(&checked),
            [
                "server 's': tool 'none': field 'inputSchema': is missing; {\"type\":\"object\"} (no arguments) is used",
                "server 's': tool 'null': field 'inputSchema': is missing; {\"type\":\"object\"} (no arguments) is used",
                "server 's': tool 'req': field 'inputSchema.required': is not a list of names; it was dropped",
                "server 's': tool 'out': field 'outputSchema.type': is \"string\", not \"object\" (a tool takes an object of arguments); the output schema was dropped",
                "server 's': tool 'desc': field 'description': is a number, not a string; it was dropped",
                "server 's': tool 'ann': field 'annotations': could not be read; it was dropped",
            ]
        );
        assert!(checked.warnings.iter().all(|w| !w.left_out));
    }
}
