//! How many calls agents made to each tool, per day, for `pinMostUsed`:
//! counts only (never arguments or results), the last 7 days, kept in a
//! 0600 JSON file in the data dir so they survive restarts. Written at
//! most every [`FLUSH_EVERY`] and at shutdown, never on a call's path.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::sync::lock;

/// The days counted, today included.
pub const WINDOW_DAYS: u64 = 7;
/// How often the background task writes changed counts.
pub const FLUSH_EVERY: Duration = Duration::from_secs(15);

/// Calls per (server, tool name), per day (days since the Unix epoch, UTC).
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Counts {
    version: u32,
    calls: BTreeMap<String, BTreeMap<String, BTreeMap<u64, u64>>>,
}

#[derive(Debug, Default)]
struct State {
    counts: Counts,
    dirty: bool,
}

#[derive(Debug, Default)]
pub struct Usage {
    path: Option<PathBuf>,
    state: std::sync::Mutex<State>,
}

pub fn file_for(data_dir: &Path, profile: &str) -> PathBuf {
    data_dir.join("usage").join(format!("{profile}.json"))
}

/// Today, as the count files number days.
pub fn today() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() / 86_400)
        .unwrap_or(0)
}

impl Usage {
    /// The counts kept at `path`; a missing, unreadable or corrupt file is
    /// an empty start (logged when it exists).
    pub fn open(path: PathBuf) -> Self {
        let counts = crate::os::files::read_json_or_default(&path, "the tool usage counts file");
        Usage {
            path: Some(path),
            state: std::sync::Mutex::new(State { counts, dirty: false }),
        }
    }

    /// One call to `tool` of `server` on `day`.
    pub fn record(&self, server: &str, tool: &str, day: u64) {
        let mut state = lock(&self.state);
        let days = state
            .counts
            .calls
            .entry(server.to_string())
            .or_default()
            .entry(tool.to_string())
            .or_default();
        *days.entry(day).or_default() += 1;
        days.retain(|d, _| d + WINDOW_DAYS > day);
        state.dirty = true;
    }

    /// The `n` tools called most in the window ending `today`, most first
    /// (ties by server, then name).
    pub fn top(&self, n: usize, today: u64) -> Vec<(String, String)> {
        if n == 0 {
            return Vec::new();
        }
        let state = lock(&self.state);
        let mut totals: Vec<(u64, &str, &str)> = state
            .counts
            .calls
            .iter()
            .flat_map(|(server, tools)| {
                tools.iter().map(move |(tool, days)| {
                    let total = days
                        .iter()
                        .filter(|(d, _)| **d <= today && **d + WINDOW_DAYS > today)
                        .map(|(_, c)| c)
                        .sum();
                    (total, server.as_str(), tool.as_str())
                })
            })
            .filter(|(total, _, _)| *total > 0)
            .collect();
        totals.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| (a.1, a.2).cmp(&(b.1, b.2))));
        totals
            .into_iter()
            .take(n)
            .map(|(_, s, t)| (s.to_string(), t.to_string()))
            .collect()
    }

    /// Writes the counts if they changed since the last write, leaving out
    /// days past the window. Blocking: async code calls it through
    /// `spawn_blocking`.
    pub fn flush(&self, today: u64) -> std::io::Result<()> {
        let Some(path) = &self.path else { return Ok(()) };
        let bytes = {
            let mut state = lock(&self.state);
            if !state.dirty {
                return Ok(());
            }
            for tools in state.counts.calls.values_mut() {
                for days in tools.values_mut() {
                    days.retain(|d, _| d + WINDOW_DAYS > today);
                }
                tools.retain(|_, days| !days.is_empty());
            }
            state.counts.calls.retain(|_, tools| !tools.is_empty());
            state.counts.version = 1;
            state.dirty = false;
            serde_json::to_vec(&state.counts).map_err(std::io::Error::other)?
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        crate::os::files::write_private(path, &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_called_tools_of_the_last_seven_days_come_first() {
        let usage = Usage::default();
        for _ in 0..3 {
            usage.record("gh", "create_issue", 100);
        }
        usage.record("fs", "read_file", 100);
        usage.record("fs", "read_file", 101);
        usage.record("fs", "write_file", 101);
        usage.record("old", "gone", 90);
        assert_eq!(
            usage.top(2, 101),
            [
                ("gh".to_string(), "create_issue".to_string()),
                ("fs".into(), "read_file".into())
            ]
        );
        assert_eq!(usage.top(10, 101).len(), 3, "a call 11 days ago no longer counts");
        assert_eq!(
            usage.top(10, 107),
            [
                ("fs".to_string(), "read_file".to_string()),
                ("fs".into(), "write_file".into())
            ]
        );
        assert!(usage.top(0, 101).is_empty());
    }

    #[test]
    fn counts_survive_a_restart_and_a_corrupt_file_is_an_empty_start() {
        let dir = crate::scratch::scratch_dir("usage");
        let path = dir.join("usage").join("default.json");
        let usage = Usage::open(path.clone());
        usage.record("gh", "create_issue", 200);
        usage.flush(200).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("create_issue") && !text.contains("arguments"), "{text}");
        assert_eq!(
            Usage::open(path.clone()).top(1, 200),
            [("gh".to_string(), "create_issue".to_string())]
        );
        std::fs::write(&path, b"{not json").unwrap();
        assert!(Usage::open(path.clone()).top(5, 200).is_empty());
        {
            let usage = Usage::open(path.clone());
            usage.record("a", "b", 1);
            usage.flush(1).unwrap();
            crate::os::files::assert_private(&path);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
