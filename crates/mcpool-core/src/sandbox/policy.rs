//! Which paths a mode gives one server, and what of the environment it
//! gets: pure, with the file system's answers passed in, so every rule is
//! tested without a kernel.

use std::path::{Path, PathBuf};

use super::{Mode, Sandbox};

/// The system a server may read (and run) under `standard` and `strict`;
/// those that do not exist are skipped. The folders of [`SYSTEM_EXCEPT`]
/// are given without the parts named there.
pub const SYSTEM_READ: &[&str] = &[
    "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/opt", "/nix", "/snap", "/var/lib", "/proc",
    "/sys",
];

/// System folders given without some of what is in them: `/run` without
/// the users' runtime folders (their buses, agents and mcpool's control
/// credential), `/etc` without the password hashes, sudo's rules and the
/// host's SSH keys (which a server run by root could otherwise read). A
/// pattern names a path under the folder; a trailing `*` matches a prefix.
pub const SYSTEM_EXCEPT: &[(&str, &[&str])] = &[
    ("/run", &["user"]),
    (
        "/etc",
        &[
            "shadow",
            "shadow-",
            "gshadow",
            "gshadow-",
            "sudoers",
            "sudoers.d",
            "security/opasswd",
            "ssh/ssh_host_*",
        ],
    ),
];

/// The devices a server reads and writes; no other device (a disk, the
/// console) is given, not even to a server run by root.
pub const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/shm",
];

/// Where one of the user's package caches is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    Home,
    /// `XDG_CACHE_HOME`, else `~/.cache`.
    Cache,
    /// `XDG_DATA_HOME`, else `~/.local/share`.
    Data,
}

/// The package caches a confined server gets its own copy of: the user's
/// (where, under which base), the server's own under its folder, and the
/// variable that points the tool there (the others follow
/// `XDG_CACHE_HOME`, `XDG_DATA_HOME` and `CARGO_HOME`, see [`OWN_HOMES`]).
/// The user's stay read-only: what a server fetches or builds never lands
/// where other programs later run it from.
pub const CACHES: &[(Base, &str, &str, Option<&str>)] = &[
    (Base::Home, ".npm", "cache/npm", Some("npm_config_cache")),
    (Base::Cache, "uv", "cache/uv", Some("UV_CACHE_DIR")),
    (Base::Cache, "pip", "cache/pip", Some("PIP_CACHE_DIR")),
    (Base::Cache, "node-gyp", "cache/node-gyp", None),
    (Base::Cache, "pnpm", "cache/pnpm", None),
    (Base::Cache, "deno", "cache/deno", None),
    (Base::Data, "uv", "data/uv", None),
    (Base::Data, "pnpm", "data/pnpm", None),
    (
        Base::Home,
        ".bun/install/cache",
        "cache/bun",
        Some("BUN_INSTALL_CACHE_DIR"),
    ),
    (Base::Home, ".cargo/registry", "cargo/registry", None),
    (Base::Home, ".cargo/git", "cargo/git", None),
];

/// The variables that move a confined server's caches and data into its
/// own folder, and where under it.
pub const OWN_HOMES: &[(&str, &str)] = &[
    ("XDG_CACHE_HOME", "cache"),
    ("XDG_DATA_HOME", "data"),
    ("CARGO_HOME", "cargo"),
];

/// Runtimes, package managers' programs and their settings under the home
/// folder: read only (`~/.bun/bin`, pnpm's and uv's tools are on the
/// user's `PATH`: nothing a server writes may run there later).
pub const HOME_RUNTIMES: &[&str] = &[
    ".nvm",
    ".volta",
    ".pyenv",
    ".local/bin",
    ".npmrc",
    ".cargo/bin",
    ".bun",
    ".local/share/pnpm",
    ".local/share/uv",
];

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
    /// The file system: the names in a folder (none when it is not there).
    pub list_dir: &'a dyn Fn(&Path) -> Vec<String>,
    /// `XDG_CACHE_HOME` and `XDG_DATA_HOME` as mcpool has them, if set.
    pub cache_home: Option<&'a Path>,
    pub data_home: Option<&'a Path>,
}

