use super::*;
use std::time::UNIX_EPOCH;

fn conn() -> Connection {
    Connection {
        url: "http://127.0.0.1:7410/mcp".into(),
        token: "T0K".into(),
        stdio: vec!["/opt/mcpool".into(), "stdio".into()],
        stdio_token: false,
    }
}

fn edit(client: Client, text: &str, served: &[Served]) -> Result<Edited, WriteError> {
    let path = Path::new("cfg");
    match client {
        Client::Codex => codex::edit(path, text, &conn(), served),
        _ => json::edit(client, path, text, &conn(), served),
    }
}

#[test]
fn jsonc_keeps_comments_and_order() {
    let text = "{\n  // mine\n  \"theme\": \"dark\",\n  \"mcpServers\": {\n    \"fs\": {\"command\": \"npx\", \"args\": [\"fs\"]}, // trailing\n  },\n}\n";
    let e = edit(Client::Cursor, text, &[]).unwrap();
    assert_eq!(e.changes, [Change::Add]);
    assert!(
        e.text.starts_with("{\n  // mine\n  \"theme\": \"dark\",\n"),
        "{}",
        e.text
    );
    assert!(e.text.contains("// trailing"), "{}", e.text);
    let v: Value = crate::jsonc::value(&e.text).unwrap();
    assert_eq!(v["mcpServers"]["mcpool"]["headers"]["Authorization"], "Bearer T0K");
    assert_eq!(v["mcpServers"]["fs"]["command"], "npx");
    // Again: nothing to do.
    let again = edit(Client::Cursor, &e.text, &[]).unwrap();
    assert!(again.changes.is_empty());
}

#[test]
fn new_files_are_whole_documents() {
    for client in Client::ALL {
        let e = edit(client, "", &[]).unwrap();
        assert_eq!(e.changes, [Change::Add], "{client:?}");
        assert!(e.text.ends_with('\n'), "{client:?}: {}", e.text);
        assert!(
            edit(client, &e.text, &[]).unwrap().changes.is_empty(),
            "{client:?}: {}",
            e.text
        );
    }
    let codex = edit(Client::Codex, "", &[]).unwrap().text;
    assert_eq!(
        codex,
        "[mcp_servers.mcpool]\nurl = \"http://127.0.0.1:7410/mcp\"\nhttp_headers = { Authorization = \"Bearer T0K\" }\n"
    );
}

#[test]
fn replace_uses_each_clients_switch() {
    let served = [
        Served::Command("npx".into(), vec!["fs".into()]),
        Served::Url("https://x.test/mcp?key=${keyring:x_key}".into()),
    ];
    let text = r#"{"mcp": {"fs": {"type": "local", "command": ["npx", "fs"]}, "other": {"type": "local", "command": ["npx", "other"]}}}"#;
    let e = edit(Client::OpenCode, text, &served).unwrap();
    assert_eq!(e.changes, [Change::Add, Change::Disable("fs".into())]);
    assert!(e.text.contains("\"enabled\": false"), "{}", e.text);

    let text = r#"{"mcpServers": {"web": {"httpUrl": "https://x.test/mcp?key=abc"}, "web2": {"httpUrl": "https://x.test/mcp?key=abc&more=1"}}}"#;
    let e = edit(Client::Gemini, text, &served).unwrap();
    assert_eq!(e.changes, [Change::Add, Change::Disable("web".into())]);
    let v: Value = serde_json::from_str(&e.text).unwrap();
    assert_eq!(v["mcp"]["excluded"], json!(["web"]));
    assert!(edit(Client::Gemini, &e.text, &served).unwrap().changes.is_empty());

    let text = "[mcp_servers.fs]\ncommand = \"npx\"\nargs = [\"fs\"] # files\n";
    let e = edit(Client::Codex, text, &served).unwrap();
    assert_eq!(e.changes, [Change::Add, Change::Disable("fs".into())]);
    assert!(
        e.text
            .starts_with("[mcp_servers.fs]\ncommand = \"npx\"\nargs = [\"fs\"] # files\nenabled = false\n"),
        "{}",
        e.text
    );

    let text = r#"{"mcpServers": {"fs": {"command": "npx", "args": ["fs"]}, "keep": {"command": "npx"}}}"#;
    let e = edit(Client::Cursor, text, &served).unwrap();
    assert_eq!(e.changes, [Change::Add, Change::Remove("fs".into())]);
    let v: Value = serde_json::from_str(&e.text).unwrap();
    assert!(v["mcpServers"].get("fs").is_none());
    assert!(v["mcpServers"].get("keep").is_some());
}

#[test]
fn malformed_files_name_line_and_column() {
    let e = edit(Client::Cursor, "{\n  \"a\": 1\n  \"b\": 2\n}\n", &[])
        .err()
        .unwrap();
    let WriteError::Parse { line, column, .. } = e else {
        panic!("{e}")
    };
    // Where the comma is missing: after `1`.
    assert_eq!((line, column), (2, 9));
    let e = edit(Client::Codex, "[a]\nx = = 1\n", &[]).err().unwrap();
    let WriteError::Parse { line, .. } = e else {
        panic!("{e}")
    };
    assert_eq!(line, 2);
    assert!(matches!(
        edit(Client::Cursor, "[1]", &[]),
        Err(WriteError::Shape { .. })
    ));
}

