//! What a local server may read, write and reach: the entry's `sandbox`
//! (or the config's default) as a [`Sandbox`], the paths and network a
//! mode gives for one command ([`policy`], pure), and the kernel's
//! enforcement in the child between fork and exec (`linux.rs`: Landlock,
//! namespaces and `no_new_privs`; `macos.rs`: a Seatbelt profile made from
//! the plan by [`seatbelt`], pure; on Windows nothing yet, said as `not
//! available` by `other.rs`). mcpool itself is never restricted.

pub mod denial;
pub mod policy;
pub mod seatbelt;
#[cfg(test)]
mod tests;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as sys;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as sys;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod other;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
use other as sys;

use std::path::PathBuf;

use serde::Serialize;

pub use denial::Denial;
pub use policy::{Inputs, Plan};

/// How much a local server is confined.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// As it ran before sandboxes: the user's whole home and network.
    #[default]
    Off,
    /// The system, its own program and working directory read; its own data
    /// folder, a private temp folder and the package caches written; network on.
    Standard,
    /// `standard` with no TCP connect or bind and only the environment the
    /// entry names (beside `PATH`, `LANG` and the runtime's own).
    Strict,
}

impl Mode {
    pub fn parse(text: &str) -> Option<Mode> {
        [Mode::Off, Mode::Standard, Mode::Strict]
            .into_iter()
            .find(|m| m.as_str() == text)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::Standard => "standard",
            Mode::Strict => "strict",
        }
    }
}

/// One server's sandbox as the config gives it, its grants resolved to
/// absolute paths that exist.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sandbox {
    pub mode: Mode,
    /// Folders and files it may read (and run).
    pub allow_read: Vec<PathBuf>,
    /// Folders and files it may read and write.
    pub allow_write: Vec<PathBuf>,
    /// `allowSockets`: the Unix sockets it may connect to (none else).
    pub allow_sockets: Vec<PathBuf>,
    /// `network`: overrides the mode's (on for `standard`, off for `strict`).
    pub network: Option<bool>,
    /// `allowUnsandboxed`: a `strict` server may start where the kernel
    /// cannot confine it (otherwise it is refused).
    pub allow_unsandboxed: bool,
}

impl Sandbox {
    /// Whether the server may use TCP.
    pub fn network(&self) -> bool {
        self.network.unwrap_or(self.mode != Mode::Strict)
    }
}

/// How far this system enforces a sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum State {
    /// The mode is `off`.
    #[serde(rename = "off")]
    Off,
    #[serde(rename = "enforced")]
    Enforced,
    /// Some of it: `missing` says what this kernel cannot restrict.
    #[serde(rename = "partly enforced")]
    PartlyEnforced,
    /// Nothing of it on this system (no Landlock on Linux; Windows as yet).
    #[serde(rename = "not available")]
    NotAvailable,
}

/// A grant as `/api/servers` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Grant {
    pub path: String,
    /// `read`, `write` (a write grant can be read too) or `socket`.
    pub access: &'static str,
}

/// What `/api/servers` and `mcpool doctor` say of a server's sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Status {
    pub mode: Mode,
    pub state: State,
    pub grants: Vec<Grant>,
    /// What the kernel cannot restrict, as short phrases; empty when enforced.
    pub missing: Vec<String>,
    /// What the server's last stderr lines say its sandbox refused it.
    pub denied: Option<Denial>,
}

impl Status {
    /// With what `stderr` (its last lines, oldest first) says was refused,
    /// when the sandbox is on; or, when its words name nothing but its last
    /// start ended with the process exiting (`exited_at_start`, how it
    /// ended), that the sandbox may be why.
    pub fn noting(mut self, stderr: &[String], exited_at_start: Option<&str>) -> Status {
        if self.mode != Mode::Off {
            self.denied = denial::denial(stderr).or_else(|| exited_at_start.map(denial::exited_at_start));
        }
        self
    }
}

