//! One server entry of the config file as a type: [`Entry`] is what the
//! file holds, read with serde (through `serde_path_to_error`, so that a
//! problem names its field's path) and written by editing, the registry and
//! import; [`Entry::spec`] is what it means, a local command or a remote
//! URL, each field checked, with problems that name the server and field.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::fields::{self, SandboxEntry};
use super::{
    problem, ConfigProblem, OAuthSpec, ServerSpec, TransportSpec, DEFAULT_CALL_TIMEOUT, DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_TIMEOUT,
};
use crate::sandbox::{Mode, Sandbox};

/// A server entry as the file holds it. Absent and `null` fields are
/// `None`; fields of other rooms (`enabledTools`, `disabledTools`) and keys
/// mcpool does not know are not part of it and are left alone in the file.
/// Fields are written in this order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// `type`: `stdio`/`local`, `http`/`streamableHttp`/`remote`, `sse`.
    #[serde(
        rename = "type",
        default,
        deserialize_with = "fields::text",
        skip_serializing_if = "Option::is_none"
    )]
    pub kind: Option<String>,
    #[serde(default, deserialize_with = "fields::text", skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, deserialize_with = "fields::args", skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    #[serde(
        default,
        deserialize_with = "fields::strings",
        skip_serializing_if = "Option::is_none"
    )]
    pub env: Option<IndexMap<String, String>>,
    #[serde(default, deserialize_with = "fields::text", skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, deserialize_with = "fields::text", skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(
        default,
        deserialize_with = "fields::strings",
        skip_serializing_if = "Option::is_none"
    )]
    pub headers: Option<IndexMap<String, String>>,
    /// `transport`: the older spelling of `type` for remote servers.
    #[serde(default, deserialize_with = "fields::text", skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<OAuthEntry>,
    #[serde(default, deserialize_with = "fields::flag", skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
    /// Milliseconds.
    #[serde(
        default,
        deserialize_with = "fields::millis",
        skip_serializing_if = "Option::is_none"
    )]
    pub timeout: Option<u64>,
    #[serde(
        default,
        deserialize_with = "fields::message_bytes",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_message_bytes: Option<u64>,
    /// Milliseconds; `0` for no limit.
    #[serde(
        default,
        deserialize_with = "fields::call_millis",
        skip_serializing_if = "Option::is_none"
    )]
    pub call_timeout: Option<u64>,
    #[serde(default, deserialize_with = "fields::flag", skip_serializing_if = "Option::is_none")]
    pub log_arguments: Option<bool>,
    /// `sandbox`: what a local server may read, write and reach.
    #[serde(
        default,
        deserialize_with = "fields::sandbox",
        serialize_with = "fields::write_sandbox",
        skip_serializing_if = "Option::is_none"
    )]
    pub sandbox: Option<SandboxEntry>,
}

/// A remote entry's `oauth` object as the file holds it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OAuthEntry {
    #[serde(
        default,
        deserialize_with = "fields::filled_text",
        skip_serializing_if = "Option::is_none"
    )]
    pub client_id: Option<String>,
    /// May be `${keyring:NAME}`.
    #[serde(
        default,
        deserialize_with = "fields::filled_text",
        skip_serializing_if = "Option::is_none"
    )]
    pub client_secret: Option<String>,
    #[serde(
        default,
        deserialize_with = "fields::scopes",
        skip_serializing_if = "Option::is_none"
    )]
    pub scopes: Option<Vec<String>>,
    #[serde(default, deserialize_with = "fields::port", skip_serializing_if = "Option::is_none")]
    pub redirect_port: Option<u16>,
}

/// A field's path and the sentence of what is wrong with it.
pub type FieldError = (Option<String>, String);

impl Entry {
    /// Reads an entry; the error names the field's path (`args[2]`,
    /// `env.TOKEN`) where there is one.
    pub fn read(value: &Value) -> Result<Entry, FieldError> {
        if !value.is_object() {
            return Err((None, "expected an object".into()));
        }
        serde_path_to_error::deserialize(value).map_err(|e| {
            let path = field_path(e.path());
            let message = e.into_inner().to_string();
            match unknown_oauth_field(&path, &message) {
                Some(field) => (
                    Some(field),
                    "unknown field (expected clientId, clientSecret, scopes or redirectPort)".into(),
                ),
                None => (path, message),
            }
        })
    }

