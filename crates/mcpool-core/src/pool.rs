//! The pool: every configured server's [`Supervisor`], the aggregated view
//! agents see (names, list changes), and the status events for the UI.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use rmcp::model::{Prompt, Tool};
use serde::Serialize;
use tokio::sync::broadcast;

use crate::backoff::Backoff;
use crate::cache::{Fingerprinter, ToolCache};
use crate::config::{Config, ConfigProblem};
use crate::hub::{Hub, ListKind, Scope};
use crate::lifecycle::Status;
use crate::names::NameTable;
use crate::secrets::{MemoryStore, SecretStore};
use crate::supervisor::{Context, Lists, Observer, ServerSnapshot, Supervisor};
use crate::toolctl::{Approvals, ToolControl, Verdict};

/// The server name the built-in tools live under.
pub const BUILTIN_SERVER: &str = "mcpool";
pub const STATUS_TOOL: &str = "mcpool__status";
pub const RECONNECT_TOOL: &str = "mcpool__reconnect";

/// How long shutdown waits for every server to stop.
pub const SHUTDOWN_DEADLINE: Duration = Duration::from_secs(5);

/// One status change, as `/api/events` sends it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct StatusEvent {
    pub server: String,
    pub status: Status,
    pub error: Option<String>,
}

/// The tools of a server held back for the user's approval (all of them,
/// after every change of the set), as `/api/events` sends it (`tools`).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct HeldEvent {
    pub server: String,
    pub held: Vec<String>,
}

/// What the config file said last: its path, a whole-file error (the
/// running servers are kept), and the entries left out or repeated.
#[derive(Debug, Clone, Default)]
pub struct ConfigState {
    pub path: Option<std::path::PathBuf>,
    pub file_error: Option<ConfigProblem>,
    pub problems: Vec<ConfigProblem>,
}

#[derive(Clone)]
pub struct Pool {
    inner: Arc<PoolInner>,
}

#[derive(Default)]
struct Views {
    generation: u64,
    tools: Option<Arc<ToolView>>,
    prompts: Option<Arc<PromptView>>,
}

struct PoolInner {
    hub: Arc<Hub>,
    /// Built views, dropped whenever a server's lists change.
    views: Mutex<Views>,
    ctx: Arc<Context>,
    servers: RwLock<BTreeMap<String, Arc<Supervisor>>>,
    events: broadcast::Sender<StatusEvent>,
    last_status: Mutex<BTreeMap<String, (Status, Option<String>)>>,
    signatures: Mutex<BTreeMap<(ListKind, SigScope), u64>>,
    /// Per server, the tools held back for approval, as last announced.
    held: Mutex<BTreeMap<String, BTreeSet<String>>>,
    held_events: broadcast::Sender<HeldEvent>,
    config: tokio::sync::watch::Sender<ConfigState>,
    observer: Weak<dyn Observer>,
}

impl Observer for PoolInner {
    fn status_changed(&self, server: &str) {
        PoolInner::status_changed(self, server);
    }
    fn lists_changed(&self, server: &str) {
        PoolInner::lists_changed(self, Some(server));
    }
}

/// Aggregated tools with the table that maps their public names back.
pub struct ToolView {
    pub tools: Vec<Tool>,
    pub names: NameTable,
}

pub struct PromptView {
    pub prompts: Vec<Prompt>,
    pub names: NameTable,
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
}

/// Default keepalive: rare enough that an idle machine does almost no work.
pub const DEFAULT_KEEPALIVE: Duration = Duration::from_secs(300);

