//! The pool: every configured server's [`Supervisor`], the aggregated view
//! agents see (names, list changes), and the status events for the UI.

mod changes;
mod search;
mod views;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use rmcp::model::Tool;
use tokio::sync::broadcast;

use crate::backoff::Backoff;
use crate::cache::{Fingerprinter, ToolCache};
use crate::config::{Config, ConfigProblem, ServerSpec};
use crate::hub::{Hub, ListKind};
use crate::lifecycle::Status;
use crate::secrets::{MemoryStore, SecretStore};
use crate::supervisor::{Context, Observer, ServerSnapshot, Supervisor};
use crate::sync::{lock, read, write};
use crate::toolctl::{Approvals, ToolControl};
use changes::SigScope;
pub use changes::{HeldEvent, StatusEvent};
pub use search::{SearchScope, ToolMatch};
use views::Views;
pub use views::{PromptView, ToolView};

/// How long shutdown waits for every server to stop.
pub const SHUTDOWN_DEADLINE: Duration = Duration::from_secs(5);

/// What the config file said last: its path, a whole-file error (the
/// running servers are kept), and the entries left out or repeated.
#[derive(Debug, Clone, Default)]
pub struct ConfigState {
    pub path: Option<std::path::PathBuf>,
    pub file_error: Option<ConfigProblem>,
    pub problems: Vec<ConfigProblem>,
    /// The `registries` it names (`None`: the official registry).
    pub registries: Option<Vec<String>>,
}

#[derive(Clone)]
pub struct Pool {
    inner: Arc<PoolInner>,
}

struct PoolInner {
    hub: Arc<Hub>,
    /// The last tool calls agents made, names and timings only.
    recent_calls: crate::calls::CallLog,
    /// Listed first in the aggregated view, under names no server's tool
    /// may take (the endpoint's own tools).
    builtin_tools: Vec<Tool>,
    /// Built views, dropped whenever a server's lists change.
    views: Mutex<Views>,
    ctx: Arc<Context>,
    servers: RwLock<BTreeMap<String, Arc<Supervisor>>>,
    events: broadcast::Sender<StatusEvent>,
    last_status: Mutex<BTreeMap<String, (Status, Option<String>)>>,
    signatures: Mutex<BTreeMap<(ListKind, SigScope), u64>>,
    /// Per server, its visible tools with a hash of each, which the tool
    /// list signatures are made of (`changes.rs`).
    tool_digests: Mutex<BTreeMap<String, Arc<changes::ToolDigest>>>,
    /// Per server, the tools held back for approval, as last announced.
    held: Mutex<BTreeMap<String, BTreeSet<String>>>,
    held_events: broadcast::Sender<HeldEvent>,
    config: tokio::sync::watch::Sender<ConfigState>,
    observer: Weak<dyn Observer>,
    /// Every tool the servers list, for tool search (`search.rs`).
    index: RwLock<crate::search::ToolIndex>,
    /// Calls per tool and day, for `pinMostUsed`.
    usage: crate::usage::Usage,
}

impl Observer for PoolInner {
    fn status_changed(&self, server: &str) {
        PoolInner::status_changed(self, server);
    }
    fn lists_changed(&self, server: &str) {
        PoolInner::lists_changed(self, Some(server));
    }
}

