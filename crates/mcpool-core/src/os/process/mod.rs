//! Local servers' processes, the platform-neutral part: start a command as a
//! process tree of its own, stop the whole tree, make sure the tree goes
//! when mcpool goes (however it ends), and find a command as the OS would.
//!
//! A tree is what a server started plus everything it started in turn
//! (`npx` → `node` → the server's own helpers). The backends:
//!
//! - `unix.rs`: the tree is a process group (`setpgid` at spawn). A stop is
//!   TERM to the group, KILL after the grace. A guardian process, forked
//!   before the async runtime starts, holds a pipe from mcpool and takes
//!   every group still listed down when that pipe closes (`kill -9`
//!   included). `macos.rs` holds what macOS does its own way (the
//!   guardian closes the descriptors it lists, as there is no
//!   `close_range`).
//! - `windows.rs`: the tree is a Job Object with
//!   `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`. The child starts suspended, joins
//!   the job, then runs, so none of its descendants escapes it. A stop waits
//!   the grace for the server to leave on its own (its stdin is closed)
//!   and terminates the job; when mcpool dies the system closes the job's
//!   only handle and kills the tree, so no guardian is needed. Commands
//!   resolve through `PATH` and `PATHEXT` (`npx` is `npx.cmd`); a batch
//!   file's arguments are quoted by the standard library, which refuses the
//!   ones it cannot pass literally (the "BatBadBut" flaw does not apply).
//!
//! Invariant: a [`ProcessTree`] that is dropped without [`ProcessTree::stop`]
//! kills its tree at once; a tree never outlives the pool that started it.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::watch;

#[cfg(target_os = "macos")]
mod macos;
#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as sys;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as sys;

/// How long a tree gets to end on its own before it is killed.
pub const STOP_GRACE: Duration = Duration::from_secs(2);

/// Starts what keeps trees from outliving mcpool, where the platform needs
/// a process for it (the Unix guardian forks). Call it once, first thing in
/// `main`, before any async runtime exists. A failure is logged when the
/// first local server starts; mcpool runs on without it.
pub fn start_guardian() {
    sys::start_guardian();
}

/// A running child and its tree. Dropping it kills the tree.
#[derive(Debug)]
pub struct ProcessTree {
    id: u32,
    exit: watch::Receiver<Option<ExitStatus>>,
    stopped: bool,
    tree: sys::Tree,
}

/// A started child: its tree and its three pipes.
pub struct Started {
    pub tree: ProcessTree,
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
    pub stderr: ChildStderr,
}

/// How a child is confined: the environment it starts from instead of
/// mcpool's own, and what it does to itself between fork and exec.
#[derive(Default)]
pub struct Confine {
    /// `Some`: the child starts from these variables alone (`env` is added).
    pub base_env: Option<Vec<(String, String)>>,
    /// Applied in the child before exec (a sandbox).
    pub sandbox: Option<std::sync::Arc<crate::sandbox::Confinement>>,
}

