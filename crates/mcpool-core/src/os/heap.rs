//! Giving freed heap memory back to the system. glibc's allocator keeps
//! what its per-thread arenas freed for reuse, so after a burst of work
//! (agents' sessions and calls) the process holds megabytes while idle.
//! [`note_work`] counts work as it is done; once [`TRIM_AFTER`] units were
//! done and none came for [`QUIET`], the heap is trimmed (`malloc_trim`)
//! once, off the runtime. A busy pool is never trimmed in the middle of its
//! work. Where the allocator is not glibc's, trimming does nothing.

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
    let _ = tokio::task::spawn_blocking(trim).await;
}

/// Returns the free memory of every malloc arena to the system.
fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free pages; it takes no pointers.
    unsafe {
        libc::malloc_trim(0);
    }
}

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
