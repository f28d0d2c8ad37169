//! Process trees on Windows: a Job Object per local server.
//!
//! The child is created suspended (`CREATE_SUSPENDED`, and
//! `CREATE_NO_WINDOW` so that a console server started by the tray app
//! opens no console window), placed in a new job whose limit is
//! `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`, and only then resumed: everything
//! it starts is born in the job. mcpool holds the job's only handle, not
//! inheritable, so when mcpool ends (exit, crash, `taskkill /F`) the system
//! closes it and kills the whole tree; no guardian process is needed. A
//! stop terminates the job, which kills every process in it at once.
//!
//! Windows has no TERM: a server's cue to leave is its stdin closing, which
//! happens before a stop; the grace is the time it gets to do so.
//!
//! Commands resolve as Windows does: a bare name is looked for in each
//! directory of `PATH` (the child's, when the config sets one) with the
//! extensions of `PATHEXT` (`npx` is `npx.cmd`). The standard library runs
//! a `.cmd`/`.bat` through `cmd.exe` with each argument escaped for it, and
//! refuses (`InvalidInput`, "batch file arguments are invalid") an argument
//! it cannot pass literally, so the batch-file escaping flaw (CVE-2024-24576)
//! does not apply.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use tokio::process::{Child, Command};
use windows_sys::Win32::Foundation::{CloseHandle, HANDLE, INVALID_HANDLE_VALUE};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, Thread32First, Thread32Next, TH32CS_SNAPTHREAD, THREADENTRY32,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JobObjectExtendedLimitInformation, SetInformationJobObject,
    TerminateJobObject, JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
};
use windows_sys::Win32::System::Threading::{
    OpenThread, ResumeThread, CREATE_NO_WINDOW, CREATE_SUSPENDED, THREAD_SUSPEND_RESUME,
};

/// The exit code of a process killed with its job.
const KILLED: u32 = 1;

/// What `PATHEXT` is when it is not set (Windows' own default).
const DEFAULT_PATHEXT: &str = ".COM;.EXE;.BAT;.CMD";

/// Nothing to start: the job's handle is the guard.
pub fn start_guardian() {}

/// A local server's job.
#[derive(Debug)]
pub struct Tree {
    job: OwnedHandle,
}

/// `command` found on the child's `PATH` with `PATHEXT`, as Windows would;
/// as given when not found (the spawn then says it is not there).
pub fn program(command: &str, env: &BTreeMap<String, String>) -> PathBuf {
    let found = if names_a_file(command) {
        as_file(Path::new(command))
    } else {
        // Environment names are case-insensitive on Windows: `Path` is PATH.
        let path = env
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("PATH"))
            .map(|(_, v)| OsString::from(v))
            .or_else(|| std::env::var_os("PATH"));
        path.and_then(|path| std::env::split_paths(&path).find_map(|dir| in_dir(&dir, command)))
    };
    found.unwrap_or_else(|| PathBuf::from(command))
}

/// Suspended, so that it joins its job before it runs; no console window.
pub fn prepare(cmd: &mut Command) {
    cmd.creation_flags(CREATE_SUSPENDED | CREATE_NO_WINDOW);
}

/// A new job holding `child`, which is then resumed.
pub fn adopt(child: &Child) -> io::Result<Tree> {
    let job = new_job()?;
    let process = child
        .raw_handle()
        .ok_or_else(|| io::Error::other("the process exited before it started"))?;
    // SAFETY: both handles are live: the job's we own, the process's the
    // `Child` owns until it is waited for, which has not happened yet.
    if unsafe { AssignProcessToJobObject(job.as_raw_handle() as HANDLE, process as HANDLE) } == 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("could not place the process in a job object: {e}"),
        ));
    }
    let pid = child.id().ok_or_else(|| io::Error::other("the process has no id"))?;
    resume(pid)?;
    Ok(Tree { job })
}

fn new_job() -> io::Result<OwnedHandle> {
    // SAFETY: no attributes (the handle is not inheritable), no name.
    let raw = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
    if raw.is_null() {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("could not create a job object: {e}")));
    }
    // SAFETY: `raw` is a fresh handle that nothing else owns.
    let job = unsafe { OwnedHandle::from_raw_handle(raw as _) };
    let mut limits = JOBOBJECT_EXTENDED_LIMIT_INFORMATION::default();
    limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
    // SAFETY: the struct and its size match the information class.
    let set = unsafe {
        SetInformationJobObject(
            job.as_raw_handle() as HANDLE,
            JobObjectExtendedLimitInformation,
            (&raw const limits).cast(),
            std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
        )
    };
    if set == 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("could not set up a job object: {e}")));
    }
    Ok(job)
}

/// Resumes the threads of process `pid` (a suspended new process has one).
///
/// A snapshot lists only the threads that have begun running (Wine's
/// server lists `running_threads`, which a new thread joins when it has
/// started up on its side), so a new process's thread may be missing from
/// the first one; a snapshot without it is taken again, for up to
/// [`RESUME_WAIT`], instead of failing the start with "could not resume".
fn resume(pid: u32) -> io::Result<()> {
    let started = std::time::Instant::now();
    loop {
        match resume_listed(pid)? {
            0 if started.elapsed() < RESUME_WAIT => std::thread::sleep(std::time::Duration::from_millis(10)),
            0 => {
                return Err(io::Error::other(format!(
                    "could not resume the new process {pid}: no thread of it was listed within {} ms",
                    RESUME_WAIT.as_millis()
                )))
            }
            _ => return Ok(()),
        }
    }
}

