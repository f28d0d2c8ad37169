//! Process-wide state every session sees: options, counters, the spawn log and dynamic tools.
//!
//! Over Streamable HTTP each session gets its own handler, so anything a test
//! observes across sessions (stats, tools added by `set_tools`) lives here.

// Logging is deprecated by SEP-2577 but still served to legacy-lifecycle clients.
#![allow(deprecated)]

use std::{
    collections::{BTreeMap, BTreeSet},
    io::Write,
    path::PathBuf,
    sync::{Mutex, MutexGuard, PoisonError},
};

use rmcp::model::{LoggingLevel, ProtocolVersion, RequestId, ServerNotification};
use rmcp::service::SubscriptionSink;
use serde::Serialize;
use tokio::sync::mpsc;

/// Counters served by `GET /stats`, counted since the process started.
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct Stats {
    /// `initialize` requests that reached the MCP handler.
    pub initialize: u64,
    /// `tools/call` requests per tool name as the client sent it.
    pub calls: BTreeMap<String, u64>,
    /// HTTP requests to `/mcp`, faulted or not (always 0 over stdio).
    pub requests: u64,
    /// The level last set by `logging/setLevel`, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_level: Option<LoggingLevel>,
}

/// Sends a raw line to stdout between two JSON-RPC frames (stdio only).
pub type StdoutInjector = mpsc::UnboundedSender<String>;

/// What the handlers share; built once per process.
#[derive(Debug)]
pub struct Shared {
    pub name: String,
    pub tools_prefix: String,
    pub max_protocol_version: Option<ProtocolVersion>,
    pub min_protocol_version: Option<ProtocolVersion>,
    /// (2026-07-28) Ask for input the client did not declare it can give,
    /// instead of refusing with -32021 as a server should.
    pub ignore_client_capabilities: bool,
    /// Tasks made for clients that take them (tasks.rs).
    pub tasks: crate::tasks::Tasks,
    spawn_log: Option<PathBuf>,
    stdout_injector: Option<StdoutInjector>,
    stats: Mutex<Stats>,
    extra_tools: Mutex<BTreeSet<String>>,
    /// Open `subscriptions/listen` streams (2026-07-28 clients).
    listeners: Mutex<Vec<SubscriptionSink>>,
}

/// Poisoning only means another handler panicked; the data is still usable.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    pub fn new(
        name: String,
        tools_prefix: String,
        max_protocol_version: Option<ProtocolVersion>,
        spawn_log: Option<PathBuf>,
        stdout_injector: Option<StdoutInjector>,
    ) -> Self {
        Self {
            name,
            tools_prefix,
            max_protocol_version,
            min_protocol_version: None,
            ignore_client_capabilities: false,
            tasks: Default::default(),
            spawn_log,
            stdout_injector,
            stats: Mutex::new(Stats::default()),
            extra_tools: Mutex::new(BTreeSet::new()),
            listeners: Mutex::new(Vec::new()),
        }
    }

    /// Appends one line to the spawn log, if there is one. A test that cannot
    /// read the log fails on its own, so a write error is only reported.
    pub fn log_line(&self, line: &str) {
        if let Some(path) = &self.spawn_log {
            append_line(path, line);
        }
    }

    pub fn record_initialize(&self) {
        lock(&self.stats).initialize += 1;
        self.log_line("initialize");
    }

    pub fn record_call(&self, tool: &str) {
        *lock(&self.stats).calls.entry(tool.to_owned()).or_default() += 1;
        self.log_line(&format!("call {tool}"));
    }

    pub fn record_http_request(&self) {
        lock(&self.stats).requests += 1;
    }

    pub fn stats(&self) -> Stats {
        lock(&self.stats).clone()
    }

    pub fn add_listener(&self, sink: SubscriptionSink) {
        lock(&self.listeners).push(sink);
    }

    pub fn remove_listener(&self, id: &RequestId) {
        lock(&self.listeners).retain(|s| s.id() != id);
    }

    /// Sends `notification` on every listen stream that accepted it;
    /// returns how many did.
    pub async fn announce(&self, notification: ServerNotification) -> usize {
        let sinks = lock(&self.listeners).clone();
        let mut sent = 0;
        for sink in sinks {
            if sink.send(notification.clone()).await.is_ok() {
                sent += 1;
            }
        }
        sent
    }

    pub fn add_extra_tools(&self, names: impl IntoIterator<Item = String>) {
        lock(&self.extra_tools).extend(names);
    }

    pub fn extra_tools(&self) -> Vec<String> {
        lock(&self.extra_tools).iter().cloned().collect()
    }

    pub fn has_extra_tool(&self, name: &str) -> bool {
        lock(&self.extra_tools).contains(name)
    }

    pub fn set_log_level(&self, level: LoggingLevel) {
        lock(&self.stats).log_level = Some(level);
    }

    /// Queues `line` for stdout; returns false when not serving over stdio.
    pub fn inject_stdout(&self, line: &str) -> bool {
        self.stdout_injector
            .as_ref()
            .is_some_and(|injector| injector.send(line.to_owned()).is_ok())
    }
}

/// Appends `line` and a newline to the file at `path`, creating it if needed.
pub fn append_line(path: &std::path::Path, line: &str) {
    let result = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut file| file.write_all(format!("{line}\n").as_bytes()));
    if let Err(error) = result {
        eprintln!("mcpool-faulty: cannot append to {}: {error}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_counted_per_tool_and_logged() {
        let dir = std::env::temp_dir().join(format!("faulty-shared-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("spawn.log");
        let _ = std::fs::remove_file(&log);
        let shared = Shared::new("t".into(), String::new(), None, Some(log.clone()), None);
        shared.record_initialize();
        shared.record_call("echo");
        shared.record_call("echo");
        shared.record_call("add");
        let stats = shared.stats();
        assert_eq!(stats.initialize, 1);
        assert_eq!(stats.calls.get("echo"), Some(&2));
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "initialize\ncall echo\ncall echo\ncall add\n"
        );
        assert!(!shared.inject_stdout("x"));
    }
}
