//! The config file: which upstream servers the pool runs, parsed with errors
//! that name the file, the server and the field.
//!
//! Two shapes are accepted: `mcpServers` (Claude Desktop / Cursor / Claude
//! Code) and VS Code's `servers` with a `type`. One bad entry never stops the
//! others: it is reported as a [`ConfigProblem`] and left out.

mod entry;
mod fields;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use entry::{is_metadata_url, parse_entry};
pub use entry::{Entry, FieldError, OAuthEntry};
pub use fields::SandboxEntry;

/// Startup timeout when an entry gives none (behaviour.md §2).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(30_000);

/// `callTimeout` when an entry gives none: 10 minutes, generous enough for
/// a build or a browser task, short enough that no call waits forever.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(600);

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
    /// `callTimeout`: how long one request may go without an answer or a
    /// progress notification from the server before it is cancelled;
    /// `None` (`0` in the file) waits as long as the server takes.
    pub call_timeout: Option<Duration>,
    /// `logArguments`: the activity log keeps this server's call arguments
    /// and results (redacted), not only names and timings.
    pub log_arguments: bool,
    pub transport: TransportSpec,
    /// Sign-in settings (remote servers only); `None` when the entry has no
    /// `oauth` object. A remote server signs in when it asks for it either way.
    pub oauth: Option<OAuthSpec>,
    /// What a local server may read, write and reach (`off` for a remote one).
    pub sandbox: crate::sandbox::Sandbox,
}

impl ServerSpec {
    /// Whether `other` connects the same way: everything but the settings
    /// that take effect without a reconnect (`logArguments`).
    pub fn same_connection(&self, other: &ServerSpec) -> bool {
        let mut a = self.clone();
        a.log_arguments = other.log_arguments;
        a == *other
    }
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
    /// `registries`: base URLs of the MCP registries searched; `None` when
    /// the file names none (the official registry is searched).
    pub registries: Option<Vec<String>>,
    /// `activity`: how long and how much of the activity log is kept.
    pub activity: crate::activity::Retention,
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
    // Comments and trailing commas are allowed (JSONC, as VS Code writes
    // it).
    let parsed = crate::jsonc::parse(text).map_err(|e| {
        problem(
            path,
            None,
            None,
            format!("invalid JSON at line {}, column {}: {}", e.line, e.column, e.message),
        )
    })?;
    let root = parsed.value;
    let Value::Object(root) = root else {
        return Err(problem(path, None, None, "expected a JSON object at the top".into()));
    };
    let mut config = Config::default();
    for key in &parsed.repeated {
        config.problems.push(repeated_key(path, key));
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
    match parse_registries(&root) {
        Ok(registries) => config.registries = registries,
        Err((field, message)) => config.problems.push(problem(path, None, Some(&field), message)),
    }
    match crate::activity::Retention::parse(root.get("activity")) {
        Ok(retention) => config.activity = retention,
        Err((field, message)) => config.problems.push(problem(path, None, Some(&field), message)),
    }
    let default_sandbox = entry::default_sandbox(path, root.get("sandbox")).unwrap_or_else(|(field, message)| {
        // Never less confined than asked: until it is fixed, local
        // servers without a sandbox of their own run `strict`.
        config.problems.push(problem(
            path,
            None,
            field.as_deref(),
            format!("{message}; local servers without a sandbox of their own run 'strict' until it is fixed"),
        ));
        crate::sandbox::Sandbox {
            mode: crate::sandbox::Mode::Strict,
            ..Default::default()
        }
    });
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
            match parse_entry(path, name, entry, &default_sandbox).and_then(|spec| Ok((spec, filter?))) {
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
    let (policy, problems) = crate::toolctl::parse_root(&root, &names);
    config.tools.profiles = policy.profiles;
    config.tools.approve = policy.approve;
    config.tools.listing = policy.listing;
    for p in problems {
        let mut found = problem(path, p.server.as_deref(), Some(&p.field), p.message);
        found.warning = p.warning;
        config.problems.push(found);
    }
    Ok(config)
}

/// `registries`: an array of http(s) base URLs, each without a query.
fn parse_registries(root: &serde_json::Map<String, Value>) -> Result<Option<Vec<String>>, (String, String)> {
    let items = match root.get("registries") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(("registries".into(), "expected an array of registry URLs".into())),
    };
    let mut urls = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let field = format!("registries[{i}]");
        let Value::String(text) = item else {
            return Err((field, "expected a URL (a string)".into()));
        };
        match url::Url::parse(text) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() && u.query().is_none() => {
                urls.push(text.trim_end_matches('/').to_string())
            }
            Ok(_) => return Err((field, "expected an http or https URL without a query".into())),
            Err(e) => return Err((field, format!("invalid URL: {e}"))),
        }
    }
    Ok(Some(urls))
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
mod tests;
