//! The XDG folders on Linux and the other free Unixes.

use std::path::PathBuf;

pub fn config_dir() -> PathBuf {
    dirs::config_dir().unwrap_or_else(|| PathBuf::from(".")).join("mcpool")
}

pub fn cache_dir() -> PathBuf {
    dirs::cache_dir().unwrap_or_else(std::env::temp_dir).join("mcpool")
}

pub fn data_dir() -> PathBuf {
    dirs::data_dir().unwrap_or_else(|| PathBuf::from(".")).join("mcpool")
}

/// `$XDG_RUNTIME_DIR/mcpool` (tmpfs, the user's alone, emptied at logout),
/// else a folder in the data dir where there is no runtime dir (a bare SSH
/// session).
pub fn runtime_dir() -> PathBuf {
    dirs::runtime_dir().map_or_else(|| data_dir().join("run"), |d| d.join("mcpool"))
}
