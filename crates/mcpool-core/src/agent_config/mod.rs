//! Agents' own config files, edited in place so they use mcpool (`mcpool
//! connect CLIENT --write`, the dashboard's "Add to" buttons): where each
//! client keeps its user config, the entry it needs, a plan of the edit, and
//! the write (a backup first, comments and key order kept, idempotent).

mod codex;
pub(crate) mod json;
mod listing;
#[cfg(test)]
mod tests;
mod write;

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::{json, Value};

use crate::config::{ServerSpec, TransportSpec};
use crate::os::paths::Platform;

pub use write::{apply, Written};

/// The clients `mcpool connect` knows, in the order they are listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    ClaudeCode,
    ClaudeDesktop,
    Cursor,
    VsCode,
    OpenCode,
    Gemini,
    Codex,
}

impl Client {
    pub const ALL: [Client; 7] = [
        Client::ClaudeCode,
        Client::ClaudeDesktop,
        Client::Cursor,
        Client::VsCode,
        Client::OpenCode,
        Client::Gemini,
        Client::Codex,
    ];

    /// The `mcpool connect` name.
    pub fn name(self) -> &'static str {
        match self {
            Client::ClaudeCode => "claude-code",
            Client::ClaudeDesktop => "claude-desktop",
            Client::Cursor => "cursor",
            Client::VsCode => "vscode",
            Client::OpenCode => "opencode",
            Client::Gemini => "gemini",
            Client::Codex => "codex",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Client::ClaudeCode => "Claude Code",
            Client::ClaudeDesktop => "Claude Desktop",
            Client::Cursor => "Cursor",
            Client::VsCode => "VS Code",
            Client::OpenCode => "opencode",
            Client::Gemini => "Gemini CLI",
            Client::Codex => "Codex",
        }
    }

    pub fn from_name(name: &str) -> Option<Client> {
        Client::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// The folders the config files live in, read from the environment (HOME,
/// XDG_CONFIG_HOME, CLAUDE_CONFIG_DIR, CODEX_HOME: the agents' own
/// settings; USERPROFILE and APPDATA on Windows) once at start-up, so tests
/// can move them.
#[derive(Debug, Clone)]
pub struct Dirs {
    pub home: PathBuf,
    /// The platform's config folder (`~/.config` on Linux, `~/Library/
    /// Application Support` on macOS, `%APPDATA%` on Windows): Claude
    /// Desktop and VS Code.
    pub platform_config: PathBuf,
    /// `$XDG_CONFIG_HOME` or `~/.config` on every platform: opencode.
    pub xdg_config: PathBuf,
    pub claude_config_dir: Option<PathBuf>,
    pub codex_home: Option<PathBuf>,
}

impl Dirs {
    pub fn from_env() -> Dirs {
        Dirs::for_platform(Platform::CURRENT, &|name| std::env::var_os(name), dirs::home_dir)
    }

    /// The folders of `platform` from the environment `env` (and `home`,
    /// the system's answer when the environment names no home), so that a
    /// test on one platform can check the answers of another.
    ///
    /// Where each client keeps its user config on Windows (`~` is
    /// `%USERPROFILE%`):
    /// - Claude Desktop: `%APPDATA%\Claude\claude_desktop_config.json`
    ///   (<https://modelcontextprotocol.io/quickstart/user>, "Windows:
    ///   %APPDATA%\Claude\claude_desktop_config.json").
    /// - Claude Code: `~\.claude.json`, or in `CLAUDE_CONFIG_DIR`
    ///   (<https://docs.anthropic.com/en/docs/claude-code/settings>).
    /// - Cursor: `~\.cursor\mcp.json` (<https://cursor.com/docs/mcp>,
    ///   global configuration in the home folder).
    /// - VS Code: `%APPDATA%\Code\User\mcp.json`, the user profile's
    ///   folder (<https://code.visualstudio.com/docs/copilot/chat/mcp-servers>).
    /// - Gemini CLI: `~\.gemini\settings.json`
    ///   (<https://geminicli.com/docs/reference/configuration>: "where ~ is
    ///   your home directory").
    /// - Codex: `%CODEX_HOME%\config.toml`, else `~\.codex\config.toml`
    ///   (<https://developers.openai.com/codex/config-basic>).
    /// - opencode: `~\.config\opencode\opencode.json` on every platform,
    ///   Windows too (<https://opencode.ai/docs/config/>: "Global config
    ///   (~/.config/opencode/opencode.json)"; it follows XDG_CONFIG_HOME).
    pub fn for_platform(
        platform: Platform,
        env: &dyn Fn(&str) -> Option<std::ffi::OsString>,
        home: fn() -> Option<PathBuf>,
    ) -> Dirs {
        let var = |name: &str| env(name).filter(|p| platform.is_absolute(p)).map(PathBuf::from);
        let home = match platform {
            // The clients' own answer there (Node's `os.homedir()`, the
            // known Profile folder): HOME, which Wine and Git Bash pass on
            // in Unix form, is not read.
            Platform::Windows => var("USERPROFILE"),
            Platform::Linux | Platform::MacOs => var("HOME"),
        }
        .or_else(home)
        .unwrap_or_default();
        let xdg_config = var("XDG_CONFIG_HOME").unwrap_or_else(|| home.join(".config"));
        let platform_config = match platform {
            Platform::MacOs => home.join("Library").join("Application Support"),
            Platform::Windows => var("APPDATA").unwrap_or_else(|| home.join("AppData").join("Roaming")),
            Platform::Linux => xdg_config.clone(),
        };
        Dirs {
            platform_config,
            xdg_config,
            claude_config_dir: var("CLAUDE_CONFIG_DIR"),
            codex_home: var("CODEX_HOME"),
            home,
        }
    }

    /// The client's user config file, and the folder whose presence says the
    /// client is installed on this machine.
    pub fn location(&self, client: Client) -> (PathBuf, PathBuf) {
        match client {
            Client::ClaudeCode => match &self.claude_config_dir {
                Some(dir) => (dir.join(".claude.json"), dir.clone()),
                None => (self.home.join(".claude.json"), self.home.join(".claude")),
            },
            Client::ClaudeDesktop => {
                let dir = self.platform_config.join("Claude");
                (dir.join("claude_desktop_config.json"), dir)
            }
            Client::Cursor => {
                let dir = self.home.join(".cursor");
                (dir.join("mcp.json"), dir)
            }
            Client::VsCode => {
                let dir = self.platform_config.join("Code").join("User");
                (dir.join("mcp.json"), dir)
            }
            Client::OpenCode => {
                let dir = self.xdg_config.join("opencode");
                let jsonc = dir.join("opencode.jsonc");
                let file = if jsonc.exists() {
                    jsonc
                } else {
                    dir.join("opencode.json")
                };
                (file, dir)
            }
            Client::Gemini => {
                let dir = self.home.join(".gemini");
                (dir.join("settings.json"), dir)
            }
            Client::Codex => {
                let dir = self.codex_home.clone().unwrap_or_else(|| self.home.join(".codex"));
                (dir.join("config.toml"), dir)
            }
        }
    }

    /// Whether the client seems installed: its config file or its folder exists.
    pub fn found(&self, client: Client) -> bool {
        let (file, dir) = self.location(client);
        file.exists() || dir.is_dir()
    }
}

/// How a client reaches mcpool.
#[derive(Debug, Clone)]
pub struct Connection {
    /// `http://HOST:PORT/mcp`.
    pub url: String,
    pub token: String,
    /// `mcpool stdio` for stdio-only clients: the program (an absolute path)
    /// and its arguments.
    pub stdio: Vec<String>,
    /// Whether the stdio bridge gets the token in its environment (the token
    /// came from `MCPOOL_TOKEN`, which the client does not pass on);
    /// otherwise the bridge reads it from the keyring as mcpool does.
    pub stdio_token: bool,
}

impl Connection {
    pub fn bearer(&self) -> String {
        format!("Bearer {}", self.token)
    }
}

/// The absolute path of the `mcpool` binary: this one, or the one beside
/// this program (the tray app), else the name alone (found on PATH).
pub fn mcpool_exe() -> String {
    let exe = std::env::current_exe().ok();
    let candidate = exe.as_ref().and_then(|e| {
        if e.file_stem().is_some_and(|s| s == "mcpool") {
            Some(e.clone())
        } else {
            e.parent().map(|d| d.join("mcpool")).filter(|p| p.is_file())
        }
    });
    candidate.map_or_else(|| "mcpool".to_string(), |p| p.display().to_string())
}

/// The `mcpool` entry the client reads (JSON clients; Codex's TOML table is
/// the same fields).
pub fn entry(client: Client, conn: &Connection) -> Value {
    let headers = json!({"Authorization": conn.bearer()});
    match client {
        Client::ClaudeCode | Client::VsCode => json!({"type": "http", "url": conn.url, "headers": headers}),
        Client::Cursor => json!({"url": conn.url, "headers": headers}),
        Client::OpenCode => json!({"type": "remote", "url": conn.url, "enabled": true, "headers": headers}),
        // `url` is SSE for Gemini CLI; Streamable HTTP is `httpUrl`.
        Client::Gemini => json!({"httpUrl": conn.url, "headers": headers}),
        Client::Codex => json!({"url": conn.url, "http_headers": headers}),
        Client::ClaudeDesktop => {
            let (command, args) = conn
                .stdio
                .split_first()
                .map_or(("mcpool", &[][..]), |(c, a)| (c.as_str(), a));
            let mut e = json!({"command": command, "args": args});
            if conn.stdio_token {
                e["env"] = json!({"MCPOOL_TOKEN": conn.token});
            }
            e
        }
    }
}

/// The snippet a user pastes: the whole file shape for JSON clients, the
/// TOML table for Codex, the `claude mcp add` command for Claude Code.
pub fn snippet(client: Client, conn: &Connection) -> String {
    let wrapped = match client {
        Client::ClaudeCode => {
            return format!(
                "claude mcp add --transport http --scope user mcpool \"{}\" --header \"Authorization: {}\"\n",
                conn.url,
                conn.bearer()
            )
        }
        Client::Codex => return codex::snippet(conn),
        Client::VsCode => json!({"servers": {"mcpool": entry(client, conn)}}),
        Client::OpenCode => {
            json!({"$schema": "https://opencode.ai/config.json", "mcp": {"mcpool": entry(client, conn)}})
        }
        _ => json!({"mcpServers": {"mcpool": entry(client, conn)}}),
    };
    serde_json::to_string_pretty(&wrapped).unwrap_or_default() + "\n"
}

/// One server mcpool serves, as a client's entry would name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Served {
    Command(String, Vec<String>),
    Url(String),
}

