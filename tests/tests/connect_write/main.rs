//! `mcpool connect CLIENT --write`: the real binary edits each client's user
//! config in a temporary HOME, from fixtures in each client's documented
//! format (JSONC with comments, TOML for Codex). The whole text after the edit
//! is compared with an expected file (`UPDATE_FIXTURES=1` rewrites them).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use mcpool_tests::*;
use serde_json::{json, Value};
use tokio::process::Command;

const LISTEN: &str = "127.0.0.1:7410";
const TOKEN: &str = "test-token-5f2a";

/// Each client, its file under HOME, and what `--replace` switches off there.
const CLIENTS: [(&str, &str, &[&str]); 7] = [
    ("claude-code", ".claude.json", &["remove fs", "remove gh"]),
    (
        "claude-desktop",
        ".config/Claude/claude_desktop_config.json",
        &["remove fs"],
    ),
    ("cursor", ".cursor/mcp.json", &["remove gh"]),
    ("vscode", ".config/Code/User/mcp.json", &["remove fs", "remove gh"]),
    (
        "opencode",
        ".config/opencode/opencode.json",
        &["disable fs", "disable gh"],
    ),
    ("gemini", ".gemini/settings.json", &["disable fs", "disable gh"]),
    ("codex", ".codex/config.toml", &["disable fs", "disable gh"]),
];

struct Home {
    dir: TempDir,
    listen: String,
    token: String,
}

impl Home {
    fn new(tag: &str) -> Home {
        let home = Home {
            dir: TempDir::new(tag),
            listen: LISTEN.into(),
            token: TOKEN.into(),
        };
        // What mcpool serves: `notes` is in its config but disabled there.
        let config = json!({"mcpServers": {
            "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me"]},
            "github": {"url": "https://api.githubcopilot.com/mcp/", "headers": {"Authorization": "Bearer ${keyring:github_token}"}},
            "notes": {"command": "uvx", "args": ["notes-mcp"], "disabled": true}
        }});
        std::fs::write(home.path("mcpool.json"), config.to_string()).unwrap();
        home
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn put(&self, rel: &str, text: &str, mode: u32) {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    fn backups(&self, rel: &str) -> Vec<PathBuf> {
        let path = self.path(rel);
        let prefix = format!("{}.mcpool-backup-", path.file_name().unwrap().to_string_lossy());
        let mut found: Vec<PathBuf> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(&prefix))
            .collect();
        found.sort();
        found
    }

    async fn run(&self, args: &[&str]) -> anyhow::Result<(Output, String, String)> {
        let home = self.dir.path();
        let out = Command::new(bin("mcpool"))
            .arg("connect")
            .args(args)
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .env("XDG_CACHE_HOME", home.join(".cache"))
            .env("MCPOOL_LISTEN", &self.listen)
            .env("MCPOOL_TOKEN", &self.token)
            .env("MCPOOL_CONFIG", home.join("mcpool.json"))
            .env("MCPOOL_PROFILE", profile_for(home))
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(Duration::from_secs(30), out).await??;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        Ok((out, stdout, stderr))
    }
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/connect_write/fixtures")
}

fn fixture(name: &str) -> String {
    let text = std::fs::read_to_string(fixtures().join(name)).unwrap_or_default();
    text.replace("@MCPOOL@", &bin("mcpool").display().to_string())
}

