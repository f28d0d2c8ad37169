//! The JSON and JSONC clients (Claude Code, Claude Desktop, Cursor, VS Code,
//! opencode, Gemini CLI): edits through jsonc-parser's CST, which keeps
//! comments, key order and the file's indentation.

use std::path::Path;

use jsonc_parser::cst::{CstInputValue, CstObject, CstObjectProp, CstRootNode};
use serde_json::Value;

use crate::jsonc::{options, remove_entry, to_input};

use super::{entry, Change, Client, Connection, Edited, Found, Served, WriteError};

/// The key of the client's server map.
fn servers_key(client: Client) -> &'static str {
    match client {
        Client::VsCode => "servers",
        Client::OpenCode => "mcp",
        _ => "mcpServers",
    }
}

fn shape(path: &Path, what: &str, expected: &'static str) -> WriteError {
    WriteError::Shape {
        path: path.to_path_buf(),
        what: what.to_string(),
        expected,
    }
}

pub(super) fn edit(
    client: Client,
    path: &Path,
    text: &str,
    conn: &Connection,
    served: &[Served],
) -> Result<Edited, WriteError> {
    let root = CstRootNode::parse(text, &options()).map_err(|e| WriteError::Parse {
        path: path.to_path_buf(),
        format: "JSON",
        line: e.line_display(),
        column: e.column_display(),
        message: e.kind().to_string(),
    })?;
    let root_obj = match root.value() {
        None => root.object_value_or_set(),
        Some(_) => root
            .object_value()
            .ok_or_else(|| shape(path, "the file", "a JSON object"))?,
    };
    let key = servers_key(client);
    let mut changes = Vec::new();
    if !served.is_empty() {
        replace(client, path, &root_obj, served, &mut changes)?;
    }
    let servers = root_obj
        .object_value_or_create(key)
        .ok_or_else(|| shape(path, &format!("\"{key}\""), "an object"))?;
    let desired = entry(client, conn);
    match servers.get("mcpool") {
        Some(prop) => {
            if prop.value().and_then(|v| v.to_serde_value()).as_ref() != Some(&desired) {
                prop.set_value(to_input(&desired));
                changes.insert(0, Change::Update);
            }
        }
        None => {
            servers.append("mcpool", to_input(&desired));
            changes.insert(0, Change::Add);
        }
    }
    let mut text_out = root.to_string();
    if text.trim().is_empty() || (text.ends_with('\n') && !text_out.ends_with('\n')) {
        text_out.push('\n');
    }
    Ok(Edited {
        text: text_out,
        changes,
    })
}

/// Switches off every server of the client's config that mcpool serves: the
/// client's own setting where it has one, else the entry goes.
fn replace(
    client: Client,
    path: &Path,
    root_obj: &CstObject,
    served: &[Served],
    changes: &mut Vec<Change>,
) -> Result<(), WriteError> {
    let mut maps: Vec<CstObject> = root_obj.object_value(servers_key(client)).into_iter().collect();
    if client == Client::ClaudeCode {
        // Servers added for one project (local scope) sit under `projects`.
        if let Some(projects) = root_obj.object_value("projects") {
            for project in projects.properties() {
                if let Some(m) = project.object_value().and_then(|p| p.object_value("mcpServers")) {
                    maps.push(m);
                }
            }
        }
    }
    let excluded: Vec<String> = root_obj
        .object_value("mcp")
        .and_then(|m| m.array_value("excluded"))
        .map(|a| {
            a.elements()
                .iter()
                .filter_map(|e| e.to_serde_value()?.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    for map in maps {
        for prop in map.properties() {
            let Some(found) = found(client, &prop, &excluded) else {
                continue;
            };
            if found.disabled || !found.served_by(served) {
                continue;
            }
            let name = found.name;
            match client {
                Client::OpenCode => {
                    let Some(obj) = prop.object_value() else { continue };
                    match obj.get("enabled") {
                        Some(p) => p.set_value(CstInputValue::Bool(false)),
                        None => {
                            obj.append("enabled", CstInputValue::Bool(false));
                        }
                    }
                    changes.push(Change::Disable(name));
                }
                Client::Gemini => {
                    let list = root_obj
                        .object_value_or_create("mcp")
                        .ok_or_else(|| shape(path, "\"mcp\"", "an object"))?
                        .array_value_or_create("excluded")
                        .ok_or_else(|| shape(path, "\"mcp.excluded\"", "an array"))?;
                    list.append(CstInputValue::String(name.clone()));
                    changes.push(Change::Disable(name));
                }
                _ => {
                    remove_entry(prop);
                    changes.push(Change::Remove(name));
                }
            }
        }
    }
    Ok(())
}

/// The server an entry names, in the client's shape; `None` for mcpool's
/// own entry and for entries that are not servers.
fn found(client: Client, prop: &CstObjectProp, excluded: &[String]) -> Option<Found> {
    let name = prop.name()?.decoded_value().ok()?;
    if name == "mcpool" {
        return None;
    }
    let value = prop.value()?.to_serde_value()?;
    let obj = value.as_object()?;
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
            .unwrap_or_default()
    };
    let url = || {
        ["url", "httpUrl", "serverUrl"]
            .iter()
            .find_map(|k| obj.get(*k).and_then(Value::as_str))
            .map(|u| Served::Url(u.to_string()))
    };
    let server = match (client, obj.get("command")) {
        // opencode: `command` is the whole argv.
        (Client::OpenCode, Some(Value::Array(_))) => {
            let argv = strings(obj.get("command"));
            let (first, rest) = argv.split_first()?;
            Served::Command(first.clone(), rest.to_vec())
        }
        (_, Some(Value::String(c))) => Served::Command(c.clone(), strings(obj.get("args"))),
        _ => url()?,
    };
    let disabled = match client {
        Client::OpenCode => obj.get("enabled") == Some(&Value::Bool(false)),
        Client::Gemini => excluded.contains(&name),
        _ => false,
    } || obj.get("disabled") == Some(&Value::Bool(true));
    Some(Found { name, server, disabled })
}
