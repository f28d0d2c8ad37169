//! `mcpool doctor --bundle FILE`: a support bundle safe to attach to a bug
//! report (0600, written atomically), with every secret the config holds
//! replaced by `"<redacted>"` and every known secret value by `[secret]`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mcpool_core::secrets::{parse_value, redact, Part};
use serde_json::{json, Map, Value};

use super::checks::Program;
use super::report::Check;

pub const REDACTED: &str = "<redacted>";

/// How many lines of each log file go in.
const LOG_LINES: usize = 100;

/// The fields of `/api/servers` the bundle keeps (no tool definitions).
const STATUS_FIELDS: &[&str] = &[
    "name",
    "status",
    "error",
    "transport",
    "protocol",
    "tool_count",
    "connecting",
    "retry_in_ms",
    "last_connected",
    "waiting_for_network",
    "auth",
    "tool_warnings",
];

/// Everything the bundle is made of.
pub struct Inputs<'a> {
    pub checks: &'a [Check],
    pub config_path: &'a Path,
    /// `/api/servers` of the running instance, if one answered.
    pub servers: Option<&'a [Value]>,
    pub programs: &'a BTreeMap<String, Program>,
    /// Every secret value known (resolved from the keyring, written
    /// literally, the endpoint token): none may appear.
    pub secrets: &'a [String],
    /// The profile whose server logs (`server_logs`) are included.
    pub profile: &'a str,
}

/// The bundle as JSON.
pub fn build(inputs: &Inputs) -> Value {
    let config = match std::fs::read_to_string(inputs.config_path) {
        Ok(text) => match mcpool_core::jsonc::value(&text) {
            Ok(value) if !text.trim().is_empty() => {
                json!({"path": inputs.config_path, "content": redact_config(value), "error": null})
            }
            Ok(_) => json!({"path": inputs.config_path, "content": null, "error": "the file is empty; left out"}),
            Err(e) => json!({"path": inputs.config_path, "content": null,
                             "error": format!("not valid JSON (line {}, column {}); left out", e.line, e.column)}),
        },
        Err(e) => json!({"path": inputs.config_path, "content": null, "error": e.to_string()}),
    };
    let statuses = inputs.servers.map(|servers| {
        servers
            .iter()
            .map(|s| {
                let kept: Map<String, Value> = STATUS_FIELDS
                    .iter()
                    .filter_map(|f| s.get(*f).map(|v| (f.to_string(), v.clone())))
                    .collect();
                Value::Object(kept)
            })
            .collect::<Vec<_>>()
    });
    let stderr: BTreeMap<String, Value> = inputs
        .servers
        .unwrap_or_default()
        .iter()
        .filter_map(|s| Some((s["name"].as_str()?.to_string(), s["stderr_tail"].clone())))
        .collect();
    let runtimes: BTreeMap<&String, Value> = inputs
        .programs
        .iter()
        .map(|(command, p)| {
            (
                command,
                json!({"path": p.path, "version": p.version, "servers": p.servers}),
            )
        })
        .collect();
    let mut bundle = json!({
        "mcpool_version": env!("CARGO_PKG_VERSION"),
        "os": std::env::consts::OS,
        "arch": std::env::consts::ARCH,
        "created_at": mcpool_core::calls::rfc3339(std::time::SystemTime::now()),
        "doctor": inputs.checks,
        "config": config,
        "statuses": statuses,
        "logs": {"servers_stderr": stderr, "files": log_files(inputs.profile)},
        "runtimes": runtimes,
    });
    redact_strings(&mut bundle, inputs.secrets);
    bundle
}

/// Writes `bundle` to `path`: mode 0600, atomically.
pub fn write(path: &Path, bundle: &Value) -> anyhow::Result<()> {
    let mut text = serde_json::to_vec_pretty(bundle)?;
    text.push(b'\n');
    mcpool_core::os::files::write_private(path, &text)
        .map_err(|e| anyhow::anyhow!("cannot write the bundle {}: {e}", path.display()))
}

/// The config with every literal `env` and `headers` value and any OAuth
/// `clientSecret` replaced by [`REDACTED`] (`${keyring:NAME}` references
/// kept), and URLs without their query or userinfo.
pub fn redact_config(mut config: Value) -> Value {
    for section in ["mcpServers", "servers"] {
        let Some(entries) = config.get_mut(section).and_then(Value::as_object_mut) else {
            continue;
        };
        for entry in entries.values_mut().filter_map(Value::as_object_mut) {
            for field in ["env", "headers"] {
                if let Some(values) = entry.get_mut(field) {
                    match values.as_object_mut() {
                        Some(values) => values.values_mut().for_each(redact_value),
                        None => *values = json!(REDACTED),
                    }
                }
            }
            if let Some(secret) = entry.get_mut("oauth").and_then(|o| o.get_mut("clientSecret")) {
                redact_value(secret);
            }
            if let Some(Value::String(url)) = entry.get_mut("url") {
                *url = redact_url(url);
            }
        }
    }
    if let Some(registries) = config.get_mut("registries").and_then(Value::as_array_mut) {
        for r in registries.iter_mut() {
            if let Value::String(url) = r {
                *url = redact_url(url);
            }
        }
    }
    config
}

