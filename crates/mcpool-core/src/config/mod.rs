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

/// Largest message a local server may send when its entry gives no
/// `maxMessageBytes`: 16 MiB, as rmcp's stdio reader allowed before.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// Bounds of `maxMessageBytes`: below 64 KiB a tool list may not fit; above
/// 1 GiB one reply could take the memory of the machine.
pub const MIN_MAX_MESSAGE_BYTES: u64 = 64 * 1024;
pub const MAX_MAX_MESSAGE_BYTES: u64 = 1024 * 1024 * 1024;

/// Everything the pool needs to know about one upstream server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    pub name: String,
    pub disabled: bool,
    /// Bound on one connection attempt (spawn or dial plus `initialize`).
    pub timeout: Duration,
    /// `maxMessageBytes`: the largest message a local server may send; a
    /// reply over it fails its call at once.
    pub max_message_bytes: usize,
    pub transport: TransportSpec,
    /// Sign-in settings (remote servers only); `None` when the entry has no
    /// `oauth` object. A remote server signs in when it asks for it either way.
    pub oauth: Option<OAuthSpec>,
}

/// A remote entry's `oauth` object; every field is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OAuthSpec {
    /// A client registered with the authorization server beforehand.
    pub client_id: Option<String>,
    /// Its secret; may be `${keyring:NAME}`.
    pub client_secret: Option<String>,
    /// Scopes to ask for instead of those the server suggests.
    pub scopes: Option<Vec<String>>,
    /// The loopback port of the redirect (an ephemeral one when absent).
    pub redirect_port: Option<u16>,
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
    /// The config still loaded as written (a repeated key, the later one
    /// used); otherwise the entry or file was left out.
    pub warning: bool,
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
    /// `oauthClientMetadataUrl`: the https URL of the client ID metadata
    /// document used where an authorization server supports one.
    pub oauth_client_metadata_url: Option<String>,
    /// Per-tool settings: `disabledTools`/`enabledTools` of each entry,
    /// `profiles` and `approveNewTools`.
    pub tools: crate::toolctl::ToolPolicy,
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
    for key in crate::json_dups::duplicate_keys(text) {
        config.problems.push(repeated_key(path, &key));
    }
    match root.get("oauthClientMetadataUrl") {
        None | Some(Value::Null) => {}
        Some(Value::String(u)) if is_metadata_url(u) => config.oauth_client_metadata_url = Some(u.clone()),
        Some(_) => config.problems.push(problem(
            path,
            None,
            Some("oauthClientMetadataUrl"),
            "expected an https URL with a path (the client ID metadata document)".into(),
        )),
    }
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
            let filter = crate::toolctl::parse_filter(entry)
                .map_err(|(field, message)| problem(path, Some(name), Some(&field), message));
            match parse_entry(path, name, entry).and_then(|spec| Ok((spec, filter?))) {
                Ok((spec, filter)) => {
                    config.servers.insert(name.clone(), spec);
                    if !filter.is_empty() {
                        config.tools.filters.insert(name.clone(), filter);
                    }
                }
                Err(p) => config.problems.push(p),
            }
        }
    }
    let names = config.servers.keys().cloned().collect();
    let (profiles, approve, problems) = crate::toolctl::parse_root(&root, &names);
    config.tools.profiles = profiles;
    config.tools.approve = approve;
    for p in problems {
        let mut found = problem(path, p.server.as_deref(), Some(&p.field), p.message);
        found.warning = p.warning;
        config.problems.push(found);
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
        transport,
        oauth,
    })
}

fn is_metadata_url(value: &str) -> bool {
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
        warning: false,
    }
}

