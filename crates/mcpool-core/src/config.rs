//! The config file: which upstream servers the pool runs, parsed with errors
//! that name the file, the server and the field.
//!
//! Two shapes are accepted: `mcpServers` (Claude Desktop / Cursor / Claude
//! Code) and VS Code's `servers` with a `type`. One bad entry never stops the
//! others: it is reported as a [`ConfigProblem`] and left out.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

/// Startup timeout when an entry gives none (SPEC §2).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(30_000);

/// Everything the pool needs to know about one upstream server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    pub name: String,
    pub disabled: bool,
    /// Bound on one connection attempt (spawn or dial plus `initialize`).
    pub timeout: Duration,
    pub transport: TransportSpec,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransportSpec {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
    },
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
    Sse {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

impl TransportSpec {
    pub fn kind(&self) -> &'static str {
        match self {
            TransportSpec::Stdio { .. } => "stdio",
            TransportSpec::Http { .. } => "http",
            TransportSpec::Sse { .. } => "sse",
        }
    }
}

/// One entry that could not be used, or a whole file that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    pub file: PathBuf,
    pub server: Option<String>,
    pub field: Option<String>,
    pub message: String,
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(server) = &self.server {
            write!(f, ": server '{server}'")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field '{field}'")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ConfigProblem {}

/// A parsed config: the usable servers, in name order, and what was left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    pub servers: BTreeMap<String, ServerSpec>,
    pub problems: Vec<ConfigProblem>,
}

/// Reads the config file. An absent file is an empty config; an unreadable
/// file or invalid JSON is an error for the whole file (the caller keeps
/// whatever it ran before).
pub fn load(path: &Path) -> Result<Config, ConfigProblem> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
        Err(e) => return Err(problem(path, None, None, format!("cannot read the file: {e}"))),
    };
    parse(path, &text)
}

/// Parses config text; `path` is only used to name the file in problems.
pub fn parse(path: &Path, text: &str) -> Result<Config, ConfigProblem> {
    if text.trim().is_empty() {
        return Ok(Config::default());
    }
    let root: Value = serde_json::from_str(text).map_err(|e| {
        problem(
            path,
            None,
            None,
            format!("invalid JSON at line {}, column {}: {e}", e.line(), e.column()),
        )
    })?;
    let Value::Object(root) = root else {
        return Err(problem(path, None, None, "expected a JSON object at the top".into()));
    };
    let mut config = Config::default();
    for key in ["mcpServers", "servers"] {
        let Some(section) = root.get(key) else { continue };
        let Value::Object(entries) = section else {
            config
                .problems
                .push(problem(path, None, Some(key), "expected an object of servers".into()));
            continue;
        };
        for (name, entry) in entries {
            if config.servers.contains_key(name) {
                config.problems.push(problem(
                    path,
                    Some(name),
                    None,
                    format!("defined twice; the entry under '{key}' is ignored"),
                ));
                continue;
            }
            match parse_entry(path, name, entry) {
                Ok(spec) => {
                    config.servers.insert(name.clone(), spec);
                }
                Err(p) => config.problems.push(p),
            }
        }
    }
    Ok(config)
}

fn parse_entry(path: &Path, name: &str, entry: &Value) -> Result<ServerSpec, ConfigProblem> {
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

    let transport = if kind == "stdio" {
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
        transport,
    })
}