/// How long a new process's thread may take to be listed.
const RESUME_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Resumes the threads of `pid` that a snapshot lists; how many.
fn resume_listed(pid: u32) -> io::Result<u32> {
    // SAFETY: a snapshot of the system's threads; closed below.
    let snapshot = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) };
    if snapshot == INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    let mut entry = THREADENTRY32 {
        dwSize: std::mem::size_of::<THREADENTRY32>() as u32,
        ..Default::default()
    };
    let mut resumed = 0;
    // SAFETY: the snapshot is live and `entry` has its size set.
    let mut more = unsafe { Thread32First(snapshot, &mut entry) } != 0;
    while more {
        if entry.th32OwnerProcessID == pid {
            // SAFETY: opens, resumes and closes one thread of our child.
            unsafe {
                let thread = OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID);
                if !thread.is_null() {
                    if ResumeThread(thread) != u32::MAX {
                        resumed += 1;
                    }
                    CloseHandle(thread);
                }
            }
        }
        // SAFETY: as for Thread32First.
        more = unsafe { Thread32Next(snapshot, &mut entry) } != 0;
    }
    // SAFETY: the snapshot is ours.
    unsafe { CloseHandle(snapshot) };
    Ok(resumed)
}

impl Tree {
    /// No TERM on Windows: the closed stdin is the server's cue.
    pub fn terminate(&self) {}

    /// Every process of the job, at once.
    pub fn kill(&self) {
        // SAFETY: the job's handle is live while `self` is.
        unsafe { TerminateJobObject(self.job.as_raw_handle() as HANDLE, KILLED) };
    }

    /// Nothing to tell anyone: closing the handle (on drop) ends the job.
    pub fn release(&self) {}
}

/// Windows processes end with a code, never a signal.
pub fn signal_of(_status: &ExitStatus) -> Option<i32> {
    None
}

/// A command holding `\`, `/` or a drive's `:` names a file.
pub fn names_a_file(command: &str) -> bool {
    command.contains(['\\', '/', ':'])
}

/// `file`, or `file` with an extension of `PATHEXT`, whichever exists
/// first, as Windows tries them.
pub fn as_file(file: &Path) -> Option<PathBuf> {
    let has_listed_extension = file
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| extensions().iter().any(|x| x[1..].eq_ignore_ascii_case(e)));
    if has_listed_extension && file.is_file() {
        return Some(file.to_path_buf());
    }
    extensions().into_iter().find_map(|ext| {
        let mut name = file.as_os_str().to_owned();
        name.push(&ext);
        let candidate = PathBuf::from(name);
        candidate.is_file().then_some(candidate)
    })
}

/// `dir\command` as [`as_file`] finds it.
pub fn in_dir(dir: &Path, command: &str) -> Option<PathBuf> {
    as_file(&dir.join(command))
}

/// `PATHEXT`'s extensions, each with its dot (".CMD").
fn extensions() -> Vec<String> {
    let value = std::env::var("PATHEXT").unwrap_or_else(|_| DEFAULT_PATHEXT.into());
    value
        .split(';')
        .map(str::trim)
        .filter(|e| e.len() > 1 && e.starts_with('.'))
        .map(str::to_string)
        .collect()
}

/// Ctrl-C, Ctrl-Break, the console closing, the user logging off or the
/// system shutting down.
pub async fn stop_requested() -> io::Result<()> {
    use tokio::signal::windows::{ctrl_break, ctrl_c, ctrl_close, ctrl_logoff, ctrl_shutdown};
    let mut c = ctrl_c()?;
    let mut brk = ctrl_break()?;
    let mut close = ctrl_close()?;
    let mut logoff = ctrl_logoff()?;
    let mut shutdown = ctrl_shutdown()?;
    tokio::select! {
        _ = c.recv() => {}
        _ = brk.recv() => {}
        _ = close.recv() => {}
        _ = logoff.recv() => {}
        _ = shutdown.recv() => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npx_is_npx_cmd_on_the_childs_path() {
        let dir = crate::scratch::made_scratch_dir("pathext");
        std::fs::write(dir.join("npx.cmd"), "@echo off\r\n").unwrap();
        let env = BTreeMap::from([("Path".to_string(), dir.to_string_lossy().into_owned())]);
        assert_eq!(program("npx", &env), dir.join("npx.cmd"));
        // Not found: as given, so the spawn says it is not there.
        assert_eq!(
            program("mcpool-no-such-command", &env),
            PathBuf::from("mcpool-no-such-command")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn a_batch_argument_that_cannot_pass_literally_is_refused() {
        let dir = crate::scratch::made_scratch_dir("batbadbut");
        std::fs::write(dir.join("server.cmd"), "@echo off\r\n").unwrap();
        let env = BTreeMap::from([("PATH".to_string(), dir.to_string_lossy().into_owned())]);
        let args = vec!["a\nb".to_string()];
        let err = super::super::spawn("server", &args, &env, None, super::super::Confine::default())
            .err()
            .unwrap();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
        assert!(err.to_string().contains("batch file arguments are invalid"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
