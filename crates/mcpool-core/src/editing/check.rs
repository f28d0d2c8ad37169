//! What a change must satisfy before anything is written: a usable name,
//! an entry the config would load, header and env values that can be sent,
//! and secret fields that name a field the entry has a place for.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Map, Value};

use super::{EditError, ServerChange};
use crate::config::{ConfigProblem, Entry};

/// The longest server name a new entry may have (tool names are prefixed
/// with it and must stay within 64 characters).
const MAX_NAME: usize = 48;

fn field_error(path: &Path, server: &str, field: &str, message: impl Into<String>) -> EditError {
    EditError::from_problem(ConfigProblem {
        file: path.to_path_buf(),
        server: Some(server.to_string()),
        field: Some(field.to_string()),
        message: message.into(),
        warning: false,
    })
}

/// A name for a new (or renamed) entry: the characters of tool names and
/// keyring entries, not one already taken.
pub(super) fn name(path: &Path, name: &str, taken: &BTreeSet<String>) -> Result<(), EditError> {
    if name.trim().is_empty() {
        return Err(EditError::Field {
            field: Some("name".into()),
            message: format!("{}: field 'name': a server needs a name", path.display()),
        });
    }
    let allowed = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !allowed || name.len() > MAX_NAME || name.starts_with('.') {
        return Err(field_error(
            path,
            name,
            "name",
            format!("a server name may hold only letters, digits, '_', '-' and '.' (at most {MAX_NAME}), and not start with '.'"),
        ));
    }
    if taken.contains(name) {
        return Err(field_error(
            path,
            name,
            "name",
            "a server with this name is already in the config",
        ));
    }
    Ok(())
}

/// The entry as it will be written, checked by the config's own parser
/// and then for what the parser lets through but a connection cannot use.
pub(super) fn entry(path: &Path, change: &ServerChange, entry: &Map<String, Value>) -> Result<(), EditError> {
    let name = &change.name;
    for key in ["command", "url"] {
        if let Some(Value::String(s)) = entry.get(key) {
            if s.trim().is_empty() {
                let what = if key == "command" { "a command" } else { "a URL" };
                return Err(field_error(path, name, key, format!("must not be empty; give {what}")));
            }
        }
    }
    let doc = serde_json::json!({ "mcpServers": { name.as_str(): Value::Object(entry.clone()) } });
    let text = doc.to_string();
    let config = crate::config::parse(path, &text).map_err(EditError::from_problem)?;
    if let Some(problem) = config.problems.into_iter().find(|p| !p.warning) {
        return Err(EditError::from_problem(problem));
    }
    // The config's parser took it, so it reads as a typed entry.
    let typed = Entry::read(&Value::Object(entry.clone()))
        .map_err(|(field, message)| field_error(path, name, field.as_deref().unwrap_or("entry"), message))?;
    let remote = typed.url.is_some();
    for key in typed.env.iter().flat_map(|env| env.keys()) {
        if key.is_empty() || key.contains('=') || key.contains('\0') {
            return Err(field_error(
                path,
                name,
                &format!("env.{key}"),
                "an environment variable name must not be empty or hold '='",
            ));
        }
    }
    for (key, literal) in typed.headers.iter().flatten() {
        if crate::secrets::references(literal).is_empty() && http::HeaderValue::from_str(literal).is_err() {
            return Err(field_error(
                path,
                name,
                &format!("headers.{key}"),
                "a header value must be printable text on one line",
            ));
        }
    }
    for key in change.secret_env.keys() {
        if remote {
            return Err(field_error(
                path,
                name,
                &format!("env.{key}"),
                "a remote server has no environment; use a secret header",
            ));
        }
        if key.is_empty() || key.contains('=') {
            return Err(field_error(
                path,
                name,
                &format!("env.{key}"),
                "an environment variable name must not be empty or hold '='",
            ));
        }
    }
    for (key, value) in &change.secret_headers {
        if !remote {
            return Err(field_error(
                path,
                name,
                &format!("headers.{key}"),
                "a local server sends no headers; use a secret environment variable",
            ));
        }
        if http::HeaderName::from_bytes(key.as_bytes()).is_err() {
            return Err(field_error(
                path,
                name,
                &format!("headers.{key}"),
                "not a valid HTTP header name",
            ));
        }
        if http::HeaderValue::from_str(value).is_err() {
            return Err(field_error(
                path,
                name,
                &format!("headers.{key}"),
                "a header value must be printable text on one line",
            ));
        }
    }
    if change.secret_oauth_client_secret.is_some() {
        let has_client = typed.oauth.as_ref().is_some_and(|o| o.client_id.is_some());
        if !remote || !has_client {
            return Err(field_error(
                path,
                name,
                "oauth.clientSecret",
                "a client secret needs a remote server with oauth.clientId",
            ));
        }
    }
    for (key, value) in change.secret_env.iter().chain(&change.secret_headers) {
        if value.is_empty() {
            let section = if change.secret_env.contains_key(key) {
                "env"
            } else {
                "headers"
            };
            return Err(field_error(
                path,
                name,
                &format!("{section}.{key}"),
                "a secret value must not be empty",
            ));
        }
    }
    Ok(())
}