/// The enabled servers of mcpool's config.
pub fn served(specs: &[ServerSpec]) -> Vec<Served> {
    specs
        .iter()
        .filter(|s| !s.disabled)
        .map(|s| match &s.transport {
            TransportSpec::Stdio { command, args, .. } => Served::Command(command.clone(), args.clone()),
            TransportSpec::Http { url, .. } | TransportSpec::Sse { url, .. } => Served::Url(url.clone()),
        })
        .collect()
}

/// A server entry found in a client's config.
#[derive(Debug, Clone)]
struct Found {
    name: String,
    server: Served,
    disabled: bool,
}

impl Found {
    fn served_by(&self, served: &[Served]) -> bool {
        served.iter().any(|s| match (s, &self.server) {
            (Served::Command(c, a), Served::Command(c2, a2)) => c == c2 && a == a2,
            (Served::Url(pattern), Served::Url(u)) => url_matches(pattern, u),
            _ => false,
        })
    }
}

/// `pattern` is mcpool's URL, in which `mcpool import` may have turned a
/// secret into `${keyring:NAME}`: each such reference stands for one
/// non-empty value (no `&`, `/`, `?` or `#`); the rest must match byte for byte.
fn url_matches(pattern: &str, url: &str) -> bool {
    let Some(start) = pattern.find("${keyring:") else {
        return pattern == url;
    };
    let Some(len) = pattern[start..].find('}') else {
        return pattern == url;
    };
    let (head, rest) = (&pattern[..start], &pattern[start + len + 1..]);
    let Some(tail) = url.strip_prefix(head) else {
        return false;
    };
    let value_len = tail.find(['&', '/', '?', '#']).unwrap_or(tail.len());
    (1..=value_len).any(|n| tail.is_char_boundary(n) && url_matches(rest, &tail[n..]))
}

