use std::path::PathBuf;

use serde_json::json;

use super::*;
use crate::secrets::MemoryStore;

const FILE: &str = r#"{
  // Servers of the team; keep in name order.
  "approveNewTools": "auto",
  "mcpServers": {
    /* the file system, read-only */
    "fs": {
      "command": "srv", // the binary
      "args": ["--root", "/tmp"]
    }
  }
}
"#;

struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str, text: Option<&str>) -> Dir {
        let dir = std::env::temp_dir().join(format!("mcpool-edit-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        if let Some(text) = text {
            std::fs::write(dir.join("config.json"), text).unwrap();
        }
        Dir(dir)
    }
    fn path(&self) -> PathBuf {
        self.0.join("config.json")
    }
    fn text(&self) -> String {
        std::fs::read_to_string(self.path()).unwrap()
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn change(body: serde_json::Value) -> ServerChange {
    ServerChange::from_body(&body).unwrap()
}

fn field_of(e: EditError) -> (Option<String>, String) {
    match e {
        EditError::Field { field, message } => (field, message),
        other => panic!("expected a field error, got {other:?}"),
    }
}

#[test]
fn add_keeps_comments_puts_secrets_in_the_keyring_and_backs_up() {
    let dir = Dir::new("add", Some(FILE));
    let store = MemoryStore::default();
    let written = add(
        &dir.path(),
        change(json!({
            "name": "gh",
            "entry": {"command": "npx", "args": ["-y", "gh-mcp"], "env": {"LOG": "info"}},
            "secretEnv": {"GITHUB_TOKEN": "ghp_distinctive_1234"}
        })),
        &store,
    )
    .unwrap();
    assert_eq!(written.secrets, vec!["gh.env.GITHUB_TOKEN".to_string()]);
    assert_eq!(written.backup, Some(backup_path(&dir.path())));
    assert_eq!(std::fs::read_to_string(backup_path(&dir.path())).unwrap(), FILE);
    let text = dir.text();
    expect_test::expect![[r#"
        {
          // Servers of the team; keep in name order.
          "approveNewTools": "auto",
          "mcpServers": {
            /* the file system, read-only */
            "fs": {
              "command": "srv", // the binary
              "args": ["--root", "/tmp"]
            },
            "gh": {
              "command": "npx",
              "args": ["-y", "gh-mcp"],
              "env": {
                "LOG": "info",
                "GITHUB_TOKEN": "${keyring:gh.env.GITHUB_TOKEN}"
              }
            }
          }
        }
    "#]]
    .assert_eq(&text);
    assert_eq!(
        store.get("gh.env.GITHUB_TOKEN").unwrap().as_deref(),
        Some("ghp_distinctive_1234")
    );
    assert!(crate::secrets::list_named(&store)
        .unwrap()
        .contains("gh.env.GITHUB_TOKEN"));
    let config = crate::config::parse(&dir.path(), &text).unwrap();
    assert!(config.problems.is_empty(), "{:?}", config.problems);
    assert_eq!(config.servers.keys().collect::<Vec<_>>(), ["fs", "gh"]);
}

#[test]
fn edit_changes_only_what_differs_and_renames_in_place() {
    let dir = Dir::new("edit", Some(FILE));
    let store = MemoryStore::default();
    let view = entry_view(&dir.path(), "fs", &store).unwrap();
    assert_eq!(view.entry, json!({"command": "srv", "args": ["--root", "/tmp"]}));
    replace_server(
        &dir.path(),
        "fs",
        change(json!({
            "name": "files",
            "entry": {"command": "srv", "args": ["--root", "/srv"], "timeout": 5000},
            "revision": view.revision,
        })),
        &store,
    )
    .unwrap();
    let text = dir.text();
    assert!(text.contains("\"files\": {"), "{text}");
    assert!(text.contains("\"command\": \"srv\", // the binary"), "{text}");
    assert!(text.contains("/* the file system, read-only */"), "{text}");
    assert!(text.contains("\"timeout\": 5000"), "{text}");
    let config = crate::config::parse(&dir.path(), &text).unwrap();
    assert_eq!(config.servers.keys().collect::<Vec<_>>(), ["files"]);
    // A change begun before someone else's is refused, and writes nothing.
    let stale = replace_server(
        &dir.path(),
        "files",
        change(json!({"name": "files", "entry": {"command": "x"}, "revision": view.revision})),
        &store,
    )
    .unwrap_err();
    assert!(matches!(stale, EditError::Conflict(_)), "{stale}");
    assert_eq!(dir.text(), text);
}

#[test]
fn remove_takes_its_comment_and_unshared_secrets() {
    let dir = Dir::new("remove", Some(FILE));
    let store = MemoryStore::default();
    let secret = |name: &str, token: &str| {
        change(json!({"name": name, "entry": {"url": "https://x.test/mcp"}, "secretHeaders": {"Authorization": token}}))
    };
    add(&dir.path(), secret("a", "Bearer one"), &store).unwrap();
    add(&dir.path(), secret("b", "Bearer two"), &store).unwrap();
    let removed = remove(&dir.path(), "fs", true, &store).unwrap();
    assert!(removed.removed_secrets.is_empty());
    let text = dir.text();
    assert!(!text.contains("read-only") && !text.contains("\"fs\""), "{text}");
    assert!(text.contains("// Servers of the team"), "{text}");
    let removed = remove(&dir.path(), "a", true, &store).unwrap();
    assert_eq!(removed.removed_secrets, vec!["a.headers.Authorization".to_string()]);
    assert_eq!(store.get("a.headers.Authorization").unwrap(), None);
    assert!(store.get("b.headers.Authorization").unwrap().is_some());
    // Kept when not asked.
    let removed = remove(&dir.path(), "b", false, &store).unwrap();
    assert!(removed.removed_secrets.is_empty());
    assert!(store.get("b.headers.Authorization").unwrap().is_some());
    let e = remove(&dir.path(), "b", false, &store).unwrap_err();
    assert!(matches!(e, EditError::NotFound(_)), "{e}");
}

#[test]
fn bad_input_names_the_field_and_writes_nothing() {
    let dir = Dir::new("bad", Some(FILE));
    let store = MemoryStore::default();
    let cases = [
        (
            json!({"name": "fs", "entry": {"command": "x"}}),
            "name",
            "already in the config",
        ),
        (json!({"name": "", "entry": {"command": "x"}}), "name", "needs a name"),
        (
            json!({"name": "a/b", "entry": {"command": "x"}}),
            "name",
            "may hold only",
        ),
        (
            json!({"name": "n", "entry": {"command": "  "}}),
            "command",
            "must not be empty",
        ),
        (json!({"name": "n", "entry": {}}), "", "needs either 'command'"),
        (
            json!({"name": "n", "entry": {"url": "not a url"}}),
            "url",
            "invalid URL",
        ),
        (
            json!({"name": "n", "entry": {"url": "ftp://x.test/"}}),
            "url",
            "unsupported scheme",
        ),
        (
            json!({"name": "n", "entry": {"url": "https://x.test/", "headers": {"Bad Name": "v"}}}),
            "headers.Bad Name",
            "not a valid HTTP header name",
        ),
        (
            json!({"name": "n", "entry": {"url": "https://x.test/", "headers": {"X-A": "a\nb"}}}),
            "headers.X-A",
            "printable text on one line",
        ),
        (
            json!({"name": "n", "entry": {"url": "https://x.test/"}, "secretHeaders": {"X-Key": ""}}),
            "headers.X-Key",
            "must not be empty",
        ),
        (
            json!({"name": "n", "entry": {"command": "x"}, "secretHeaders": {"X-Key": "v"}}),
            "headers.X-Key",
            "sends no headers",
        ),
        (
            json!({"name": "n", "entry": {"command": "x", "args": "a b"}}),
            "args",
            "array of strings",
        ),
        (
            json!({"name": "n", "entry": {"command": "x", "timeout": -1}}),
            "timeout",
            "positive number",
        ),
    ];
    for (body, field, words) in cases {
        let e = add(&dir.path(), change(body.clone()), &store).unwrap_err();
        let (got_field, message) = field_of(e);
        assert_eq!(got_field.unwrap_or_default(), field, "{body}: {message}");
        assert!(message.contains(words), "{body}: {message}");
        assert!(message.starts_with(&dir.path().display().to_string()), "{message}");
    }
    assert_eq!(dir.text(), FILE);
    assert!(!backup_path(&dir.path()).exists());
    assert!(store.dump().is_empty());
    // A body that is not an object of the right shape.
    let e = ServerChange::from_body(&json!({"name": "n", "entry": "x"})).unwrap_err();
    assert_eq!(field_of(e).0.as_deref(), Some("entry"));
}

#[test]
fn a_missing_file_is_created_and_a_broken_one_left_alone() {
    let dir = Dir::new("new", None);
    let store = MemoryStore::default();
    let written = add(
        &dir.path(),
        change(json!({"name": "one", "entry": {"command": "x"}})),
        &store,
    )
    .unwrap();
    assert_eq!(written.backup, None);
    let config = crate::config::load(&dir.path()).unwrap();
    assert!(config.servers.contains_key("one"));
    std::fs::write(dir.path(), "{\"mcpServers\": {").unwrap();
    let e = add(
        &dir.path(),
        change(json!({"name": "two", "entry": {"command": "x"}})),
        &store,
    )
    .unwrap_err();
    assert!(matches!(e, EditError::Failed(_)), "{e}");
    assert!(e.to_string().contains("fix the file"), "{e}");
    assert_eq!(dir.text(), "{\"mcpServers\": {");
}

#[test]
fn a_vs_code_file_gets_the_entry_in_its_own_section() {
    let dir = Dir::new(
        "vscode",
        Some("{\"servers\": {\"a\": {\"type\": \"stdio\", \"command\": \"x\"}}}\n"),
    );
    let store = MemoryStore::default();
    add(
        &dir.path(),
        change(json!({"name": "b", "entry": {"command": "y"}})),
        &store,
    )
    .unwrap();
    let config = crate::config::load(&dir.path()).unwrap();
    assert_eq!(config.servers.keys().collect::<Vec<_>>(), ["a", "b"]);
    assert!(!dir.text().contains("mcpServers"));
}

#[test]
fn spec_puts_typed_secrets_in_place_for_a_test() {
    let c = change(json!({
        "name": "t",
        "entry": {"command": "x", "env": {"A": "1"}},
        "secretEnv": {"TOKEN": "s3cret"}
    }));
    let spec = c.spec(std::path::Path::new("/c.json")).unwrap();
    let crate::config::TransportSpec::Stdio { env, .. } = spec.transport else {
        panic!("stdio expected")
    };
    assert_eq!(env.get("TOKEN").map(String::as_str), Some("s3cret"));
    assert_eq!(c.secret_values(), vec!["s3cret".to_string()]);
}

#[test]
fn a_hand_edit_during_a_write_is_kept_and_the_write_redone() {
    let dir = Dir::new("race", Some(FILE));
    let path = dir.path();
    let mut runs = 0;
    let (_, ()) = write_with(&path, |text| {
        runs += 1;
        let text = text.unwrap_or_default().to_string();
        if runs == 1 {
            // Someone saves the file while mcpool is editing it.
            std::fs::write(&path, text.replace("\"auto\"", "\"manual\"")).unwrap();
        }
        Ok((text::add(&path, &text, "new", &serde_json::Map::new())?, ()))
    })
    .unwrap();
    assert_eq!(runs, 2);
    let text = dir.text();
    assert!(text.contains("\"manual\"") && text.contains("\"new\": {}"), "{text}");
    // A file that never holds still is refused with a sentence.
    let e = write_with(&path, |text| {
        let text = text.unwrap_or_default().to_string();
        std::fs::write(&path, format!("{text} ")).unwrap();
        Ok((format!("{text}\n"), ()))
    })
    .unwrap_err();
    assert!(e.to_string().contains("kept changing"), "{e}");
}

#[test]
fn an_import_adds_only_new_names_in_place() {
    let dir = Dir::new("import", Some(FILE));
    let entry = |c: &str| json!({"command": c}).as_object().cloned().unwrap();
    let entries = vec![("fs".to_string(), entry("other")), ("gh".to_string(), entry("gh-mcp"))];
    let (added, backup) = add_entries(&dir.path(), &entries).unwrap();
    assert_eq!((added, backup.is_some()), (1, true));
    let text = dir.text();
    assert!(text.contains("// Servers of the team") && text.contains("\"command\": \"srv\", // the binary"));
    assert!(text.contains("\"gh\": {") && !text.contains("other"), "{text}");
}
