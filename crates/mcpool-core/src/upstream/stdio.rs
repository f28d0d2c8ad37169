//! Local servers: a child process in its own process group, stdin/stdout as
//! the MCP transport, stderr drained into a bounded tail. Every stop takes
//! the whole group down (TERM, then KILL after a grace). Process groups and
//! signals are Unix's; elsewhere a stop kills the child process itself.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::sync::watch;

use crate::config::TransportSpec;
use crate::errors::ConnectError;
use crate::stderr_tail::StderrTail;

/// How long a group gets between TERM and KILL.
pub const STOP_GRACE: Duration = Duration::from_secs(2);

/// A running child's process group. Dropping it kills the group.
#[derive(Debug)]
pub struct ProcessGroup {
    pgid: i32,
    exit: watch::Receiver<Option<ExitStatus>>,
    stopped: bool,
    /// Without process groups the reaper, which owns the child, kills it.
    #[cfg(not(unix))]
    kill: tokio_util::sync::CancellationToken,
}

pub struct Spawned {
    pub group: ProcessGroup,
    pub stdout: ChildStdout,
    pub stdin: ChildStdin,
    pub stderr: StderrTail,
}

/// Spawns the child; its stderr lines go to the tail and to `log`.
pub fn spawn(spec: &TransportSpec, log: Option<crate::server_logs::ServerLog>) -> Result<Spawned, ConnectError> {
    let TransportSpec::Stdio {
        command,
        args,
        env,
        cwd,
    } = spec
    else {
        return Err(ConnectError::Other("not a local server".into()));
    };
    let mut cmd = Command::new(command);
    cmd.args(args)
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(false);
    #[cfg(unix)]
    cmd.process_group(0);
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    let mut child = cmd.spawn().map_err(|source| ConnectError::Spawn {
        command: command.clone(),
        source,
    })?;
    let pgid = child.id().map(|id| id as i32).unwrap_or(0);
    // Should mcpool die without stopping the group, the guardian does.
    crate::guardian::watch(pgid);
    let (Some(stdout), Some(stdin), Some(stderr_pipe)) = (child.stdout.take(), child.stdin.take(), child.stderr.take())
    else {
        return Err(ConnectError::Other("the child's pipes were not set up".into()));
    };
    let stderr = StderrTail::with_log(log);
    tokio::spawn(stderr.clone().drain(stderr_pipe));
    let (tx, exit) = watch::channel(None);
    #[cfg(not(unix))]
    let kill = tokio_util::sync::CancellationToken::new();
    #[cfg(not(unix))]
    let killed = kill.clone();
    // The reaper owns the child so that its exit status is known at once and
    // no zombie is left behind.
    tokio::spawn(async move {
        #[cfg(unix)]
        let status = child.wait().await.ok();
        #[cfg(not(unix))]
        let status = tokio::select! {
            status = child.wait() => status.ok(),
            _ = killed.cancelled() => {
                let _ = child.start_kill();
                child.wait().await.ok()
            }
        };
        let _ = tx.send(status);
    });
    Ok(Spawned {
        group: ProcessGroup {
            pgid,
            exit,
            stopped: false,
            #[cfg(not(unix))]
            kill,
        },
        stdout,
        stdin,
        stderr,
    })
}

impl ProcessGroup {
    pub fn pgid(&self) -> i32 {
        self.pgid
    }

    /// The leader's exit status, once it has exited.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        *self.exit.borrow()
    }

    /// Waits up to `limit` for the leader to exit.
    pub async fn wait_exit(&self, limit: Duration) -> Option<ExitStatus> {
        let mut rx = self.exit.clone();
        let _ = tokio::time::timeout(limit, rx.wait_for(Option::is_some)).await;
        self.exit_status()
    }

    /// TERM to the group, KILL after the grace if the leader is still there,
    /// and KILL once more for members that ignored TERM.
    pub async fn stop(&mut self, grace: Duration) {
        if self.stopped || self.pgid <= 0 {
            return;
        }
        self.signal(Stop::Term);
        self.wait_exit(grace).await;
        self.signal(Stop::Kill);
        crate::guardian::forget(self.pgid);
        self.stopped = true;
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if !self.stopped && self.pgid > 0 {
            self.signal(Stop::Kill);
            crate::guardian::forget(self.pgid);
        }
    }
}

/// How a stop asks: TERM lets the group clean up, KILL does not ask.
#[derive(Clone, Copy)]
enum Stop {
    Term,
    Kill,
}

impl ProcessGroup {
    #[cfg(unix)]
    fn signal(&self, stop: Stop) {
        let signal = match stop {
            Stop::Term => libc::SIGTERM,
            Stop::Kill => libc::SIGKILL,
        };
        // SAFETY: kill(2) with a negative pid signals the process group we
        // created for this child; it touches no memory of ours.
        unsafe {
            libc::kill(-self.pgid, signal);
        }
    }

    /// No TERM here: both stops kill the child (its own children are not
    /// reached without process groups).
    #[cfg(not(unix))]
    fn signal(&self, _stop: Stop) {
        self.kill.cancel();
    }
}

/// "exited with status 3" / "was killed by signal 9".
pub fn describe_exit(status: Option<ExitStatus>) -> String {
    #[cfg(unix)]
    let signal = |s: &ExitStatus| std::os::unix::process::ExitStatusExt::signal(s);
    #[cfg(not(unix))]
    let signal = |_: &ExitStatus| None::<i32>;
    match status {
        Some(s) => match (s.code(), signal(&s)) {
            (Some(code), _) => format!("the process exited with status {code}"),
            (None, Some(sig)) => format!("the process was killed by signal {sig}"),
            _ => "the process exited".into(),
        },
        None => "the process closed its output".into(),
    }
}

impl ProcessGroup {
    /// A receiver that sees the leader's exit status.
    pub fn exit_watch(&self) -> watch::Receiver<Option<ExitStatus>> {
        self.exit.clone()
    }
}
