//! `mcpool import` (SPEC §2): the configs of Claude Desktop, Claude Code,
//! Cursor, VS Code and opencode, written in each client's own format into a
//! fake home, are found, planned, imported with their literal secrets moved
//! into the real keyring, never modified, and the imported servers connect.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use mcpool_core::secrets::{Keyring, SecretStore};
use mcpool_tests::*;
use serde_json::{json, Value};
use tokio::process::Command;

const LIMIT: Duration = Duration::from_secs(20);

const GH_TOKEN: &str = "ghp_R3alLookingT0kenAbcdefGhijklmnopqr12";
const LINEAR_KEY: &str = "lin_api_9f8e7d6c5b4a39281706f5e4d3c2b1a0";
const PG_PASSWORD: &str = "pg-s3cret-pass";
const SEARCH_KEY: &str = "srch-7c1e4b9a2d8f";
const DOCS_KEY: &str = "docs-key-5a6b7c8d";
const JIRA_TOKEN: &str = "ATATT3xFfGF0jira1234567890abcdef";
const SENTRY_TOKEN: &str = "sntrys_eyJpYXQiOjE3MDAwMDAwMDB9_abc";

const SECRETS: &[&str] = &[
    GH_TOKEN,
    LINEAR_KEY,
    PG_PASSWORD,
    SEARCH_KEY,
    DOCS_KEY,
    JIRA_TOKEN,
    SENTRY_TOKEN,
];

/// A fake home with mcpool's own files beside it, not inside it.
struct Setup {
    dir: TempDir,
}

impl Setup {
    fn new(tag: &str) -> Self {
        let dir = TempDir::new(tag);
        std::fs::create_dir_all(dir.path().join("home/.config")).expect("home");
        Setup { dir }
    }
    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }
    fn xdg_config(&self) -> PathBuf {
        self.home().join(".config")
    }
    /// mcpool's config, outside the fake home.
    fn config(&self) -> PathBuf {
        self.dir.path().join("mcpool/config.json")
    }
    fn profile(&self) -> String {
        profile_for(self.dir.path())
    }

    fn write(&self, path: &Path, text: &str) -> PathBuf {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        std::fs::write(path, text).expect("write");
        path.to_path_buf()
    }

    /// `mcpool ARGS` as the user of the fake home, stdin not a terminal.
    async fn mcpool(&self, args: &[&str]) -> anyhow::Result<Output> {
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

    async fn secret_names(&self) -> anyhow::Result<Vec<String>> {
        let o = self.mcpool(&["secret", "list"]).await?;
        assert!(o.status.success(), "{}", stderr(&o));
        Ok(stdout(&o).lines().map(str::to_string).collect())
    }

    /// A secret's value straight from the OS keyring, as `serve` reads it.
    async fn keyring_value(&self, name: &str) -> anyhow::Result<Option<String>> {
        let keyring = Keyring::for_profile(&self.profile());
        let name = name.to_string();
        Ok(tokio::task::spawn_blocking(move || keyring.get(&name)).await??)
    }

    fn read_config(&self) -> anyhow::Result<Value> {
        Ok(serde_json::from_slice(&std::fs::read(self.config())?)?)
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Every file under `root` with its bytes.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.insert(path.clone(), std::fs::read(&path).unwrap_or_default());
            }
        }
    }
    files
}

fn assert_no_secret(text: &str, what: &str) {
    for s in SECRETS {
        assert!(!text.contains(s), "{what} shows the secret {s}:\n{text}");
    }
}

/// The line of the plan about `server`, e.g. `+ add github (local: npx)`.
fn plan_line<'a>(plan: &'a str, server: &str) -> &'a str {
    plan.lines()
        .find(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            words.len() >= 3 && matches!(words[0], "+" | "=" | "!") && words[2] == server
        })
        .unwrap_or("")
}