/// How a pool is set up: its policy and its boundaries.
pub struct PoolOptions {
    pub backoff: Backoff,
    pub secrets: Arc<dyn SecretStore>,
    pub cache: Option<(ToolCache, Fingerprinter)>,
    pub profile: String,
    /// Ping idle remote connections this often; `None` turns it off.
    pub keepalive: Option<Duration>,
    /// Where the approved tool definitions are kept; `None`: in memory.
    pub approvals_file: Option<std::path::PathBuf>,
    /// Tools that are not any server's, listed first in the aggregated view
    /// under their own names (the endpoint's `mcpool__status` and
    /// `mcpool__reconnect`, [`crate::endpoint::mcp::builtin::tools`]).
    pub builtin_tools: Vec<Tool>,
    /// Where the tool call counts of `pinMostUsed` are kept; `None`: in
    /// memory.
    pub usage_file: Option<std::path::PathBuf>,
    /// The activity log (`Activity::off()`: nothing kept).
    pub activity: crate::activity::Activity,
    /// The servers' logs (stderr, mcpool's lines); `None`: none kept.
    pub server_logs: Option<crate::server_logs::ServerLogs>,
    /// How long an agent session may go without a request
    /// (`--session-idle-secs`); a server's session connection
    /// (supervisor/session_upstream.rs) closes after as long unused.
    pub session_idle: Duration,
}

/// How long an agent session may stay idle when nothing else is set
/// (`MCPOOL_SESSION_IDLE_SECS`); a server's session connection closes after
/// as long unused.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(1800);

/// Default keepalive: rare enough that an idle machine does almost no work.
pub const DEFAULT_KEEPALIVE: Duration = Duration::from_secs(300);

impl Default for PoolOptions {
    /// No keyring, no disk cache and no built-in tools: for tests of the
    /// pure parts.
    fn default() -> Self {
        PoolOptions {
            backoff: Backoff::default(),
            secrets: Arc::new(MemoryStore::default()),
            cache: None,
            profile: "default".into(),
            keepalive: Some(DEFAULT_KEEPALIVE),
            approvals_file: None,
            builtin_tools: Vec::new(),
            usage_file: None,
            activity: crate::activity::Activity::off(),
            server_logs: None,
            session_idle: DEFAULT_SESSION_IDLE,
        }
    }
}

impl Default for Pool {
    fn default() -> Self {
        Pool::new(PoolOptions::default())
    }
}

impl Pool {
    pub fn new(options: PoolOptions) -> Self {
        let oauth = Arc::new(crate::oauth::OAuth::new(options.secrets.clone()));
        let approvals = options.approvals_file.map(Approvals::open).unwrap_or_default();
        let usage = options.usage_file.map(crate::usage::Usage::open).unwrap_or_default();
        let ctx = Arc::new(Context {
            oauth,
            hub: Arc::new(Hub::default()),
            activity: options.activity,
            cache_hits: Default::default(),
            backoff: options.backoff,
            secrets: options.secrets,
            cache: options.cache,
            profile: options.profile,
            keepalive: options.keepalive,
            asleep: std::sync::atomic::AtomicBool::new(false),
            tools: Arc::new(ToolControl::new(approvals)),
            logs: options.server_logs,
            session_idle: options.session_idle,
        });
        let (events, _) = broadcast::channel(256);
        let (held_events, _) = broadcast::channel(64);
        let inner = Arc::new_cyclic(|weak: &Weak<PoolInner>| {
            // Supervisors hold the pool only weakly: no reference cycle.
            let weak_observer: Weak<dyn Observer> = weak.clone();
            PoolInner {
                hub: ctx.hub.clone(),
                recent_calls: Default::default(),
                builtin_tools: options.builtin_tools,
                views: Mutex::new(Views::default()),
                ctx: ctx.clone(),
                servers: RwLock::new(BTreeMap::new()),
                events,
                last_status: Mutex::new(BTreeMap::new()),
                signatures: Mutex::new(BTreeMap::new()),
                tool_digests: Mutex::new(BTreeMap::new()),
                held: Mutex::new(BTreeMap::new()),
                held_events,
                config: tokio::sync::watch::Sender::new(ConfigState::default()),
                observer: weak_observer,
                index: RwLock::new(crate::search::ToolIndex::default()),
                usage,
            }
        });
        inner.index_builtins();
        Pool { inner }
    }

    pub fn hub(&self) -> &Arc<Hub> {
        &self.inner.hub
    }

    /// Every request and server event, on disk (and to the metrics).
    pub fn activity(&self) -> &crate::activity::Activity {
        &self.inner.ctx.activity
    }