/// What the kernel gives for `sandbox`.
pub fn status(sandbox: &Sandbox) -> Status {
    let (state, missing) = if sandbox.mode == Mode::Off {
        (State::Off, Vec::new())
    } else {
        let missing = sys::missing(sandbox.network());
        match missing {
            None => (State::NotAvailable, vec![sys::UNAVAILABLE.to_string()]),
            Some(m) if m.is_empty() => (State::Enforced, m),
            Some(m) => (State::PartlyEnforced, m),
        }
    };
    let grants = sandbox
        .allow_write
        .iter()
        .map(|p| (p, "write"))
        .chain(sandbox.allow_read.iter().map(|p| (p, "read")))
        .chain(sandbox.allow_sockets.iter().map(|p| (p, "socket")))
        .map(|(p, access)| Grant {
            path: p.display().to_string(),
            access,
        })
        .collect();
    Status {
        mode: sandbox.mode,
        state,
        grants,
        missing,
        denied: None,
    }
}

/// Why a sandboxed server was not started.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error(
        "the sandbox 'strict' cannot be enforced on this system ({0}); set \"allowUnsandboxed\": true in its sandbox to start it anyway"
    )]
    Refused(String),
    #[error("the sandbox could not be prepared: {0}")]
    Prepare(String),
}

/// A sandbox ready to be applied in a child: the kernel's rules prepared
/// in mcpool (the only place that may allocate), applied between fork and
/// exec by [`Confinement::apply_in_child`].
pub struct Confinement {
    inner: Option<sys::Prepared>,
}

impl Confinement {
    /// Prepares `plan` for a child; `None` inside when the kernel gives
    /// nothing and the mode allows running unconfined.
    pub fn prepare(sandbox: &Sandbox, plan: &Plan) -> Result<Confinement, SandboxError> {
        let status = status(sandbox);
        if status.state == State::NotAvailable {
            if sandbox.mode == Mode::Strict && !sandbox.allow_unsandboxed {
                return Err(SandboxError::Refused(status.missing.join(", ")));
            }
            return Ok(Confinement { inner: None });
        }
        let prepared = sys::prepare(plan).map_err(SandboxError::Prepare)?;
        Ok(Confinement { inner: Some(prepared) })
    }

    /// Restricts the calling process for good. Runs in the child after
    /// fork: only system calls, no allocation.
    pub fn apply_in_child(&self) -> std::io::Result<()> {
        match &self.inner {
            Some(prepared) => sys::apply(prepared),
            None => Ok(()),
        }
    }

    /// [`Confinement::prepare`] as on a kernel without namespaces.
    #[cfg(all(test, target_os = "linux"))]
    pub fn prepare_without_namespaces(plan: &Plan) -> Result<Confinement, SandboxError> {
        let prepared = linux::prepare_without_namespaces(plan).map_err(SandboxError::Prepare)?;
        Ok(Confinement { inner: Some(prepared) })
    }

    /// Whether anything is applied at all.
    pub fn is_active(&self) -> bool {
        self.inner.is_some()
    }
}

/// What a sandboxed start adds: the confinement, the variables set for the
/// server, and the only inherited ones (all of mcpool's under `standard`
/// but its own settings and bus address; under `strict`, a few).
pub struct Launch {
    pub confinement: std::sync::Arc<Confinement>,
    pub env: Vec<(String, String)>,
    pub base_env: Option<Vec<(String, String)>>,
}

