//! What this kernel lets mcpool build around a server, asked once per
//! process by trying it: a throwaway child enters the same namespaces a
//! confined server gets (a user namespace, then mount, PID and IPC ones,
//! then a network one) and mounts a fresh `/proc`; what fails, and why,
//! comes back through a pipe. Root without user namespaces (switched off,
//! or confined by AppArmor as Ubuntu 24.04 does) still gets the rest.

use std::io;
use std::sync::OnceLock;

/// What a confined server can have here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Support {
    /// Its own user namespace (needed by anyone but root for the rest).
    pub user: bool,
    /// Its own mount, PID and IPC namespaces.
    pub namespaces: bool,
    /// A fresh `/proc` that shows only its own processes.
    pub proc: bool,
    /// Its own network namespace (no interface but a loopback that is down).
    pub net: bool,
    /// Why the first thing that failed did, as a phrase.
    pub why: Option<String>,
}

/// This kernel's answer, asked the first time.
pub fn get() -> &'static Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    SUPPORT.get_or_init(|| {
        let with_user = attempt(true);
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        if with_user.namespaces || !root {
            return with_user;
        }
        let without = attempt(false);
        if without.namespaces {
            without
        } else {
            with_user
        }
    })
}

/// The steps a trial takes, in order; a report names the one that failed.
const STEPS: &[&str] = &[
    "",
    "user namespaces",
    "user namespace id maps",
    "mount, PID and IPC namespaces",
    "a second process",
    "a private mount tree",
    "a fresh /proc",
];
const USER: u8 = 1;
const MAPS: u8 = 2;
const NAMESPACES: u8 = 3;
const FORK: u8 = 4;
const PRIVATE: u8 = 5;
const PROC: u8 = 6;

/// One trial, in a child of its own (this process is never changed).
fn attempt(user: bool) -> Support {
    let none = |why: String| Support {
        user: false,
        namespaces: false,
        proc: false,
        net: false,
        why: Some(why),
    };
    let maps = super::child::Maps::current();
    let mut fds = [0i32; 2];
    // SAFETY: pipe(2) fills the array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return none(format!("the trial could not start: {}", io::Error::last_os_error()));
    }
    let [read_end, write_end] = fds;
    // SAFETY: the child makes only system calls (no allocation, no locks)
    // and leaves with _exit.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: in the child: system calls on what it owns.
        unsafe {
            libc::close(read_end);
            trial(user, &maps, write_end)
        }
    }
    // SAFETY: closing our copy of the write end; the child has its own.
    unsafe { libc::close(write_end) };
    if pid < 0 {
        // SAFETY: closing the read end we own.
        unsafe { libc::close(read_end) };
        return none(format!("the trial could not start: {}", io::Error::last_os_error()));
    }
    let mut status = 0;
    // SAFETY: waiting for the child we forked.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    let mut record = [0u8; 8];
    // SAFETY: reading into our buffer from the pipe we own; then closing it.
    let got = unsafe {
        let n = libc::read(read_end, record.as_mut_ptr().cast(), record.len());
        libc::close(read_end);
        n
    };
    if got != record.len() as isize {
        return none("the trial ended without an answer".to_string());
    }
    let step = record[2];
    let errno = i32::from_ne_bytes([record[4], record[5], record[6], record[7]]);
    let why = (step != 0).then(|| {
        let name = STEPS.get(usize::from(step)).copied().unwrap_or("a step");
        format!("{name}: {}", io::Error::from_raw_os_error(errno))
    });
    Support {
        user: user && step != USER && step != MAPS,
        namespaces: step == 0 || step >= FORK,
        proc: step == 0,
        net: record[1] == 1,
        why,
    }
}

/// In the trial's child: the namespaces, then (in a second child, the
/// namespace's first process) a private mount tree and a fresh `/proc`.
/// Writes `[ok, net, step, 0, errno]` to `out` and leaves.
unsafe fn trial(user: bool, maps: &super::child::Maps, out: i32) -> ! {
    let report = |net: bool, step: u8| -> ! {
        let errno = if step == 0 {
            0
        } else {
            io::Error::last_os_error().raw_os_error().unwrap_or(0)
        };
        let e = errno.to_ne_bytes();
        let record = [u8::from(step == 0), u8::from(net), step, 0, e[0], e[1], e[2], e[3]];
        libc::write(out, record.as_ptr().cast(), record.len());
        libc::_exit(0)
    };
    if user {
        if libc::unshare(libc::CLONE_NEWUSER) != 0 {
            report(false, USER);
        }
        if maps.write().is_err() {
            report(false, MAPS);
        }
    }
    if libc::unshare(libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC) != 0 {
        report(false, NAMESPACES);
    }
    let net = libc::unshare(libc::CLONE_NEWNET) == 0;
    let first = libc::fork();
    if first < 0 {
        report(net, FORK);
    }
    if first == 0 {
        if super::child::private_mounts().is_err() {
            report(net, PRIVATE);
        }
        if super::child::fresh_proc().is_err() {
            report(net, PROC);
        }
        report(net, 0);
    }
    let mut status = 0;
    libc::waitpid(first, &mut status, 0);
    libc::_exit(0)
}