/// Writes one config per client, in its real format and place.
fn write_clients(s: &Setup) -> Vec<PathBuf> {
    let desktop = s.write(
        &s.xdg_config().join("Claude/claude_desktop_config.json"),
        &serde_json::to_string_pretty(&json!({
            "mcpServers": {
                "github": {
                    "command": "npx",
                    "args": ["-y", "@modelcontextprotocol/server-github"],
                    "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": GH_TOKEN}
                },
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
                "github": {
                    "command": "npx",
                    "args": ["-y", "@modelcontextprotocol/server-github"],
                    "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": GH_TOKEN}
                },
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
fn write_existing(s: &Setup) {
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

#[tokio::test]
async fn dry_run_finds_every_client_and_writes_nothing() -> anyhow::Result<()> {
    let s = Setup::new("import-dry");
    let sources = write_clients(&s);
    write_existing(&s);
    let before = snapshot(s.dir.path());

    let o = s.mcpool(&["import", "--dry-run"]).await?;
    let out = stdout(&o);
    assert!(o.status.success(), "{}\n{out}", stderr(&o));
    assert_no_secret(&out, "the plan");
    assert_no_secret(&stderr(&o), "stderr");

    // Every source is named, with its client.
    for (client, path) in ["Claude Desktop", "Claude Code", "Cursor", "VS Code", "opencode"]
        .iter()
        .zip(&sources)
    {
        let header = format!("From {client} ({}):", path.display());
        assert!(out.lines().any(|l| l == header), "no '{header}' in:\n{out}");
    }
    for server in [
        "github",
        "linear",
        "postgres",
        "search",
        "perplexity",
        "docs",
        "jira",
        "sentry",
    ] {
        assert!(plan_line(&out, server).starts_with("  + add"), "{server}:\n{out}");
    }
    // Already in mcpool, found twice, or a name mcpool uses for another server.
    assert!(plan_line(&out, "filesystem").starts_with("  = skip"), "{out}");
    assert!(plan_line(&out, "filesystem").ends_with("(already in mcpool)"), "{out}");
    assert_eq!(out.matches("add github").count(), 1, "{out}");
    assert_eq!(
        out.matches(&format!(
            "  = skip github (the same server as in {})",
            sources[0].display()
        ))
        .count(),
        1,
        "{out}"
    );
    assert!(plan_line(&out, "fetch").starts_with("  ! skip"), "{out}");

    // Secrets move by name, each said once.
    for (field, name) in [
        (
            "env.GITHUB_PERSONAL_ACCESS_TOKEN",
            "github.env.GITHUB_PERSONAL_ACCESS_TOKEN",
        ),
        ("headers.Authorization", "linear.headers.Authorization"),
        ("env.PGPASSWORD", "postgres.env.PGPASSWORD"),
        ("url query api_key", "search.url.api_key"),
        ("headers.X-Api-Key", "docs.headers.X-Api-Key"),
        ("env.JIRA_API_TOKEN", "jira.env.JIRA_API_TOKEN"),
        ("headers.Authorization", "sentry.headers.Authorization"),
    ] {
        let line = format!("secret {field} moves to the keyring as '{name}'");
        assert_eq!(out.matches(&line).count(), 1, "'{line}' in:\n{out}");
    }
    assert!(!out.contains("JIRA_SITE"), "a plain value is not a secret:\n{out}");
    // The VS Code input is not a literal: the user is told what to set.
    assert!(
        out.contains("mcpool secret set perplexity-key"),
        "the VS Code input needs a secret:\n{out}"
    );
    assert!(out.contains("Dry run: nothing written."), "{out}");

    assert_eq!(snapshot(s.dir.path()), before, "a dry run wrote something");
    assert!(s.secret_names().await?.is_empty());
    Ok(())
}

#[tokio::test]
async fn yes_moves_the_secrets_to_the_keyring_and_never_touches_the_sources() -> anyhow::Result<()> {
    let s = Setup::new("import-yes");
    write_clients(&s);
    let home_before = snapshot(&s.home());

    let o = s.mcpool(&["import", "--yes"]).await?;
    let out = stdout(&o);
    assert!(o.status.success(), "{}\n{out}", stderr(&o));
    assert_no_secret(&out, "stdout");
    assert_no_secret(&stderr(&o), "stderr");
    assert!(
        out.contains(&format!(
            "Added 10 servers to {} (7 secrets moved to the keyring).",
            s.config().display()
        )),
        "{out}"
    );

    // Every source file is byte-identical, and nothing new is in the home.
    assert_eq!(snapshot(&s.home()), home_before, "the import changed the fake home");

    // mcpool's config has references, never a literal secret.
    let text = std::fs::read_to_string(s.config())?;
    assert_no_secret(&text, "mcpool's config");
    let config = s.read_config()?;
    let servers = &config["mcpServers"];
    let mut names: Vec<&String> = servers.as_object().map(|m| m.keys().collect()).unwrap_or_default();
    names.sort();
    assert_eq!(
        names,
        [
            "docs",
            "fetch",
            "filesystem",
            "github",
            "jira",
            "linear",
            "perplexity",
            "postgres",
            "search",
            "sentry"
        ],
        "{config}"
    );
    assert_eq!(
        servers["github"],
        json!({
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-github"],
            "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${keyring:github.env.GITHUB_PERSONAL_ACCESS_TOKEN}"}
        })
    );
    assert_eq!(
        servers["linear"],
        json!({
            "url": "https://mcp.linear.example/mcp",
            "headers": {"Authorization": "Bearer ${keyring:linear.headers.Authorization}"}
        })
    );
    assert_eq!(
        servers["postgres"]["env"]["PGPASSWORD"],
        "${keyring:postgres.env.PGPASSWORD}"
    );
    assert_eq!(
        servers["postgres"]["args"],
        json!(["mcp-server-postgres", "postgresql://shop@localhost/shop"])
    );
    assert_eq!(
        servers["search"]["url"],
        "https://search.example/mcp?api_key=${keyring:search.url.api_key}&region=eu"
    );
    assert_eq!(
        servers["fetch"],
        json!({"command": "uvx", "args": ["mcp-server-fetch"]})
    );
    assert_eq!(
        servers["docs"]["headers"]["X-Api-Key"],
        "${keyring:docs.headers.X-Api-Key}"
    );
    assert_eq!(
        servers["perplexity"]["env"]["PERPLEXITY_API_KEY"],
        "${keyring:perplexity-key}"
    );
    assert_eq!(
        servers["jira"],
        json!({
            "command": "bunx",
            "args": ["jira-mcp", "--site", "acme"],
            "env": {"JIRA_API_TOKEN": "${keyring:jira.env.JIRA_API_TOKEN}", "JIRA_SITE": "acme"}
        })
    );
    assert_eq!(
        servers["sentry"],
        json!({
            "url": "https://mcp.sentry.example/mcp",
            "headers": {"Authorization": "Bearer ${keyring:sentry.headers.Authorization}"},
            "disabled": true
        })
    );

    // The secrets are in the real keyring, under this profile, by name.
    let expected = [
        ("docs.headers.X-Api-Key", DOCS_KEY),
        ("github.env.GITHUB_PERSONAL_ACCESS_TOKEN", GH_TOKEN),
        ("jira.env.JIRA_API_TOKEN", JIRA_TOKEN),
        ("linear.headers.Authorization", LINEAR_KEY),
        ("postgres.env.PGPASSWORD", PG_PASSWORD),
        ("search.url.api_key", SEARCH_KEY),
        ("sentry.headers.Authorization", SENTRY_TOKEN),
    ];
    let listed = s.secret_names().await?;
    assert_eq!(listed, expected.map(|(n, _)| n.to_string()), "mcpool secret list");
    for (name, value) in expected {
        assert_eq!(s.keyring_value(name).await?.as_deref(), Some(value), "{name}");
    }

    // A second import finds nothing new and writes nothing.
    let config_bytes = std::fs::read(s.config())?;
    let all_before = snapshot(s.dir.path());
    let o = s.mcpool(&["import", "--yes"]).await?;
    let out = stdout(&o);
    assert!(o.status.success(), "{}\n{out}", stderr(&o));
    assert!(out.contains("Nothing to import"), "{out}");
    assert!(!out.contains("+ add"), "{out}");
    assert!(!out.contains("moves to the keyring"), "{out}");
    assert_eq!(std::fs::read(s.config())?, config_bytes);
    assert_eq!(snapshot(s.dir.path()), all_before);
    assert_eq!(s.secret_names().await?, listed);
    Ok(())
}

#[tokio::test]
async fn a_file_argument_imports_only_that_file() -> anyhow::Result<()> {
    let s = Setup::new("import-file");
    let sources = write_clients(&s);
    let vscode = &sources[3];
    let before = snapshot(&s.home());

    let o = s.mcpool(&["import", &vscode.display().to_string(), "--yes"]).await?;
    let out = stdout(&o);
    assert!(o.status.success(), "{}\n{out}", stderr(&o));
    let headers: Vec<&str> = out.lines().filter(|l| l.starts_with("From ")).collect();
    assert_eq!(headers, [format!("From VS Code ({}):", vscode.display())], "{out}");
    let config = s.read_config()?;
    let names: Vec<&String> = config["mcpServers"]
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    // In the order the source lists them.
    assert_eq!(names, ["perplexity", "fetch", "docs"], "{config}");
    assert_eq!(
        config["mcpServers"]["perplexity"]["env"]["PERPLEXITY_API_KEY"],
        "${keyring:perplexity-key}"
    );
    assert!(out.contains("Still to set: mcpool secret set perplexity-key"), "{out}");
    assert_eq!(s.secret_names().await?, ["docs.headers.X-Api-Key"]);
    assert_eq!(snapshot(&s.home()), before);

    // A file outside the standard places, e.g. a project's .mcp.json.
    let project = s.write(
        &s.dir.path().join("project/.mcp.json"),
        &serde_json::to_string_pretty(&json!({"mcpServers": {
            "local-db": {"type": "stdio", "command": "db-mcp", "env": {"DB_PASSWORD": "hunter2-db"}}
        }}))?,
    );
    let o = s.mcpool(&["import", &project.display().to_string(), "--yes"]).await?;
    let out = stdout(&o);
    assert!(o.status.success(), "{}\n{out}", stderr(&o));
    assert!(
        out.starts_with(&format!("From Claude Code ({}):", project.display())),
        "{out}"
    );
    assert!(!out.contains("hunter2-db"), "{out}");
    let config = s.read_config()?;
    assert_eq!(
        config["mcpServers"]["local-db"],
        json!({"command": "db-mcp", "env": {"DB_PASSWORD": "${keyring:local-db.env.DB_PASSWORD}"}})
    );
    assert_eq!(config["mcpServers"].as_object().map(|m| m.len()), Some(4), "{config}");

    // A file that is not there fails clearly.
    let o = s.mcpool(&["import", "no-such.json", "--yes"]).await?;
    assert!(!o.status.success());
    assert!(stderr(&o).contains("cannot read no-such.json"), "{}", stderr(&o));
    Ok(())
}

#[tokio::test]
async fn without_yes_and_without_a_terminal_it_refuses() -> anyhow::Result<()> {
    let s = Setup::new("import-refuse");
    write_clients(&s);
    let before = snapshot(s.dir.path());

    let o = s.mcpool(&["import"]).await?;
    assert!(!o.status.success(), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(err.contains("not writing without confirmation"), "{err}");
    assert!(err.contains("--yes"), "{err}");
    assert_no_secret(&stdout(&o), "stdout");
    assert_no_secret(&err, "stderr");
    assert_eq!(snapshot(s.dir.path()), before, "a refused import wrote something");
    assert!(!s.config().exists());
    assert!(s.secret_names().await?.is_empty());
    Ok(())
}

#[tokio::test]
async fn imported_servers_connect_with_their_secrets_from_the_keyring() -> anyhow::Result<()> {
    let s = Setup::new("import-serve");
    let log = s.dir.path().join("spawns.log");
    let secret = "ghp_0nlyTheKeyringKn0wsThisValue1234";
    // A local server that starts only when the secret reached its env.
    let wrapper = s.write(
        &s.dir.path().join("bin/needs-token.sh"),
        &format!(
            "#!/bin/sh\nif [ \"$GITHUB_TOKEN\" != '{secret}' ]; then echo \"wrong GITHUB_TOKEN: $GITHUB_TOKEN\" >&2; exit 1; fi\nexec '{}' stdio --spawn-log '{}'\n",
            bin("mcpool-faulty").display(),
            log.display()
        ),
    );
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))?;
    // A remote server that answers only with the bearer token.
    let remote_token = "sk-remote0123456789abcdefABCDEF";
    let (_remote, remote_url) = faulty_http(
        &s.dir.path().join("remote.log"),
        &["--require-bearer", remote_token, "--name", "remote"],
    )
    .await?;

    s.write(
        &s.xdg_config().join("Claude/claude_desktop_config.json"),
        &serde_json::to_string_pretty(&json!({"mcpServers": {
            "gh": {"command": "sh", "args": [wrapper], "env": {"GITHUB_TOKEN": secret, "LOG_LEVEL": "debug"}}
        }}))?,
    );
    s.write(
        &s.home().join(".cursor/mcp.json"),
        &serde_json::to_string_pretty(&json!({"mcpServers": {
            "remote": {"url": format!("{remote_url}?api_key=k-123456"), "headers": {"Authorization": format!("Bearer {remote_token}")}}
        }}))?,
    );
    let o = s.mcpool(&["import", "--yes"]).await?;
    assert!(o.status.success(), "{}\n{}", stderr(&o), stdout(&o));
    let written = std::fs::read_to_string(s.config())?;
    assert!(
        !written.contains(secret) && !written.contains(remote_token),
        "{written}"
    );
    let config = s.read_config()?;

    // `serve` runs the imported config under the same keyring profile.
    let profile = s.profile();
    let pool = Mcpool::start_with(config, &[("MCPOOL_PROFILE", &profile)]).await?;
    pool.wait_status("gh", "connected", LIMIT).await?;
    pool.wait_status("remote", "connected", LIMIT).await?;
    let agent = pool.agent("/mcp").await?;
    let r = agent.call("gh__echo", json!({"text": "from the keyring"})).await?;
    assert_eq!(text(&r), "from the keyring");
    let r = agent.call("remote__echo", json!({"text": "remote too"})).await?;
    assert_eq!(text(&r), "remote too");
    assert_eq!(count_lines(&log, "start"), 1);
    assert_no_secret_in(&pool.logs(), &[secret, remote_token]);
    Ok(())
}

fn assert_no_secret_in(text: &str, secrets: &[&str]) {
    for s in secrets {
        assert!(!text.contains(s), "{s} leaked:\n{text}");
    }
}
