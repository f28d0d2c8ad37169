//! What runs in a confined server's process between fork and exec: only
//! system calls on what was prepared before the fork (no allocation, no
//! locks), so it is sound in a child of a threaded process.
//!
//! With walls ([`Walls`]) the process tree is three deep:
//!
//! - the child mcpool started (the *monitor*) enters the namespaces, forks,
//!   closes every descriptor and waits; it stays in mcpool's PID namespace,
//!   in the server's process group, so mcpool sees it as the server: its
//!   exit mirrors the server's and the group's signals reach it (TERM it
//!   ignores: the server gets it too and ends, and with it the monitor).
//! - its child is the first process of the new PID namespace (the *init*):
//!   it mounts the walls, forks the server and reaps whatever is orphaned
//!   inside; when the server ends it leaves with the server's status, and
//!   the kernel then kills whatever is left in the namespace. Signals from
//!   outside reach it only as KILL, which takes the whole namespace down.
//! - the init's child returns to the caller and execs the server.
//!
//! A failure before the server's exec comes back to mcpool's `spawn` as the
//! error of its exec (the monitor and the init never hold its pipe).

use std::ffi::CString;
use std::io;
use std::os::fd::OwnedFd;

/// `uid_map` and `gid_map` lines that map the user to itself.
pub struct Maps {
    uid: Vec<u8>,
    gid: Vec<u8>,
}

impl Maps {
    /// The calling user's own ids, mapped to themselves.
    pub fn current() -> Maps {
        // SAFETY: geteuid/getegid have no preconditions.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        Maps {
            uid: format!("{uid} {uid} 1\n").into_bytes(),
            gid: format!("{gid} {gid} 1\n").into_bytes(),
        }
    }

    /// Writes the maps of the calling process's new user namespace.
    pub fn write(&self) -> io::Result<()> {
        write_file(c"/proc/self/setgroups", b"deny")?;
        write_file(c"/proc/self/uid_map", &self.uid)?;
        write_file(c"/proc/self/gid_map", &self.gid)
    }
}

/// A granted socket inside a folder the walls hide: mounted back at its
/// place from a descriptor opened before the fork.
pub struct Rebind {
    /// Held open until the walls are dropped (after the fork).
    pub _fd: OwnedFd,
    /// `/proc/self/fd/N` of `fd`.
    pub from: CString,
    /// The folders to make inside the hidden one, outermost first.
    pub dirs: Vec<CString>,
    pub at: CString,
}

/// The namespaces and mounts around one server, prepared in mcpool.
pub struct Walls {
    /// `unshare` flags beyond the user namespace.
    pub flags: libc::c_int,
    /// Set when the server gets a user namespace (anyone but root).
    pub user: Option<Maps>,
    pub proc: bool,
    /// Folders covered by an empty tmpfs.
    pub hide: Vec<CString>,
    /// The server's own temp folder, mounted as `/tmp` (unless the plan
    /// gives something in `/tmp`).
    pub tmp: Option<CString>,
    pub sockets: Vec<Rebind>,
    /// Unix sockets by path that the server may not reach: `/dev/null` is
    /// mounted over each.
    pub masks: Vec<CString>,
    /// `(target, options)` of an overlay per package cache.
    pub overlays: Vec<(CString, CString)>,
}

/// Enters the walls; returns in the process that is to exec the server.
pub fn enter(walls: &Walls) -> io::Result<()> {
    // SAFETY: system calls on prepared data; see the module's notes.
    unsafe {
        if let Some(maps) = &walls.user {
            check(libc::unshare(libc::CLONE_NEWUSER))?;
            maps.write()?;
        }
        check(libc::unshare(walls.flags))?;
        let init = libc::fork();
        if init < 0 {
            return Err(io::Error::last_os_error());
        }
        if init > 0 {
            monitor(init);
        }
        mount_walls(walls)?;
        let server = libc::fork();
        if server < 0 {
            return Err(io::Error::last_os_error());
        }
        if server > 0 {
            reap(server);
        }
    }
    Ok(())
}

/// No mount made here reaches the rest of the system.
pub fn private_mounts() -> io::Result<()> {
    // SAFETY: mount(2) with static strings.
    check(unsafe {
        libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        )
    })
}

/// A `/proc` of the calling process's PID namespace over the old one.
pub fn fresh_proc() -> io::Result<()> {
    // SAFETY: mount(2) with static strings.
    check(unsafe {
        libc::mount(
            c"proc".as_ptr(),
            c"/proc".as_ptr(),
            c"proc".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        )
    })
}