/// Keeps a value made only of `${keyring:NAME}` references (with at most an
/// auth scheme before them, as in `Bearer ${keyring:x}`); anything else
/// becomes [`REDACTED`].
fn redact_value(value: &mut Value) {
    let keep = value.as_str().is_some_and(|s| {
        let parts = parse_value(s);
        parts.iter().any(|p| matches!(p, Part::Secret(_)))
            && parts.iter().all(|p| match p {
                Part::Secret(_) => true,
                Part::Text(t) => {
                    ["", "bearer", "basic", "token", "apikey"].contains(&t.trim().to_ascii_lowercase().as_str())
                }
            })
    });
    if !keep {
        *value = json!(REDACTED);
    }
}

/// A URL without the userinfo of its authority and without its query and
/// fragment: `https://<redacted>@host/p?<redacted>`.
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (format!("{scheme}://"), rest),
        None => (String::new(), url),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let authority = match authority.rsplit_once('@') {
        Some((_, host)) => format!("{REDACTED}@{host}"),
        None => authority.to_string(),
    };
    let tail = match tail.find(['?', '#']) {
        Some(i) => format!("{}?{REDACTED}", &tail[..i]),
        None => tail.to_string(),
    };
    format!("{scheme}{authority}{tail}")
}

/// Every string in `value` (keys too) with each known secret replaced.
fn redact_strings(value: &mut Value, secrets: &[String]) {
    match value {
        Value::String(s) => *s = redact(s, secrets),
        Value::Array(items) => items.iter_mut().for_each(|v| redact_strings(v, secrets)),
        Value::Object(map) => {
            let taken = std::mem::take(map);
            for (k, mut v) in taken {
                redact_strings(&mut v, secrets);
                map.insert(redact(&k, secrets), v);
            }
        }
        _ => {}
    }
}

/// The last lines of any `*.log` file of mcpool's: its data and cache
/// dirs, and the profile's server logs (`<data dir>/logs/<profile>/`).
fn log_files(profile: &str) -> BTreeMap<String, Vec<String>> {
    let data = mcpool_core::os::paths::data_dir();
    let server_logs = mcpool_core::server_logs::file::dir_for(&data, profile);
    let dirs: [PathBuf; 3] = [data, mcpool_core::os::paths::default_cache_dir(), server_logs];
    let mut out = BTreeMap::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for file in entries.flatten().map(|e| e.path()) {
            if file.extension().is_some_and(|e| e == "log") && file.is_file() {
                let text = std::fs::read_to_string(&file).unwrap_or_default();
                let lines: Vec<&str> = text.lines().collect();
                let tail = lines[lines.len().saturating_sub(LOG_LINES)..]
                    .iter()
                    .map(|l| mcpool_core::secrets::redact_resolved(l))
                    .collect();
                out.insert(file.display().to_string(), tail);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_env_headers_and_client_secrets_go_references_stay() {
        let config = json!({
            "mcpServers": {
                "gh": {"command": "npx", "args": ["-y", "gh-mcp"],
                       "env": {"GITHUB_TOKEN": "ghp_literal", "DEBUG": "1", "KEY": "${keyring:gh.env.KEY}"}},
                "linear": {"url": "https://user:pw@mcp.linear.app/mcp?api_key=abc#x",
                           "headers": {"Authorization": "Bearer ${keyring:linear}", "X-Key": "plain-secret",
                                       "Mixed": "x-${keyring:a}"},
                           "oauth": {"clientId": "id", "clientSecret": "cs-literal"}},
                "ref": {"url": "https://h/mcp", "oauth": {"clientSecret": "${keyring:ref.oauth.clientSecret}"}}
            },
            "servers": {"vs": {"type": "stdio", "command": "x", "env": ["odd"]}},
            "registries": ["https://r.example/base?token=t"]
        });
        expect_test::expect![[r#"
            {
              "mcpServers": {
                "gh": {
                  "command": "npx",
                  "args": [
                    "-y",
                    "gh-mcp"
                  ],
                  "env": {
                    "GITHUB_TOKEN": "<redacted>",
                    "DEBUG": "<redacted>",
                    "KEY": "${keyring:gh.env.KEY}"
                  }
                },
                "linear": {
                  "url": "https://<redacted>@mcp.linear.app/mcp?<redacted>",
                  "headers": {
                    "Authorization": "Bearer ${keyring:linear}",
                    "X-Key": "<redacted>",
                    "Mixed": "<redacted>"
                  },
                  "oauth": {
                    "clientId": "id",
                    "clientSecret": "<redacted>"
                  }
                },
                "ref": {
                  "url": "https://h/mcp",
                  "oauth": {
                    "clientSecret": "${keyring:ref.oauth.clientSecret}"
                  }
                }
              },
              "servers": {
                "vs": {
                  "type": "stdio",
                  "command": "x",
                  "env": "<redacted>"
                }
              },
              "registries": [
                "https://r.example/base?<redacted>"
              ]
            }"#]]
        .assert_eq(&serde_json::to_string_pretty(&redact_config(config)).unwrap());
    }

    #[test]
    fn urls_lose_userinfo_query_and_fragment_only() {
        assert_eq!(redact_url("http://127.0.0.1:9/mcp"), "http://127.0.0.1:9/mcp");
        assert_eq!(redact_url("https://a@h"), "https://<redacted>@h");
        assert_eq!(redact_url("https://h?k=v"), "https://h?<redacted>");
        assert_eq!(redact_url("https://h/p#frag"), "https://h/p?<redacted>");
    }

    #[test]
    fn known_secret_values_are_replaced_everywhere() {
        let mut v = json!({"a": ["x sk-secret-1 y"], "sk-secret-1": 3, "n": 1});
        redact_strings(&mut v, &["sk-secret-1".to_string()]);
        assert_eq!(v, json!({"a": ["x [secret] y"], "[secret]": 3, "n": 1}));
    }
}