/// The whole text must equal the expected file.
fn expect_file(name: &str, actual: &str) {
    if std::env::var_os("UPDATE_FIXTURES").is_some() {
        let generic = actual.replace(&bin("mcpool").display().to_string(), "@MCPOOL@");
        std::fs::write(fixtures().join(name), generic).unwrap();
        return;
    }
    assert_eq!(
        actual,
        fixture(name),
        "{name}: the written file differs from the expected one"
    );
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// The plan's "- disable X" / "- remove X" lines, as "disable X".
fn switched_off(plan: &str) -> Vec<String> {
    plan.lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .map(|l| l.split(" (").next().unwrap_or(l).to_string())
        .collect()
}

#[tokio::test]
async fn each_client_is_edited_in_place_with_a_backup_and_only_once() -> anyhow::Result<()> {
    let home = Home::new("connect-write");
    for (client, rel, replaced) in CLIENTS {
        let input = fixture(&format!("{client}.in"));
        home.put(rel, &input, 0o640);
        let file = home.path(rel);

        // --dry-run: the plan, nothing written.
        let (o, stdout, stderr) = home.run(&[client, "--write", "--dry-run"]).await?;
        assert!(o.status.success(), "{client}: {stderr}");
        assert!(stdout.contains(&file.display().to_string()), "{client}: {stdout}");
        assert!(stdout.contains("+ add mcpool"), "{client}: {stdout}");
        assert!(stdout.contains("backup of the current file:"), "{client}: {stdout}");
        assert!(stdout.contains("Dry run: nothing written."), "{client}: {stdout}");
        assert_eq!(home.read(rel), input, "{client}: a dry run wrote");
        assert!(home.backups(rel).is_empty(), "{client}");

        // No terminal and no --yes: a refusal, nothing written.
        let (o, _, stderr) = home.run(&[client, "--write"]).await?;
        assert!(!o.status.success(), "{client}");
        assert!(
            stderr.contains("not writing without confirmation: run again with --yes"),
            "{client}: {stderr}"
        );
        assert_eq!(home.read(rel), input, "{client}");

        // --write --yes: mcpool added, everything else kept as it was.
        let (o, stdout, stderr) = home.run(&[client, "--write", "--yes"]).await?;
        assert!(o.status.success(), "{client}: {stderr}");
        assert!(
            stdout.contains(&format!("Wrote {}", file.display())),
            "{client}: {stdout}"
        );
        let written = home.read(rel);
        expect_file(&format!("{client}.out"), &written);
        if client != "claude-desktop" {
            assert!(written.contains(&format!("Bearer {TOKEN}")), "{client}: {written}");
        }
        let backups = home.backups(rel);
        assert_eq!(backups.len(), 1, "{client}: {backups:?}");
        assert_eq!(
            std::fs::read_to_string(&backups[0])?,
            input,
            "{client}: the backup differs"
        );
        assert_eq!(mode(&backups[0]), 0o640, "{client}: backup mode");
        // Holding the token, the file is the owner's alone; Claude Desktop's
        // bridge entry holds none here (the token is in the keyring).
        let private = if written.contains(TOKEN) { 0o600 } else { 0o640 };
        assert_eq!(mode(&file), private, "{client}: file mode");

        // Again: nothing to do, no new backup.
        let (o, stdout, _) = home.run(&[client, "--write", "--yes"]).await?;
        assert!(o.status.success(), "{client}");
        assert!(stdout.contains("already up to date"), "{client}: {stdout}");
        assert_eq!(home.read(rel), written, "{client}");
        assert_eq!(home.backups(rel).len(), 1, "{client}");

        // --replace: exactly the servers mcpool serves are switched off.
        let (o, stdout, stderr) = home.run(&[client, "--write", "--yes", "--replace"]).await?;
        assert!(o.status.success(), "{client}: {stderr}");
        assert_eq!(switched_off(&stdout), replaced, "{client}: {stdout}");
        expect_file(&format!("{client}.replaced"), &home.read(rel));
        let backups = home.backups(rel);
        assert_eq!(backups.len(), 2, "{client}: {backups:?}");
        let (o, stdout, _) = home.run(&[client, "--write", "--yes", "--replace"]).await?;
        assert!(
            o.status.success() && stdout.contains("already up to date"),
            "{client}: {stdout}"
        );
        assert_eq!(home.backups(rel).len(), 2, "{client}");
    }
    Ok(())
}

#[tokio::test]
async fn a_file_that_does_not_parse_is_named_and_left_alone() -> anyhow::Result<()> {
    let home = Home::new("connect-bad");
    let cases = [
        (
            "cursor",
            ".cursor/mcp.json",
            "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"}\n    \"b\": {\"command\": \"y\"}\n  }\n}\n",
            "line 3, column 26",
        ),
        (
            "codex",
            ".codex/config.toml",
            "[mcp_servers.a]\ncommand = \"x\"\nargs = [\"y\"\n",
            "line 3, column 12",
        ),
    ];
    for (client, rel, text, at) in cases {
        home.put(rel, text, 0o600);
        let (o, _, stderr) = home.run(&[client, "--write", "--yes"]).await?;
        assert!(!o.status.success(), "{client}");
        assert!(
            stderr.contains(&home.path(rel).display().to_string()),
            "{client}: {stderr}"
        );
        assert!(stderr.contains(at), "{client}: {stderr}");
        assert!(stderr.contains("it was left untouched"), "{client}: {stderr}");
        assert_eq!(home.read(rel), text, "{client}");
        assert!(home.backups(rel).is_empty(), "{client}");
    }
    Ok(())
}

#[tokio::test]
async fn a_missing_file_is_created_private() -> anyhow::Result<()> {
    let home = Home::new("connect-new");
    let (o, stdout, stderr) = home.run(&["gemini", "--write", "--yes"]).await?;
    assert!(o.status.success(), "{stderr}");
    assert!(stdout.contains("creates the file"), "{stdout}");
    assert!(stdout.contains("file mode 0600"), "{stdout}");
    let file = home.path(".gemini/settings.json");
    assert_eq!(mode(&file), 0o600);
    let v: Value = serde_json::from_str(&home.read(".gemini/settings.json"))?;
    assert_eq!(
        v["mcpServers"]["mcpool"]["httpUrl"],
        "http://127.0.0.1:7410/mcp?toolListing=auto"
    );
    assert!(home.backups(".gemini/settings.json").is_empty());
    Ok(())
}