unsafe fn mount_walls(walls: &Walls) -> io::Result<()> {
    private_mounts()?;
    if walls.proc {
        fresh_proc()?;
    }
    let tmpfs = |at: &CString, options: &std::ffi::CStr| {
        libc::mount(
            c"tmpfs".as_ptr(),
            at.as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            options.as_ptr().cast(),
        )
    };
    for dir in &walls.hide {
        // A folder that went away since it was listed hides nothing.
        allow(tmpfs(dir, c"mode=0755"), &[libc::ENOENT])?;
    }
    if let Some(tmp) = &walls.tmp {
        check(libc::mount(
            tmp.as_ptr(),
            c"/tmp".as_ptr(),
            std::ptr::null(),
            libc::MS_BIND | libc::MS_REC,
            std::ptr::null(),
        ))?;
    }
    allow(
        libc::mount(
            c"tmpfs".as_ptr(),
            c"/dev/shm".as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            c"mode=1777".as_ptr().cast(),
        ),
        &[libc::ENOENT],
    )?;
    for socket in &walls.sockets {
        for dir in &socket.dirs {
            allow(libc::mkdir(dir.as_ptr(), 0o755), &[libc::EEXIST])?;
        }
        let fd = libc::open(
            socket.at.as_ptr(),
            libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC,
            0o600,
        );
        if fd >= 0 {
            libc::close(fd);
        }
        check(libc::mount(
            socket.from.as_ptr(),
            socket.at.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND,
            std::ptr::null(),
        ))?;
    }
    for mask in &walls.masks {
        // A socket gone since it was listed, or behind a folder this user
        // cannot enter (then the server cannot either), needs no mask.
        allow(
            libc::mount(
                c"/dev/null".as_ptr(),
                mask.as_ptr(),
                std::ptr::null(),
                libc::MS_BIND,
                std::ptr::null(),
            ),
            &[libc::ENOENT, libc::EACCES, libc::ENOTDIR],
        )?;
    }
    for (target, options) in &walls.overlays {
        // Without an overlay the server's cache starts empty: it works, only
        // slower; nothing of the user's is given either way.
        libc::mount(
            c"overlay".as_ptr(),
            target.as_ptr(),
            c"overlay".as_ptr(),
            0,
            options.as_ptr().cast(),
        );
    }
    Ok(())
}

/// The monitor: outside the namespaces, it waits for the init and leaves
/// as it did.
unsafe fn monitor(init: libc::pid_t) -> ! {
    close_all();
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
        libc::signal(signal, libc::SIG_IGN);
    }
    let status = wait_for(init);
    // The init cannot die of a signal it sends itself; it says one as
    // 128 + the signal, as shells do.
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        1
    };
    if (129..=128 + 64).contains(&code) {
        let signal = code - 128;
        libc::signal(signal, libc::SIG_DFL);
        libc::kill(libc::getpid(), signal);
    }
    libc::_exit(code)
}

/// The init: reaps every process of the namespace until the server ends.
unsafe fn reap(server: libc::pid_t) -> ! {
    close_all();
    loop {
        let mut status = 0;
        let pid = libc::waitpid(-1, &mut status, 0);
        if pid == server {
            let code = if libc::WIFSIGNALED(status) {
                128 + libc::WTERMSIG(status)
            } else {
                libc::WEXITSTATUS(status)
            };
            libc::_exit(code);
        }
        if pid < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            libc::_exit(1);
        }
    }
}

unsafe fn wait_for(pid: libc::pid_t) -> libc::c_int {
    loop {
        let mut status = 0;
        let got = libc::waitpid(pid, &mut status, 0);
        if got == pid {
            return status;
        }
        if got < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return 0;
        }
    }
}

/// Closes every descriptor (the monitor and the init hold none of the
/// server's pipes, nor the one its exec reports through).
unsafe fn close_all() {
    if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) != 0 {
        for fd in 0..1024 {
            libc::close(fd);
        }
    }
}

/// Root keeps no capability: none effective, permitted or inheritable, an
/// empty bounding set (an exec as root gains none back), no ambient ones.
/// A user who has none loses nothing; what the kernel refuses is moot.
pub fn drop_capabilities() {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    // SAFETY: prctl and capset with values and structs of ours.
    unsafe {
        for cap in 0..64 {
            libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
        }
        libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
        let mut header = Header {
            version: VERSION_3,
            pid: 0,
        };
        let data = [Data {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        libc::syscall(libc::SYS_capset, &mut header, data.as_ptr());
    }
}

/// Gives `path` (a mount made in the child, which the ruleset prepared
/// before could not name) `access` in the Landlock ruleset `ruleset`.
pub fn allow_path(ruleset: i32, path: &std::ffi::CStr, access: u64) -> io::Result<()> {
    #[repr(C, packed)]
    struct PathBeneath {
        allowed_access: u64,
        parent_fd: i32,
    }
    const RULE_PATH_BENEATH: libc::c_int = 1;
    // SAFETY: open/close on a static path; the rule is a struct of ours.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let rule = PathBeneath {
            allowed_access: access,
            parent_fd: fd,
        };
        let done = libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset,
            RULE_PATH_BENEATH,
            &rule as *const PathBeneath,
            0u32,
        );
        libc::close(fd);
        if done != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

fn write_file(path: &std::ffi::CStr, data: &[u8]) -> io::Result<()> {
    // SAFETY: open/write/close on a static path and a slice of ours.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let written = libc::write(fd, data.as_ptr().cast(), data.len());
        let error = io::Error::last_os_error();
        libc::close(fd);
        if written != data.len() as isize {
            return Err(error);
        }
    }
    Ok(())
}

fn check(result: libc::c_int) -> io::Result<()> {
    allow(result, &[])
}

/// `result` of a system call, where the errors in `harmless` count as done.
fn allow(result: libc::c_int, harmless: &[i32]) -> io::Result<()> {
    if result == 0 {
        return Ok(());
    }
    let error = io::Error::last_os_error();
    match error.raw_os_error() {
        Some(code) if harmless.contains(&code) => Ok(()),
        _ => Err(error),
    }
}
