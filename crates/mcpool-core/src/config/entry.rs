//! One server entry of the config file: a local command or a remote URL,
//! each field checked, with problems that name the server and the field.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use super::{
    problem, ConfigProblem, OAuthSpec, ServerSpec, TransportSpec, DEFAULT_CALL_TIMEOUT, DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_TIMEOUT, MAX_MAX_MESSAGE_BYTES, MIN_MAX_MESSAGE_BYTES,
};

pub(super) fn parse_entry(path: &Path, name: &str, entry: &Value) -> Result<ServerSpec, ConfigProblem> {
    let err = |field: Option<&str>, message: String| problem(path, Some(name), field, message);
    if name.is_empty() {
        return Err(err(None, "a server name must not be empty".into()));
    }
    let Value::Object(obj) = entry else {
        return Err(err(None, "expected an object".into()));
    };
    let disabled = match obj.get("disabled") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(err(Some("disabled"), "expected true or false".into())),
    };
    let timeout = match obj.get("timeout") {
        None | Some(Value::Null) => DEFAULT_TIMEOUT,
        Some(Value::Number(n)) => match n.as_u64() {
            Some(ms) if ms > 0 => Duration::from_millis(ms),
            _ => {
                return Err(err(
                    Some("timeout"),
                    "expected a positive number of milliseconds".into(),
                ))
            }
        },
        Some(_) => return Err(err(Some("timeout"), "expected a number of milliseconds".into())),
    };
    let max_message_bytes = match obj.get("maxMessageBytes") {
        None | Some(Value::Null) => DEFAULT_MAX_MESSAGE_BYTES,
        Some(Value::Number(n)) => match n.as_u64() {
            Some(b) if (MIN_MAX_MESSAGE_BYTES..=MAX_MAX_MESSAGE_BYTES).contains(&b) => b as usize,
            _ => {
                return Err(err(
                    Some("maxMessageBytes"),
                    format!("expected a number of bytes from {MIN_MAX_MESSAGE_BYTES} to {MAX_MAX_MESSAGE_BYTES}"),
                ))
            }
        },
        Some(_) => return Err(err(Some("maxMessageBytes"), "expected a number of bytes".into())),
    };
    let call_timeout = match obj.get("callTimeout") {
        None | Some(Value::Null) => Some(DEFAULT_CALL_TIMEOUT),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(0) => None,
            Some(ms) => Some(Duration::from_millis(ms)),
            None => {
                return Err(err(
                    Some("callTimeout"),
                    "expected a number of milliseconds (0 for no limit)".into(),
                ))
            }
        },
        Some(_) => {
            return Err(err(
                Some("callTimeout"),
                "expected a number of milliseconds (0 for no limit)".into(),
            ))
        }
    };
    let log_arguments = match obj.get("logArguments") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(err(Some("logArguments"), "expected true or false".into())),
    };
    let declared = string_field(obj, "type").map_err(|m| err(Some("type"), m))?;
    let transport_field = string_field(obj, "transport").map_err(|m| err(Some("transport"), m))?;
    let command = string_field(obj, "command").map_err(|m| err(Some("command"), m))?;
    let url = string_field(obj, "url").map_err(|m| err(Some("url"), m))?;

    let kind = match (declared.as_deref(), transport_field.as_deref()) {
        (Some(t), _) => match t {
            "stdio" | "local" => "stdio",
            "http" | "streamableHttp" | "streamable-http" | "remote" => "http",
            "sse" => "sse",
            other => {
                return Err(err(
                    Some("type"),
                    format!("unknown type '{other}' (expected stdio, http or sse)"),
                ))
            }
        },
        (None, Some(t)) => match t {
            "http" | "streamable-http" | "streamableHttp" => "http",
            "sse" => "sse",
            "stdio" => "stdio",
            other => {
                return Err(err(
                    Some("transport"),
                    format!("unknown transport '{other}' (expected http or sse)"),
                ))
            }
        },
        (None, None) if command.is_some() => "stdio",
        (None, None) if url.is_some() => "http",
        (None, None) => {
            return Err(err(
                None,
                "needs either 'command' (a local server) or 'url' (a remote server)".into(),
            ))
        }
    };

    let mut oauth = None;
    let transport = if kind == "stdio" {
        if obj.get("oauth").is_some_and(|v| !v.is_null()) {
            return Err(err(Some("oauth"), "only a remote server (with 'url') signs in".into()));
        }
        let Some(command) = command.filter(|c| !c.trim().is_empty()) else {
            return Err(err(Some("command"), "a local server needs a command".into()));
        };
        if url.is_some() {
            return Err(err(
                Some("url"),
                "a local server (with 'command') cannot also have a 'url'".into(),
            ));
        }
        let args = match obj.get("args") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Value::String(s) => Ok(s.clone()),
                    Value::Number(n) => Ok(n.to_string()),
                    _ => Err(err(Some(&format!("args[{i}]")), "expected a string".into())),
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(err(Some("args"), "expected an array of strings".into())),
        };
        let env = string_map(obj, "env").map_err(|(f, m)| err(Some(&f), m))?;
        let cwd = string_field(obj, "cwd")
            .map_err(|m| err(Some("cwd"), m))?
            .map(|c| resolve_cwd(path, &c));
        TransportSpec::Stdio {
            command,
            args,
            env,
            cwd,
        }
    } else {
        let Some(url) = url else {
            return Err(err(Some("url"), "a remote server needs a url".into()));
        };
        let parsed = url::Url::parse(&url).map_err(|e| err(Some("url"), format!("invalid URL: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(err(
                Some("url"),
                format!("unsupported scheme '{}' (expected http or https)", parsed.scheme()),
            ));
        }
        if command.is_some() {
            return Err(err(
                Some("command"),
                "a remote server (with 'url') cannot also have a 'command'".into(),
            ));
        }
        let headers = string_map(obj, "headers").map_err(|(f, m)| err(Some(&f), m))?;
        oauth = parse_oauth(obj).map_err(|(f, m)| err(Some(&f), m))?;
        for name in headers.keys() {
            if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
                return Err(err(
                    Some(&format!("headers.{name}")),
                    "not a valid HTTP header name".into(),
                ));
            }
        }
        if kind == "sse" {
            TransportSpec::Sse { url, headers }
        } else {
            TransportSpec::Http { url, headers }
        }
    };
    Ok(ServerSpec {
        name: name.to_string(),
        disabled,
        timeout,
        max_message_bytes,
        call_timeout,
        log_arguments,
        transport,
        oauth,
    })
}

