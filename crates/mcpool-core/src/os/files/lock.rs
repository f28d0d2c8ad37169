//! One writer at a time for a file that several programs edit: mcpool's
//! config (the instance's API, `mcpool add/remove/import`, `registry add`,
//! tool switches) and the agents' configs that `connect --write` edits.
//!
//! The lock is advisory and lives in a file of its own, because the target
//! itself is replaced by a rename on every write (a lock on the old file
//! would not stop a writer that opened the new one). For mcpool's own
//! config it is `.NAME.mcpool-lock` beside the file ([`Place::Beside`]);
//! for another program's file, an agent's config, it is in mcpool's
//! runtime folder ([`Place::Runtime`]), so nothing of mcpool's is left in
//! the user's home or another program's folder. It is held across read, edit and replace, so no
//! two of mcpool's writers can interleave; an editor that takes no lock (a
//! person's) is caught by the re-read before the replace instead.
//!
//! The system call is the standard library's `File::try_lock` (`flock` on
//! Linux and macOS, `LockFileEx` with `LOCKFILE_EXCLUSIVE_LOCK |
//! LOCKFILE_FAIL_IMMEDIATELY` on Windows, so one portable file); the lock goes with the open file, so a writer
//! that dies mid-write frees it. The lock file is never removed: removing
//! it would let a waiter lock a file that no other writer sees any more.
//! Its name is not `NAME.lock`, which other programs use for their own
//! locks of the same file (a lock directory, for some).

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a writer waits for another before it gives up with a sentence.
pub const WAIT: Duration = Duration::from_secs(15);

/// How often a waiting writer tries again.
const POLL: Duration = Duration::from_millis(15);

/// Held while it lives; dropping it (or the process ending) frees the lock.
#[derive(Debug)]
pub struct FileLock {
    _file: File,
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "cannot write {}: another program has been writing it for {} s (lock file {}); nothing was written, try again",
        target.display(), waited.as_secs(), lock.display()
    )]
    Busy {
        target: PathBuf,
        lock: PathBuf,
        waited: Duration,
    },
    #[error("cannot write {}: its lock file {} cannot be used: {source}", target.display(), lock.display())]
    Io {
        target: PathBuf,
        lock: PathBuf,
        source: std::io::Error,
    },
}

/// Where a file's lock lives. Every writer of one file must name the same
/// place: mcpool's config is locked beside it, an agent's config in the
/// runtime folder.
#[derive(Debug, Clone, Copy)]
pub enum Place<'a> {
    /// `.NAME.mcpool-lock` beside the target.
    Beside,
    /// `DIR/locks/NAME-HASH.lock`, `HASH` of the target's whole path (two
    /// `settings.json` of two programs are two locks).
    Runtime(&'a Path),
}

/// `.NAME.mcpool-lock` beside `target` (one leading dot for a hidden file
/// too: `.config.json.mcpool-lock`).
pub fn lock_path(target: &Path) -> PathBuf {
    target.with_file_name(format!(".{}.mcpool-lock", bare_name(target)))
}

/// The target's file name without a leading dot (`claude.json`).
fn bare_name(target: &Path) -> String {
    let name = target.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    name.strip_prefix('.').unwrap_or(&name).to_string()
}

/// The lock of `target` in `place`.
pub fn lock_path_in(target: &Path, place: Place<'_>) -> PathBuf {
    let Place::Runtime(dir) = place else {
        return lock_path(target);
    };
    use sha2::Digest;
    let whole = std::path::absolute(target).unwrap_or_else(|_| target.to_path_buf());
    let digest = sha2::Sha256::digest(whole.as_os_str().as_encoded_bytes());
    let hash: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    dir.join("locks").join(format!("{}-{hash}.lock", bare_name(target)))
}

impl FileLock {
    /// Takes the lock of `target` beside it, waiting at most `wait` for
    /// another writer. Creates the target's folder when it is missing (a
    /// first write makes the file there). Blocking: call it off the async
    /// runtime.
    pub fn acquire(target: &Path, wait: Duration) -> Result<FileLock, LockError> {
        Self::acquire_in(target, Place::Beside, wait)
    }

