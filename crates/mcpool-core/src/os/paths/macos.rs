//! macOS: the folders `dirs` gives there (Apple's "File System Programming
//! Guide"): config and data both in `~/Library/Application Support/mcpool`
//! (one folder, as Mac apps keep theirs), the cache in
//! `~/Library/Caches/mcpool`. macOS has no per-login runtime folder, so the
//! control credential's lives in the data folder (`run/`, 0700).

use std::path::PathBuf;

pub fn config_dir() -> PathBuf {
    data_dir()
}

pub fn cache_dir() -> PathBuf {
    dirs::cache_dir().unwrap_or_else(std::env::temp_dir).join("mcpool")
}

pub fn data_dir() -> PathBuf {
    dirs::data_dir().unwrap_or_else(|| PathBuf::from(".")).join("mcpool")
}

pub fn runtime_dir() -> PathBuf {
    data_dir().join("run")
}