    /// The last tool calls agents made, names and timings only.
    pub fn recent_calls(&self) -> &crate::calls::CallLog {
        &self.inner.recent_calls
    }

    /// How many tool lists were offered from the disk cache.
    pub fn cache_hits(&self) -> u64 {
        self.inner.ctx.cache_hits.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn subscribe(&self) -> broadcast::Receiver<StatusEvent> {
        self.inner.events.subscribe()
    }

    /// Changes of the tools held back for approval, per server.
    pub fn subscribe_held(&self) -> broadcast::Receiver<HeldEvent> {
        self.inner.held_events.subscribe()
    }

    /// The tool filters, profiles and approvals in force.
    pub fn tool_control(&self) -> &Arc<ToolControl> {
        &self.inner.ctx.tools
    }

    /// Approves `tool` of `server` as it is listed now; agents see it again.
    /// Answers false when the server lists no such tool.
    pub fn approve_tool(&self, server: &str, tool: &str) -> bool {
        let Some(sup) = self.server(server) else { return false };
        let Some(current) = sup.lists().tools.into_iter().find(|t| t.name == tool) else {
            return false;
        };
        self.inner.ctx.tools.approvals.approve(server, &current);
        self.inner.ctx.activity.record(crate::activity::Entry::server_event(
            server,
            "approval",
            "approved",
            Some(format!("Tool '{tool}' approved.")),
        ));
        self.inner.lists_changed(Some(server));
        true
    }

    /// The servers' logs, when kept.
    pub fn server_logs(&self) -> Option<&crate::server_logs::ServerLogs> {
        self.inner.ctx.logs.as_ref()
    }

    pub fn server(&self, name: &str) -> Option<Arc<Supervisor>> {
        read(&self.inner.servers).get(name).cloned()
    }

    pub fn servers(&self) -> Vec<Arc<Supervisor>> {
        read(&self.inner.servers).values().cloned().collect()
    }

    /// Between a sleep and the next wake, keepalive probes stop.
    pub fn set_asleep(&self, asleep: bool) {
        self.inner
            .ctx
            .asleep
            .store(asleep, std::sync::atomic::Ordering::Relaxed);
    }

    /// The servers connected right now.
    pub fn connected(&self) -> BTreeSet<String> {
        self.servers()
            .iter()
            .filter(|s| s.status() == Status::Connected)
            .map(|s| s.name().to_string())
            .collect()
    }

    pub fn snapshot(&self) -> Vec<ServerSnapshot> {
        self.servers().iter().map(|s| s.snapshot()).collect()
    }

    pub fn config_problems(&self) -> Vec<ConfigProblem> {
        self.inner.config.borrow().problems.clone()
    }

    /// One test connection with `spec`, outside the pool (nothing kept);
    /// `typed` are the secret values it holds literally.
    pub async fn probe(&self, spec: ServerSpec, typed: &[String]) -> crate::supervisor::probe::Probe {
        crate::supervisor::probe::probe(spec, &self.inner.ctx, typed).await
    }

    /// The setup's profile, which names its keyring service.
    pub fn profile(&self) -> &str {
        &self.inner.ctx.profile
    }

    /// The store `${keyring:NAME}` values come from.
    pub fn secrets(&self) -> Arc<dyn SecretStore> {
        self.inner.ctx.secrets.clone()
    }

    /// The config file's state as `/api/config` shows it; the receiver sees
    /// every change.
    pub fn config_state(&self) -> tokio::sync::watch::Receiver<ConfigState> {
        self.inner.config.subscribe()
    }

    /// The outcome of reading the config file at `path`: a config is applied;
    /// a file that could not be read keeps the running servers and is shown
    /// until it is fixed.
    pub fn config_loaded(&self, path: &std::path::Path, loaded: Result<&Config, &ConfigProblem>) {
        self.inner.config.send_if_modified(|state| {
            let changed = state.path.as_deref() != Some(path);
            state.path = Some(path.to_path_buf());
            changed
        });
        match loaded {
            Ok(config) => self.apply_config(config),
            Err(problem) => self
                .inner
                .config
                .send_modify(|state| state.file_error = Some(problem.clone())),
        }
    }

    /// Makes the running set match `config`: new servers start, removed ones
    /// stop, and only servers whose entry changed restart.
    pub fn apply_config(&self, config: &Config) {
        self.inner
            .ctx
            .oauth
            .set_client_metadata_url(config.oauth_client_metadata_url.clone());
        self.inner.config.send_if_modified(|state| {
            let changed = state.file_error.is_some()
                || state.problems != config.problems
                || state.registries != config.registries;
            state.file_error = None;
            state.problems.clone_from(&config.problems);
            state.registries.clone_from(&config.registries);
            changed
        });
        for problem in &config.problems {
            tracing::warn!("{problem}");
        }
        self.inner.ctx.activity.set_retention(config.activity);
        let mut started = Vec::new();
        let mut stopped = Vec::new();
        {
            let mut servers = write(&self.inner.servers);
            let names: BTreeSet<String> = servers.keys().cloned().collect();
            for name in names {
                let old = servers.get(&name);
                let keep = config
                    .servers
                    .get(&name)
                    .filter(|spec| old.is_some_and(|s| s.spec().same_connection(spec)));
                match (keep, old) {
                    (Some(spec), Some(old)) => old.set_log_arguments(spec.log_arguments),
                    _ => {
                        if let Some(old) = servers.remove(&name) {
                            let what = if config.servers.contains_key(&name) {
                                "changed"
                            } else {
                                "removed"
                            };
                            self.inner
                                .ctx
                                .activity
                                .record(crate::activity::Entry::server_event(&name, "config", what, None));
                            stopped.push(old);
                        }
                    }
                }
            }
            for (name, spec) in &config.servers {
                if !servers.contains_key(name) {
                    if !stopped.iter().any(|s| s.name() == name) {
                        self.inner
                            .ctx
                            .activity
                            .record(crate::activity::Entry::server_event(name, "config", "added", None));
                    }
                    let sup = Supervisor::new(spec.clone(), self.inner.ctx.clone(), self.inner.observer.clone());
                    servers.insert(name.clone(), sup.clone());
                    started.push(sup);
                }
            }
        }
        for old in &stopped {
            let name = old.name();
            if started.iter().any(|s| s.name() == name) {
                tracing::info!(server = %name, "its config entry changed: restarting");
            } else {
                tracing::info!(server = %name, "removed from the config: stopping");
            }
            // Removed or reconfigured: its cache file describes a server
            // that no longer exists.
            old.forget_cache();
            let old = old.clone();
            tokio::spawn(async move { old.stop().await });
        }
        for sup in &started {
            if !stopped.iter().any(|s| s.name() == sup.name()) {
                tracing::info!(server = %sup.name(), "added from the config");
            }
            sup.start();
            self.inner.status_changed(sup.name());
        }
        for old in &stopped {
            lock(&self.inner.last_status).remove(old.name());
            self.inner.lists_changed(Some(old.name()));
        }
        // New filters or profiles change what agents see without a restart.
        if self.inner.ctx.tools.set_policy(&config.tools) {
            self.inner.lists_changed(None);
            // The dashboard shows what the listing settings send: its
            // `config` event says they may have changed.
            self.inner.config.send_modify(|_| ());
        }
    }

    /// Stops every server (and its process group) within the deadline.
    pub async fn shutdown(&self) {
        let all: Vec<Arc<Supervisor>> = std::mem::take(&mut *write(&self.inner.servers)).into_values().collect();
        let stops = futures::future::join_all(all.iter().map(|s| s.stop()));
        if tokio::time::timeout(SHUTDOWN_DEADLINE, stops).await.is_err() {
            tracing::warn!("some servers did not stop within {SHUTDOWN_DEADLINE:?}");
        }
    }
}