/// One of the user's package caches as a server's own: `own` starts as a
/// read-only copy of `user` where the kernel can layer them (an overlay in
/// the server's own mount namespace), else empty; writes stay in `own`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cache {
    pub user: PathBuf,
    pub own: PathBuf,
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
    /// The Unix sockets it may connect to (`allowSockets`); no other.
    pub sockets: Vec<PathBuf>,
    /// Its own copies of the user's package caches.
    pub caches: Vec<Cache>,
    /// Its private temp folder (also its `/tmp` where it has a mount
    /// namespace).
    pub tmp: PathBuf,
}

impl Plan {
    /// The folders of the server's own that must exist before it starts.
    pub fn own_folders(own: &Path) -> Vec<PathBuf> {
        let mut folders = vec![own.join("tmp"), own.join("config")];
        folders.extend(OWN_HOMES.iter().map(|(_, sub)| own.join(sub)));
        folders.extend(CACHES.iter().map(|(_, _, sub, _)| own.join(sub)));
        folders
    }
}

/// The paths, network and environment `sandbox` gives one start.
pub fn plan(sandbox: &Sandbox, inputs: &Inputs) -> Plan {
    let mut read: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).collect();
    for (folder, except) in SYSTEM_EXCEPT {
        read.extend(without(Path::new(folder), except, inputs.list_dir));
    }
    let tmp = inputs.own.join("tmp");
    let mut write: Vec<PathBuf> = DEVICES.iter().map(PathBuf::from).collect();
    // Its temp folder by name too: where it is also mounted as `/tmp`, the
    // kernel checks the mount's own root, not the folder above it.
    write.extend([inputs.own.to_path_buf(), tmp.clone()]);
    let home = inputs.home;
    let mut caches = Vec::new();
    if let Some(home) = home {
        read.extend(HOME_RUNTIMES.iter().map(|p| home.join(p)));
        let cache_home = inputs.cache_home.map_or_else(|| home.join(".cache"), Path::to_path_buf);
        let data_home = inputs
            .data_home
            .map_or_else(|| home.join(".local/share"), Path::to_path_buf);
        for (base, user, own, _) in CACHES {
            let base = match base {
                Base::Home => home,
                Base::Cache => &cache_home,
                Base::Data => &data_home,
            };
            let user = base.join(user);
            read.push(user.clone());
            caches.push(Cache {
                user,
                own: inputs.own.join(own),
            });
        }
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
    let own = |sub: &str| inputs.own.join(sub).display().to_string();
    let mut env = vec![
        ("TMPDIR".to_string(), tmp.display().to_string()),
        ("XDG_CONFIG_HOME".to_string(), own("config")),
    ];
    env.extend(OWN_HOMES.iter().map(|(name, sub)| (name.to_string(), own(sub))));
    env.extend(
        CACHES
            .iter()
            .filter_map(|(_, _, sub, var)| var.map(|v| (v.to_string(), own(sub)))),
    );
    Plan {
        read,
        write,
        network: sandbox.network(),
        env,
        clear_env: sandbox.mode == Mode::Strict,
        sockets: sandbox.allow_sockets.clone(),
        caches,
        tmp,
    }
}

/// `folder`'s entries without those `except` names: an entry a pattern
/// names whole is left out, one a pattern goes into is given in parts.
fn without(folder: &Path, except: &[&str], list_dir: &dyn Fn(&Path) -> Vec<String>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for name in list_dir(folder) {
        let matches = |pattern: &str| match pattern.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == pattern,
        };
        if except.iter().any(|p| !p.contains('/') && matches(p)) {
            continue;
        }
        let inner: Vec<&str> = except
            .iter()
            .filter_map(|p| p.split_once('/'))
            .filter(|(first, _)| matches(first))
            .map(|(_, rest)| rest)
            .collect();
        if inner.is_empty() {
            out.push(folder.join(&name));
        } else {
            out.extend(without(&folder.join(&name), &inner, list_dir));
        }
    }
    out
}

/// Whether mcpool's variable `name` reaches a confined server at all:
/// mcpool's own settings and its bus address never do, in any mode.
pub fn never_passes(name: &str) -> bool {
    name.starts_with("MCPOOL_") || name == "DBUS_SESSION_BUS_ADDRESS" || name == "DBUS_SYSTEM_BUS_ADDRESS"
}

/// Whether mcpool's variable `name` reaches a server under `mode`.
pub fn passes(mode: Mode, name: &str) -> bool {
    !never_passes(name)
        && (mode != Mode::Strict
            || STRICT_ENV.contains(&name)
            || STRICT_ENV_PREFIXES.iter().any(|p| name.starts_with(p)))
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
