//! `mcpool import`: read the MCP servers of other clients' configs (Claude
//! Desktop, Claude Code, Cursor, VS Code, opencode), plan what to add, move
//! literal secrets into the keyring, and never touch the source files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use crate::secrets::valid_name;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    ClaudeDesktop,
    ClaudeCode,
    Cursor,
    VsCode,
    OpenCode,
}

impl Client {
    pub fn label(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => "Claude Desktop",
            Client::ClaudeCode => "Claude Code",
            Client::Cursor => "Cursor",
            Client::VsCode => "VS Code",
            Client::OpenCode => "opencode",
        }
    }
}

/// The standard config files of each client on this platform.
pub fn standard_files(home: &Path, config_dir: &Path) -> Vec<(Client, PathBuf)> {
    let mut files = vec![
        (
            Client::ClaudeDesktop,
            config_dir.join("Claude/claude_desktop_config.json"),
        ),
        (Client::ClaudeCode, home.join(".claude.json")),
        (Client::Cursor, home.join(".cursor/mcp.json")),
        (Client::VsCode, config_dir.join("Code/User/mcp.json")),
        (Client::VsCode, config_dir.join("Code/User/settings.json")),
        (Client::OpenCode, config_dir.join("opencode/opencode.json")),
        (Client::OpenCode, home.join(".config/opencode/opencode.json")),
    ];
    files.dedup_by(|a, b| a.1 == b.1);
    files
}

/// Guesses the client from a file's name and content.
pub fn detect(path: &Path, root: &Value) -> Client {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if root
        .get("mcp")
        .and_then(|m| m.as_object())
        .is_some_and(|m| !m.contains_key("servers"))
        || name.starts_with("opencode")
    {
        Client::OpenCode
    } else if root.get("servers").is_some() || root.pointer("/mcp/servers").is_some() {
        Client::VsCode
    } else if name == ".claude.json" || name == ".mcp.json" {
        Client::ClaudeCode
    } else if name == "claude_desktop_config.json" {
        Client::ClaudeDesktop
    } else {
        Client::Cursor
    }
}

/// Strips `//` and `/* */` comments and trailing commas (VS Code and
/// opencode allow JSONC).
pub fn strip_jsonc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if c == '\\' {
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut prev = ' ';
                for n in chars.by_ref() {
                    if prev == '*' && n == '/' {
                        break;
                    }
                    prev = n;
                }
            }
            _ => out.push(c),
        }
    }
    // Trailing commas before } or ].
    let mut cleaned = String::with_capacity(out.len());
    let bytes: Vec<char> = out.chars().collect();
    let mut in_str = false;
    for (i, &c) in bytes.iter().enumerate() {
        if c == '"' && (i == 0 || bytes[i - 1] != '\\') {
            in_str = !in_str;
        }
        if !in_str && c == ',' {
            let next = bytes[i + 1..].iter().find(|n| !n.is_whitespace());
            if matches!(next, Some('}') | Some(']')) {
                continue;
            }
        }
        cleaned.push(c);
    }
    cleaned
}

/// One server found in a client's config, in mcpool's entry shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub name: String,
    pub entry: Map<String, Value>,
}

/// Reads the servers of one client config.
pub fn candidates(client: Client, root: &Value) -> Vec<Candidate> {
    let mut found = Vec::new();
    let mut take = |servers: Option<&Value>| {
        if let Some(Value::Object(servers)) = servers {
            for (name, entry) in servers {
                let converted = match client {
                    Client::OpenCode => convert_opencode(entry),
                    _ => convert_standard(entry),
                };
                if let Some(entry) = converted {
                    if !found.iter().any(|c: &Candidate| c.name == *name) {
                        found.push(Candidate {
                            name: name.clone(),
                            entry,
                        });
                    }
                }
            }
        }
    };
    match client {
        Client::OpenCode => take(root.get("mcp")),
        Client::VsCode => {
            take(root.get("servers"));
            take(root.pointer("/mcp/servers"));
        }
        Client::ClaudeCode => {
            take(root.get("mcpServers"));
            if let Some(Value::Object(projects)) = root.get("projects") {
                for project in projects.values() {
                    take(project.get("mcpServers"));
                }
            }
        }
        Client::ClaudeDesktop | Client::Cursor => take(root.get("mcpServers")),
    }
    found
}

