//! Codex's `config.toml` (`[mcp_servers.NAME]` tables): edits through
//! toml_edit, which keeps comments, order and formatting. Codex speaks
//! Streamable HTTP itself: `url` plus `http_headers` carry the token.

use std::path::Path;

use toml_edit::{value, DocumentMut, InlineTable, Item, Table, TableLike};

use super::{line_column, Change, Connection, Edited, Found, Served, WriteError};

pub(super) fn snippet(conn: &Connection) -> String {
    edit(Path::new("config.toml"), "", conn, &[]).map_or_else(|e| e.to_string(), |e| e.text)
}

pub(super) fn edit(path: &Path, text: &str, conn: &Connection, served: &[Served]) -> Result<Edited, WriteError> {
    let mut doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        let (line, column) = line_column(text, e.span().map_or(0, |s| s.start));
        WriteError::Parse {
            path: path.to_path_buf(),
            format: "TOML",
            line,
            column,
            message: e.message().trim().to_string(),
        }
    })?;
    let shape = |what: &str, expected| WriteError::Shape {
        path: path.to_path_buf(),
        what: what.to_string(),
        expected,
    };
    let servers = doc.entry("mcp_servers").or_insert_with(|| {
        let mut t = Table::new();
        // No empty `[mcp_servers]` header: only `[mcp_servers.mcpool]`.
        t.set_implicit(true);
        Item::Table(t)
    });
    let servers = servers
        .as_table_like_mut()
        .ok_or_else(|| shape("mcp_servers", "a table"))?;
    let mut changes = Vec::new();
    if !served.is_empty() {
        let names: Vec<String> = servers.iter().map(|(k, _)| k.to_string()).collect();
        for name in names.into_iter().filter(|n| n != "mcpool") {
            let Some(table) = servers.get_mut(&name).and_then(Item::as_table_like_mut) else {
                continue;
            };
            let Some(found) = found(&name, table) else { continue };
            if !found.disabled && found.served_by(served) {
                table.insert("enabled", value(false));
                changes.push(Change::Disable(name));
            }
        }
    }
    let bearer = conn.bearer();
    match servers.get_mut("mcpool") {
        Some(item) => {
            let table = item
                .as_table_like_mut()
                .ok_or_else(|| shape("mcp_servers.mcpool", "a table"))?;
            if !is_current(table, conn) {
                for key in ["command", "args", "env", "enabled", "bearer_token_env_var"] {
                    table.remove(key);
                }
                table.insert("url", value(conn.url.as_str()));
                table.insert("http_headers", value(headers(&bearer)));
                changes.insert(0, Change::Update);
            }
        }
        None => {
            let mut table = Table::new();
            table.insert("url", value(conn.url.as_str()));
            table.insert("http_headers", value(headers(&bearer)));
            servers.insert("mcpool", Item::Table(table));
            changes.insert(0, Change::Add);
        }
    }
    Ok(Edited {
        text: doc.to_string(),
        changes,
    })
}

fn headers(bearer: &str) -> InlineTable {
    let mut h = InlineTable::new();
    h.insert("Authorization", bearer.into());
    h
}

fn is_current(table: &dyn TableLike, conn: &Connection) -> bool {
    let str_of = |item: Option<&Item>| item.and_then(Item::as_str).map(str::to_string);
    let auth = table
        .get("http_headers")
        .and_then(Item::as_table_like)
        .and_then(|h| str_of(h.get("Authorization")));
    str_of(table.get("url")).as_deref() == Some(conn.url.as_str())
        && auth == Some(conn.bearer())
        && !table.contains_key("command")
        && !table.contains_key("bearer_token_env_var")
        && table.get("enabled").and_then(Item::as_bool) != Some(false)
}

fn found(name: &str, table: &dyn TableLike) -> Option<Found> {
    let server = if let Some(command) = table.get("command").and_then(Item::as_str) {
        let args = table
            .get("args")
            .and_then(Item::as_array)
            .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        Served::Command(command.to_string(), args)
    } else {
        Served::Url(table.get("url").and_then(Item::as_str)?.to_string())
    };
    Some(Found {
        name: name.to_string(),
        server,
        disabled: table.get("enabled").and_then(Item::as_bool) == Some(false),
    })
}