/// Starts `command` with `args`, `env` added to mcpool's own environment
/// (or to `confine`'s) and `cwd`, as a tree of its own with piped stdin,
/// stdout and stderr. The command is found as the OS finds it ([`find`] on
/// Windows; `execvp`'s search on Unix, which is what Unix shells do).
pub fn spawn(
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: Option<&Path>,
    confine: Confine,
) -> io::Result<Started> {
    let program = sys::program(command, env);
    let mut cmd = Command::new(program);
    if let Some(base) = confine.base_env {
        cmd.env_clear().envs(base);
    }
    #[cfg(unix)]
    if let Some(sandbox) = confine.sandbox.filter(|s| s.is_active()) {
        // SAFETY: on Linux the closure makes only system calls (prctl,
        // Landlock) on a descriptor opened before the fork and allocates
        // nothing; on macOS `sandbox_init` compiles the profile with the
        // system's malloc, which stays usable after a fork.
        unsafe {
            cmd.pre_exec(move || sandbox.apply_in_child());
        }
    }
    cmd.args(args)
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(false);
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    sys::prepare(&mut cmd);
    let mut child = cmd.spawn()?;
    let id = child.id().unwrap_or(0);
    // The tree exists before the child can start anything (Windows: it is
    // still suspended), and the guard knows it before spawn returns.
    let tree = match sys::adopt(&child) {
        Ok(tree) => tree,
        Err(e) => {
            let _ = child.start_kill();
            return Err(e);
        }
    };
    let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        tree.kill();
        tree.release();
        return Err(io::Error::other("the child's pipes were not set up"));
    };
    let (tx, exit) = watch::channel(None);
    // The reaper owns the child so that its exit status is known at once and
    // no zombie is left behind.
    tokio::spawn(async move {
        let status = child.wait().await.ok();
        let _ = tx.send(status);
    });
    Ok(Started {
        tree: ProcessTree {
            id,
            exit,
            stopped: false,
            tree,
        },
        stdin,
        stdout,
        stderr,
    })
}

impl ProcessTree {
    /// The child's process id (on Unix also its process group's).
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The child's exit status, once it has exited.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        *self.exit.borrow()
    }

    /// A receiver that sees the child's exit status.
    pub fn exit_watch(&self) -> watch::Receiver<Option<ExitStatus>> {
        self.exit.clone()
    }

    /// Waits up to `limit` for the child to exit.
    pub async fn wait_exit(&self, limit: Duration) -> Option<ExitStatus> {
        let mut rx = self.exit.clone();
        let _ = tokio::time::timeout(limit, rx.wait_for(Option::is_some)).await;
        self.exit_status()
    }

    /// Asks the tree to end (Unix: TERM to the group; Windows has no such
    /// request, the closed stdin is the server's cue), kills it after the
    /// grace if the child is still there, and kills once more for members
    /// that did not listen.
    pub async fn stop(&mut self, grace: Duration) {
        if self.stopped {
            return;
        }
        self.tree.terminate();
        self.wait_exit(grace).await;
        self.tree.kill();
        self.tree.release();
        self.stopped = true;
    }
}

impl Drop for ProcessTree {
    fn drop(&mut self) {
        if !self.stopped {
            self.tree.kill();
            self.tree.release();
        }
    }
}

/// "the process exited with status 3" / "the process was killed by signal 9".
pub fn describe_exit(status: Option<ExitStatus>) -> String {
    match status {
        Some(s) => match (s.code(), sys::signal_of(&s)) {
            (Some(code), _) => format!("the process exited with status {code}"),
            (None, Some(sig)) => format!("the process was killed by signal {sig}"),
            _ => "the process exited".into(),
        },
        None => "the process closed its output".into(),
    }
}

/// Whether `command` is a program the OS would run from a directory of
/// `path` (a `PATH` value).
pub fn on_path(command: &str, path: Option<&OsStr>) -> bool {
    let Some(path) = path else { return false };
    std::env::split_paths(path).any(|dir| sys::in_dir(&dir, command).is_some())
}

/// Where `command` runs from: itself when it names a file (it holds a path
/// separator), else the first program of that name in a directory of
/// `path`, as the OS picks it (on Windows with the extensions of
/// `PATHEXT`: `npx` is `npx.cmd`).
pub fn find(command: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    if sys::names_a_file(command) {
        return sys::as_file(Path::new(command));
    }
    std::env::split_paths(path?).find_map(|dir| sys::in_dir(&dir, command))
}

/// Resolves when the process is asked to stop: SIGTERM or SIGINT on Unix;
/// Ctrl-C, Ctrl-Break, the console closing or the session ending on
/// Windows. `mcpool serve` and the tray app then stop every server.
pub async fn stop_requested() -> io::Result<()> {
    sys::stop_requested().await
}

#[cfg(test)]
mod tests;
