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

#[cfg(test)]
mod tests {
    use super::*;

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
