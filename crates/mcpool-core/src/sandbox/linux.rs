//! Linux: Landlock (files, and TCP where the network is off) and
//! `no_new_privs`. The ruleset is built in mcpool before the fork (the
//! `landlock` crate, best effort: what this kernel's ABI lacks is left
//! out, and said by [`missing`]); the child only calls `prctl` and
//! `landlock_restrict_self` on its descriptor before exec.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::OnceLock;

use landlock::{
    path_beneath_rules, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
    ABI,
};

use super::Plan;

/// The newest Landlock ABI mcpool asks for; an older kernel gets less.
const ASKED: ABI = ABI::V7;

/// What `status` says where the kernel has no Landlock.
pub const UNAVAILABLE: &str = "this kernel has no Landlock (Linux 5.13 or later, with Landlock enabled)";

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
    let mut missing = Vec::new();
    if abi < 3 {
        missing.push("truncating files it may read (needs Landlock ABI 3, Linux 6.2)".to_string());
    }
    if !network && abi < 4 {
        missing.push("TCP connect and bind (needs Landlock ABI 4, Linux 6.7)".to_string());
    }
    Some(missing)
}

/// A ruleset ready for a child.
pub struct Prepared {
    ruleset: OwnedFd,
}

pub fn prepare(plan: &Plan) -> Result<Prepared, String> {
    let text = |e: landlock::RulesetError| e.to_string();
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(ASKED))
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
    fd.map(|ruleset| Prepared { ruleset })
        .ok_or_else(|| UNAVAILABLE.to_string())
}

/// In the child, after fork: no allocation, only system calls.
pub fn apply(prepared: &Prepared) -> io::Result<()> {
    // SAFETY: plain system calls on an open descriptor of this process.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::syscall(libc::SYS_landlock_restrict_self, prepared.ruleset.as_raw_fd(), 0u32) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
