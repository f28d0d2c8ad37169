//! Files written whole or not at all: a new temporary file beside the
//! target, with the target's mode, then a rename. Most are files only the
//! user may read (the token, the fingerprint key, the tool cache, approvals,
//! saved sessions: mode 0600 on Unix; elsewhere they get the permissions of
//! the user's own folders).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Only the user may read or write it.
const PRIVATE: u32 = 0o600;

/// Writes `bytes` to `path` atomically with mode 0600, synced to disk
/// before the rename. Creates the parent folder if it is missing.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_with(path, bytes, PRIVATE, true)
}

/// As [`write_private`], without waiting for the disk: for a file rewritten
/// often, where a power loss may lose the last version (the rename still
/// keeps readers from ever seeing half a file).
pub fn write_private_unsynced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_with(path, bytes, PRIVATE, false)
}

/// Replaces the existing file at `path` atomically, keeping its mode.
pub fn replace_keeping_mode(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let meta = std::fs::metadata(path)?;
    #[cfg(unix)]
    let mode = std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o7777;
    #[cfg(not(unix))]
    let mode = {
        let _ = meta;
        PRIVATE
    };
    write_with(path, bytes, mode, true)
}

fn write_with(path: &Path, bytes: &[u8], mode: u32, sync: bool) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = temp_path(path);
    let written = (|| {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
        #[cfg(not(unix))]
        let _ = mode;
        let mut file = options.open(&tmp)?;
        // The umask may have taken bits the mode asked for: set it exactly.
        #[cfg(unix)]
        file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(mode))?;
        file.write_all(bytes)?;
        if sync {
            file.sync_all()?;
        }
        drop(file);
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// `.NAME.PID.N.tmp` beside `path`: unique per write, so two writers never
/// share a temporary file, and hidden from loaders that list the folder.
fn temp_path(path: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    path.with_file_name(format!(".{name}.{}.{n}.tmp", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_whole_files_only_the_user_may_read() {
        let dir = std::env::temp_dir().join(format!("mcpool-private-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("sub").join("secret.json");
        write_private(&path, b"first").unwrap();
        write_private_unsynced(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["secret.json"]);
        // Another mode is kept when the file is replaced.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
            replace_keeping_mode(&path, b"third").unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), b"third");
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o640);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
