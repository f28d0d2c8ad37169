//! Process trees on Unix: a process group per local server, stopped with
//! TERM then KILL, and the guardian that takes every group down when mcpool
//! ends, however it ends (`kill -9` included).
//!
//! A local server's own children do not notice that mcpool died: its direct
//! child sees stdin close, but a grandchild keeps running with parent PID 1.
//! `PR_SET_PDEATHSIG` does not help: it is Linux-only, fires when the
//! *thread* that spawned the child exits (tokio's blocking threads come and
//! go), and never reaches grandchildren. So [`start_guardian`] forks, before
//! the async runtime starts any thread, a process that does one thing: read
//! a pipe from mcpool. [`adopt`] writes `+PGID` when a process group starts
//! and [`Tree::release`] `-PGID` once it has been stopped. When the pipe
//! closes (mcpool exited or was killed: the kernel closes its end either
//! way) the guardian sends TERM to every group still listed, KILL after up
//! to a second, and exits. It never signals a group it was not told about.
//!
//! The guardian is one per process by nature (it is forked at start-up and
//! watches that process), so it lives in one process-wide `OnceLock` that
//! `start_guardian` sets; groups are reported to it only when it runs
//! (not in tests or other embedders). The child uses only
//! async-signal-safe calls (no allocation, no locks), so forking is sound
//! even if a thread already exists.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use tokio::process::{Child, Command};

pub fn start_guardian() {
    guardian::start();
}

/// A local server's process group.
#[derive(Debug)]
pub struct Tree {
    pgid: i32,
}

/// Unix runs the command as given: `execvp` searches `PATH` itself.
pub fn program(command: &str, _env: &BTreeMap<String, String>) -> PathBuf {
    PathBuf::from(command)
}

/// The child leads a new process group.
pub fn prepare(cmd: &mut Command) {
    cmd.process_group(0);
}

/// The child's group, told to the guardian: should mcpool die without
/// stopping the group, the guardian does.
pub fn adopt(child: &Child) -> io::Result<Tree> {
    let pgid = child.id().map(|id| id as i32).unwrap_or(0);
    guardian::send(b'+', pgid);
    Ok(Tree { pgid })
}

impl Tree {
    /// TERM to the group: it may clean up.
    pub fn terminate(&self) {
        self.signal(libc::SIGTERM);
    }

    /// KILL to the group: no asking.
    pub fn kill(&self) {
        self.signal(libc::SIGKILL);
    }

    /// Tells the guardian the group was stopped.
    pub fn release(&self) {
        guardian::send(b'-', self.pgid);
    }

    fn signal(&self, signal: i32) {
        if self.pgid <= 0 {
            return;
        }
        // SAFETY: kill(2) with a negative pid signals the process group we
        // created for this child; it touches no memory of ours.
        unsafe {
            libc::kill(-self.pgid, signal);
        }
    }
}

pub fn signal_of(status: &ExitStatus) -> Option<i32> {
    std::os::unix::process::ExitStatusExt::signal(status)
}

/// A command holding a `/` names a file; else `PATH` is searched.
pub fn names_a_file(command: &str) -> bool {
    command.contains('/')
}

/// `file` when it is an executable regular file.
pub fn as_file(file: &Path) -> Option<PathBuf> {
    executable(file).then(|| file.to_path_buf())
}

/// `dir/command` when it is an executable regular file.
pub fn in_dir(dir: &Path, command: &str) -> Option<PathBuf> {
    as_file(&dir.join(command))
}

fn executable(file: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(file).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// SIGTERM or SIGINT.
pub async fn stop_requested() -> io::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    Ok(())
}

mod guardian {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::OnceLock;
    use std::time::Duration;

    /// The most groups the guardian tracks; more than any config runs.
    const MAX_GROUPS: usize = 4096;
    /// How long the groups get between TERM and KILL.
    const GRACE: Duration = Duration::from_secs(1);
    const POLL: Duration = Duration::from_millis(50);

    enum State {
        Running { fd: i32, pid: libc::pid_t },
        Failed(String),
    }

    static STATE: OnceLock<State> = OnceLock::new();
    static WARNED: AtomicBool = AtomicBool::new(false);

