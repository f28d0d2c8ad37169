//! A bounded ring of a child's last stderr lines; its tail goes into errors.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

use crate::sync::lock;

/// Lines kept, and the longest line kept (longer lines are cut).
pub const MAX_LINES: usize = 20;
pub const MAX_LINE_BYTES: usize = 400;

#[derive(Debug, Clone)]
pub struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    closed: tokio::sync::watch::Sender<bool>,
    /// Where every line goes too, whole (the server's log).
    log: Option<crate::server_logs::ServerLog>,
}

impl Default for StderrTail {
    fn default() -> Self {
        StderrTail {
            lines: Arc::default(),
            closed: tokio::sync::watch::Sender::new(false),
            log: None,
        }
    }
}

impl StderrTail {
    /// A tail whose lines also go, redacted the same way, to `log`.
    pub fn with_log(log: Option<crate::server_logs::ServerLog>) -> Self {
        StderrTail {
            log,
            ..StderrTail::default()
        }
    }

    pub fn push(&self, line: &str) {
        // Redacted before it is cut, so no part of a secret stays behind.
        let mut line = crate::secrets::redact_resolved(line.trim_end());
        if let Some(log) = &self.log {
            log.stderr(&line);
        }
        if line.len() > MAX_LINE_BYTES {
            let mut cut = MAX_LINE_BYTES;
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            line.truncate(cut);
            line.push('…');
        }
        {
            let mut lines = lock(&self.lines);
            if lines.len() == MAX_LINES {
                lines.pop_front();
            }
            lines.push_back(line);
        }
    }

    /// A finished tail of lines already kept by a tail (redacted and cut).
    pub fn of_lines(lines: &[String]) -> Self {
        let kept = lines
            .iter()
            .skip(lines.len().saturating_sub(MAX_LINES))
            .cloned()
            .collect();
        let tail = StderrTail {
            lines: Arc::new(Mutex::new(kept)),
            ..StderrTail::default()
        };
        tail.closed.send_replace(true);
        tail
    }

    pub fn tail(&self) -> Vec<String> {
        lock(&self.lines).iter().cloned().collect()
    }

    /// Reads `stream` line by line until it ends, keeping the last lines.
    pub async fn drain(self, stream: impl AsyncRead + Unpin) {
        let mut reader = BufReader::new(stream);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => self.push(&String::from_utf8_lossy(&buf)),
            }
        }
        self.closed.send_replace(true);
    }

    /// Waits up to `limit` for the stream to end, so a process's last words
    /// are in before its exit is reported.
    pub async fn wait_closed(&self, limit: std::time::Duration) {
        let mut rx = self.closed.subscribe();
        let _ = tokio::time::timeout(limit, rx.wait_for(|c| *c)).await;
    }

    /// The tail once the stream has ended, or after `limit` (a child of the
    /// process may hold the pipe open): a process's last words, read after
    /// its exit was seen.
    pub async fn last_words(&self, limit: std::time::Duration) -> Vec<String> {
        self.wait_closed(limit).await;
        self.tail()
    }
}

/// Joins a reason and a stderr tail into one error text.
pub fn with_stderr(reason: &str, tail: &[String]) -> String {
    if tail.is_empty() {
        return reason.to_string();
    }
    let what = if tail.len() == 1 {
        "last line".to_string()
    } else {
        format!("last {} lines", tail.len())
    };
    format!("{reason}; stderr ({what}):\n{}", tail.join("\n"))
}

/// The error in one line a person can act on: its reason and, when it
/// carries a stderr excerpt ([`with_stderr`]), the excerpt's most telling
/// line — the last one that reads like a failure, else the last that is
/// not a runtime's notice (npm's `notice`/`WARN`, Node's warnings, a
/// traceback's frames) — never the excerpt's empty heading.
pub fn cause(error: &str) -> String {
    let mut lines = error.lines();
    let first = lines.next().unwrap_or_default().trim();
    let Some((reason, _)) = first.split_once("; stderr (") else {
        return first.to_string();
    };
    let tail: Vec<&str> = lines
        .map(str::trim)
        .filter(|l| !l.is_empty() && !is_notice(l))
        .collect();
    let telling = tail.iter().rev().find(|l| reads_like_failure(l)).or(tail.last());
    match telling {
        Some(line) => format!("{reason}: {line}"),
        None => reason.to_string(),
    }
}