impl Default for PoolOptions {
    /// No keyring and no disk cache: for tests of the pure parts.
    fn default() -> Self {
        PoolOptions {
            backoff: Backoff::default(),
            secrets: Arc::new(MemoryStore::default()),
            cache: None,
            profile: "default".into(),
            keepalive: Some(DEFAULT_KEEPALIVE),
            approvals_file: None,
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
        let ctx = Arc::new(Context {
            oauth,
            hub: Arc::new(Hub::default()),
            backoff: options.backoff,
            secrets: options.secrets,
            cache: options.cache,
            profile: options.profile,
            keepalive: options.keepalive,
            asleep: std::sync::atomic::AtomicBool::new(false),
            tools: Arc::new(ToolControl::new(approvals)),
        });
        let (events, _) = broadcast::channel(256);
        let (held_events, _) = broadcast::channel(64);
        let inner = Arc::new_cyclic(|weak: &Weak<PoolInner>| {
            // Supervisors hold the pool only weakly: no reference cycle.
            let weak_observer: Weak<dyn Observer> = weak.clone();
            PoolInner {
                hub: ctx.hub.clone(),
                views: Mutex::new(Views::default()),
                ctx: ctx.clone(),
                servers: RwLock::new(BTreeMap::new()),
                events,
                last_status: Mutex::new(BTreeMap::new()),
                signatures: Mutex::new(BTreeMap::new()),
                held: Mutex::new(BTreeMap::new()),
                held_events,
                config: tokio::sync::watch::Sender::new(ConfigState::default()),
                observer: weak_observer,
            }
        });
        Pool { inner }
    }

    pub fn hub(&self) -> &Arc<Hub> {
        &self.inner.hub
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
        self.inner.lists_changed(Some(server));
        true
    }

    /// The tools a profile's agents see, or `None` when there is no such
    /// profile: the aggregated view narrowed to its servers and tools.
    pub fn profile_tools(&self, name: &str) -> Option<Vec<Tool>> {
        let profile = self.inner.ctx.tools.profile(name)?;
        let view = self.tool_view();
        Some(profile_filter(&view, &profile))
    }

    pub fn server(&self, name: &str) -> Option<Arc<Supervisor>> {
        self.inner.servers.read().ok()?.get(name).cloned()
    }

    pub fn servers(&self) -> Vec<Arc<Supervisor>> {
        self.inner
            .servers
            .read()
            .map(|s| s.values().cloned().collect())
            .unwrap_or_default()
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
            let changed = state.file_error.is_some() || state.problems != config.problems;
            state.file_error = None;
            state.problems.clone_from(&config.problems);
            changed
        });
        for problem in &config.problems {
            tracing::warn!("{problem}");
        }
        let mut started = Vec::new();
        let mut stopped = Vec::new();
        {
            let Ok(mut servers) = self.inner.servers.write() else {
                return;
            };
            let names: BTreeSet<String> = servers.keys().cloned().collect();
            for name in names {
                let keep = config
                    .servers
                    .get(&name)
                    .is_some_and(|spec| servers.get(&name).is_some_and(|s| s.spec() == *spec));
                if !keep {
                    if let Some(old) = servers.remove(&name) {
                        stopped.push(old);
                    }
                }
            }
            for (name, spec) in &config.servers {
                if !servers.contains_key(name) {
                    let sup = Supervisor::new(spec.clone(), self.inner.ctx.clone(), self.inner.observer.clone());
                    servers.insert(name.clone(), sup.clone());
                    started.push(sup);
                }
            }
        }
        for old in &stopped {
            // Removed or reconfigured: its cache file describes a server
            // that no longer exists.
            old.forget_cache();
            let old = old.clone();
            tokio::spawn(async move { old.stop().await });
        }
        for sup in &started {
            sup.start();
            self.inner.status_changed(sup.name());
        }
        for old in &stopped {
            if let Ok(mut last) = self.inner.last_status.lock() {
                last.remove(old.name());
            }
            self.inner.lists_changed(Some(old.name()));
        }
        // New filters or profiles change what agents see without a restart.
        if self.inner.ctx.tools.set_policy(&config.tools) {
            self.inner.lists_changed(None);
        }
    }

    /// Stops every server (and its process group) within the deadline.
    pub async fn shutdown(&self) {
        let all: Vec<Arc<Supervisor>> = match self.inner.servers.write() {
            Ok(mut s) => std::mem::take(&mut *s).into_values().collect(),
            Err(_) => Vec::new(),
        };
        let stops = futures::future::join_all(all.iter().map(|s| s.stop()));
        if tokio::time::timeout(SHUTDOWN_DEADLINE, stops).await.is_err() {
            tracing::warn!("some servers did not stop within {SHUTDOWN_DEADLINE:?}");
        }
    }

    /// Every visible tool under its public name, built-ins first; rebuilt
    /// only after some server's lists changed.
    pub fn tool_view(&self) -> Arc<ToolView> {
        self.cached_view(|v| &mut v.tools, || self.build_tool_view())
    }

    /// The aggregated prompts, rebuilt only after some server's lists changed.
    pub fn prompt_view(&self) -> Arc<PromptView> {
        self.cached_view(|v| &mut v.prompts, || self.build_prompt_view())
    }

    fn cached_view<T>(&self, slot: impl Fn(&mut Views) -> &mut Option<Arc<T>>, build: impl FnOnce() -> T) -> Arc<T> {
        let (generation, cached) = match self.inner.views.lock() {
            Ok(mut v) => (v.generation, slot(&mut v).clone()),
            Err(_) => (0, None),
        };
        if let Some(view) = cached {
            return view;
        }
        let view = Arc::new(build());
        if let Ok(mut v) = self.inner.views.lock() {
            // A change that landed while building makes this view stale.
            if v.generation == generation {
                *slot(&mut v) = Some(view.clone());
            }
        }
        view
    }

    fn build_tool_view(&self) -> ToolView {
        let lists: Vec<(String, Lists)> = self
            .servers()
            .iter()
            .map(|s| (s.name().to_string(), s.lists()))
            .collect();
        let control = &self.inner.ctx.tools;
        tool_view_of(&lists, |server, tool| control.visible(server, tool))
    }

    fn build_prompt_view(&self) -> PromptView {
        let lists: Vec<(String, Lists)> = self
            .servers()
            .iter()
            .map(|s| (s.name().to_string(), s.lists()))
            .collect();
        let pairs = lists
            .iter()
            .flat_map(|(server, l)| l.prompts.iter().map(move |p| (server.as_str(), p.name.as_str())));
        let names = NameTable::build(pairs);
        let mut prompts = Vec::new();
        for (server, l) in &lists {
            for prompt in &l.prompts {
                if let Some(public) = names.public_name(server, &prompt.name) {
                    let mut p = prompt.clone();
                    p.name = public.to_string();
                    prompts.push(p);
                }
            }
        }
        PromptView { prompts, names }
    }
}

