//! Linux: the kernel's own walls around a confined server.
//!
//! - **Landlock** (the `landlock` crate, best effort: what this kernel's ABI
//!   lacks is left out and said by [`missing`]): the files of the plan, TCP
//!   where the network is off, and (ABI 6) no signal to and no abstract Unix
//!   socket of any process outside the server's own tree.
//! - **Namespaces** (`child.rs`, as bubblewrap builds them: a user namespace
//!   for anyone but root, then mount, PID and IPC ones, and a network one
//!   where the network is off): a fresh `/proc` that shows only the
//!   server's own processes, the users' runtime folders (buses, agents,
//!   mcpool's control credential) under an empty tmpfs, `/dev/null` over
//!   every other Unix socket by path that no grant names, its own `/tmp`
//!   and `/dev/shm`, and overlays that seed its own package caches from
//!   the user's, read-only.
//! - **No privilege**: `no_new_privs`, and root's capabilities dropped,
//!   the bounding set with them.
//!
//! Everything is built in mcpool before the fork ([`prepare`]); the child
//! only makes system calls ([`apply`]). What this kernel allows is asked
//! once by trying it (`support.rs`).

mod child;
mod support;

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use landlock::{
    path_beneath_rules, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
    Scope, ABI,
};

use super::Plan;

/// The newest Landlock ABI mcpool asks for; an older kernel gets less.
const ASKED: ABI = ABI::V7;

/// What `status` says where the kernel has no Landlock.
pub const UNAVAILABLE: &str = "this kernel has no Landlock (Linux 5.13 or later, with Landlock enabled)";

/// Folders every confined server sees empty: the users' runtime folders
/// (session buses, agents' sockets, mcpool's control credential).
const HIDDEN: &[&str] = &["/run/user"];

/// The running kernel's Landlock ABI, 0 for none; asked once.
fn kernel_abi() -> i64 {
    static ABI_VERSION: OnceLock<i64> = OnceLock::new();
    *ABI_VERSION.get_or_init(|| {
        // LANDLOCK_CREATE_RULESET_VERSION: no ruleset, the ABI version.
        // SAFETY: a null attribute with size 0 is how the version is asked.
        let v = unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, 1u32) };
        v.max(0)
    })
}

/// What this kernel cannot restrict for a server with or without network,
/// `None` when it has no Landlock at all.
pub fn missing(network: bool) -> Option<Vec<String>> {
    let abi = kernel_abi();
    if abi < 1 {
        return None;
    }
    Some(missing_with(abi, support::get(), network))
}

/// [`missing`] for a kernel of Landlock `abi` that allows `support`.
fn missing_with(abi: i64, support: &support::Support, network: bool) -> Vec<String> {
    let why = support.why.as_deref().unwrap_or("not allowed here");
    let mut missing = Vec::new();
    if abi < 3 {
        missing.push("truncating files it may read (needs Landlock ABI 3, Linux 6.2)".to_string());
    }
    if !network && abi < 4 && !support.net {
        missing.push("TCP connect and bind (needs Landlock ABI 4, Linux 6.7)".to_string());
    }
    if !support.namespaces {
        missing.push(format!(
            "Unix sockets by path, such as the D-Bus session bus (needs namespaces; {why})"
        ));
        missing.push(format!(
            "other processes' shared memory in /dev/shm (needs namespaces; {why})"
        ));
    }
    if !support.proc {
        missing.push(format!("other processes' entries in /proc (needs namespaces; {why})"));
    }
    if abi < 6 && !support.namespaces {
        missing.push(format!(
            "signals to other processes (needs Landlock ABI 6, Linux 6.12, or namespaces; {why})"
        ));
    }
    if abi < 6 && (network || !support.net) {
        missing.push("abstract Unix sockets of other processes (needs Landlock ABI 6, Linux 6.12)".to_string());
    }
    if !network && !support.net {
        missing.push(format!(
            "UDP and other networking beside TCP (needs a network namespace; {why})"
        ));
    }
    missing
}

/// A ruleset and walls ready for a child.
pub struct Prepared {
    ruleset: OwnedFd,
    walls: Option<child::Walls>,
}

pub fn prepare(plan: &Plan) -> Result<Prepared, String> {
    prepare_with(plan, support::get())
}

