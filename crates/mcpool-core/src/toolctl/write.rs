//! A dashboard switch, written into the config file: the tool goes into (or
//! out of) its server's `disabledTools` (and `enabledTools` where the entry
//! has an allowlist), or, for a tool the scan holds back, into `scanAllow`. The rest of the file keeps its text, key order and
//! indentation (jsonc-parser's CST), and the file its mode.

use std::path::{Path, PathBuf};

use jsonc_parser::cst::{CstArray, CstInputValue, CstObject, CstRootNode};
use jsonc_parser::ParseOptions;

#[derive(Debug, thiserror::Error)]
pub enum SwitchError {
    #[error("cannot read {path}: {error}")]
    Read { path: PathBuf, error: std::io::Error },
    #[error("cannot write {path}: {error}")]
    Write { path: PathBuf, error: std::io::Error },
    #[error("{path} is not valid JSON at line {line}, column {column}; fix it before switching tools")]
    Parse { path: PathBuf, line: usize, column: usize },
    #[error("{path} has no server '{server}' under \"mcpServers\" or \"servers\"")]
    NoServer { path: PathBuf, server: String },
    #[error("{path}: \"{field}\" of server '{server}' is not an array; fix it before switching tools")]
    Shape {
        path: PathBuf,
        server: String,
        field: &'static str,
    },
}

/// Enables or disables `tool` of `server` in the config file at `path`;
/// answers whether the file changed. The write is the `editing` room's:
/// one at a time, the previous version in `<file>.bak`, redone when the
/// file changed under it.
pub fn set_tool_enabled(path: &Path, server: &str, tool: &str, enabled: bool) -> Result<bool, SwitchError> {
    write_edit(path, |text| edit(path, text, server, tool, enabled))
}

/// The user's answer to a tool the scan holds back: allowed (into the
/// entry's `scanAllow`), or kept blocked (out of `scanAllow` and into
/// `disabledTools`, so it stays off whatever later scans say). Written as
/// [`set_tool_enabled`] writes.
pub fn set_scan_allowed(path: &Path, server: &str, tool: &str, allowed: bool) -> Result<bool, SwitchError> {
    write_edit(path, |text| {
        let listed = edit_list(path, text, server, "scanAllow", tool, allowed)?;
        if allowed {
            return Ok(listed);
        }
        let after = listed.as_deref().unwrap_or(text);
        Ok(edit(path, after, server, tool, false)?.or(listed))
    })
}

/// Writes `path` through `edit` (the edited text, `None` for no change).
fn write_edit(
    path: &Path,
    mut edit: impl FnMut(&str) -> Result<Option<String>, SwitchError>,
) -> Result<bool, SwitchError> {
    let read_error = |error| SwitchError::Read {
        path: path.to_path_buf(),
        error,
    };
    let mut failure = None;
    let outcome = crate::editing::write_with(path, |text| {
        let Some(text) = text else {
            let error = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
            failure = Some(read_error(error));
            return Err(crate::editing::EditError::Failed(String::new()));
        };
        match edit(text) {
            Ok(Some(edited)) => Ok((edited, true)),
            // Written back unchanged: the same text, the same file.
            Ok(None) => Ok((text.to_string(), false)),
            Err(e) => {
                failure = Some(e);
                Err(crate::editing::EditError::Failed(String::new()))
            }
        }
    });
    match (outcome, failure) {
        (_, Some(e)) => Err(e),
        (Ok((_, changed)), None) => Ok(changed),
        (Err(e), None) => Err(SwitchError::Write {
            path: path.to_path_buf(),
            error: std::io::Error::other(e.to_string()),
        }),
    }
}

/// `text` with `tool` in (or out of) the list `key` of `server`'s entry;
/// `None` when it already is.
fn edit_list(
    path: &Path,
    text: &str,
    server: &str,
    key: &'static str,
    tool: &str,
    present: bool,
) -> Result<Option<String>, SwitchError> {
    let (root, entry) = entry_of(path, text, server)?;
    let shape = || SwitchError::Shape {
        path: path.to_path_buf(),
        server: server.to_string(),
        field: key,
    };
    let changed = if present {
        let list = entry.array_value_or_create(key).ok_or_else(shape)?;
        let missing = !contains(&list, tool);
        if missing {
            list.append(CstInputValue::String(tool.to_string()));
        }
        missing
    } else {
        match entry.get(key) {
            None => false,
            Some(prop) => {
                let list = prop.array_value().ok_or_else(shape)?;
                let removed = remove_name(&list, tool);
                if list.elements().is_empty() {
                    prop.remove();
                }
                removed
            }
        }
    };
    Ok(changed.then(|| written(&root, text)))
}

/// The parsed file and `server`'s entry in it.
fn entry_of(path: &Path, text: &str, server: &str) -> Result<(CstRootNode, CstObject), SwitchError> {
    let options = ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        ..ParseOptions::default()
    };
    let root = CstRootNode::parse(text, &options).map_err(|e| SwitchError::Parse {
        path: path.to_path_buf(),
        line: e.line_display(),
        column: e.column_display(),
    })?;
    let no_server = || SwitchError::NoServer {
        path: path.to_path_buf(),
        server: server.to_string(),
    };
    let root_obj = root.object_value().ok_or_else(no_server)?;
    let entry: CstObject = ["mcpServers", "servers"]
        .iter()
        .find_map(|key| root_obj.object_value(key)?.object_value(server))
        .ok_or_else(no_server)?;
    Ok((root, entry))
}

