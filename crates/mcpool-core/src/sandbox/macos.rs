//! macOS: the plan as a Seatbelt profile (`seatbelt.rs`), applied with
//! `sandbox_init` in the child between fork and exec (where the Linux
//! backend applies Landlock: `os::process::spawn`'s `pre_exec`), so the
//! server and everything it starts run under it for good. Compiled by
//! `scripts/macos.sh check`; never run on a Mac.
//!
//! `sandbox_init` compiles the profile in the child, which allocates; the
//! system's malloc stays usable after a fork (libmalloc's own fork
//! handlers), so unlike the Linux child this one does not avoid it.
//!
//! What is hidden over the plan: mcpool's own folders (the token, the
//! config, the control credential, the other servers' folders under its
//! data folder) and the keychains' files (their service is never looked up:
//! `seatbelt.rs`).

use std::ffi::{c_char, c_int, CString};
use std::io;
use std::path::PathBuf;

use super::{seatbelt, Plan};
use crate::os::paths;

extern "C" {
    fn sandbox_init(profile: *const c_char, flags: u64, errorbuf: *mut *mut c_char) -> c_int;
    fn sandbox_free_error(errorbuf: *mut c_char);
}

/// What `status` says where the system gives no sandbox: never on macOS,
/// whose every version has Seatbelt.
pub const UNAVAILABLE: &str = "Seatbelt (sandbox_init) is not available";

/// What the profile leaves open that the Linux walls close: POSIX shared
/// memory and semaphores go by name, not by path, and runtimes need their
/// own (Python's multiprocessing), so the profile gives them all.
pub fn missing(_network: bool) -> Option<Vec<String>> {
    Some(vec![
        "other processes' POSIX shared memory and semaphores (Seatbelt names them, not their owners)".to_string(),
    ])
}

/// The profile's text, ready for the child.
pub struct Prepared {
    profile: CString,
}

pub fn prepare(plan: &Plan) -> Result<Prepared, String> {
    let text = seatbelt::profile(&resolved(plan), &with_real_paths(hidden()))?;
    let profile = CString::new(text).map_err(|_| "a path of the Seatbelt profile holds a NUL byte".to_string())?;
    Ok(Prepared { profile })
}

/// In the child, after fork: the profile applied to this process for good.
pub fn apply(prepared: &Prepared) -> io::Result<()> {
    let mut error: *mut c_char = std::ptr::null_mut();
    // SAFETY: a NUL-terminated profile that lives across the call; flags 0
    // means SBPL text; `error` is set only on failure and freed here.
    let code = unsafe { sandbox_init(prepared.profile.as_ptr(), 0, &mut error) };
    if code == 0 {
        return Ok(());
    }
    if !error.is_null() {
        // SAFETY: the error text sandbox_init gave, freed once.
        unsafe { sandbox_free_error(error) };
    }
    // The text cannot reach mcpool from here (the child only returns an
    // errno to the spawn), so the error is the refusal itself.
    Err(io::Error::from_raw_os_error(libc::EPERM))
}

/// mcpool's own folders and the keychains.
fn hidden() -> Vec<PathBuf> {
    let mut hidden = vec![
        paths::data_dir(),
        paths::runtime_dir(),
        paths::default_cache_dir(),
        PathBuf::from("/Library/Keychains"),
    ];
    hidden.extend(paths::default_config().parent().map(PathBuf::from));
    hidden.extend(dirs::home_dir().map(|home| home.join("Library/Keychains")));
    hidden
}

/// `plan` with the real path of each of its paths added (`/etc/hosts` is
/// `/private/etc/hosts`, `/tmp` is `/private/tmp`): Seatbelt matches the
/// path a file is opened by after links are resolved.
fn resolved(plan: &Plan) -> Plan {
    let mut plan = plan.clone();
    plan.read = with_real_paths(plan.read);
    plan.write = with_real_paths(plan.write);
    plan.sockets = with_real_paths(plan.sockets);
    plan
}

fn with_real_paths(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut out = Vec::with_capacity(paths.len());
    for path in paths {
        let real = std::fs::canonicalize(&path).ok().filter(|r| *r != path);
        out.push(path);
        out.extend(real);
    }
    out.dedup();
    out
}
