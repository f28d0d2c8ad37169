//! Giving memory back to the system once a burst of work is over.
//!
//! Two kinds of pages stay resident after a burst (start-up, agents'
//! sessions and calls) although an idle pool needs few of them: the heap
//! that glibc's per-thread arenas freed and keep for reuse, and the
//! program's own code and read-only data, which the kernel maps 64 KiB
//! around each page used, so that nearly the whole binary is counted in the
//! process's memory after start-up. [`note_work`] counts work as it is done;
//! once [`TRIM_AFTER`] units were done and none came for [`QUIET`], both are
//! given back once, off the runtime: the heap trimmed, the code pages
//! unmapped (they stay in the page cache, and what is used again is mapped
//! again on its next use). A busy pool is never trimmed in the middle of
//! its work. The platform's part is `linux.rs` (heap and code pages) and
//! `macos.rs` (the malloc zones' free pages); elsewhere it does nothing.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// Units of work (requests, ended sessions) after which the heap is worth
/// trimming once things are quiet.
pub const TRIM_AFTER: u64 = 64;
/// How long nothing must happen before the trim.
pub const QUIET: Duration = Duration::from_secs(2);

/// The count since the last trim, and whether a task waits to trim.
#[derive(Debug, Default)]
struct Trimmer {
    since: u64,
    last: Option<Instant>,
    waiting: bool,
}

impl Trimmer {
    /// Counts `n` units done at `now`: true when a waiter should start.
    fn note(&mut self, n: u64, now: Instant) -> bool {
        self.since += n;
        self.last = Some(now);
        if self.since >= TRIM_AFTER && !self.waiting {
            self.waiting = true;
            return true;
        }
        false
    }

    /// When the waiter should look again, or `None`: trim now (the count
    /// starts over).
    fn due(&mut self, now: Instant) -> Option<Instant> {
        let at = self.last.map_or(now, |last| last + QUIET);
        if now < at {
            return Some(at);
        }
        self.since = 0;
        self.waiting = false;
        None
    }
}

static TRIMMER: Mutex<Trimmer> = Mutex::new(Trimmer {
    since: 0,
    last: None,
    waiting: false,
});

/// Counts `n` units of work just done (outside a tokio runtime: nothing).
pub fn note_work(n: u64) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    if crate::sync::lock(&TRIMMER).note(n, Instant::now()) {
        runtime.spawn(trim_when_quiet());
    }
}

async fn trim_when_quiet() {
    loop {
        let due = crate::sync::lock(&TRIMMER).due(Instant::now());
        match due {
            Some(at) => tokio::time::sleep_until(at).await,
            None => break,
        }
    }
    let _ = tokio::task::spawn_blocking(give_back).await;
}

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux::give_back;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos::give_back;

/// Nothing to give back where no backend is written.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn give_back() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_trim_waits_for_enough_work_then_for_quiet() {
        let mut t = Trimmer::default();
        let start = Instant::now();
        assert!(!t.note(TRIM_AFTER - 1, start), "not enough work yet");
        assert!(t.note(1, start), "enough: a waiter starts");
        assert!(!t.note(5, start), "one waiter at a time");
        assert_eq!(t.due(start), Some(start + QUIET));
        let later = start + Duration::from_secs(1);
        t.note(1, later);
        assert_eq!(t.due(start + QUIET), Some(later + QUIET), "work meanwhile puts it off");
        assert_eq!(t.due(later + QUIET), None, "quiet: trim now");
        assert!(!t.note(1, later + QUIET), "the count started over");
        assert!(t.note(TRIM_AFTER, later + QUIET));
    }
}
