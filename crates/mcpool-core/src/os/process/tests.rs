//! The neutral API against real processes of the platform's own shell
//! (`sh` on Unix, `cmd.exe` on Windows), so the same tests run on Linux and,
//! built for Windows, under Wine.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::io::AsyncReadExt;

use super::*;

/// The platform's shell running `script`.
fn shell(script: &str) -> (String, Vec<String>) {
    if cfg!(windows) {
        ("cmd.exe".into(), vec!["/d".into(), "/c".into(), script.into()])
    } else {
        ("sh".into(), vec!["-c".into(), script.into()])
    }
}

fn start(script: &str) -> Started {
    let (command, args) = shell(script);
    spawn(&command, &args, &BTreeMap::new(), None, Confine::default()).unwrap()
}

#[tokio::test]
async fn exit_status_is_seen_and_described() {
    let started = start("exit 3");
    let status = started.tree.wait_exit(Duration::from_secs(30)).await;
    assert_eq!(status.and_then(|s| s.code()), Some(3));
    assert_eq!(describe_exit(status), "the process exited with status 3");
    assert_eq!(describe_exit(None), "the process closed its output");
}

#[tokio::test]
async fn env_and_working_directory_reach_the_child() {
    let dir = crate::scratch::made_scratch_dir("process");
    let env = BTreeMap::from([("MCPOOL_PROCESS_TEST".to_string(), "a value".to_string())]);
    let script = if cfg!(windows) {
        "echo %MCPOOL_PROCESS_TEST%& cd"
    } else {
        "echo \"$MCPOOL_PROCESS_TEST\"; pwd"
    };
    let (command, args) = shell(script);
    let mut started = spawn(&command, &args, &env, Some(&dir), Confine::default()).unwrap();
    let mut out = String::new();
    started.stdout.read_to_string(&mut out).await.unwrap();
    let lines: Vec<&str> = out.lines().map(str::trim).collect();
    assert_eq!(lines.first(), Some(&"a value"), "{out}");
    let cwd = std::path::Path::new(lines.get(1).unwrap_or(&""));
    assert_eq!(
        cwd.file_name(),
        dir.file_name(),
        "the child runs in the configured folder: {out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn stop_ends_a_child_that_ignores_its_stdin() {
    // The child never reads stdin and never exits on its own.
    let script = if cfg!(windows) {
        "ping -n 3600 127.0.0.1 >NUL"
    } else {
        "sleep 3600"
    };
    let mut started = start(script);
    assert_eq!(started.tree.exit_status(), None);
    started.tree.stop(Duration::from_millis(200)).await;
    let status = started.tree.wait_exit(Duration::from_secs(30)).await;
    assert!(status.is_some(), "the tree was stopped");
    assert!(!status.is_some_and(|s| s.success()));
}

#[tokio::test]
async fn a_missing_command_is_an_error_not_a_tree() {
    let err = spawn(
        "mcpool-no-such-command",
        &[],
        &BTreeMap::new(),
        None,
        Confine::default(),
    )
    .err()
    .unwrap();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound, "{err}");
}

#[test]
fn find_looks_in_path_as_the_os_does() {
    let dir = crate::scratch::made_scratch_dir("process-find");
    let path = std::env::join_paths([dir.as_path()]).unwrap();
    // A program the OS would run, under the name a config uses.
    let program = if cfg!(windows) { "tool.cmd" } else { "tool" };
    std::fs::write(dir.join(program), "").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.join(program), std::fs::Permissions::from_mode(0o755)).unwrap();
        // Not executable: not a program.
        std::fs::write(dir.join("data"), "").unwrap();
        assert_eq!(find("data", Some(&path)), None);
    }
    assert_eq!(find("tool", Some(&path)), Some(dir.join(program)));
    assert!(on_path("tool", Some(&path)));
    assert!(!on_path("mcpool-no-such-command", Some(&path)));
    assert!(!on_path("tool", None));
    let named = dir.join(program);
    assert_eq!(find(named.to_str().unwrap(), None), Some(named.clone()));
    let _ = std::fs::remove_dir_all(&dir);
}
