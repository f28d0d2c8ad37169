//! The fake home: each client's config in its real place and format, with literal secrets.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use mcpool_core::secrets::{Keyring, SecretStore};
use mcpool_tests::*;
use serde_json::{json, Value};
use tokio::process::Command;

pub(crate) const LIMIT: Duration = Duration::from_secs(20);

pub(crate) const GH_TOKEN: &str = "ghp_R3alLookingT0kenAbcdefGhijklmnopqr12";
pub(crate) const LINEAR_KEY: &str = "lin_api_9f8e7d6c5b4a39281706f5e4d3c2b1a0";
pub(crate) const PG_PASSWORD: &str = "pg-s3cret-pass";
pub(crate) const SEARCH_KEY: &str = "srch-7c1e4b9a2d8f";
pub(crate) const DOCS_KEY: &str = "docs-key-5a6b7c8d";
pub(crate) const JIRA_TOKEN: &str = "ATATT3xFfGF0jira1234567890abcdef";
pub(crate) const SENTRY_TOKEN: &str = "sntrys_eyJpYXQiOjE3MDAwMDAwMDB9_abc";

pub(crate) const SECRETS: &[&str] = &[
    GH_TOKEN,
    LINEAR_KEY,
    PG_PASSWORD,
    SEARCH_KEY,
    DOCS_KEY,
    JIRA_TOKEN,
    SENTRY_TOKEN,
];

/// A fake home with mcpool's own files beside it, not inside it.
pub(crate) struct Setup {
    pub(crate) dir: TempDir,
}

impl Setup {
    pub(crate) fn new(tag: &str) -> Self {
        let dir = TempDir::new(tag);
        std::fs::create_dir_all(dir.path().join("home/.config")).expect("home");
        Setup { dir }
    }
    pub(crate) fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }
    pub(crate) fn xdg_config(&self) -> PathBuf {
        self.home().join(".config")
    }
    /// mcpool's config, outside the fake home.
    pub(crate) fn config(&self) -> PathBuf {
        self.dir.path().join("mcpool/config.json")
    }
    pub(crate) fn profile(&self) -> String {
        profile_for(self.dir.path())
    }

    pub(crate) fn write(&self, path: &Path, text: &str) -> PathBuf {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        std::fs::write(path, text).expect("write");
        path.to_path_buf()
    }

    /// `mcpool ARGS` as the user of the fake home, stdin not a terminal.
    pub(crate) async fn mcpool(&self, args: &[&str]) -> anyhow::Result<Output> {
        let mut cmd = Command::new(bin("mcpool"));
        cmd.args(args)
            .current_dir(self.dir.path())
            .env("HOME", self.home())
            .env("XDG_CONFIG_HOME", self.xdg_config())
            .env("XDG_DATA_HOME", self.dir.path().join("data"))
            .env("XDG_CACHE_HOME", self.dir.path().join("cache"))
            .env("MCPOOL_CONFIG", self.config())
            .env("MCPOOL_PROFILE", self.profile())
            .env_remove("MCPOOL_TOKEN")
            .env_remove("MCPOOL_LISTEN")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        Ok(tokio::time::timeout(Duration::from_secs(60), cmd.output()).await??)
    }

    pub(crate) async fn secret_names(&self) -> anyhow::Result<Vec<String>> {
        let o = self.mcpool(&["secret", "list"]).await?;
        assert!(o.status.success(), "{}", stderr(&o));
        Ok(stdout(&o).lines().map(str::to_string).collect())
    }

    /// A secret's value straight from the OS keyring, as `serve` reads it.
    pub(crate) async fn keyring_value(&self, name: &str) -> anyhow::Result<Option<String>> {
        let keyring = Keyring::for_profile(&self.profile());
        let name = name.to_string();
        Ok(tokio::task::spawn_blocking(move || keyring.get(&name)).await??)
    }

    pub(crate) fn read_config(&self) -> anyhow::Result<Value> {
        Ok(serde_json::from_slice(&std::fs::read(self.config())?)?)
    }
}

/// Every file under `root` with its bytes.
pub(crate) fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    files_under(root)
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path).unwrap_or_default();
            (path, bytes)
        })
        .collect()
}

pub(crate) fn assert_no_secret(text: &str, what: &str) {
    for s in SECRETS {
        assert!(!text.contains(s), "{what} shows the secret {s}:\n{text}");
    }
}