    /// The entry as a JSON object, its fields in the order of the type.
    pub fn to_map(&self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        }
    }

    /// What the entry means for the server `name` of the file `path`; a
    /// local server without a `sandbox` of its own gets `default`.
    pub fn spec(self, path: &Path, name: &str, default: &Sandbox) -> Result<ServerSpec, ConfigProblem> {
        let err = |field: Option<&str>, message: String| problem(path, Some(name), field, message);
        if name.is_empty() {
            return Err(err(None, "a server name must not be empty".into()));
        }
        let kind = self.transport_kind().map_err(|(field, m)| err(field.as_deref(), m))?;
        let mut oauth = None;
        let mut sandbox = Sandbox::default();
        let transport = if kind == "stdio" {
            sandbox = match &self.sandbox {
                Some(entry) => resolve_sandbox(entry, path, default.mode).map_err(|(f, m)| err(Some(&f), m))?,
                None => default.clone(),
            };
            if self.oauth.is_some() {
                return Err(err(Some("oauth"), "only a remote server (with 'url') signs in".into()));
            }
            let Some(command) = self.command.filter(|c| !c.trim().is_empty()) else {
                return Err(err(Some("command"), "a local server needs a command".into()));
            };
            if self.url.is_some() {
                return Err(err(
                    Some("url"),
                    "a local server (with 'command') cannot also have a 'url'".into(),
                ));
            }
            TransportSpec::Stdio {
                command,
                args: self.args.unwrap_or_default(),
                env: self.env.unwrap_or_default().into_iter().collect(),
                cwd: self.cwd.map(|c| resolve_cwd(path, &c)),
            }
        } else {
            let Some(url) = self.url else {
                return Err(err(Some("url"), "a remote server needs a url".into()));
            };
            let parsed = url::Url::parse(&url).map_err(|e| err(Some("url"), format!("invalid URL: {e}")))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(err(
                    Some("url"),
                    format!("unsupported scheme '{}' (expected http or https)", parsed.scheme()),
                ));
            }
            if self.command.is_some() {
                return Err(err(
                    Some("command"),
                    "a remote server (with 'url') cannot also have a 'command'".into(),
                ));
            }
            if self.sandbox.is_some() {
                return Err(err(
                    Some("sandbox"),
                    "only a local server (with 'command') runs in a sandbox".into(),
                ));
            }
            let headers: BTreeMap<String, String> = self.headers.unwrap_or_default().into_iter().collect();
            oauth = self
                .oauth
                .map(OAuthEntry::spec)
                .transpose()
                .map_err(|(f, m)| err(Some(f), m))?;
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
            disabled: self.disabled.unwrap_or(false),
            timeout: self.timeout.map_or(DEFAULT_TIMEOUT, Duration::from_millis),
            max_message_bytes: self.max_message_bytes.map_or(DEFAULT_MAX_MESSAGE_BYTES, |b| b as usize),
            call_timeout: match self.call_timeout {
                None => Some(DEFAULT_CALL_TIMEOUT),
                Some(0) => None,
                Some(ms) => Some(Duration::from_millis(ms)),
            },
            log_arguments: self.log_arguments.unwrap_or(false),
            transport,
            oauth,
            sandbox,
        })
    }

    /// `stdio`, `http` or `sse`, from `type`, else `transport`, else
    /// whether the entry has a command or a URL.
    fn transport_kind(&self) -> Result<&'static str, FieldError> {
        let field = |f: &str, m: String| Err((Some(f.to_string()), m));
        match (self.kind.as_deref(), self.transport.as_deref()) {
            (Some(t), _) => match t {
                "stdio" | "local" => Ok("stdio"),
                "http" | "streamableHttp" | "streamable-http" | "remote" => Ok("http"),
                "sse" => Ok("sse"),
                other => field("type", format!("unknown type '{other}' (expected stdio, http or sse)")),
            },
            (None, Some(t)) => match t {
                "http" | "streamable-http" | "streamableHttp" => Ok("http"),
                "sse" => Ok("sse"),
                "stdio" => Ok("stdio"),
                other => field(
                    "transport",
                    format!("unknown transport '{other}' (expected http or sse)"),
                ),
            },
            (None, None) if self.command.is_some() => Ok("stdio"),
            (None, None) if self.url.is_some() => Ok("http"),
            (None, None) => Err((
                None,
                "needs either 'command' (a local server) or 'url' (a remote server)".into(),
            )),
        }
    }
}

