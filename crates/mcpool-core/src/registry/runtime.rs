//! Which runtime an entry needs (`npx`, `uvx`, `docker`, `dnx`), whether it
//! is on `PATH`, and what to install when it is not. `PATH` is searched as
//! the OS does ([`crate::os::process::find`]; no `which` crate in the tree):
//! an executable regular file in one of its directories counts (on Windows,
//! with the extensions of `PATHEXT`).

use std::ffi::OsStr;
use std::path::PathBuf;

use serde::Serialize;
use serde_json::{Map, Value};

/// The runtime an entry's command needs and whether this machine has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Runtime {
    pub command: String,
    /// What provides it, as people call it ("Node.js (npm)").
    pub provider: &'static str,
    pub present: bool,
    /// What to install, when it is not present.
    pub install: Option<String>,
}

impl Runtime {
    /// "needs npx (Node.js (npm)) which is not on PATH; install …", or
    /// `None` when it is present.
    pub fn missing_sentence(&self) -> Option<String> {
        let install = self.install.as_deref()?;
        Some(format!(
            "needs {} ({}) which is not on PATH; {install}",
            self.command, self.provider
        ))
    }
}

/// (command, provider, install hint) for the runtimes registry packages use.
const KNOWN: &[(&str, &str, &str)] = &[
    (
        "npx",
        "Node.js (npm)",
        "install Node.js (it includes npm and npx): https://nodejs.org or your package manager (e.g. `sudo apt install nodejs npm`)",
    ),
    (
        "uvx",
        "uv",
        "install uv (it includes uvx): https://docs.astral.sh/uv/ (e.g. `curl -LsSf https://astral.sh/uv/install.sh | sh` or `pipx install uv`)",
    ),
    (
        "docker",
        "Docker",
        "install Docker: https://docs.docker.com/engine/install/ (or Podman with its docker command)",
    ),
    ("dnx", ".NET 10 SDK", "install the .NET 10 SDK: https://dotnet.microsoft.com/download"),
];

/// The runtime `entry` needs, checked against `path` (a `PATH` value);
/// `None` for a remote entry or a command that is not a known runtime.
pub fn runtime_for(entry: &Map<String, Value>, path: Option<&OsStr>) -> Option<Runtime> {
    let command = entry.get("command")?.as_str()?;
    let (cmd, provider, install) = KNOWN.iter().find(|(c, _, _)| *c == command)?;
    let present = on_path(cmd, path);
    Some(Runtime {
        command: cmd.to_string(),
        provider,
        present,
        install: (!present).then(|| install.to_string()),
    })
}

/// Whether `command` is a program in a directory of `path`.
pub fn on_path(command: &str, path: Option<&OsStr>) -> bool {
    crate::os::process::on_path(command, path)
}

/// Where `command` runs from ([`crate::os::process::find`]).
pub fn find(command: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    crate::os::process::find(command, path)
}

/// What provides `command` and what to install for it, for the registry's
/// runtimes and the interpreters configs name directly (`node`, `python`).
pub fn install_hint(command: &str) -> Option<(&'static str, &'static str)> {
    KNOWN
        .iter()
        .chain(INTERPRETERS)
        .find(|(c, _, _)| *c == command)
        .map(|(_, provider, install)| (*provider, *install))
}

/// Commands entries name that no registry package uses.
const INTERPRETERS: &[(&str, &str, &str)] = &[
    (
        "node",
        "Node.js",
        "install Node.js: https://nodejs.org or your package manager (e.g. `sudo apt install nodejs npm`)",
    ),
    (
        "uv",
        "uv",
        "install uv: https://docs.astral.sh/uv/ (e.g. `curl -LsSf https://astral.sh/uv/install.sh | sh` or `pipx install uv`)",
    ),
    (
        "python",
        "Python",
        "install Python 3: https://www.python.org/downloads/ or your package manager (e.g. `sudo apt install python-is-python3`)",
    ),
    (
        "python3",
        "Python 3",
        "install Python 3: https://www.python.org/downloads/ or your package manager (e.g. `sudo apt install python3`)",
    ),
];