/// One change the plan makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Adds the `mcpool` entry.
    Add,
    /// Rewrites an `mcpool` entry that points elsewhere or has an old token.
    Update,
    /// Switches a server off with the client's own setting.
    Disable(String),
    /// Removes a server (the client has no setting to switch it off).
    Remove(String),
}

/// What `--write` would do to one client's file.
#[derive(Debug, Clone)]
pub struct Plan {
    pub client: Client,
    /// The file as the user names it.
    pub path: PathBuf,
    /// Where it is written: a symlink's target, so the link stays.
    target: PathBuf,
    /// The file's text now; `None` when it does not exist yet.
    original: Option<String>,
    /// The file's text after the edit.
    pub updated: String,
    pub changes: Vec<Change>,
    /// Where the original goes first (when there is one).
    pub backup: Option<PathBuf>,
    /// The permission bits of the file written: its own (0600 for a new
    /// file), without any for group and others once it holds the token.
    pub mode: u32,
    /// The file's permission bits now, which its backup keeps.
    backup_mode: u32,
}

impl Plan {
    pub fn up_to_date(&self) -> bool {
        self.changes.is_empty()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{} is not valid {format} (line {line}, column {column}: {message}); it was left untouched", path.display())]
    Parse {
        path: PathBuf,
        format: &'static str,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{}: {what} is not {expected}; it was left untouched", path.display())]
    Shape {
        path: PathBuf,
        what: String,
        expected: &'static str,
    },
    #[error("{} changed since the plan was made; nothing written (run again)", path.display())]
    Changed { path: PathBuf },
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
    /// The file's lock could not be had (the sentence names the file).
    #[error("{0}")]
    Locked(String),
}

/// The edit of one file's text: the new text and what changed.
struct Edited {
    text: String,
    changes: Vec<Change>,
}

/// Plans adding mcpool to `client`'s user config; with `replace`, also
/// switching off the servers of `served` found there. Reads, never writes.
pub fn plan(
    client: Client,
    dirs: &Dirs,
    conn: &Connection,
    served: &[Served],
    replace: bool,
    now: SystemTime,
) -> Result<Plan, WriteError> {
    let (path, _) = dirs.location(client);
    let target = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
    let original = match std::fs::read_to_string(&target) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => return Err(WriteError::Read { path, source }),
    };
    let text = original.as_deref().unwrap_or("");
    let served = if replace { served } else { &[] };
    let edited = match client {
        Client::Codex => codex::edit(&path, text, conn, served)?,
        _ => json::edit(client, &path, text, conn, served)?,
    };
    let backup_mode = match &original {
        Some(_) => file_mode(&target),
        None => 0o600,
    };
    let backup = original
        .as_ref()
        .filter(|_| !edited.changes.is_empty())
        .map(|_| backup_path(&target, now));
    let updated = if edited.changes.is_empty() {
        text.to_string()
    } else {
        edited.text
    };
    // The token opens every server mcpool serves: a file holding it is for
    // its owner alone, whatever others could read before.
    let mode = if holds_token(&updated, conn) {
        backup_mode & !0o077
    } else {
        backup_mode
    };
    Ok(Plan {
        client,
        path,
        target,
        original,
        updated,
        changes: edited.changes,
        backup,
        mode,
        backup_mode,
    })
}

fn holds_token(text: &str, conn: &Connection) -> bool {
    !conn.token.is_empty() && text.contains(&conn.token)
}

/// The plan as the user reads it.
pub fn describe(plan: &Plan, conn: &Connection) -> String {
    let mut out = format!("{}: {}\n", plan.client.label(), plan.path.display());
    if plan.up_to_date() {
        out.push_str("  already up to date: nothing to write\n");
        return out;
    }
    if plan.original.is_none() {
        out.push_str("  creates the file\n");
    }
    let target = if plan.client == Client::ClaudeDesktop {
        format!("stdio bridge: {}", conn.stdio.join(" "))
    } else {
        conn.url.clone()
    };
    for change in &plan.changes {
        match change {
            Change::Add => out.push_str(&format!("  + add mcpool ({target})\n")),
            Change::Update => out.push_str(&format!("  ~ update mcpool ({target})\n")),
            Change::Disable(name) => out.push_str(&format!("  - disable {name} (mcpool serves it)\n")),
            Change::Remove(name) => out.push_str(&format!(
                "  - remove {name} (mcpool serves it; {} has no switch to turn it off; it stays in the backup)\n",
                plan.client.label()
            )),
        }
    }
    if let Some(backup) = &plan.backup {
        out.push_str(&format!("  backup of the current file: {}\n", backup.display()));
    }
    if holds_token(&plan.updated, conn) {
        let was = match &plan.original {
            Some(_) if plan.mode == plan.backup_mode => ", kept".to_string(),
            Some(_) => format!(", was {:04o}", plan.backup_mode),
            None => String::new(),
        };
        out.push_str(&format!(
            "  the file will hold mcpool's token (file mode {:04o}{was})\n",
            plan.mode
        ));
    }
    out
}

fn file_mode(path: &Path) -> u32 {
    crate::os::files::mode_of(path).unwrap_or(crate::os::files::PRIVATE)
}

/// `<file>.mcpool-backup-<YYYYMMDD-HHMMSS>` (UTC), beside the file.
fn backup_path(target: &Path, now: SystemTime) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    target.with_file_name(format!("{name}.mcpool-backup-{}", timestamp(now)))
}

fn timestamp(now: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(now)
        .format("%Y%m%d-%H%M%S")
        .to_string()
}

/// Line and column (1-based, in characters) of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}