    /// [`acquire`](Self::acquire) with the lock in `place`; a runtime
    /// folder is made the user's alone, as the control credential's is.
    pub fn acquire_in(target: &Path, place: Place<'_>, wait: Duration) -> Result<FileLock, LockError> {
        let lock = lock_path_in(target, place);
        let io = |source| LockError::Io {
            target: target.to_path_buf(),
            lock: lock.clone(),
            source,
        };
        if let Place::Runtime(dir) = place {
            super::create_private_dir(dir).map_err(io)?;
        }
        if let Some(dir) = lock.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let file = open(&lock).map_err(io)?;
        let started = Instant::now();
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(FileLock { _file: file }),
                Err(TryLockError::WouldBlock) if started.elapsed() < wait => std::thread::sleep(POLL),
                Err(TryLockError::WouldBlock) => {
                    return Err(LockError::Busy {
                        target: target.to_path_buf(),
                        lock,
                        waited: started.elapsed(),
                    })
                }
                Err(TryLockError::Error(e)) => return Err(io(e)),
            }
        }
    }
}

fn open(lock: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    super::open_private(&mut options, lock)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_writer_waits_for_the_first_and_gives_up_with_a_sentence() {
        let dir = crate::scratch::scratch_dir("lock-wait");
        let target = dir.join("sub").join("config.json");
        let first = FileLock::acquire(&target, WAIT).unwrap();
        assert!(lock_path(&target).exists(), "the lock file is beside the target");
        let err = FileLock::acquire(&target, Duration::from_millis(50)).unwrap_err();
        let sentence = err.to_string();
        assert!(matches!(err, LockError::Busy { .. }), "{sentence}");
        assert!(
            sentence.contains("config.json") && sentence.contains("nothing was written"),
            "{sentence}"
        );
        drop(first);
        FileLock::acquire(&target, Duration::from_millis(50)).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn threads_take_turns() {
        let dir = crate::scratch::scratch_dir("lock-turns");
        let target = dir.join("config.json");
        let inside = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (target, inside) = (target.clone(), inside.clone());
                std::thread::spawn(move || {
                    for _ in 0..20 {
                        let _held = FileLock::acquire(&target, WAIT).unwrap();
                        let was = inside.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        assert_eq!(was, 0, "two writers held the lock at once");
                        std::thread::sleep(Duration::from_micros(200));
                        inside.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_lock_file_is_not_the_name_other_programs_lock_with() {
        assert_eq!(
            lock_path(Path::new("/home/u/.claude.json")),
            Path::new("/home/u/.claude.json.mcpool-lock")
        );
        assert_eq!(
            lock_path(Path::new("config.json")),
            Path::new(".config.json.mcpool-lock")
        );
    }

    #[test]
    fn another_programs_file_is_locked_in_the_runtime_folder_not_beside_it() {
        let dir = crate::scratch::scratch_dir("lock-runtime");
        let (home, run) = (dir.join("home"), dir.join("run"));
        let claude = home.join(".claude.json");
        let gemini = home.join(".gemini").join("settings.json");
        let vscode = home.join(".config").join("Code").join("User").join("settings.json");
        let held = FileLock::acquire_in(&claude, Place::Runtime(&run), WAIT).unwrap();
        let lock = lock_path_in(&claude, Place::Runtime(&run));
        assert!(
            lock.starts_with(run.join("locks")) && lock.exists(),
            "{}",
            lock.display()
        );
        assert!(lock.file_name().unwrap().to_string_lossy().starts_with("claude.json-"));
        assert!(!home.exists(), "nothing is left in the home");
        if cfg!(unix) {
            assert_eq!(crate::os::files::mode_of(&run).unwrap() & 0o777, 0o700);
        }
        let busy = FileLock::acquire_in(&claude, Place::Runtime(&run), Duration::from_millis(30));
        assert!(matches!(busy, Err(LockError::Busy { .. })), "one lock per file");
        drop(held);
        assert_ne!(
            lock_path_in(&gemini, Place::Runtime(&run)),
            lock_path_in(&vscode, Place::Runtime(&run)),
            "two files of one name are two locks"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