impl PoolInner {
    fn status_changed(&self, server: &str) {
        let Some(sup) = self.servers.read().ok().and_then(|s| s.get(server).cloned()) else {
            return;
        };
        let snap = sup.snapshot();
        let current = (snap.status, snap.error.clone());
        let changed = self
            .last_status
            .lock()
            .map(|mut last| last.insert(server.to_string(), current.clone()) != Some(current))
            .unwrap_or(true);
        if changed {
            let _ = self.events.send(StatusEvent {
                server: server.to_string(),
                status: snap.status,
                error: snap.error,
            });
        }
    }

    /// Reviews the tools just seen (first sight approves, changes are held
    /// back), then sends `list_changed` to the sessions whose visible lists
    /// really changed. `None`: every server (the policy changed).
    fn lists_changed(&self, server: Option<&str>) {
        if let Ok(mut v) = self.views.lock() {
            *v = Views {
                generation: v.generation + 1,
                tools: None,
                prompts: None,
            };
        }
        let servers: Vec<Arc<Supervisor>> = self
            .servers
            .read()
            .map(|s| s.values().cloned().collect())
            .unwrap_or_default();
        let lists: Vec<(String, Lists)> = servers.iter().map(|s| (s.name().to_string(), s.lists())).collect();
        let control = &self.ctx.tools;
        let mode = control.mode();
        let mut own: Vec<(&str, Option<&Lists>)> = lists
            .iter()
            .filter(|(n, _)| server.is_none_or(|s| s == n))
            .map(|(n, l)| (n.as_str(), Some(l)))
            .collect();
        if let Some(s) = server.filter(|s| !lists.iter().any(|(n, _)| n == s)) {
            // Removed: its sessions learn that its lists are gone.
            own.push((s, None));
        }
        for (name, l) in &own {
            let tools = l.map(|l| l.tools.as_slice()).unwrap_or_default();
            control.approvals.observe(name, tools, mode);
            self.update_held(name, tools);
        }
        let view = tool_view_of(&lists, |s, t| control.visible(s, t));
        let profiles = control.policy().profiles;
        for kind in [ListKind::Tools, ListKind::Prompts, ListKind::Resources] {
            let all = match kind {
                ListKind::Tools => hash_tools(&view.tools),
                _ => signature(kind, lists.iter().map(|(n, l)| (n.as_str(), l))),
            };
            if self.update_signature(kind, SigScope::All, all) {
                self.hub.notify_list_changed(kind, |scope| *scope == Scope::All);
            }
            for (name, l) in &own {
                let empty = Lists::default();
                let l = l.unwrap_or(&empty);
                let sig = match kind {
                    ListKind::Tools => {
                        let visible: Vec<Tool> = l.tools.iter().filter(|t| control.visible(name, t)).cloned().collect();
                        hash_tools(&visible)
                    }
                    _ => signature(kind, std::iter::once((*name, l))),
                };
                if self.update_signature(kind, SigScope::Server(name.to_string()), sig) {
                    let target = Scope::One(name.to_string());
                    self.hub.notify_list_changed(kind, |scope| *scope == target);
                }
            }
            for (pname, profile) in &profiles {
                let sig = match kind {
                    ListKind::Tools => hash_tools(&profile_filter(&view, profile)),
                    _ => signature(
                        kind,
                        lists
                            .iter()
                            .filter(|(n, _)| profile.includes_server(n))
                            .map(|(n, l)| (n.as_str(), l)),
                    ),
                };
                if self.update_signature(kind, SigScope::Profile(pname.clone()), sig) {
                    let target = Scope::Profile(pname.clone());
                    self.hub.notify_list_changed(kind, |scope| *scope == target);
                }
            }
        }
    }

