//! Files written whole or not at all, and files only the user may read.
//!
//! A write makes a new temporary file beside the target, with the target's
//! permissions, then renames it over the target. Most are files only the
//! user may read (the token, the fingerprint key, the tool cache,
//! approvals, saved sessions): mode 0600 on Unix (`unix.rs`), a protected
//! DACL granting the current user alone on Windows (`windows.rs`). `lock.rs`
//! is the advisory lock of a file several programs edit.
//!
//! A permission is a Unix mode everywhere: on Windows a mode without group
//! or other bits is "the user alone" and any other mode is "as the folder
//! gives" (the inherited ACL).

pub mod lock;
#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as backend;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as backend;

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Only the user may read or write it.
pub const PRIVATE: u32 = 0o600;

/// How long a replace waits for another program (an editor, a virus
/// scanner, a backup or sync tool) that holds the target open in a way that
/// forbids renaming over it: Windows only, where such a program makes the
/// rename fail instead of keeping the old file open.
pub const BUSY_WAIT: Duration = Duration::from_secs(5);

/// How often a waiting replace tries again.
const BUSY_POLL: Duration = Duration::from_millis(50);

/// The JSON kept at `path`, or the default when there is none yet; a file
/// that cannot be read or parsed is logged (as `what`) and is the default
/// too, which is what a first start looks like.
pub fn read_json_or_default<T: serde::de::DeserializeOwned + Default>(path: &Path, what: &str) -> T {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            tracing::warn!("{what} {} is corrupt ({e}); starting afresh", path.display());
            T::default()
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => T::default(),
        Err(e) => {
            tracing::warn!("cannot read {what} {}: {e}", path.display());
            T::default()
        }
    }
}

/// Writes `bytes` to `path` atomically, readable by the user alone, synced
/// to disk before the rename. Creates the parent folder if it is missing.
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
    let mode = mode_of(path)?;
    write_with(path, bytes, mode, true)
}

/// The permissions of the file at `path` as a mode (see the module's
/// words on Windows).
pub fn mode_of(path: &Path) -> std::io::Result<u32> {
    backend::mode_of(path)
}

/// Creates `path`, which must not exist, with exactly `mode`, writes
/// `bytes` and syncs them (the first half of an atomic replace whose
/// temporary file the caller names).
pub fn write_new(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let mut file = create_new(path, mode)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Opens `path` with `options`, and when it is created makes it the user's
/// alone (an append-only log, a lock file).
pub fn open_private(options: &mut OpenOptions, path: &Path) -> std::io::Result<File> {
    backend::open_private(options, path)
}

/// Creates `dir` and its parents; `dir` itself readable by the user alone.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    backend::create_private_dir(dir)
}

/// Makes the existing file `path` readable by the user alone.
pub fn restrict(path: &Path) -> std::io::Result<()> {
    backend::set_mode(path, PRIVATE)
}

/// Makes the existing folder `dir` usable by the user alone (0700).
pub fn restrict_dir(dir: &Path) -> std::io::Result<()> {
    backend::set_mode(dir, 0o700)
}

/// Renames `from` over `to`, atomically. While another program holds `to`
/// open in a way that forbids it (Windows), tries again for [`BUSY_WAIT`],
/// then fails with a sentence that names `to`.
pub fn rename_over(from: &Path, to: &Path) -> std::io::Result<()> {
    retry_while_busy(|| std::fs::rename(from, to), backend::is_busy, to, BUSY_WAIT, BUSY_POLL)
}

/// Runs `op` until it succeeds, fails otherwise than `busy`, or `wait` has
/// passed; then the last busy error becomes one that names `target`.
fn retry_while_busy(
    mut op: impl FnMut() -> std::io::Result<()>,
    busy: fn(&std::io::Error) -> bool,
    target: &Path,
    wait: Duration,
    poll: Duration,
) -> std::io::Result<()> {
    let started = Instant::now();
    loop {
        match op() {
            Err(e) if busy(&e) && started.elapsed() < wait => std::thread::sleep(poll),
            Err(e) if busy(&e) => {
                return Err(std::io::Error::new(
                    e.kind(),
                    format!(
                        "cannot replace {}: another program keeps it open (an editor, a virus scanner or a sync tool?) and did not let go for {} s; the previous version is unchanged, close that program or try again ({e})",
                        target.display(),
                        started.elapsed().as_secs()
                    ),
                ))
            }
            other => return other,
        }
    }
}

fn create_new(path: &Path, mode: u32) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    backend::create_new(options, path, mode)
}

