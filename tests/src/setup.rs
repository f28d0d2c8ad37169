//! Small pieces of a test's surroundings: a loopback port nothing listens
//! on, a config file, the files a test left under a dir, the names in a
//! JSON list.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// A loopback port that was free a moment ago (bound, learnt, released), so
/// nothing listens on it now.
pub fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// [`free_port`] as a listen address, `127.0.0.1:PORT`.
pub fn free_listen() -> anyhow::Result<String> {
    Ok(format!("127.0.0.1:{}", free_port()?))
}

/// Writes `config` as `config.json` in `dir`; its path.
pub fn write_config(dir: &Path, config: &Value) -> anyhow::Result<PathBuf> {
    let path = dir.join("config.json");
    std::fs::write(&path, serde_json::to_vec_pretty(config)?)?;
    Ok(path)
}

/// Every regular file under `dir`, at any depth (links are not followed).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(path),
                Ok(t) if t.is_file() => out.push(path),
                _ => {}
            }
        }
    }
    out
}

/// The `name` of each object in the JSON array `list` (none when `list` is
/// not an array).
pub fn names_in(list: &Value) -> Vec<String> {
    list.as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}
