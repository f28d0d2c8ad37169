//! `mcpool import`: read the MCP servers of other clients' configs (Claude
//! Desktop, Claude Code, Cursor, VS Code, opencode), plan what to add, move
//! literal secrets into the keyring, and never touch the source files.

pub(crate) mod secrets;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

pub use secrets::{extract_secrets, Extracted, MovedSecret, NeededSecret};

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

/// The standard config files of each client on this platform: the places
/// of `agent_config::Dirs` (which cites each client's documentation), VS
/// Code's older `settings.json` beside its `mcp.json`, and opencode's files
/// in the platform's config folder as well as in `~/.config`.
pub fn standard_files(dirs: &crate::agent_config::Dirs) -> Vec<(Client, PathBuf)> {
    let (home, config_dir, xdg) = (&dirs.home, &dirs.platform_config, &dirs.xdg_config);
    let vscode = config_dir.join("Code").join("User");
    let opencode = |dir: &Path, name: &str| dir.join("opencode").join(name);
    let mut files = vec![
        (
            Client::ClaudeDesktop,
            config_dir.join("Claude").join("claude_desktop_config.json"),
        ),
        (Client::ClaudeCode, home.join(".claude.json")),
        (Client::Cursor, home.join(".cursor").join("mcp.json")),
        (Client::VsCode, vscode.join("mcp.json")),
        (Client::VsCode, vscode.join("settings.json")),
        (Client::OpenCode, opencode(xdg, "opencode.json")),
        (Client::OpenCode, opencode(xdg, "opencode.jsonc")),
        (Client::OpenCode, opencode(config_dir, "opencode.json")),
        (Client::OpenCode, opencode(config_dir, "opencode.jsonc")),
        (Client::OpenCode, opencode(&home.join(".config"), "opencode.json")),
        (Client::OpenCode, opencode(&home.join(".config"), "opencode.jsonc")),
    ];
    // XDG_CONFIG_HOME is often ~/.config: read each file once.
    let mut seen = std::collections::BTreeSet::new();
    files.retain(|(_, path)| seen.insert(path.clone()));
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
    } else if name == ".claude.json" || name == ".mcp.json" || root.get("projects").is_some() {
        Client::ClaudeCode
    } else if name == "claude_desktop_config.json" {
        Client::ClaudeDesktop
    } else {
        Client::Cursor
    }
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

#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Add {
        name: String,
        entry: Map<String, Value>,
        /// Literal secrets that move to the keyring.
        secrets: Vec<MovedSecret>,
        /// Secrets the entry refers to that the user still has to set.
        needed: Vec<NeededSecret>,
    },
    /// mcpool already has this server.
    Duplicate { name: String },
    /// mcpool has a different server under this name.
    NameTaken { name: String },
    /// An earlier source of this import adds the same server.
    AlsoIn { name: String, source: PathBuf },
    /// An earlier source of this import adds a different server under this name.
    Conflict { name: String, source: PathBuf },
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
        let Extracted { moved, needed } = extract_secrets(&name, &mut entry);
        match current.get(&name) {
            Some(existing_entry) if same_server(existing_entry, &Value::Object(entry.clone())) => {
                steps.push(Step::Duplicate { name })
            }
            Some(_) => steps.push(Step::NameTaken { name }),
            None => steps.push(Step::Add {
                name,
                entry,
                secrets: moved,
                needed,
            }),
        }
    }
    Plan {
        source: source.to_path_buf(),
        client,
        steps,
    }
}

/// Turns the additions of `plan` that an `earlier` plan of the same import
/// already adds into [`Step::AlsoIn`] (same server) or [`Step::Conflict`].
pub fn dedupe_against(mut plan: Plan, earlier: &[Plan]) -> Plan {
    for step in &mut plan.steps {
        let Step::Add { name, entry, .. } = step else { continue };
        let first = earlier.iter().find_map(|p| {
            p.steps.iter().find_map(|s| match s {
                Step::Add { name: n, entry: e, .. } if n == name => Some((p.source.clone(), e)),
                _ => None,
            })
        });
        if let Some((source, first_entry)) = first {
            let same = same_server(&Value::Object(first_entry.clone()), &Value::Object(entry.clone()));
            let name = name.clone();
            *step = if same {
                Step::AlsoIn { name, source }
            } else {
                Step::Conflict { name, source }
            };
        }
    }
    plan
}

/// Two entries are the same server when they start the same command or
/// reach the same URL.
fn same_server(a: &Value, b: &Value) -> bool {
    let key = |v: &Value| (v.get("command").cloned(), v.get("args").cloned(), v.get("url").cloned());
    key(a) == key(b)
}

/// The plans' new entries, by name, each once: what an import adds to the
/// file (in place, through `editing::add_entries`).
pub fn added_entries(plans: &[Plan]) -> Vec<(String, Map<String, Value>)> {
    let mut out: Vec<(String, Map<String, Value>)> = Vec::new();
    for step in plans.iter().flat_map(|p| &p.steps) {
        if let Step::Add { name, entry, .. } = step {
            if !out.iter().any(|(n, _)| n == name) {
                out.push((name.clone(), entry.clone()));
            }
        }
    }
    out
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
            Step::Add {
                name,
                entry,
                secrets,
                needed,
            } => {
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
                for n in needed {
                    out.push_str(&format!(
                        "      {} asks VS Code for an input: store it with `mcpool secret set {}`\n",
                        n.field, n.name
                    ));
                }
            }
            Step::Duplicate { name } => out.push_str(&format!("  = skip {name} (already in mcpool)\n")),
            Step::NameTaken { name } => out.push_str(&format!(
                "  ! skip {name} (mcpool already has a different server with this name)\n"
            )),
            Step::AlsoIn { name, source } => out.push_str(&format!(
                "  = skip {name} (the same server as in {})\n",
                source.display()
            )),
            Step::Conflict { name, source } => out.push_str(&format!(
                "  ! skip {name} (a different server with this name comes from {})\n",
                source.display()
            )),
        }
    }
    out
}