fn convert_standard(entry: &Value) -> Option<Map<String, Value>> {
    let obj = entry.as_object()?;
    let mut out = Map::new();
    let kind = obj.get("type").and_then(Value::as_str);
    if let Some(command) = obj.get("command").and_then(Value::as_str) {
        out.insert("command".into(), json!(command));
        for key in ["args", "env", "cwd"] {
            if let Some(v) = obj.get(key) {
                out.insert(key.into(), v.clone());
            }
        }
    } else if let Some(url) = obj.get("url").or_else(|| obj.get("serverUrl")).and_then(Value::as_str) {
        out.insert("url".into(), json!(url));
        if let Some(h) = obj.get("headers") {
            out.insert("headers".into(), h.clone());
        }
        if kind == Some("sse") || obj.get("transport").and_then(Value::as_str) == Some("sse") {
            out.insert("transport".into(), json!("sse"));
        }
    } else {
        return None;
    }
    for key in ["disabled", "timeout"] {
        if let Some(v) = obj.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    Some(out)
}

fn convert_opencode(entry: &Value) -> Option<Map<String, Value>> {
    let obj = entry.as_object()?;
    let mut out = Map::new();
    match obj.get("type").and_then(Value::as_str) {
        Some("local") | None => {
            let cmd = obj.get("command")?;
            let parts: Vec<String> = match cmd {
                Value::Array(items) => items.iter().filter_map(|v| v.as_str().map(str::to_string)).collect(),
                Value::String(s) => vec![s.clone()],
                _ => return None,
            };
            let (first, rest) = parts.split_first()?;
            out.insert("command".into(), json!(first));
            if !rest.is_empty() {
                out.insert("args".into(), json!(rest));
            }
            if let Some(env) = obj.get("environment").or_else(|| obj.get("env")) {
                out.insert("env".into(), env.clone());
            }
        }
        Some("remote") => {
            out.insert("url".into(), json!(obj.get("url")?.as_str()?));
            if let Some(h) = obj.get("headers") {
                out.insert("headers".into(), h.clone());
            }
        }
        Some(_) => return None,
    }
    if obj.get("enabled") == Some(&Value::Bool(false)) {
        out.insert("disabled".into(), json!(true));
    }
    if let Some(t) = obj.get("timeout") {
        out.insert("timeout".into(), t.clone());
    }
    Some(out)
}

const SECRET_WORDS: &[&str] = &[
    "token",
    "key",
    "secret",
    "password",
    "passwd",
    "pass",
    "auth",
    "credential",
    "cookie",
    "session",
    "pat",
    "bearer",
    "sig",
];
const PLAIN_HEADERS: &[&str] = &[
    "accept",
    "content-type",
    "user-agent",
    "accept-language",
    "x-request-id",
];

fn secret_word(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.split(|c: char| !c.is_ascii_alphanumeric()).any(|part| {
        SECRET_WORDS.contains(&part) || part.ends_with("token") || part.ends_with("key") || part.ends_with("secret")
    })
}

fn looks_like_token(value: &str) -> bool {
    let v = value.trim();
    let prefixes = [
        "ghp_",
        "gho_",
        "github_pat_",
        "sk-",
        "xoxb-",
        "xoxp-",
        "glpat-",
        "AKIA",
        "eyJ",
    ];
    if prefixes.iter().any(|p| v.starts_with(p)) {
        return true;
    }
    v.len() >= 24
        && !v.contains(' ')
        && !v.contains('/')
        && v.chars().any(|c| c.is_ascii_digit())
        && v.chars().any(|c| c.is_ascii_alphabetic())
}

/// A literal secret moved into the keyring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MovedSecret {
    pub name: String,
    /// Where it was, e.g. `env.GITHUB_TOKEN` or `headers.Authorization`.
    pub field: String,
    pub value: String,
}

fn secret_name(server: &str, field: &str) -> String {
    let raw = format!("{server}.{field}");
    let cleaned: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let trimmed = cleaned.trim_start_matches('_').to_string();
    if valid_name(&trimmed) {
        trimmed
    } else {
        format!("s{trimmed}")
    }
}

