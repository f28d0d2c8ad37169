//! What a finished command printed, as text, and the checks most commands
//! get: its stderr says something, and a failing one failed saying why.

use std::process::Output;

/// What the command wrote to stdout, as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// What the command wrote to stderr, as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts that the command's stderr contains `needle`.
#[track_caller]
pub fn assert_said(o: &Output, needle: &str) {
    assert!(stderr(o).contains(needle), "{}", stderr(o));
}

/// Asserts that the command failed and that its stderr contains `needle`.
#[track_caller]
pub fn assert_failed_saying(o: &Output, needle: &str) {
    assert!(!o.status.success(), "it succeeded: {}", stdout(o));
    assert_said(o, needle);
}
