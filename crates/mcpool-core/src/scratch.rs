//! Scratch folders for unit tests.

use std::path::PathBuf;

/// `mcpool-TAG-PID` in the temp dir, emptied of what an earlier run left:
/// a folder of the test's own (not made yet).
pub(crate) fn scratch_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpool-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// [`scratch_dir`], made.
pub(crate) fn made_scratch_dir(tag: &str) -> PathBuf {
    let dir = scratch_dir(tag);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}
