//! The known folders on Windows (`dirs` asks `SHGetKnownFolderPath`): the
//! config roams with the user (`FOLDERID_RoamingAppData`, `%APPDATA%`);
//! data and cache stay on this machine (`FOLDERID_LocalAppData`,
//! `%LOCALAPPDATA%`), where both live in one `mcpool` folder, the cache in
//! its own `cache` folder inside it.

use std::path::PathBuf;

pub fn config_dir() -> PathBuf {
    dirs::config_dir().unwrap_or_else(|| PathBuf::from(".")).join("mcpool")
}

pub fn cache_dir() -> PathBuf {
    data_dir().join("cache")
}

pub fn data_dir() -> PathBuf {
    dirs::data_local_dir().unwrap_or_else(std::env::temp_dir).join("mcpool")
}

/// `%LOCALAPPDATA%\mcpool\run`: this machine's, never roaming.
pub fn runtime_dir() -> PathBuf {
    data_dir().join("run")
}
