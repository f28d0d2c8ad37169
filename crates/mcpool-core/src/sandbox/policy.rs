//! Which paths a mode gives one server, and what of the environment it
//! gets: pure, with the file system's answers passed in, so every rule is
//! tested without a kernel.

use std::path::{Path, PathBuf};

use super::{Mode, Sandbox};

/// The system a server may read (and run) under `standard` and `strict`;
/// those that do not exist are skipped.
pub const SYSTEM_READ: &[&str] = &[
    "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc", "/opt", "/nix", "/snap", "/run",
    "/var/lib", "/proc", "/sys",
];

/// Devices (`/dev/null`, `/dev/urandom`, a terminal) are read and written.
pub const DEVICES: &str = "/dev";

/// Package caches and runtimes under the home folder: written (npx and uvx
/// fetch packages there), so a server starts as it would unconfined.
pub const HOME_CACHES: &[&str] = &[
    ".npm",
    ".cache/uv",
    ".cache/pip",
    ".cache/node",
    ".cache/node-gyp",
    ".cache/pnpm",
    ".cache/deno",
    ".local/share/uv",
    ".local/share/pnpm",
    ".bun",
];

/// Runtimes and their settings under the home folder: read only.
pub const HOME_RUNTIMES: &[&str] = &[".nvm", ".volta", ".pyenv", ".local/bin", ".npmrc", ".cargo/bin"];

/// What mcpool's own environment passes to a `strict` server: these names,
/// and those starting with one of [`STRICT_ENV_PREFIXES`].
pub const STRICT_ENV: &[&str] = &[
    "PATH",
    "LANG",
    "LANGUAGE",
    "TZ",
    "HOME",
    "USER",
    "LOGNAME",
    "TERM",
    "VIRTUAL_ENV",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];
/// The runtimes' own variables (locale, node, npm, Python, uv).
pub const STRICT_ENV_PREFIXES: &[&str] = &["LC_", "NODE_", "NPM_CONFIG_", "npm_config_", "PYTHON", "UV_"];

/// What the policy needs to know of one start.
pub struct Inputs<'a> {
    /// The program as found on `PATH` (or as written when it was not).
    pub program: &'a Path,
    pub args: &'a [String],
    /// The folder it starts in.
    pub cwd: &'a Path,
    pub home: Option<&'a Path>,
    /// The server's own folder under mcpool's data folder.
    pub own: &'a Path,
    /// The file system: a path with its links resolved, if it exists.
    pub canonical: &'a dyn Fn(&Path) -> Option<PathBuf>,
    /// The file system: whether a path is an existing file (not a folder).
    pub is_file: &'a dyn Fn(&Path) -> bool,
}

/// What one start may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub read: Vec<PathBuf>,
    pub write: Vec<PathBuf>,
    pub network: bool,
    /// Variables set for the server (its temp and config folders).
    pub env: Vec<(String, String)>,
    /// Only the variables [`passes`] lets through reach it (`strict`).
    pub clear_env: bool,
}

impl Plan {
    /// The folders of the server's own that must exist before it starts.
    pub fn own_folders(own: &Path) -> [PathBuf; 2] {
        [own.join("tmp"), own.join("config")]
    }
}

/// The paths, network and environment `sandbox` gives one start.
pub fn plan(sandbox: &Sandbox, inputs: &Inputs) -> Plan {
    let mut read: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).collect();
    let mut write = vec![PathBuf::from(DEVICES), inputs.own.to_path_buf()];
    let home = inputs.home;
    if let Some(home) = home {
        write.extend(HOME_CACHES.iter().map(|p| home.join(p)));
        read.extend(HOME_RUNTIMES.iter().map(|p| home.join(p)));
    }
    let wide = |p: &Path| home.is_some_and(|h| h.starts_with(p)) || p.parent().is_none();
    // The program and its installation, as written and with links resolved
    // (a virtualenv's python is a link into the interpreter's own tree).
    let programs = [Some(inputs.program.to_path_buf()), (inputs.canonical)(inputs.program)];
    for program in programs.into_iter().flatten() {
        read.push(installation(&program, &wide));
    }
    // A script named by an argument, with the packages beside it.
    for arg in inputs.args {
        let path = inputs.cwd.join(arg);
        if (Path::new(arg).is_absolute() || arg.starts_with('.')) && (inputs.is_file)(&path) {
            read.push(package_of(&path, &wide));
        }
    }
    if !wide(inputs.cwd) {
        read.push(inputs.cwd.to_path_buf());
    }
    read.extend(sandbox.allow_read.iter().cloned());
    write.extend(sandbox.allow_write.iter().cloned());
    dedup(&mut read);
    dedup(&mut write);
    let [tmp, config] = Plan::own_folders(inputs.own);
    Plan {
        read,
        write,
        network: sandbox.network(),
        env: vec![
            ("TMPDIR".into(), tmp.display().to_string()),
            ("XDG_CONFIG_HOME".into(), config.display().to_string()),
        ],
        clear_env: sandbox.mode == Mode::Strict,
    }
}

/// Whether mcpool's variable `name` reaches a server under `mode`.
pub fn passes(mode: Mode, name: &str) -> bool {
    mode != Mode::Strict || STRICT_ENV.contains(&name) || STRICT_ENV_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// The folder a program is installed in: `…/v22/bin/node` is in `…/v22`,
/// `/opt/tool/run` in `/opt/tool`; never a folder as wide as the home
/// folder (then the program alone).
fn installation(program: &Path, wide: &dyn Fn(&Path) -> bool) -> PathBuf {
    let Some(dir) = program.parent() else {
        return program.to_path_buf();
    };
    let tree = match dir.file_name().and_then(|n| n.to_str()) {
        Some("bin" | "sbin" | "Scripts") => dir.parent().unwrap_or(dir),
        _ => dir,
    };
    if wide(tree) {
        program.to_path_buf()
    } else {
        tree.to_path_buf()
    }
}

/// What a script needs beside it: the `node_modules` it is in, else its
/// folder; never a folder as wide as the home folder (then the file alone).
fn package_of(script: &Path, wide: &dyn Fn(&Path) -> bool) -> PathBuf {
    let modules = script
        .ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == "node_modules"));
    let dir = modules.or_else(|| script.parent()).unwrap_or(script);
    if wide(dir) {
        script.to_path_buf()
    } else {
        dir.to_path_buf()
    }
}

fn dedup(paths: &mut Vec<PathBuf>) {
    let mut seen = std::collections::BTreeSet::new();
    paths.retain(|p| seen.insert(p.clone()));
}
