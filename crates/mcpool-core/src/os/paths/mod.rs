//! Where mcpool keeps its files by default, per platform: the folders come
//! from the `dirs` crate (the XDG folders on Linux, `~/Library` on macOS,
//! the known folders on Windows), and each backend says which of them
//! mcpool uses.
//!
//! | | Linux (`unix.rs`) | macOS (`macos.rs`) | Windows (`windows.rs`) |
//! | --- | --- | --- | --- |
//! | config | `~/.config/mcpool` | `~/Library/Application Support/mcpool` | `%APPDATA%\mcpool` (roams with the user) |
//! | data (token, activity, logs, sessions) | `~/.local/share/mcpool` | `~/Library/Application Support/mcpool` | `%LOCALAPPDATA%\mcpool` (this machine only) |
//! | cache | `~/.cache/mcpool` | `~/Library/Caches/mcpool` | `%LOCALAPPDATA%\mcpool\cache` |
//! | runtime (the control credential) | `$XDG_RUNTIME_DIR/mcpool`, else `~/.local/share/mcpool/run` | `~/Library/Application Support/mcpool/run` | `%LOCALAPPDATA%\mcpool\run` |

#[cfg(all(unix, not(target_os = "macos")))]
mod unix;
#[cfg(all(unix, not(target_os = "macos")))]
use unix as backend;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as backend;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as backend;

use std::path::PathBuf;

pub const DEFAULT_LISTEN: &str = "127.0.0.1:7410";

/// The platform whose conventions a path follows: the running one for
/// mcpool's own files, any of them for the pure functions that compute
/// other programs' places (so Linux tests check the Windows answers too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    Linux,
    MacOs,
    Windows,
}

impl Platform {
    pub const CURRENT: Platform = if cfg!(windows) {
        Platform::Windows
    } else if cfg!(target_os = "macos") {
        Platform::MacOs
    } else {
        Platform::Linux
    };

    /// Whether `path` is absolute on this platform (`C:\…` or `\\server\…`
    /// on Windows, `/…` elsewhere), whichever platform asks.
    pub fn is_absolute(self, path: &std::ffi::OsStr) -> bool {
        let text = path.to_string_lossy();
        match self {
            Platform::Windows => {
                let b = text.as_bytes();
                text.starts_with(r"\\")
                    || (b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && matches!(b[2], b'\\' | b'/'))
            }
            Platform::Linux | Platform::MacOs => text.starts_with('/'),
        }
    }
}

/// `<config dir>/mcpool/config.json`.
pub fn default_config() -> PathBuf {
    backend::config_dir().join("config.json")
}

/// mcpool's cache folder (tool lists, registry pages).
pub fn default_cache_dir() -> PathBuf {
    backend::cache_dir()
}

/// mcpool's data folder: the token file, activity, server logs, sessions.
pub fn data_dir() -> PathBuf {
    backend::data_dir()
}

/// The folder of what lives only while an instance runs: the control
/// credential, which no confined server may reach (0700, the user's alone).
/// The one place that names it, so a sandbox can hide it.
pub fn runtime_dir() -> PathBuf {
    backend::runtime_dir()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn absolute_is_each_platforms_own() {
        let w = Platform::Windows;
        assert!(w.is_absolute(OsStr::new(r"C:\Users\u")));
        assert!(w.is_absolute(OsStr::new("c:/Users/u")));
        assert!(w.is_absolute(OsStr::new(r"\\server\share")));
        assert!(!w.is_absolute(OsStr::new("/root")), "Wine passes the Unix HOME on");
        assert!(!w.is_absolute(OsStr::new("C:rel")));
        assert!(Platform::Linux.is_absolute(OsStr::new("/home/u")));
        assert!(!Platform::Linux.is_absolute(OsStr::new(r"C:\Users\u")));
    }

    #[test]
    fn the_files_live_in_the_platforms_folders() {
        let (config, data, cache) = (default_config(), data_dir(), default_cache_dir());
        assert!(config.ends_with("mcpool/config.json") || config.ends_with(r"mcpool\config.json"));
        if cfg!(windows) {
            let ends = |p: &PathBuf, tail: &[&str]| {
                let names: Vec<_> = p.components().rev().take(tail.len()).collect();
                names
                    .iter()
                    .rev()
                    .map(|c| c.as_os_str().to_string_lossy().to_lowercase())
                    .eq(tail.iter().map(|s| s.to_lowercase()))
            };
            assert!(
                ends(&config, &["AppData", "Roaming", "mcpool", "config.json"]),
                "{}",
                config.display()
            );
            assert!(ends(&data, &["AppData", "Local", "mcpool"]), "{}", data.display());
            assert!(
                ends(&cache, &["AppData", "Local", "mcpool", "cache"]),
                "{}",
                cache.display()
            );
        } else {
            assert!(data.ends_with("mcpool") && cache.ends_with("mcpool"));
        }
    }
}