/// A line runtimes print on their own, whatever went wrong.
fn is_notice(line: &str) -> bool {
    const NOTICES: &[&str] = &[
        "npm notice",
        "npm warn",
        "npm WARN",
        "npm http",
        "npm timing",
        "(node:",
        "(Use `node --trace-",
        "Traceback (most recent call last)",
        "File \"",
        "^",
        "Downloading",
        "Installed ",
        "Resolved ",
        "Prepared ",
        "Audited ",
    ];
    NOTICES.iter().any(|n| line.starts_with(n)) || is_stack_frame(line)
}

/// A JavaScript stack frame, told by its shape rather than by its first
/// word, so that a sentence such as "at least one directory is required"
/// is still read: `at fn (file:line:col)`, `at file:line:col`,
/// `at fn (node:internal/…)`, `at new Promise (<anonymous>)`.
fn is_stack_frame(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("at ") else {
        return false;
    };
    let place = match rest.strip_suffix(')').and_then(|r| r.rsplit_once(" (")) {
        Some((_, place)) => place,
        None if !rest.contains(' ') => rest,
        None => return false,
    };
    place == "<anonymous>" || place.starts_with("node:") || ends_with_line_and_column(place)
}

/// `…:12:34`: a source position.
fn ends_with_line_and_column(place: &str) -> bool {
    let mut parts = place.rsplitn(3, ':');
    let column = parts.next().unwrap_or_default();
    let line = parts.next().unwrap_or_default();
    let is_number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    parts.next().is_some() && is_number(column) && is_number(line)
}

fn reads_like_failure(line: &str) -> bool {
    const WORDS: &[&str] = &[
        "error",
        "cannot",
        "can't",
        "could not",
        "couldn't",
        "not found",
        "no such",
        "denied",
        "failed",
        "fatal",
        "invalid",
        "missing",
        "required",
        "refused",
        "not accessible",
        "are accessible",
        "is not",
        "unable",
        "exception",
        "panicked",
    ];
    let lower = line.to_lowercase();
    WORDS.iter().any(|w| lower.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cause_is_the_telling_line_not_the_runtimes_notices() {
        let npm = with_stderr(
            "the process exited with status 1",
            &[
                "npm notice".into(),
                "npm notice New major version of npm available! 10.8.2 -> 11.6.2".into(),
                "npm notice To update run: npm install -g npm@11.6.2".into(),
                "Error accessing directory /home/u/src: ENOENT".into(),
                "None of the specified directories are accessible".into(),
                "npm notice".into(),
            ],
        );
        assert_eq!(
            cause(&npm),
            "the process exited with status 1: None of the specified directories are accessible"
        );
        let plain = with_stderr("it exited", &["starting".into(), "listening on stdio".into()]);
        assert_eq!(cause(&plain), "it exited: listening on stdio");
        let notices_only = with_stderr("it exited", &["npm notice".into(), "npm WARN x".into()]);
        assert_eq!(cause(&notices_only), "it exited", "never an empty excerpt");
        assert_eq!(
            cause("no answer to initialize within 30000 ms"),
            "no answer to initialize within 30000 ms"
        );
    }

    #[test]
    fn stack_frames_are_told_by_their_shape_not_their_first_word() {
        for frame in [
            "at Object.<anonymous> (/srv/app/index.js:12:5)",
            "at /srv/app/index.js:3:11",
            "at Module._compile (node:internal/modules/cjs/loader:1554:14)",
            "at new Promise (<anonymous>)",
            "at async main (file:///srv/app/dist/index.js:40:9)",
        ] {
            assert!(is_notice(frame), "{frame}");
        }
        for sentence in [
            "at least one directory must be given",
            "at most 3 workers (found 7)",
            "at index.js the config is missing",
        ] {
            assert!(!is_notice(sentence), "{sentence}");
        }
        let node = with_stderr(
            "the process exited with status 1",
            &[
                "at least one allowed directory is required".into(),
                "at main (/srv/app/index.js:9:3)".into(),
            ],
        );
        assert_eq!(
            cause(&node),
            "the process exited with status 1: at least one allowed directory is required"
        );
    }

    #[tokio::test]
    async fn keeps_the_last_lines_bounded() {
        let text: String = (0..50).map(|i| format!("line {i}\n")).collect::<String>() + &"y".repeat(5000);
        let tail = StderrTail::default();
        tail.clone().drain(text.as_bytes()).await;
        let lines = tail.tail();
        assert_eq!(lines.len(), MAX_LINES);
        assert_eq!(lines[0], "line 31");
        assert!(lines[MAX_LINES - 1].len() <= MAX_LINE_BYTES + 3);
    }
}