/// Replaces literal secrets in env, headers and the URL with
/// `${keyring:NAME}` references and returns what moved.
pub fn extract_secrets(server: &str, entry: &mut Map<String, Value>) -> Vec<MovedSecret> {
    let mut moved = Vec::new();
    for (section, always) in [("env", false), ("headers", true)] {
        let Some(Value::Object(map)) = entry.get_mut(section) else {
            continue;
        };
        for (k, v) in map.iter_mut() {
            let Some(value) = v.as_str() else { continue };
            if value.contains("${") || value.is_empty() {
                continue;
            }
            let is_secret = if always {
                !PLAIN_HEADERS.contains(&k.to_ascii_lowercase().as_str())
            } else {
                secret_word(k) || looks_like_token(value)
            };
            if !is_secret {
                continue;
            }
            let field = format!("{section}.{k}");
            let name = secret_name(server, &field);
            // Keep a scheme word in the clear so the value still reads right.
            let (prefix, secret) = match value.split_once(' ') {
                Some((scheme, rest))
                    if matches!(scheme.to_ascii_lowercase().as_str(), "bearer" | "basic" | "token") =>
                {
                    (format!("{scheme} "), rest.to_string())
                }
                _ => (String::new(), value.to_string()),
            };
            *v = json!(format!("{prefix}${{keyring:{name}}}"));
            moved.push(MovedSecret {
                name,
                field,
                value: secret,
            });
        }
    }
    if let Some(Value::String(url)) = entry.get_mut("url") {
        if let Ok(mut parsed) = url::Url::parse(url) {
            let mut changed = false;
            if let Some(pw) = parsed.password().map(str::to_string) {
                if !pw.contains("${") {
                    let name = secret_name(server, "url.password");
                    moved.push(MovedSecret {
                        name: name.clone(),
                        field: "url password".into(),
                        value: pw,
                    });
                    let _ = parsed.set_password(Some(&format!("${{keyring:{name}}}")));
                    changed = true;
                }
            }
            let pairs: Vec<(String, String)> = parsed
                .query_pairs()
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
            let mut new_pairs = Vec::new();
            for (k, v) in pairs {
                if secret_word(&k) && !v.contains("${") && !v.is_empty() {
                    let name = secret_name(server, &format!("url.{k}"));
                    moved.push(MovedSecret {
                        name: name.clone(),
                        field: format!("url query {k}"),
                        value: v,
                    });
                    new_pairs.push((k, format!("${{keyring:{name}}}")));
                    changed = true;
                } else {
                    new_pairs.push((k, v));
                }
            }
            if changed {
                let mut text = parsed.to_string();
                if !new_pairs.is_empty() {
                    let base = text.split('?').next().unwrap_or("").to_string();
                    let query: Vec<String> = new_pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    text = format!("{base}?{}", query.join("&"));
                }
                // `url` percent-encodes `${` and `}`; keep references readable.
                *url = text.replace("%24%7B", "${").replace("%7D", "}").replace("$%7B", "${");
            }
        }
    }
    moved
}

#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Add {
        name: String,
        entry: Map<String, Value>,
        secrets: Vec<MovedSecret>,
    },
    Duplicate {
        name: String,
    },
    NameTaken {
        name: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub source: PathBuf,
    pub client: Client,
    pub steps: Vec<Step>,
}

/// Plans an import of `candidates` into mcpool's `existing` config value.
pub fn plan(source: &Path, client: Client, candidates: Vec<Candidate>, existing: &Value) -> Plan {
    let current: BTreeMap<String, Value> = ["mcpServers", "servers"]
        .iter()
        .filter_map(|k| existing.get(*k).and_then(Value::as_object))
        .flat_map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())))
        .collect();
    let mut steps = Vec::new();
    for Candidate { name, mut entry } in candidates {
        let secrets = extract_secrets(&name, &mut entry);
        match current.get(&name) {
            Some(existing_entry) if same_server(existing_entry, &Value::Object(entry.clone())) => {
                steps.push(Step::Duplicate { name })
            }
            Some(_) => steps.push(Step::NameTaken { name }),
            None => steps.push(Step::Add { name, entry, secrets }),
        }
    }
    Plan {
        source: source.to_path_buf(),
        client,
        steps,
    }
}

/// Two entries are the same server when they start the same command or
/// reach the same URL.
fn same_server(a: &Value, b: &Value) -> bool {
    let key = |v: &Value| (v.get("command").cloned(), v.get("args").cloned(), v.get("url").cloned());
    key(a) == key(b)
}

/// Adds the plan's new entries to `existing` (under `mcpServers`).
pub fn apply_to_config(existing: &mut Value, plans: &[Plan]) -> usize {
    if !existing.is_object() {
        *existing = json!({});
    }
    let mut added = 0;
    let Some(root) = existing.as_object_mut() else { return 0 };
    let servers = root.entry("mcpServers").or_insert_with(|| json!({}));
    if !servers.is_object() {
        *servers = json!({});
    }
    let Some(servers) = servers.as_object_mut() else {
        return 0;
    };
    for plan in plans {
        for step in &plan.steps {
            if let Step::Add { name, entry, .. } = step {
                if !servers.contains_key(name) {
                    servers.insert(name.clone(), Value::Object(entry.clone()));
                    added += 1;
                }
            }
        }
    }
    added
}