    fn warn_once(what: &str) {
        if !WARNED.swap(true, Ordering::Relaxed) {
            tracing::warn!("{what}; local servers' own children may outlive mcpool if it is killed");
        }
    }

    pub fn start() {
        let _ = STATE.get_or_init(|| match fork_guardian() {
            Ok((fd, pid)) => State::Running { fd, pid },
            Err(e) => State::Failed(format!("the guardian process did not start: {e}")),
        });
    }

    fn fork_guardian() -> std::io::Result<(i32, libc::pid_t)> {
        let mut fds = [0i32; 2];
        // SAFETY: pipe(2) fills the two-int array we pass.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let [read_end, write_end] = fds;
        // SAFETY: fcntl on the fds we just created. The write end is
        // close-on-exec (no server may hold it: the guardian would never see
        // EOF) and non-blocking (a stuck guardian never blocks the pool).
        unsafe {
            libc::fcntl(write_end, libc::F_SETFD, libc::FD_CLOEXEC);
            libc::fcntl(read_end, libc::F_SETFD, libc::FD_CLOEXEC);
            let flags = libc::fcntl(write_end, libc::F_GETFL);
            libc::fcntl(write_end, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
        // SAFETY: the child runs only `guard`, which makes async-signal-safe
        // calls and never returns.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            let e = std::io::Error::last_os_error();
            // SAFETY: closing the fds we own.
            unsafe {
                libc::close(read_end);
                libc::close(write_end);
            }
            return Err(e);
        }
        if pid == 0 {
            guard(read_end);
        }
        // SAFETY: the read end belongs to the guardian now.
        unsafe { libc::close(read_end) };
        Ok((write_end, pid))
    }

    pub fn send(sign: u8, pgid: i32) {
        let Some(state) = STATE.get() else { return };
        let (fd, pid) = match state {
            State::Running { fd, pid } => (*fd, *pid),
            State::Failed(e) => return warn_once(e),
        };
        if pgid <= 1 {
            return;
        }
        let mut line = [0u8; 16];
        let len = format_line(&mut line, sign, pgid);
        // SAFETY: writes `len` bytes of our buffer to our pipe; a line this
        // short is written whole or not at all.
        let written = unsafe { libc::write(fd, line.as_ptr().cast(), len) };
        if written != len as isize {
            let e = std::io::Error::last_os_error();
            // A guardian that died is reaped here, so it leaves no zombie.
            // SAFETY: waitpid on our own child, without blocking.
            unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
            warn_once(&format!("the guardian process stopped listening ({e})"));
        }
    }

    /// "+1234\n" into `out`; returns its length.
    fn format_line(out: &mut [u8; 16], sign: u8, value: i32) -> usize {
        let mut digits = [0u8; 10];
        let mut n = value.unsigned_abs();
        let mut count = 0;
        loop {
            digits[count] = b'0' + (n % 10) as u8;
            count += 1;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        out[0] = sign;
        for i in 0..count {
            out[1 + i] = digits[count - 1 - i];
        }
        out[1 + count] = b'\n';
        count + 2
    }

    /// The guardian's whole life, in the forked child. Only
    /// async-signal-safe calls: no allocation, no locks, no Rust runtime.
    fn guard(fd: i32) -> ! {
        // SAFETY: plain syscalls on our own process and fds.
        unsafe {
            libc::setsid();
            libc::signal(libc::SIGINT, libc::SIG_IGN);
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            libc::signal(libc::SIGPIPE, libc::SIG_IGN);
            libc::chdir(c"/".as_ptr());
            close_all_but(fd);
        }
        let mut groups = [0i32; MAX_GROUPS];
        let mut count = 0usize;
        let mut buf = [0u8; 512];
        let mut line = Line::default();
        loop {
            // SAFETY: reads into our stack buffer.
            let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n == 0 {
                break;
            }
            if n < 0 {
                if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                break;
            }
            for &b in &buf[..n as usize] {
                match line.push(b) {
                    Some((b'+', pgid)) if !groups[..count].contains(&pgid) && count < MAX_GROUPS => {
                        groups[count] = pgid;
                        count += 1;
                    }
                    Some((b'-', pgid)) => {
                        if let Some(i) = groups[..count].iter().position(|g| *g == pgid) {
                            groups[i] = groups[count - 1];
                            count -= 1;
                        }
                    }
                    _ => {}
                }
            }
        }
        // mcpool is gone: every group it still ran goes too.
        let groups = &groups[..count];
        // SAFETY: signals only the groups mcpool listed.
        unsafe {
            for g in groups {
                libc::kill(-g, libc::SIGTERM);
            }
        }
        let rounds = GRACE.as_millis() / POLL.as_millis();
        for _ in 0..rounds {
            // SAFETY: signal 0 only checks that a group still has members.
            if groups.iter().all(|g| unsafe { libc::kill(-g, 0) } != 0) {
                break;
            }
            let pause = libc::timespec {
                tv_sec: 0,
                tv_nsec: POLL.as_nanos() as libc::c_long,
            };
            // SAFETY: sleeps; the pointer is to a local.
            unsafe { libc::nanosleep(&pause, std::ptr::null_mut()) };
        }
        // SAFETY: as above; then leave without running any Rust teardown.
        unsafe {
            for g in groups {
                libc::kill(-g, libc::SIGKILL);
            }
            libc::_exit(0)
        }
    }

    /// Closes every fd except `keep`, so the guardian holds nothing of
    /// mcpool's open (sockets, the terminal, a parent's pipes).
    unsafe fn close_all_but(keep: i32) {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: close_range(2) on ranges of our own fd table.
            let below = if keep > 0 {
                unsafe { libc::syscall(libc::SYS_close_range, 0u32, (keep - 1) as u32, 0u32) }
            } else {
                0
            };
            let above = unsafe { libc::syscall(libc::SYS_close_range, (keep + 1) as u32, u32::MAX, 0u32) };
            if below == 0 && above == 0 {
                return;
            }
        }
        #[cfg(target_os = "macos")]
        // SAFETY: the guardian owns every descriptor it holds.
        if unsafe { crate::os::process::macos::close_listed_but(keep) } {
            return;
        }
        // SAFETY: getrlimit fills our struct; close on fds we may hold.
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        let max = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
            limit.rlim_cur.min(65_536) as i32
        } else {
            1024
        };
        for fd in 0..max {
            if fd != keep {
                unsafe { libc::close(fd) };
            }
        }
    }