/// A key written twice: JSON keeps the later value, and the user is told.
fn repeated_key(path: &Path, key: &[String]) -> ConfigProblem {
    let in_servers = matches!(key.first().map(String::as_str), Some("mcpServers" | "servers"));
    let (server, field, message) = match key {
        [section, server] if in_servers => (
            Some(server.as_str()),
            None,
            format!("defined twice in '{section}'; only the later entry is used"),
        ),
        [_, server, rest @ ..] if in_servers => (
            Some(server.as_str()),
            Some(rest.join(".")),
            "appears twice; only the later value is used".to_string(),
        ),
        _ => (
            None,
            Some(key.join(".")),
            "appears twice; only the later value is used".to_string(),
        ),
    };
    let mut p = problem(path, server, field.as_deref(), message);
    p.warning = true;
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_message_bytes_defaults_and_is_checked() {
        let c = parse_str(
            r#"{"mcpServers": {
                "plain": {"command": "srv"},
                "raised": {"command": "srv", "maxMessageBytes": 67108864},
                "tiny": {"command": "srv", "maxMessageBytes": 1000},
                "text": {"command": "srv", "maxMessageBytes": "16MiB"}
            }}"#,
        );
        assert_eq!(c.servers["plain"].max_message_bytes, DEFAULT_MAX_MESSAGE_BYTES);
        assert_eq!(c.servers["raised"].max_message_bytes, 64 * 1024 * 1024);
        let texts: Vec<String> = c.problems.iter().map(ToString::to_string).collect();
        assert_eq!(
            texts,
            vec![
                "/cfg/config.json: server 'tiny': field 'maxMessageBytes': expected a number of bytes from 65536 to 1073741824",
                "/cfg/config.json: server 'text': field 'maxMessageBytes': expected a number of bytes",
            ]
        );
    }

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
    fn oauth_settings_are_parsed_and_checked() {
        let c = parse_str(
            r#"{"oauthClientMetadataUrl": "https://example.test/mcpool/client.json", "mcpServers": {
                "full": {"url": "https://a.test/mcp", "oauth": {"clientId": "abc", "clientSecret": "${keyring:S}", "scopes": ["read", "write"], "redirectPort": 8765}},
                "empty": {"url": "https://b.test/mcp", "oauth": {}},
                "none": {"url": "https://c.test/mcp"},
                "local": {"command": "x", "oauth": {}},
                "lonesecret": {"url": "https://d.test/mcp", "oauth": {"clientSecret": "s"}},
                "badport": {"url": "https://d.test/mcp", "oauth": {"redirectPort": 70000}},
                "badscope": {"url": "https://d.test/mcp", "oauth": {"scopes": ["a b"]}},
                "typo": {"url": "https://d.test/mcp", "oauth": {"clientID": "x"}}
            }}"#,
        );
        assert_eq!(
            c.oauth_client_metadata_url.as_deref(),
            Some("https://example.test/mcpool/client.json")
        );
        assert_eq!(
            c.servers["full"].oauth,
            Some(OAuthSpec {
                client_id: Some("abc".into()),
                client_secret: Some("${keyring:S}".into()),
                scopes: Some(vec!["read".into(), "write".into()]),
                redirect_port: Some(8765),
            })
        );
        assert_eq!(c.servers["empty"].oauth, Some(OAuthSpec::default()));
        assert_eq!(c.servers["none"].oauth, None);
        let texts: Vec<String> = c.problems.iter().map(ToString::to_string).collect();
        expect_test::expect![[r#"
            [
                "/cfg/config.json: server 'local': field 'oauth': only a remote server (with 'url') signs in",
                "/cfg/config.json: server 'lonesecret': field 'oauth.clientSecret': a client secret needs oauth.clientId",
                "/cfg/config.json: server 'badport': field 'oauth.redirectPort': expected a port number (1-65535)",
                "/cfg/config.json: server 'badscope': field 'oauth.scopes[0]': expected a scope (a string without spaces)",
                "/cfg/config.json: server 'typo': field 'oauth.clientID': unknown field (expected clientId, clientSecret, scopes or redirectPort)",
            ]
        "#]]
        .assert_debug_eq(&texts);
        let bad = parse_str(r#"{"oauthClientMetadataUrl": "http://x.test/doc"}"#);
        assert_eq!(
            bad.problems[0].to_string(),
            "/cfg/config.json: field 'oauthClientMetadataUrl': expected an https URL with a path (the client ID metadata document)"
        );
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

    #[test]
    fn a_repeated_key_is_a_named_warning_and_the_later_value_is_used() {
        let c = parse_str(
            r#"{"mcpServers": {
                "a": {"command": "first"},
                "a": {"command": "second", "env": {"TOKEN": "1", "TOKEN": "2"}}
            }}"#,
        );
        assert_eq!(c.servers.keys().collect::<Vec<_>>(), vec!["a"]);
        let texts: Vec<(String, bool)> = c.problems.iter().map(|p| (p.to_string(), p.warning)).collect();
        expect_test::expect![[r#"
            [
                (
                    "/cfg/config.json: server 'a': defined twice in 'mcpServers'; only the later entry is used",
                    true,
                ),
                (
                    "/cfg/config.json: server 'a': field 'env.TOKEN': appears twice; only the later value is used",
                    true,
                ),
            ]
        "#]]
        .assert_debug_eq(&texts);
        let TransportSpec::Stdio { command, env, .. } = &c.servers["a"].transport else {
            panic!("not stdio")
        };
        assert_eq!((command.as_str(), env["TOKEN"].as_str()), ("second", "2"));
    }
}