/// A relative `cwd` is taken relative to the config file's folder, and `~`
/// to the home folder, so the same entry means the same folder wherever
/// mcpool was started from.
fn resolve_cwd(config_path: &Path, cwd: &str) -> PathBuf {
    let expanded = match cwd.strip_prefix("~/") {
        Some(rest) => dirs::home_dir()
            .map(|h| h.join(rest))
            .unwrap_or_else(|| PathBuf::from(cwd)),
        None => PathBuf::from(cwd),
    };
    if expanded.is_absolute() {
        expanded
    } else {
        config_path.parent().map(|p| p.join(&expanded)).unwrap_or(expanded)
    }
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

fn problem(path: &Path, server: Option<&str>, field: Option<&str>, message: String) -> ConfigProblem {
    ConfigProblem {
        file: path.to_path_buf(),
        server: server.map(str::to_string),
        field: field.map(str::to_string),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(text: &str) -> Config {
        parse(Path::new("/cfg/config.json"), text).unwrap()
    }

    #[test]
    fn claude_desktop_shape() {
        let c = parse_str(
            r#"{"mcpServers": {
                "fs": {"command": "npx", "args": ["-y", "srv", 3], "env": {"A": "1"}, "cwd": "work", "timeout": 5000},
                "web": {"url": "https://example.test/mcp", "headers": {"X-Key": "v"}},
                "old": {"url": "http://127.0.0.1:9/sse", "transport": "sse", "disabled": true}
            }}"#,
        );
        assert!(c.problems.is_empty(), "{:?}", c.problems);
        let fs = &c.servers["fs"];
        assert_eq!(fs.timeout, Duration::from_millis(5000));
        assert_eq!(
            fs.transport,
            TransportSpec::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "srv".into(), "3".into()],
                env: BTreeMap::from([("A".into(), "1".into())]),
                cwd: Some(PathBuf::from("/cfg/work")),
            }
        );
        assert_eq!(c.servers["web"].transport.kind(), "http");
        assert_eq!(c.servers["web"].timeout, DEFAULT_TIMEOUT);
        assert!(c.servers["old"].disabled);
        assert_eq!(c.servers["old"].transport.kind(), "sse");
    }

    #[test]
    fn vscode_shape() {
        let c = parse_str(
            r#"{"inputs": [], "servers": {
                "gh": {"type": "http", "url": "https://api.example.test/mcp"},
                "local": {"type": "stdio", "command": "srv"},
                "legacy": {"type": "sse", "url": "http://127.0.0.1:1/sse"}
            }}"#,
        );
        assert!(c.problems.is_empty(), "{:?}", c.problems);
        assert_eq!(c.servers.len(), 3);
        assert_eq!(c.servers["legacy"].transport.kind(), "sse");
    }

    #[test]
    fn a_bad_entry_names_file_server_and_field_and_spares_the_others() {
        let c = parse_str(
            r#"{"mcpServers": {
                "good": {"command": "srv"},
                "badargs": {"command": "srv", "args": "oops"},
                "badurl": {"url": "not a url"},
                "none": {},
                "badtimeout": {"command": "x", "timeout": -4},
                "badenv": {"command": "x", "env": {"K": [1]}}
            }}"#,
        );
        assert_eq!(c.servers.keys().collect::<Vec<_>>(), vec!["good"]);
        let texts: Vec<String> = c.problems.iter().map(ToString::to_string).collect();
        expect_test::expect![[r#"
            [
                "/cfg/config.json: server 'badargs': field 'args': expected an array of strings",
                "/cfg/config.json: server 'badurl': field 'url': invalid URL: relative URL without a base",
                "/cfg/config.json: server 'none': needs either 'command' (a local server) or 'url' (a remote server)",
                "/cfg/config.json: server 'badtimeout': field 'timeout': expected a positive number of milliseconds",
                "/cfg/config.json: server 'badenv': field 'env.K': expected a string",
            ]
        "#]]
        .assert_debug_eq(&texts);
    }

    #[test]
    fn invalid_json_names_the_position() {
        let e = parse(Path::new("/x/c.json"), "{\"mcpServers\": {").unwrap_err();
        assert!(e.to_string().starts_with("/x/c.json: invalid JSON at line 1"), "{e}");
    }

    #[test]
    fn absent_or_empty_file_is_an_empty_pool() {
        let dir = std::env::temp_dir().join(format!("mcpool-cfg-{}", std::process::id()));
        assert_eq!(load(&dir.join("missing.json")).unwrap(), Config::default());
        assert_eq!(parse_str("  "), Config::default());
    }
}