pub(super) fn is_metadata_url(value: &str) -> bool {
    url::Url::parse(value).is_ok_and(|u| u.scheme() == "https" && u.path() != "/" && u.host_str().is_some())
}

/// The `oauth` object of a remote entry; errors name the field.
fn parse_oauth(obj: &Map<String, Value>) -> Result<Option<OAuthSpec>, (String, String)> {
    let field = |k: &str| format!("oauth.{k}");
    let oauth = match obj.get("oauth") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(o)) => o,
        Some(_) => return Err(("oauth".into(), "expected an object".into())),
    };
    for key in oauth.keys() {
        if !matches!(key.as_str(), "clientId" | "clientSecret" | "scopes" | "redirectPort") {
            return Err((
                field(key),
                "unknown field (expected clientId, clientSecret, scopes or redirectPort)".into(),
            ));
        }
    }
    let text = |k: &str| match oauth.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.clone())),
        Some(_) => Err((field(k), "expected a non-empty string".into())),
    };
    let client_id = text("clientId")?;
    let client_secret = text("clientSecret")?;
    if client_secret.is_some() && client_id.is_none() {
        return Err((field("clientSecret"), "a client secret needs oauth.clientId".into()));
    }
    let scopes = match oauth.get("scopes") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => Some(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Value::String(s) if !s.is_empty() && !s.contains(char::is_whitespace) => Ok(s.clone()),
                    _ => Err((
                        format!("oauth.scopes[{i}]"),
                        "expected a scope (a string without spaces)".into(),
                    )),
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Some(_) => return Err((field("scopes"), "expected an array of strings".into())),
    };
    let redirect_port = match oauth.get("redirectPort") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match n.as_u64() {
            Some(p @ 1..=65535) => Some(p as u16),
            _ => return Err((field("redirectPort"), "expected a port number (1-65535)".into())),
        },
        Some(_) => return Err((field("redirectPort"), "expected a port number".into())),
    };
    Ok(Some(OAuthSpec {
        client_id,
        client_secret,
        scopes,
        redirect_port,
    }))
}

/// A relative `cwd` is taken relative to the config file's folder, and `~`
/// to the home folder, so the same entry means the same folder wherever
/// mcpool was started from. On Windows `~\` is the home folder too, and
/// `%NAME%` is the environment variable's value, as `cmd` reads it.
fn resolve_cwd(config_path: &Path, cwd: &str) -> PathBuf {
    let home = dirs::home_dir();
    let env = |name: &str| std::env::var(name).ok();
    let expanded = PathBuf::from(expand_cwd(cwd, home.as_deref(), &env, cfg!(windows)));
    if expanded.is_absolute() {
        expanded
    } else {
        config_path.parent().map(|p| p.join(&expanded)).unwrap_or(expanded)
    }
}

/// `cwd` with a leading `~/` (and on Windows `~\`) as `home`, and on
/// Windows each `%NAME%` that `env` knows as its value (one it does not
/// know stays as written, as `cmd` leaves it).
pub(crate) fn expand_cwd(
    cwd: &str,
    home: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
    windows: bool,
) -> String {
    let cwd = if windows {
        expand_percent(cwd, env)
    } else {
        cwd.to_string()
    };
    let rest = cwd
        .strip_prefix("~/")
        .or_else(|| cwd.strip_prefix("~\\").filter(|_| windows));
    match (rest, home) {
        (Some(rest), Some(home)) => home.join(rest).to_string_lossy().into_owned(),
        _ => cwd,
    }
}

fn expand_percent(text: &str, env: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('%') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let value = after
            .find('%')
            .map(|end| (end, &after[..end]))
            .filter(|(_, name)| !name.is_empty())
            .and_then(|(end, name)| env(name).map(|v| (end, v)));
        match value {
            Some((end, value)) => {
                out.push_str(&value);
                rest = &after[end + 1..];
            }
            None => {
                out.push('%');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn string_field(obj: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err("expected a string".into()),
    }
}

fn string_map(obj: &Map<String, Value>, key: &str) -> Result<BTreeMap<String, String>, (String, String)> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                Value::Number(n) => Ok((k.clone(), n.to_string())),
                Value::Bool(b) => Ok((k.clone(), b.to_string())),
                _ => Err((format!("{key}.{k}"), "expected a string".into())),
            })
            .collect(),
        Some(_) => Err((key.to_string(), "expected an object of strings".into())),
    }
}
