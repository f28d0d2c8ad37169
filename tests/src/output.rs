//! What a finished command printed, as text, and the check most failing
//! commands get: it failed, and its stderr says why.

use std::process::Output;

/// What the command wrote to stdout, as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// What the command wrote to stderr, as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts that the command failed and that its stderr contains `needle`.
#[track_caller]
pub fn assert_failed_saying(o: &Output, needle: &str) {
    assert!(!o.status.success(), "it succeeded: {}", stdout(o));
    assert!(stderr(o).contains(needle), "{}", stderr(o));
}
