//! The config file's text, edited through jsonc-parser's CST: one server
//! entry added, changed field by field, renamed or removed, and everything
//! else (comments, key order, indentation) left as it was.

use std::path::Path;

use jsonc_parser::cst::{CstObject, CstObjectProp, CstRootNode, ObjectPropName};
use jsonc_parser::ParseOptions;
use serde_json::{Map, Value};

use super::EditError;
use crate::jsonc::{remove_entry, to_input};

/// The sections that hold servers, in the order they are looked at.
const SECTIONS: [&str; 2] = ["mcpServers", "servers"];

fn parse(path: &Path, text: &str) -> Result<CstRootNode, EditError> {
    let options = ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        ..ParseOptions::default()
    };
    CstRootNode::parse(text, &options).map_err(|e| {
        EditError::Failed(format!(
            "{} is not valid JSON at line {}, column {} ({}); fix it before changing servers",
            path.display(),
            e.line_display(),
            e.column_display(),
            e.kind()
        ))
    })
}

fn root_object(path: &Path, root: &CstRootNode) -> Result<CstObject, EditError> {
    match root.value() {
        None => Ok(root.object_value_or_set()),
        Some(_) => root.object_value().ok_or_else(|| {
            EditError::Failed(format!(
                "{} does not hold a JSON object at the top; fix it before changing servers",
                path.display()
            ))
        }),
    }
}

fn entry_prop(root: &CstObject, name: &str) -> Option<CstObjectProp> {
    SECTIONS.iter().find_map(|key| root.object_value(key)?.get(name))
}

fn finish(original: &str, root: &CstRootNode) -> String {
    let mut out = root.to_string();
    if (original.trim().is_empty() || original.ends_with('\n')) && !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// The entry of `name` as the file has it, `None` when there is none.
pub(super) fn entry(path: &Path, text: &str, name: &str) -> Result<Option<Value>, EditError> {
    let root = parse(path, text)?;
    let obj = root_object(path, &root)?;
    Ok(entry_prop(&obj, name)
        .and_then(|p| p.value())
        .and_then(|v| v.to_serde_value()))
}

/// The whole file as JSON, `None` when it is empty.
pub(super) fn root_value(path: &Path, text: &str) -> Result<Option<Value>, EditError> {
    Ok(parse(path, text)?.value().and_then(|v| v.to_serde_value()))
}

/// `text` with `entry` added as server `name`: under the section the file
/// already uses (`mcpServers` first), else a new `mcpServers`.
pub(super) fn add(path: &Path, text: &str, name: &str, entry: &Map<String, Value>) -> Result<String, EditError> {
    let root = parse(path, text)?;
    let obj = root_object(path, &root)?;
    let key = SECTIONS
        .iter()
        .find(|key| obj.get(key).is_some())
        .copied()
        .unwrap_or(SECTIONS[0]);
    let section = obj.object_value_or_create(key).ok_or_else(|| {
        EditError::Failed(format!(
            "{}: \"{key}\" is not an object; fix it before adding servers",
            path.display()
        ))
    })?;
    section.append(name, to_input(&Value::Object(entry.clone())));
    Ok(finish(text, &root))
}

/// `text` with the entry of `old` changed to `entry` (and renamed to `new`):
/// only the fields that differ are written, so comments inside stay.
pub(super) fn replace(
    path: &Path,
    text: &str,
    old: &str,
    new: &str,
    entry: &Map<String, Value>,
) -> Result<String, EditError> {
    let root = parse(path, text)?;
    let obj = root_object(path, &root)?;
    let prop = entry_prop(&obj, old).ok_or_else(|| not_found(path, old))?;
    match prop.object_value() {
        Some(existing) => merge(&existing, entry),
        None => prop.set_value(to_input(&Value::Object(entry.clone()))),
    }
    if old != new {
        if let Some(ObjectPropName::String(lit)) = prop.name() {
            lit.set_raw_value(Value::String(new.to_string()).to_string());
        } else {
            let index = prop.property_index();
            let value = to_input(&Value::Object(entry.clone()));
            if let Some(section) = prop.parent().and_then(|p| p.as_object()) {
                prop.remove();
                section.insert(index, new, value);
            }
        }
    }
    Ok(finish(text, &root))
}

/// `text` without the entry of `name` (and the comment lines right above it).
pub(super) fn remove(path: &Path, text: &str, name: &str) -> Result<String, EditError> {
    let root = parse(path, text)?;
    let obj = root_object(path, &root)?;
    let prop = entry_prop(&obj, name).ok_or_else(|| not_found(path, name))?;
    remove_entry(prop);
    Ok(finish(text, &root))
}

pub(super) fn not_found(path: &Path, name: &str) -> EditError {
    EditError::NotFound(format!(
        "{} has no server '{name}' under \"mcpServers\" or \"servers\"",
        path.display()
    ))
}

/// Makes `obj` say `desired`: fields that differ are set (objects merged
/// the same way), missing ones appended, the rest removed.
fn merge(obj: &CstObject, desired: &Map<String, Value>) {
    for prop in obj.properties() {
        let gone = prop.decoded_name().is_none_or(|name| !desired.contains_key(&name));
        if gone {
            remove_entry(prop);
        }
    }
    for (key, value) in desired {
        match obj.get(key) {
            Some(prop) => {
                if prop.value().and_then(|v| v.to_serde_value()).as_ref() == Some(value) {
                    continue;
                }
                match (prop.object_value(), value) {
                    (Some(inner), Value::Object(map)) => merge(&inner, map),
                    _ => prop.set_value(to_input(value)),
                }
            }
            None => {
                obj.append(key, to_input(value));
            }
        }
    }
}