/// The plan as the user reads it: no secret values, only their new names.
pub fn describe(plan: &Plan) -> String {
    let mut out = format!("From {} ({}):\n", plan.client.label(), plan.source.display());
    if plan.steps.is_empty() {
        out.push_str("  (no MCP servers)\n");
    }
    for step in &plan.steps {
        match step {
            Step::Add { name, entry, secrets } => {
                let what = entry
                    .get("command")
                    .and_then(Value::as_str)
                    .map(|c| format!("local: {c}"))
                    .or_else(|| entry.get("url").and_then(Value::as_str).map(|u| format!("remote: {u}")))
                    .unwrap_or_default();
                out.push_str(&format!("  + add {name} ({what})\n"));
                for s in secrets {
                    out.push_str(&format!(
                        "      secret {} moves to the keyring as '{}'\n",
                        s.field, s.name
                    ));
                }
            }
            Step::Duplicate { name } => out.push_str(&format!("  = skip {name} (already in mcpool)\n")),
            Step::NameTaken { name } => out.push_str(&format!(
                "  ! skip {name} (mcpool already has a different server with this name)\n"
            )),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opencode_and_secrets() {
        let root: Value = serde_json::from_str(&strip_jsonc(
            r#"{ // comment
              "mcp": {
                "gh": {"type": "remote", "url": "https://api.example.test/mcp?api_key=abc123def&x=1", "headers": {"Authorization": "Bearer ghp_abcdefghijklmnopqrstuvwxyz0123"}},
                "fs": {"type": "local", "command": ["npx", "-y", "fs-server"], "environment": {"GITHUB_TOKEN": "tok_1234567890abcdef1234", "DEBUG": "1"}, "enabled": false},
              },
            }"#,
        ))
        .unwrap();
        let found = candidates(Client::OpenCode, &root);
        assert_eq!(found.len(), 2);
        let p = plan(Path::new("/x/opencode.json"), Client::OpenCode, found, &json!({}));
        let text = describe(&p);
        assert!(
            !text.contains("ghp_") && !text.contains("abc123def") && !text.contains("tok_123"),
            "{text}"
        );
        let Step::Add { entry, secrets, .. } = &p.steps[0] else {
            panic!()
        };
        assert_eq!(
            entry["headers"]["Authorization"],
            "Bearer ${keyring:gh.headers.Authorization}"
        );
        assert_eq!(
            entry["url"],
            "https://api.example.test/mcp?api_key=${keyring:gh.url.api_key}&x=1"
        );
        assert_eq!(secrets.len(), 2);
        assert_eq!(secrets[0].value, "ghp_abcdefghijklmnopqrstuvwxyz0123");
        let Step::Add { entry, .. } = &p.steps[1] else { panic!() };
        assert_eq!(entry["command"], "npx");
        assert_eq!(entry["env"]["GITHUB_TOKEN"], "${keyring:fs.env.GITHUB_TOKEN}");
        assert_eq!(entry["env"]["DEBUG"], "1");
        assert_eq!(entry["disabled"], true);
    }

    #[test]
    fn importing_twice_changes_nothing() {
        let root = json!({"mcpServers": {"a": {"command": "srv", "env": {"API_KEY": "k-12345678901234567890"}}}});
        let mut config = json!({});
        let p1 = plan(
            Path::new("c.json"),
            Client::Cursor,
            candidates(Client::Cursor, &root),
            &config,
        );
        assert_eq!(apply_to_config(&mut config, std::slice::from_ref(&p1)), 1);
        let p2 = plan(
            Path::new("c.json"),
            Client::Cursor,
            candidates(Client::Cursor, &root),
            &config,
        );
        assert_eq!(p2.steps, vec![Step::Duplicate { name: "a".into() }]);
        let before = config.clone();
        assert_eq!(apply_to_config(&mut config, &[p2]), 0);
        assert_eq!(config, before);
    }

    #[test]
    fn claude_code_and_vscode_shapes() {
        let cc = json!({"mcpServers": {"u": {"type": "http", "url": "http://127.0.0.1:1/mcp"}},
                        "projects": {"/p": {"mcpServers": {"p": {"type": "stdio", "command": "x"}}}}});
        let names: Vec<String> = candidates(Client::ClaudeCode, &cc)
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(names, vec!["u", "p"]);
        let vs = json!({"servers": {"v": {"type": "sse", "url": "http://127.0.0.1:1/sse"}}});
        let c = candidates(Client::VsCode, &vs);
        assert_eq!(c[0].entry["transport"], "sse");
        assert_eq!(detect(Path::new("mcp.json"), &vs), Client::VsCode);
    }
}
