//! Local servers: a child process started as a tree of its own
//! ([`crate::os::process`]: a process group on Unix, a Job Object on
//! Windows), stdin/stdout as the MCP transport, stderr drained into a
//! bounded tail. Every stop takes the whole tree down.

use tokio::process::{ChildStdin, ChildStdout};

use crate::config::TransportSpec;
use crate::errors::ConnectError;
use crate::os::process::{self, ProcessTree};
use crate::stderr_tail::StderrTail;

pub struct Spawned {
    pub tree: ProcessTree,
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
    let started = process::spawn(command, args, env, cwd.as_deref()).map_err(|source| ConnectError::Spawn {
        command: command.clone(),
        source,
    })?;
    let stderr = StderrTail::with_log(log);
    tokio::spawn(stderr.clone().drain(started.stderr));
    Ok(Spawned {
        tree: started.tree,
        stdout: started.stdout,
        stdin: started.stdin,
        stderr,
    })
}