/// [`prepare`] where the kernel allows `support`.
fn prepare_with(plan: &Plan, support: &support::Support) -> Result<Prepared, String> {
    let text = |e: landlock::RulesetError| e.to_string();
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(ASKED))
        .map_err(text)?
        .scope(Scope::AbstractUnixSocket | Scope::Signal)
        .map_err(text)?;
    if !plan.network {
        ruleset = ruleset.handle_access(AccessNet::from_all(ASKED)).map_err(text)?;
    }
    let created = ruleset
        .create()
        .map_err(text)?
        .add_rules(path_beneath_rules(&plan.read, AccessFs::from_read(ASKED)))
        .map_err(text)?
        .add_rules(path_beneath_rules(&plan.write, AccessFs::from_all(ASKED)))
        .map_err(text)?;
    let fd: Option<OwnedFd> = created.into();
    let ruleset = fd.ok_or_else(|| UNAVAILABLE.to_string())?;
    let walls = if support.namespaces {
        Some(walls(plan, support).map_err(|e| format!("its walls could not be prepared: {e}"))?)
    } else {
        None
    };
    Ok(Prepared { ruleset, walls })
}

/// In the child, after fork: no allocation, only system calls.
pub fn apply(prepared: &Prepared) -> io::Result<()> {
    if let Some(walls) = &prepared.walls {
        child::enter(walls)?;
    }
    child::drop_capabilities();
    // SAFETY: plain system calls on an open descriptor of this process.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    let ruleset = prepared.ruleset.as_raw_fd();
    if prepared.walls.as_ref().is_some_and(|w| w.proc) {
        // The fresh /proc is not the one the ruleset was given.
        child::allow_path(ruleset, c"/proc", AccessFs::from_read(ASKED).bits())?;
    }
    // SAFETY: a system call on an open descriptor of this process.
    unsafe {
        if libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The namespaces and mounts `plan` gets where the kernel allows `support`.
fn walls(plan: &Plan, support: &support::Support) -> io::Result<child::Walls> {
    let mut flags = libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC;
    if !plan.network && support.net {
        flags |= libc::CLONE_NEWNET;
    }
    // A folder the plan gives something in stays (its sockets are masked
    // one by one); the others are hidden whole.
    let given = |folder: &Path| plan.read.iter().chain(&plan.write).any(|p| p.starts_with(folder));
    let mut hide: Vec<PathBuf> = HIDDEN.iter().map(PathBuf::from).collect();
    // The desktop's runtime folder (mcpool's own among them), wherever it is.
    if let Some(runtime) = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        if runtime.is_absolute() && !hide.iter().any(|h| runtime.starts_with(h)) {
            hide.push(runtime);
        }
    }
    hide.retain(|h| h.is_dir() && !given(h) && !h.starts_with("/tmp"));
    let own_tmp = !given(Path::new("/tmp"));
    let covered = |p: &Path| (own_tmp && p.starts_with("/tmp")) || hide.iter().any(|h| p.starts_with(h));
    let mut sockets = Vec::new();
    for socket in &plan.sockets {
        let under = hide
            .iter()
            .map(PathBuf::as_path)
            .chain(own_tmp.then_some(Path::new("/tmp")))
            .find(|h| socket.starts_with(h));
        let Some(under) = under else {
            continue;
        };
        use std::os::unix::fs::OpenOptionsExt;
        let Ok(file) = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH)
            .open(socket)
        else {
            continue;
        };
        let fd = OwnedFd::from(file);
        let mut dirs: Vec<&Path> = socket
            .ancestors()
            .skip(1)
            .take_while(|d| *d != under && d.starts_with(under))
            .collect();
        dirs.reverse();
        sockets.push(child::Rebind {
            from: CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd()))?,
            _fd: fd,
            dirs: dirs.into_iter().map(c_path).collect::<io::Result<_>>()?,
            at: c_path(socket)?,
        });
    }
    let masks = path_sockets()
        .into_iter()
        .filter(|s| !covered(s) && !plan.sockets.contains(s))
        .map(|s| c_path(&s))
        .collect::<io::Result<_>>()?;
    let overlays = plan
        .caches
        .iter()
        .filter(|c| c.user.is_dir())
        .filter_map(|c| overlay(c, support.user).transpose())
        .collect::<io::Result<_>>()?;
    Ok(child::Walls {
        flags,
        user: support.user.then(child::Maps::current),
        proc: support.proc,
        hide: hide.iter().map(|h| c_path(h)).collect::<io::Result<_>>()?,
        tmp: own_tmp.then(|| c_path(&plan.tmp)).transpose()?,
        sockets,
        masks,
        overlays,
    })
}