/// The file's new text, ending as the old one did.
fn written(root: &CstRootNode, text: &str) -> String {
    let mut out = root.to_string();
    if text.ends_with('\n') && !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// The edited text, or `None` when the file already says so.
pub fn edit(path: &Path, text: &str, server: &str, tool: &str, enabled: bool) -> Result<Option<String>, SwitchError> {
    let (root, entry) = entry_of(path, text, server)?;
    let shape = |field| SwitchError::Shape {
        path: path.to_path_buf(),
        server: server.to_string(),
        field,
    };
    let mut changed = false;
    if enabled {
        if let Some(prop) = entry.get("disabledTools") {
            let list = prop.array_value().ok_or_else(|| shape("disabledTools"))?;
            changed |= remove_name(&list, tool);
            if list.elements().is_empty() {
                prop.remove();
            }
        }
        if let Some(prop) = entry.get("enabledTools") {
            let list = prop.array_value().ok_or_else(|| shape("enabledTools"))?;
            if !contains(&list, tool) {
                list.append(CstInputValue::String(tool.to_string()));
                changed = true;
            }
        }
    } else {
        let list = entry
            .array_value_or_create("disabledTools")
            .ok_or_else(|| shape("disabledTools"))?;
        if !contains(&list, tool) {
            list.append(CstInputValue::String(tool.to_string()));
            changed = true;
        }
    }
    Ok(changed.then(|| written(&root, text)))
}

fn contains(list: &CstArray, name: &str) -> bool {
    list.elements()
        .iter()
        .any(|e| e.to_serde_value().is_some_and(|v| v.as_str() == Some(name)))
}

fn remove_name(list: &CstArray, name: &str) -> bool {
    let mut removed = false;
    for element in list.elements() {
        if element.to_serde_value().is_some_and(|v| v.as_str() == Some(name)) {
            element.remove();
            removed = true;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"{
  "approveNewTools": "auto",
  "mcpServers": {
    "fs": {
      "command": "srv",
      "args": ["--root", "/tmp"]
    },
    "gh": {"url": "https://example.test/mcp", "enabledTools": ["search"]}
  }
}
"#;

    fn edit_ok(text: &str, server: &str, tool: &str, enabled: bool) -> String {
        edit(Path::new("/c.json"), text, server, tool, enabled)
            .unwrap()
            .unwrap()
    }

    #[test]
    fn a_switch_edits_only_its_list() {
        let off = edit_ok(FILE, "fs", "write", false);
        expect_test::expect![[r#"
            {
              "approveNewTools": "auto",
              "mcpServers": {
                "fs": {
                  "command": "srv",
                  "args": ["--root", "/tmp"],
                  "disabledTools": ["write"]
                },
                "gh": {"url": "https://example.test/mcp", "enabledTools": ["search"]}
              }
            }
        "#]]
        .assert_eq(&off);
        let config = crate::config::parse(Path::new("/c.json"), &off).unwrap();
        assert!(config.problems.is_empty(), "{:?}", config.problems);
        assert!(!config.tools.allows("fs", "write") && config.tools.allows("fs", "read"));
        // Twice is a no-op; switching back restores the file exactly.
        assert!(edit(Path::new("/c.json"), &off, "fs", "write", false)
            .unwrap()
            .is_none());
        assert_eq!(edit_ok(&off, "fs", "write", true), FILE);
        // An allowlist gains the tool switched on.
        let on = edit_ok(FILE, "gh", "issues", true);
        assert!(on.contains(r#""enabledTools": ["search", "issues"]"#), "{on}");
    }

    #[test]
    fn errors_name_the_file_and_server() {
        let e = edit(Path::new("/c.json"), FILE, "nope", "x", false).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/c.json has no server 'nope' under \"mcpServers\" or \"servers\""
        );
        let e = edit(Path::new("/c.json"), "{\"mcpServers\": {", "fs", "x", false).unwrap_err();
        assert!(e.to_string().starts_with("/c.json is not valid JSON at line"), "{e}");
        let bad = r#"{"mcpServers": {"fs": {"command": "x", "disabledTools": "w"}}}"#;
        let e = edit(Path::new("/c.json"), bad, "fs", "x", false).unwrap_err();
        assert!(matches!(e, SwitchError::Shape { .. }), "{e}");
    }

    // A mode other than the one mcpool writes its own files with: a
    // writer that forced 0600 would fail here.
    #[cfg(unix)]
    #[test]
    fn the_file_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = crate::scratch::made_scratch_dir("switch");
        let path = dir.join("config.json");
        std::fs::write(&path, FILE).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        assert!(set_tool_enabled(&path, "fs", "write", false).unwrap());
        assert!(!set_tool_enabled(&path, "fs", "write", false).unwrap());
        assert_eq!(std::fs::read_to_string(dir.join("config.json.bak")).unwrap(), FILE);
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o640);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
