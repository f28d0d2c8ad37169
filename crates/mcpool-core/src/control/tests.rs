use serde_json::{json, Map, Value};

use super::*;
use crate::editing::ServerChange;

/// A control over a pool that loaded `config` from a file in a fresh
/// folder of its own (`name`).
fn control_with(name: &str, config: Value) -> (Control, std::path::PathBuf) {
    let dir = crate::scratch::made_scratch_dir(&format!("control-{name}"));
    let path = dir.join("config.json");
    std::fs::write(&path, config.to_string()).unwrap();
    let control = Control::new(Pool::default());
    let loaded = crate::config::load(&path);
    control.pool().config_loaded(&path, loaded.as_ref());
    (control, path)
}

fn disabled_entry() -> Map<String, Value> {
    json!({"command": "mcpool-no-such-program", "disabled": true})
        .as_object()
        .cloned()
        .unwrap()
}

#[tokio::test]
async fn an_unknown_server_is_named() {
    let control = Control::new(Pool::default());
    for e in [
        control.reconnect("ghost").await.unwrap_err(),
        control.disconnect("ghost").unwrap_err(),
        control.sign_in("ghost").await.unwrap_err(),
        control.sign_out("ghost").await.unwrap_err(),
        control.tool("ghost", "t", ToolAction::Approve).await.unwrap_err(),
    ] {
        assert!(matches!(&e, ControlError::UnknownServer(n) if n == "ghost"), "{e:?}");
        assert_eq!(e.to_string(), "mcpool has no server named 'ghost'");
    }
}

#[tokio::test]
async fn without_a_config_file_nothing_is_written() {
    let control = Control::new(Pool::default());
    let change = ServerChange {
        name: "one".into(),
        entry: disabled_entry(),
        ..Default::default()
    };
    let e = control.edits().add(change).await.unwrap_err();
    assert!(
        matches!(&e, EditError::Conflict(s) if s.contains("no config file")),
        "{e:?}"
    );
}

#[tokio::test]
async fn an_add_is_written_and_loaded_at_once() {
    let (control, path) = control_with("add", json!({"mcpServers": {}}));
    let change = ServerChange {
        name: "one".into(),
        entry: disabled_entry(),
        ..Default::default()
    };
    let written = control.edits().add(change).await.unwrap();
    assert_eq!(written.name, "one");
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(file["mcpServers"]["one"]["command"], "mcpool-no-such-program");
    assert!(
        control.pool().server("one").is_some(),
        "the pool follows without a poll"
    );

    let view = control.edits().entry("one").await.unwrap();
    assert_eq!(view.name, "one");

    let removed = control.edits().remove("one", false).await.unwrap();
    assert!(removed.removed_secrets.is_empty());
    assert!(control.pool().server("one").is_none());
    assert!(matches!(
        control.edits().entry("one").await.unwrap_err(),
        EditError::NotFound(_)
    ));
}

#[tokio::test]
async fn a_tool_switch_names_what_is_missing() {
    let (control, _) = control_with("tool", json!({"mcpServers": {"one": disabled_entry()}}));
    let e = control.tool("one", "nothing", ToolAction::Approve).await.unwrap_err();
    assert_eq!(e.to_string(), "server 'one' lists no tool named 'nothing'");
    assert_eq!(ToolAction::parse("disable"), Some(ToolAction::Disable));
    assert_eq!(ToolAction::parse("delete"), None);
}