    /// Announces the server's held-back tools when the set changed.
    fn update_held(&self, server: &str, tools: &[Tool]) {
        let held: BTreeSet<String> = tools
            .iter()
            .filter(|t| self.ctx.tools.approvals.verdict(server, t) != Verdict::Approved)
            .map(|t| t.name.to_string())
            .collect();
        let changed = self.held.lock().is_ok_and(|mut all| {
            let before = all.get(server).cloned().unwrap_or_default();
            if held.is_empty() {
                all.remove(server);
            } else {
                all.insert(server.to_string(), held.clone());
            }
            before != held
        });
        if changed {
            if !held.is_empty() {
                tracing::warn!(
                    server,
                    tools = ?held,
                    "tools held back: their definitions differ from what the user approved"
                );
            }
            let _ = self.held_events.send(HeldEvent {
                server: server.to_string(),
                held: held.into_iter().collect(),
            });
        }
    }

    fn update_signature(&self, kind: ListKind, scope: SigScope, sig: u64) -> bool {
        let Ok(mut sigs) = self.signatures.lock() else {
            return false;
        };
        sigs.insert((kind, scope), sig) != Some(sig)
    }
}

/// Whose view a signature is of.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum SigScope {
    All,
    Server(String),
    Profile(String),
}

/// The aggregated tools: public names over every tool (hidden ones too, so
/// a switch never renames another tool), listing only the `visible` ones.
fn tool_view_of(lists: &[(String, Lists)], visible: impl Fn(&str, &Tool) -> bool) -> ToolView {
    let pairs = lists
        .iter()
        .flat_map(|(server, l)| l.tools.iter().map(move |t| (server.as_str(), t.name.as_ref())));
    let names = NameTable::build_reserving(&[STATUS_TOOL, RECONNECT_TOOL], pairs);
    let mut tools = crate::endpoint::builtin::tools();
    for (server, l) in lists {
        for tool in &l.tools {
            if !visible(server, tool) {
                continue;
            }
            if let Some(public) = names.public_name(server, &tool.name) {
                let mut t = tool.clone();
                t.name = public.to_string().into();
                tools.push(t);
            }
        }
    }
    ToolView { tools, names }
}

/// The tools of `view` a profile lets through.
fn profile_filter(view: &ToolView, profile: &crate::toolctl::Profile) -> Vec<Tool> {
    view.tools
        .iter()
        .filter(|t| {
            let server = view.names.resolve(&t.name).map(|(s, _)| s);
            profile.includes_tool(server, &t.name)
        })
        .cloned()
        .collect()
}

fn hash_tools(tools: &[Tool]) -> u64 {
    let mut h = DefaultHasher::new();
    serde_json::to_string(tools).unwrap_or_default().hash(&mut h);
    h.finish()
}

fn signature<'a>(kind: ListKind, lists: impl Iterator<Item = (&'a str, &'a Lists)>) -> u64 {
    let mut h = DefaultHasher::new();
    for (name, l) in lists {
        name.hash(&mut h);
        let json = match kind {
            ListKind::Tools => serde_json::to_string(&l.tools),
            ListKind::Prompts => serde_json::to_string(&l.prompts),
            ListKind::Resources => serde_json::to_string(&(&l.resources, &l.templates)),
        };
        json.unwrap_or_default().hash(&mut h);
    }
    h.finish()
}