#[tokio::test]
async fn a_readable_file_that_gets_the_token_becomes_private() -> anyhow::Result<()> {
    let home = Home::new("connect-private");
    let rel = ".cursor/mcp.json";
    home.put(rel, "{\n  \"mcpServers\": {}\n}\n", 0o644);
    let (o, stdout, stderr) = home.run(&["cursor", "--write", "--dry-run"]).await?;
    assert!(o.status.success(), "{stderr}");
    assert!(
        stdout.contains("the file will hold mcpool's token (file mode 0600, was 0644)"),
        "{stdout}"
    );
    assert_eq!(mode(&home.path(rel)), 0o644, "a dry run changed nothing");

    let (o, _, stderr) = home.run(&["cursor", "--write", "--yes"]).await?;
    assert!(o.status.success(), "{stderr}");
    assert!(home.read(rel).contains(TOKEN));
    assert_eq!(mode(&home.path(rel)), 0o600, "only its owner reads the token");
    let backups = home.backups(rel);
    assert_eq!(backups.len(), 1, "{backups:?}");
    assert_eq!(
        mode(&backups[0]),
        0o644,
        "the backup holds no token: its mode is the file's own"
    );
    Ok(())
}

/// What `--write` puts in the files really reaches the instance.
#[tokio::test]
async fn written_entries_reach_the_instance() -> anyhow::Result<()> {
    let (dir, log) = TempDir::with_spawn_log("connect-live");
    let pool = Mcpool::start(json!({"mcpServers": {"f": faulty_stdio(&log, &[])}})).await?;
    let mut home = Home::new("connect-live-home");
    home.listen = format!("127.0.0.1:{}", pool.port);
    home.token = pool.token.clone();

    let (o, _, stderr) = home.run(&["vscode", "--write", "--yes"]).await?;
    assert!(o.status.success(), "{stderr}");
    let v: Value = serde_json::from_str(&home.read(".config/Code/User/mcp.json"))?;
    let entry = &v["servers"]["mcpool"];
    let header = format!(
        "Authorization: {}",
        entry["headers"]["Authorization"].as_str().unwrap_or("")
    );
    let url = entry["url"].as_str().unwrap_or("");
    assert!(
        url.ends_with("/mcp?toolListing=auto"),
        "VS Code gets the auto listing: {url}"
    );
    let report = python_agent(&["--url", url, "--header", &header, "--scenario", "list,ping"]).await?;
    assert!(report.get("error").is_none(), "{report}");
    // A listing that fits the budget is sent whole: the server's own tools,
    // not only the meta-tools.
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    assert!(tools.contains(&"f__echo"), "{tools:?}");

    // The user's choice wins over the client's default.
    let (o, _, stderr) = home
        .run(&["vscode", "--write", "--yes", "--tool-listing", "all"])
        .await?;
    assert!(o.status.success(), "{stderr}");
    let v: Value = serde_json::from_str(&home.read(".config/Code/User/mcp.json"))?;
    let url = v["servers"]["mcpool"]["url"].as_str().unwrap_or("");
    assert!(url.ends_with("/mcp?toolListing=all"), "{url}");
    let (o, _, stderr) = home.run(&["claude-code", "--write", "--yes"]).await?;
    assert!(o.status.success(), "{stderr}");
    let v: Value = serde_json::from_str(&home.read(".claude.json"))?;
    let url = v["mcpServers"]["mcpool"]["url"].as_str().unwrap_or("");
    assert!(
        url.ends_with("/mcp?toolListing=all"),
        "Claude Code searches tools itself: {url}"
    );

    // Claude Desktop: the stdio bridge, run exactly as the entry says.
    let (o, _, stderr) = home.run(&["claude-desktop", "--write", "--yes"]).await?;
    assert!(o.status.success(), "{stderr}");
    let v: Value = serde_json::from_str(&home.read(".config/Claude/claude_desktop_config.json"))?;
    let entry = &v["mcpServers"]["mcpool"];
    let mut argv = vec![entry["command"].as_str().unwrap_or("").to_string()];
    argv.extend(
        entry["args"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a.as_str().map(String::from)),
    );
    assert_eq!(argv[0], bin("mcpool").display().to_string());
    assert_eq!(
        argv[1..],
        ["stdio", "--listen", home.listen.as_str(), "--tool-listing", "auto"]
    );
    let token = entry["env"]["MCPOOL_TOKEN"].as_str().unwrap_or("");
    let report = python_agent_with_env(
        &["--stdio-cmd", &argv.join(" "), "--scenario", "ping"],
        &[("MCPOOL_TOKEN", token), ("MCPOOL_PROFILE", &profile_for(dir.path()))],
    )
    .await?;
    assert!(report.get("error").is_none(), "{report}");
    Ok(())
}