#[test]
fn urls_match_through_keyring_references() {
    assert!(url_matches("https://a.test/mcp", "https://a.test/mcp"));
    assert!(!url_matches("https://a.test/mcp", "https://a.test/mcp2"));
    assert!(url_matches(
        "https://a.test/?k=${keyring:k}&x=1",
        "https://a.test/?k=secret&x=1"
    ));
    assert!(!url_matches(
        "https://a.test/?k=${keyring:k}&x=1",
        "https://a.test/?k=&x=1"
    ));
    assert!(!url_matches(
        "https://a.test/?k=${keyring:k}",
        "https://a.test/?k=s&other=2"
    ));
}

#[test]
fn backup_names_carry_utc_time() {
    let t = UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
    assert_eq!(timestamp(t), "20231114-221320");
    assert_eq!(
        backup_path(Path::new("/h/.cursor/mcp.json"), t),
        Path::new("/h/.cursor/mcp.json.mcpool-backup-20231114-221320")
    );
}

/// A Windows user's environment as Windows (or Wine) gives it, with the
/// Unix HOME that Wine passes on.
fn windows_env(name: &str) -> Option<std::ffi::OsString> {
    let value = match name {
        "USERPROFILE" => r"C:\Users\ada",
        "APPDATA" => r"C:\Users\ada\AppData\Roaming",
        "LOCALAPPDATA" => r"C:\Users\ada\AppData\Local",
        "HOME" => "/home/ada",
        _ => return None,
    };
    Some(value.into())
}

fn no_home() -> Option<PathBuf> {
    None
}

#[test]
fn each_client_has_its_windows_place() {
    let dirs = Dirs::for_platform(Platform::Windows, &windows_env, no_home);
    let profile = PathBuf::from(r"C:\Users\ada");
    let roaming = PathBuf::from(r"C:\Users\ada\AppData\Roaming");
    let file = |c| dirs.location(c).0;
    assert_eq!(
        file(Client::ClaudeDesktop),
        roaming.join("Claude").join("claude_desktop_config.json")
    );
    assert_eq!(file(Client::ClaudeCode), profile.join(".claude.json"));
    assert_eq!(file(Client::Cursor), profile.join(".cursor").join("mcp.json"));
    assert_eq!(file(Client::VsCode), roaming.join("Code").join("User").join("mcp.json"));
    assert_eq!(file(Client::Gemini), profile.join(".gemini").join("settings.json"));
    assert_eq!(file(Client::Codex), profile.join(".codex").join("config.toml"));
    assert_eq!(
        file(Client::OpenCode),
        profile.join(".config").join("opencode").join("opencode.json")
    );
    // The clients' own variables still move them, in Windows form only.
    let moved = |name: &str| match name {
        "CODEX_HOME" => Some(r"D:\codex".into()),
        "CLAUDE_CONFIG_DIR" => Some("/unix/claude".into()),
        _ => windows_env(name),
    };
    let dirs = Dirs::for_platform(Platform::Windows, &moved, no_home);
    assert_eq!(
        dirs.location(Client::Codex).0,
        PathBuf::from(r"D:\codex").join("config.toml")
    );
    assert_eq!(dirs.location(Client::ClaudeCode).0, profile.join(".claude.json"));
    // No APPDATA: the profile's own Roaming folder.
    let bare = |name: &str| (name == "USERPROFILE").then(|| r"C:\Users\ada".into());
    let dirs = Dirs::for_platform(Platform::Windows, &bare, no_home);
    let roaming = profile.join("AppData").join("Roaming");
    assert_eq!(
        dirs.location(Client::VsCode).0,
        roaming.join("Code").join("User").join("mcp.json")
    );
}

#[test]
fn the_linux_and_macos_places_are_unchanged() {
    let env = |name: &str| (name == "HOME").then(|| "/home/ada".into());
    let places = [
        (
            Platform::Linux,
            Client::ClaudeDesktop,
            "/home/ada/.config/Claude/claude_desktop_config.json",
        ),
        (Platform::Linux, Client::VsCode, "/home/ada/.config/Code/User/mcp.json"),
        (Platform::Linux, Client::ClaudeCode, "/home/ada/.claude.json"),
        (
            Platform::MacOs,
            Client::ClaudeDesktop,
            "/home/ada/Library/Application Support/Claude/claude_desktop_config.json",
        ),
        (
            Platform::MacOs,
            Client::OpenCode,
            "/home/ada/.config/opencode/opencode.json",
        ),
    ];
    for (platform, client, place) in places {
        let dirs = Dirs::for_platform(platform, &env, no_home);
        assert_eq!(dirs.location(client).0, Path::new(place), "{client:?} on {platform:?}");
    }
}
