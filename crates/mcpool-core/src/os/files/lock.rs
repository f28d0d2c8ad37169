//! One writer at a time for a file that several programs edit: mcpool's
//! config (the instance's API, `mcpool add/remove/import`, `registry add`,
//! tool switches) and the agents' configs that `connect --write` edits.
//!
//! The lock is advisory and lives in a file of its own beside the target,
//! `.NAME.mcpool-lock`, because the target itself is replaced by a rename
//! on every write (a lock on the old file would not stop a writer that
//! opened the new one). It is held across read, edit and replace, so no
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

/// `.NAME.mcpool-lock` beside `target` (one leading dot for a hidden file
/// too: `.claude.json.mcpool-lock`).
pub fn lock_path(target: &Path) -> PathBuf {
    let name = target.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    let name = name.strip_prefix('.').unwrap_or(&name);
    target.with_file_name(format!(".{name}.mcpool-lock"))
}

impl FileLock {
    /// Takes the lock of `target`, waiting at most `wait` for another
    /// writer. Creates the target's folder when it is missing (a first
    /// write makes the file there). Blocking: call it off the async runtime.
    pub fn acquire(target: &Path, wait: Duration) -> Result<FileLock, LockError> {
        let lock = lock_path(target);
        let io = |source| LockError::Io {
            target: target.to_path_buf(),
            lock: lock.clone(),
            source,
        };
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
}