/// Prepares the start of the local server `name`: `None` when its mode is
/// `off`. Makes its own folder under mcpool's data folder (created for the
/// user alone) and reads mcpool's `PATH` to find its program.
pub fn launch(
    name: &str,
    sandbox: &Sandbox,
    command: &str,
    args: &[String],
    env: &std::collections::BTreeMap<String, String>,
    cwd: Option<&std::path::Path>,
) -> Result<Option<Launch>, SandboxError> {
    if sandbox.mode == Mode::Off {
        return Ok(None);
    }
    let path = env
        .get("PATH")
        .map(std::ffi::OsString::from)
        .or_else(|| std::env::var_os("PATH"));
    let program = crate::os::process::find(command, path.as_deref()).unwrap_or_else(|| PathBuf::from(command));
    let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let own = own_folder(name);
    for folder in Plan::own_folders(&own) {
        crate::os::files::create_private_dir(&folder)
            .map_err(|e| SandboxError::Prepare(format!("cannot make {}: {e}", folder.display())))?;
    }
    let home = dirs::home_dir();
    let xdg = |name: &str| std::env::var_os(name).map(PathBuf::from).filter(|p| p.is_absolute());
    let (cache_home, data_home) = (xdg("XDG_CACHE_HOME"), xdg("XDG_DATA_HOME"));
    let list_dir = |p: &std::path::Path| -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(p) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .collect()
    };
    let plan = policy::plan(
        sandbox,
        &Inputs {
            program: &program,
            args,
            cwd: cwd.unwrap_or(&here),
            home: home.as_deref(),
            own: &own,
            canonical: &|p| std::fs::canonicalize(p).ok(),
            is_file: &|p| p.is_file(),
            list_dir: &list_dir,
            cache_home: cache_home.as_deref(),
            data_home: data_home.as_deref(),
        },
    );
    let confinement = Confinement::prepare(sandbox, &plan)?;
    // In every mode: mcpool's own settings and bus address stay behind.
    let base_env = Some(
        std::env::vars()
            .filter(|(k, _)| policy::passes(sandbox.mode, k))
            .collect(),
    );
    Ok(Some(Launch {
        confinement: std::sync::Arc::new(confinement),
        env: plan.env,
        base_env,
    }))
}

/// `servers/NAME` under mcpool's data folder, the name in the characters
/// of a file name.
pub fn own_folder(name: &str) -> PathBuf {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    crate::os::paths::data_dir().join("servers").join(safe)
}

/// What an "Allow" of the dashboard grants a sandboxed server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allowance {
    Read(PathBuf),
    Write(PathBuf),
    Socket(PathBuf),
    Network,
}

impl Allowance {
    /// From the API's `{"access": "read"|"write"|"socket"|"network", "path"}`.
    pub fn parse(access: &str, path: Option<&str>) -> Result<Allowance, String> {
        let path = || {
            path.filter(|p| std::path::Path::new(p).is_absolute())
                .map(PathBuf::from)
                .ok_or_else(|| format!("allowing {access} needs an absolute \"path\""))
        };
        match access {
            "read" => Ok(Allowance::Read(path()?)),
            "write" => Ok(Allowance::Write(path()?)),
            "socket" => Ok(Allowance::Socket(path()?)),
            "network" => Ok(Allowance::Network),
            other => Err(format!(
                "unknown access '{other}' (expected read, write, socket or network)"
            )),
        }
    }

    /// The entry's `sandbox` (`current`, as the file has it, or none: then
    /// the server runs in `effective`, the config's default) with this
    /// allowance added; a grant already there is not added twice.
    pub fn into_sandbox(self, current: Option<serde_json::Value>, effective: Mode) -> serde_json::Value {
        use serde_json::{json, Value};
        let mut sandbox = match current {
            Some(Value::Object(map)) => map,
            Some(Value::String(mode)) => json!({ "mode": mode }).as_object().cloned().unwrap_or_default(),
            _ => json!({ "mode": effective.as_str() })
                .as_object()
                .cloned()
                .unwrap_or_default(),
        };
        let (key, path) = match self {
            Allowance::Network => {
                sandbox.insert("network".into(), Value::Bool(true));
                return Value::Object(sandbox);
            }
            Allowance::Read(p) => ("allowRead", p),
            Allowance::Write(p) => ("allowWrite", p),
            Allowance::Socket(p) => ("allowSockets", p),
        };
        let grant = Value::String(path.display().to_string());
        let list = sandbox.entry(key).or_insert_with(|| json!([]));
        if !list.is_array() {
            *list = json!([]);
        }
        if let Value::Array(items) = list {
            if !items.contains(&grant) {
                items.push(grant);
            }
        }
        Value::Object(sandbox)
    }
}