fn write_with(path: &Path, bytes: &[u8], mode: u32, sync: bool) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = temp_path(path);
    let written = (|| {
        let mut file = create_new(&tmp, mode)?;
        file.write_all(bytes)?;
        if sync {
            file.sync_all()?;
        }
        drop(file);
        rename_over(&tmp, path)
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

/// The Windows security descriptor (SDDL) of a file, or with `folder` a
/// folder and what it will hold, that only the user with the SID `sid`
/// may use: a protected DACL (nothing inherited from the folder above)
/// with one entry, full access for that user — what mode 0600 (0700) is on
/// Unix. Administrators and SYSTEM, which can take any file anyway, are not
/// named, as root is not by 0600.
#[cfg_attr(not(windows), allow(dead_code))]
fn owner_only_sddl(sid: &str, folder: bool) -> String {
    let inherit = if folder { "OICI" } else { "" };
    format!("D:P(A;{inherit};FA;;;{sid})")
}

/// Asserts that `path` is the user's alone (tests). Wine (run with
/// `WINEPREFIX` set, as `scripts/windows.sh test` does) does not keep a
/// file's DACL: it answers one made from the Unix mode, so under Wine only
/// the write's success is checked; the descriptor itself is unit-tested
/// (`owner_only_sddl`).
#[cfg(test)]
pub(crate) fn assert_private(path: &Path) {
    if cfg!(windows) && std::env::var_os("WINEPREFIX").is_some() {
        return;
    }
    assert_eq!(mode_of(path).unwrap() & 0o777, 0o600, "{}", path.display());
}

/// Asserts that the folder `dir` is the user's alone (tests): 0700 on Unix,
/// the owner-only DACL on Windows (which [`mode_of`] answers as
/// [`PRIVATE`]); under Wine, as [`assert_private`] says, nothing.
#[cfg(test)]
pub(crate) fn assert_private_dir(dir: &Path) {
    if cfg!(windows) && std::env::var_os("WINEPREFIX").is_some() {
        return;
    }
    let want = if cfg!(windows) { PRIVATE } else { 0o700 };
    assert_eq!(mode_of(dir).unwrap() & 0o777, want, "{}", dir.display());
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
        assert_private(&path);
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

    fn busy(e: &std::io::Error) -> bool {
        e.kind() == std::io::ErrorKind::ResourceBusy
    }

    #[test]
    fn a_replace_tries_again_while_the_target_is_busy_then_names_it() {
        let target = Path::new("C:/Users/u/AppData/Roaming/Claude/claude_desktop_config.json");
        // Busy twice, then free: the third try succeeds.
        let mut tries = 0;
        let op = || {
            tries += 1;
            if tries < 3 {
                Err(std::io::Error::new(
                    std::io::ErrorKind::ResourceBusy,
                    "sharing violation",
                ))
            } else {
                Ok(())
            }
        };
        retry_while_busy(op, busy, target, Duration::from_secs(3600), Duration::ZERO).unwrap();
        assert_eq!(tries, 3);
        // Busy for good: the sentence names the file; other errors are not retried.
        let err = retry_while_busy(
            || {
                Err(std::io::Error::new(
                    std::io::ErrorKind::ResourceBusy,
                    "sharing violation",
                ))
            },
            busy,
            target,
            Duration::ZERO,
            Duration::ZERO,
        )
        .unwrap_err();
        let sentence = err.to_string();
        assert!(
            sentence.starts_with("cannot replace C:/Users/u/AppData/Roaming/Claude/claude_desktop_config.json: another program keeps it open"),
            "{sentence}"
        );
        let mut tries = 0;
        let err = retry_while_busy(
            || {
                tries += 1;
                Err(std::io::Error::new(std::io::ErrorKind::NotFound, "gone"))
            },
            busy,
            target,
            Duration::from_secs(3600),
            Duration::ZERO,
        )
        .unwrap_err();
        assert_eq!((tries, err.to_string()), (1, "gone".to_string()));
    }

    #[test]
    fn the_windows_descriptor_grants_the_user_alone_and_inherits_nothing() {
        let sid = "S-1-5-21-1004336348-1177238915-682003330-1001";
        assert_eq!(
            owner_only_sddl(sid, false),
            "D:P(A;;FA;;;S-1-5-21-1004336348-1177238915-682003330-1001)"
        );
        assert_eq!(
            owner_only_sddl(sid, true),
            "D:P(A;OICI;FA;;;S-1-5-21-1004336348-1177238915-682003330-1001)"
        );
    }
}
