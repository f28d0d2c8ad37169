//! Unit tests of reading client configs and planning an import.

use super::*;

#[test]
fn opencode_and_secrets() {
    let root: Value = crate::jsonc::value(
        r#"{ // comment
          "mcp": {
            "gh": {"type": "remote", "url": "https://api.example.test/mcp?api_key=abc123def&x=1", "headers": {"Authorization": "Bearer ghp_abcdefghijklmnopqrstuvwxyz0123"}},
            "fs": {"type": "local", "command": ["npx", "-y", "fs-server"], "environment": {"GITHUB_TOKEN": "tok_1234567890abcdef1234", "DEBUG": "1"}, "enabled": false},
          },
        }"#,
    )
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

#[test]
fn a_server_found_in_two_sources_is_added_once() {
    let cursor = json!({"mcpServers": {
        "gh": {"command": "npx", "args": ["gh"], "env": {"GITHUB_TOKEN": "ghp_x1"}},
        "db": {"command": "db-a"}
    }});
    let desktop = json!({"mcpServers": {
        "gh": {"command": "npx", "args": ["gh"], "env": {"GITHUB_TOKEN": "ghp_x1"}},
        "db": {"command": "db-b"}
    }});
    let first = plan(
        Path::new("/c.json"),
        Client::Cursor,
        candidates(Client::Cursor, &cursor),
        &json!({}),
    );
    let second = plan(
        Path::new("/d.json"),
        Client::ClaudeDesktop,
        candidates(Client::ClaudeDesktop, &desktop),
        &json!({}),
    );
    let second = dedupe_against(second, std::slice::from_ref(&first));
    assert_eq!(
        second.steps,
        vec![
            Step::AlsoIn {
                name: "gh".into(),
                source: "/c.json".into()
            },
            Step::Conflict {
                name: "db".into(),
                source: "/c.json".into()
            },
        ]
    );
    expect_test::expect![[r#"
        From Claude Desktop (/d.json):
          = skip gh (the same server as in /c.json)
          ! skip db (a different server with this name comes from /c.json)
    "#]]
    .assert_eq(&describe(&second));
}

#[test]
fn standard_files_are_read_once() {
    let dirs = crate::agent_config::Dirs {
        home: "/h".into(),
        platform_config: "/h/.config".into(),
        xdg_config: "/h/.config".into(),
        claude_config_dir: None,
        codex_home: None,
    };
    let files = standard_files(&dirs);
    let paths: Vec<&Path> = files.iter().map(|(_, p)| p.as_path()).collect();
    let mut unique = paths.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(paths.len(), unique.len(), "{paths:?}");
    assert!(paths.contains(&Path::new("/h/.config/opencode/opencode.jsonc")));
}

#[test]
fn the_windows_files_are_in_appdata_and_the_profile() {
    let env = |name: &str| match name {
        "USERPROFILE" => Some(r"C:\Users\ada".into()),
        "APPDATA" => Some(r"C:\Users\ada\AppData\Roaming".into()),
        _ => None,
    };
    let dirs = crate::agent_config::Dirs::for_platform(crate::os::paths::Platform::Windows, &env, || None);
    let files = standard_files(&dirs);
    let roaming = Path::new(r"C:\Users\ada\AppData\Roaming");
    let profile = Path::new(r"C:\Users\ada");
    let has = |client: Client, path: PathBuf| files.iter().any(|(c, p)| *c == client && *p == path);
    assert!(
        has(
            Client::ClaudeDesktop,
            roaming.join("Claude").join("claude_desktop_config.json")
        ),
        "{files:?}"
    );
    assert!(
        has(Client::VsCode, roaming.join("Code").join("User").join("mcp.json")),
        "{files:?}"
    );
    assert!(has(Client::ClaudeCode, profile.join(".claude.json")), "{files:?}");
    assert!(
        has(Client::Cursor, profile.join(".cursor").join("mcp.json")),
        "{files:?}"
    );
    assert!(
        has(
            Client::OpenCode,
            profile.join(".config").join("opencode").join("opencode.json")
        ),
        "{files:?}"
    );
}