/// The overlay that shows `cache.user` at `cache.own` with writes kept
/// beside it; `None` for paths an overlay's options cannot carry.
fn overlay(cache: &super::policy::Cache, user_namespace: bool) -> io::Result<Option<(CString, CString)>> {
    let Some(own) = cache.own.parent() else {
        return Ok(None);
    };
    let name = cache
        .own
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let layers = own.join(format!(".{name}.layers"));
    let (upper, work) = (layers.join("upper"), layers.join("work"));
    for dir in [&upper, &work] {
        crate::os::files::create_private_dir(dir)?;
    }
    let paths = [&cache.user, &upper, &work];
    let text: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    if text.iter().any(|t| t.contains([',', ':', '\\'])) || paths.iter().any(|p| p.to_str().is_none()) {
        return Ok(None);
    }
    let mut options = format!("lowerdir={},upperdir={},workdir={}", text[0], text[1], text[2]);
    if user_namespace {
        options.push_str(",userxattr");
    }
    Ok(Some((c_path(&cache.own)?, CString::new(options)?)))
}

/// Every Unix socket bound to a path in this network namespace that is a
/// socket at that path here (one bound in another mount namespace may name
/// something else in this one).
fn path_sockets() -> Vec<PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    let Ok(table) = std::fs::read_to_string("/proc/net/unix") else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = table
        .lines()
        .skip(1)
        .filter_map(|line| line.split_whitespace().nth(7))
        .filter(|p| p.starts_with('/'))
        .map(PathBuf::from)
        .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_socket()))
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)
}

/// What this kernel allows, for tests that need to know.
#[cfg(test)]
pub fn support_for_tests() -> support::Support {
    support::get().clone()
}

/// [`prepare`] as on a kernel without namespaces (Landlock alone), for
/// tests of that fallback.
#[cfg(test)]
pub fn prepare_without_namespaces(plan: &Plan) -> Result<Prepared, String> {
    let none = support::Support {
        user: false,
        namespaces: false,
        proc: false,
        net: false,
        why: Some("switched off for this test".to_string()),
    };
    prepare_with(plan, &none)
}

#[cfg(test)]
mod tests {
    use super::support::Support;
    use super::*;

    fn support(namespaces: bool, net: bool) -> Support {
        Support {
            user: namespaces,
            namespaces,
            proc: namespaces,
            net,
            why: (!namespaces).then(|| "user namespaces: Operation not permitted (os error 1)".to_string()),
        }
    }

    #[test]
    fn what_a_kernel_lacks_is_named_with_why() {
        assert_eq!(missing_with(7, &support(true, true), false), Vec::<String>::new());
        assert_eq!(missing_with(7, &support(true, true), true), Vec::<String>::new());
        let without = missing_with(7, &support(false, false), false);
        for phrase in [
            "Unix sockets by path, such as the D-Bus session bus (needs namespaces; user namespaces: Operation not permitted (os error 1))",
            "other processes' entries in /proc (needs namespaces; user namespaces: Operation not permitted (os error 1))",
            "UDP and other networking beside TCP (needs a network namespace; user namespaces: Operation not permitted (os error 1))",
        ] {
            assert!(without.iter().any(|m| m == phrase), "{phrase}: {without:?}");
        }
        assert!(
            !without.iter().any(|m| m.starts_with("signals")),
            "Landlock ABI 6 scopes signals: {without:?}"
        );
        let old = missing_with(5, &support(false, false), true);
        assert!(
            old.iter().any(|m| m.starts_with("signals to other processes")),
            "{old:?}"
        );
        assert!(old.iter().any(|m| m.starts_with("abstract Unix sockets")), "{old:?}");
        assert!(!old.iter().any(|m| m.starts_with("UDP")), "the network is on: {old:?}");
        let old_with_namespaces = missing_with(5, &support(true, true), false);
        assert_eq!(
            old_with_namespaces,
            Vec::<String>::new(),
            "the PID and network namespaces stand in for the scopes"
        );
    }
}
