//! Local servers: a child process started as a tree of its own
//! ([`crate::os::process`]: a process group on Unix, a Job Object on
//! Windows), stdin/stdout as the MCP transport, stderr drained into a
//! bounded tail. Every stop takes the whole tree down.

use tokio::process::{ChildStdin, ChildStdout};

use crate::config::{ServerSpec, TransportSpec};
use crate::errors::ConnectError;
use crate::os::process::{self, ProcessTree};
use crate::sandbox;
use crate::stderr_tail::StderrTail;

pub struct Spawned {
    pub tree: ProcessTree,
    pub stdout: ChildStdout,
    pub stdin: ChildStdin,
    pub stderr: StderrTail,
}

/// Spawns the child, in its sandbox when it has one; its stderr lines go
/// to the tail and to `log`.
pub fn spawn(spec: &ServerSpec, log: Option<crate::server_logs::ServerLog>) -> Result<Spawned, ConnectError> {
    start(&spec.transport, Some((&spec.name, &spec.sandbox)), log)
}

/// Spawns a program mcpool runs for itself (`mcpool doctor`'s version
/// check), as a tree of its own but outside any sandbox.
pub fn spawn_unconfined(
    transport: &TransportSpec,
    log: Option<crate::server_logs::ServerLog>,
) -> Result<Spawned, ConnectError> {
    start(transport, None, log)
}

fn start(
    transport: &TransportSpec,
    sandboxed: Option<(&str, &sandbox::Sandbox)>,
    log: Option<crate::server_logs::ServerLog>,
) -> Result<Spawned, ConnectError> {
    let TransportSpec::Stdio {
        command,
        args,
        env,
        cwd,
    } = transport
    else {
        return Err(ConnectError::Other("not a local server".into()));
    };
    let launch = match sandboxed {
        Some((name, sandbox)) => sandbox::launch(name, sandbox, command, args, env, cwd.as_deref())
            .map_err(|e| ConnectError::Other(e.to_string()))?,
        None => None,
    };
    let mut env = env.clone();
    let mut confine = process::Confine::default();
    if let Some(launch) = launch {
        for (k, v) in launch.env {
            env.entry(k).or_insert(v);
        }
        confine.base_env = launch.base_env;
        confine.sandbox = Some(launch.confinement);
    }
    let started =
        process::spawn(command, args, &env, cwd.as_deref(), confine).map_err(|source| ConnectError::Spawn {
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
