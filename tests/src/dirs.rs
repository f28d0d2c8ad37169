//! Folders of a test's own: a fresh one under the target dir, removed on
//! drop, and handing a folder to another user (the runs as a plain user).

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use crate::{bin_dir, NEXT};

/// A fresh directory under the target dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = bin_dir()
            .join("test-tmp")
            .join(format!("{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("temp dir");
        TempDir(path)
    }
    /// A fresh dir and the path of the spawn log in it (`spawns.log`,
    /// where the fault server notes each start).
    pub fn with_spawn_log(tag: &str) -> (Self, PathBuf) {
        let dir = Self::new(tag);
        let log = dir.path().join("spawns.log");
        (dir, log)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Makes `path` and everything under it the user `uid`'s.
pub fn give_to(path: &Path, uid: u32) -> std::io::Result<()> {
    std::os::unix::fs::chown(path, Some(uid), Some(uid))?;
    if path.is_dir() && !path.is_symlink() {
        for entry in std::fs::read_dir(path)? {
            give_to(&entry?.path(), uid)?;
        }
    }
    Ok(())
}