impl OAuthEntry {
    fn spec(self) -> Result<OAuthSpec, (&'static str, String)> {
        if self.client_secret.is_some() && self.client_id.is_none() {
            return Err(("oauth.clientSecret", "a client secret needs oauth.clientId".into()));
        }
        Ok(OAuthSpec {
            client_id: self.client_id,
            client_secret: self.client_secret,
            scopes: self.scopes,
            redirect_port: self.redirect_port,
        })
    }
}

pub(super) fn parse_entry(
    path: &Path,
    name: &str,
    entry: &Value,
    default: &Sandbox,
) -> Result<ServerSpec, ConfigProblem> {
    if name.is_empty() {
        return Err(problem(
            path,
            Some(name),
            None,
            "a server name must not be empty".into(),
        ));
    }
    let entry = Entry::read(entry).map_err(|(field, message)| problem(path, Some(name), field.as_deref(), message))?;
    entry.spec(path, name, default)
}

/// The config's top-level `sandbox`: the default of local entries that
/// give none.
pub(super) fn default_sandbox(path: &Path, value: Option<&Value>) -> Result<Sandbox, FieldError> {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(Sandbox::default());
    };
    let top = serde_json::json!({ "sandbox": value });
    let entry = serde_path_to_error::deserialize(&top)
        .map(|fields::Top { sandbox }| sandbox)
        .map_err(|e| (field_path(e.path()), e.into_inner().to_string()))?;
    match entry {
        Some(entry) => resolve_sandbox(&entry, path, Mode::Off).map_err(|(f, m)| (Some(f), m)),
        None => Ok(Sandbox::default()),
    }
}

/// A sandbox as written, its grants made absolute (`~` the home folder,
/// relative to the config's folder) and checked to exist. Without a
/// `mode`, the default's, or `standard` when the default is `off` (grants
/// mean a sandbox).
fn resolve_sandbox(entry: &SandboxEntry, path: &Path, default: Mode) -> Result<Sandbox, (String, String)> {
    let mode = match entry.mode.as_deref().and_then(Mode::parse) {
        Some(mode) => mode,
        None if default == Mode::Off => Mode::Standard,
        None => default,
    };
    let grants = |list: &Option<Vec<String>>, field: &str| -> Result<Vec<PathBuf>, (String, String)> {
        let mut out = Vec::new();
        for (i, text) in list.iter().flatten().enumerate() {
            let resolved = resolve_cwd(path, text);
            if !resolved.exists() {
                return Err((
                    format!("sandbox.{field}[{i}]"),
                    format!(
                        "{} does not exist (a grant names a file or folder that is there)",
                        resolved.display()
                    ),
                ));
            }
            out.push(resolved);
        }
        Ok(out)
    };
    Ok(Sandbox {
        mode,
        allow_read: grants(&entry.allow_read, "allowRead")?,
        allow_write: grants(&entry.allow_write, "allowWrite")?,
        // A socket may appear after mcpool starts (a daemon started later):
        // only made absolute, not required to be there.
        allow_sockets: entry
            .allow_sockets
            .iter()
            .flatten()
            .map(|text| resolve_cwd(path, text))
            .collect(),
        network: entry.network,
        allow_unsandboxed: entry.allow_unsandboxed.unwrap_or(false),
    })
}

/// `args[2]`, `env.TOKEN`, `oauth.scopes[0]`; `None` for the entry itself.
fn field_path(path: &serde_path_to_error::Path) -> Option<String> {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Enum { .. } | Segment::Unknown => {}
        }
    }
    (!out.is_empty()).then_some(out)
}

/// serde's "unknown field `x`, expected …" inside `oauth`, as `oauth.x`.
fn unknown_oauth_field(path: &Option<String>, message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    let name = &rest[..rest.find('`')?];
    match path.as_deref() {
        Some("oauth") => Some(format!("oauth.{name}")),
        Some(p) if p.starts_with("oauth.") => Some(format!("oauth.{name}")),
        _ => None,
    }
}

pub(super) fn is_metadata_url(value: &str) -> bool {
    url::Url::parse(value).is_ok_and(|u| u.scheme() == "https" && u.path() != "/" && u.host_str().is_some())
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