/// The line of the plan about `server`, e.g. `+ add github (local: npx)`.
pub(crate) fn plan_line<'a>(plan: &'a str, server: &str) -> &'a str {
    plan.lines()
        .find(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            words.len() >= 3 && matches!(words[0], "+" | "=" | "!") && words[2] == server
        })
        .unwrap_or("")
}

/// The GitHub server as Claude Desktop and Cursor both have it.
fn github() -> Value {
    json!({
        "command": "npx",
        "args": ["-y", "@modelcontextprotocol/server-github"],
        "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": GH_TOKEN}
    })
}

/// Writes one config per client, in its real format and place.
pub(crate) fn write_clients(s: &Setup) -> Vec<PathBuf> {
    let desktop = s.write(
        &s.xdg_config().join("Claude/claude_desktop_config.json"),
        &serde_json::to_string_pretty(&json!({
            "mcpServers": {
                "github": github(),
                "filesystem": {
                    "command": "npx",
                    "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/user/notes"]
                }
            },
            "globalShortcut": ""
        }))
        .expect("json"),
    );
    let claude_code = s.write(
        &s.home().join(".claude.json"),
        &serde_json::to_string_pretty(&json!({
            "numStartups": 42,
            "theme": "dark",
            "mcpServers": {
                "linear": {
                    "type": "http",
                    "url": "https://mcp.linear.example/mcp",
                    "headers": {"Authorization": format!("Bearer {LINEAR_KEY}")}
                }
            },
            "projects": {
                "/home/user/shop": {
                    "allowedTools": [],
                    "mcpServers": {
                        "postgres": {
                            "type": "stdio",
                            "command": "uvx",
                            "args": ["mcp-server-postgres", "postgresql://shop@localhost/shop"],
                            "env": {"PGPASSWORD": PG_PASSWORD}
                        }
                    }
                }
            }
        }))
        .expect("json"),
    );
    let cursor = s.write(
        &s.home().join(".cursor/mcp.json"),
        &serde_json::to_string_pretty(&json!({
            "mcpServers": {
                // The same server as in Claude Desktop: added once.
                "github": github(),
                "search": {"url": format!("https://search.example/mcp?api_key={SEARCH_KEY}&region=eu")}
            }
        }))
        .expect("json"),
    );
    let vscode = s.write(
        &s.xdg_config().join("Code/User/mcp.json"),
        &format!(
            r#"{{
  // VS Code asks for these when a server starts.
  "inputs": [
    {{
      "type": "promptString",
      "id": "perplexity-key",
      "description": "Perplexity API Key",
      "password": true
    }},
  ],
  "servers": {{
    /* local servers */
    "perplexity": {{
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "server-perplexity-ask"],
      "env": {{ "PERPLEXITY_API_KEY": "${{input:perplexity-key}}" }},
    }},
    "fetch": {{ "type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"], }},
    // a remote one, with a key in a header
    "docs": {{
      "type": "http",
      "url": "https://docs.example/mcp", // not a comment inside "https://"
      "headers": {{ "X-Api-Key": "{DOCS_KEY}" }},
    }},
  }},
}}
"#
        ),
    );
    let opencode = s.write(
        &s.xdg_config().join("opencode/opencode.json"),
        &serde_json::to_string_pretty(&json!({
            "$schema": "https://opencode.ai/config.json",
            "theme": "opencode",
            "mcp": {
                "jira": {
                    "type": "local",
                    "command": ["bunx", "jira-mcp", "--site", "acme"],
                    "environment": {"JIRA_API_TOKEN": JIRA_TOKEN, "JIRA_SITE": "acme"},
                    "enabled": true
                },
                "sentry": {
                    "type": "remote",
                    "url": "https://mcp.sentry.example/mcp",
                    "headers": {"Authorization": format!("Bearer {SENTRY_TOKEN}")},
                    "enabled": false
                }
            }
        }))
        .expect("json"),
    );
    vec![desktop, claude_code, cursor, vscode, opencode]
}

/// mcpool's config before the import: one server already there, one name
/// already taken by a different server.
pub(crate) fn write_existing(s: &Setup) {
    s.write(
        &s.config(),
        &serde_json::to_string_pretty(&json!({"mcpServers": {
            "filesystem": {
                "command": "npx",
                "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/user/notes"]
            },
            "fetch": {"command": "my-own-fetch"}
        }}))
        .expect("json"),
    );
}
