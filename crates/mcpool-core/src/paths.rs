//! Where mcpool keeps its files by default, per platform.

use std::path::PathBuf;

pub const DEFAULT_LISTEN: &str = "127.0.0.1:7410";

/// `<config dir>/mcpool/config.json`.
pub fn default_config() -> PathBuf {
    dirs::config_dir()
        .unwrap_or_else(|| PathBuf::from("."))
        .join("mcpool")
        .join("config.json")
}

/// `<cache dir>/mcpool`.
pub fn default_cache_dir() -> PathBuf {
    dirs::cache_dir().unwrap_or_else(std::env::temp_dir).join("mcpool")
}

/// `<data dir>/mcpool`: the token file lives here.
pub fn data_dir() -> PathBuf {
    dirs::data_dir().unwrap_or_else(|| PathBuf::from(".")).join("mcpool")
}