    /// One protocol line being read: a sign and a decimal PGID.
    #[derive(Default)]
    struct Line {
        sign: u8,
        value: i64,
        digits: usize,
        bad: bool,
    }

    impl Line {
        /// Takes one byte; at a newline, the line read (if well formed).
        fn push(&mut self, b: u8) -> Option<(u8, i32)> {
            match b {
                b'\n' => {
                    let done = std::mem::take(self);
                    let ok = !done.bad && done.digits > 0 && done.value > 1 && done.value <= i32::MAX as i64;
                    ok.then_some((done.sign, done.value as i32))
                }
                b'+' | b'-' if self.sign == 0 && self.digits == 0 => {
                    self.sign = b;
                    None
                }
                b'0'..=b'9' if self.sign != 0 && self.digits < 10 => {
                    self.value = self.value * 10 + i64::from(b - b'0');
                    self.digits += 1;
                    None
                }
                _ => {
                    self.bad = true;
                    None
                }
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        fn lines(input: &[u8]) -> Vec<(u8, i32)> {
            let mut line = Line::default();
            input.iter().filter_map(|b| line.push(*b)).collect()
        }

        #[test]
        fn protocol_lines_round_trip() {
            let mut out = [0u8; 16];
            let n = format_line(&mut out, b'+', 4_194_303);
            assert_eq!(&out[..n], b"+4194303\n");
            let n = format_line(&mut out, b'-', 7);
            assert_eq!(&out[..n], b"-7\n");
            assert_eq!(lines(b"+4194303\n-7\n"), vec![(b'+', 4_194_303), (b'-', 7)]);
        }

        #[test]
        fn malformed_lines_are_ignored() {
            // Never PGID 0 or 1 (kill(-1) would signal everything), never
            // an overflow, a missing sign or stray bytes.
            assert_eq!(
                lines(b"+0\n+1\n-1\n+99999999999\n42\n+4x2\n++5\n\n+\n+12\n"),
                vec![(b'+', 12)]
            );
        }
    }
}
