//! The app's command line and start-up failures: each is said plainly (no
//! panic), names what to do, and starts nothing. A test binary of its own,
//! so no launch here meets the tray test's running instance (a second
//! instance would hand over to it); run it on the throwaway desktop of
//! scripts/desktop.sh like the rest.

use std::time::Duration;

use anyhow::Context as _;
use tokio::process::Command;

/// The app with `args` and the `env_remove`d variables unset: its exit code, stdout, stderr.
async fn launch(args: &[&str], env_remove: &[&str]) -> anyhow::Result<(Option<i32>, String, String)> {
    launch_with(args, env_remove, &[]).await
}

/// As [`launch`], with `env` set as well.
async fn launch_with(
    args: &[&str],
    env_remove: &[&str],
    env: &[(&str, &str)],
) -> anyhow::Result<(Option<i32>, String, String)> {
    let dir = std::env::temp_dir().join(format!("mcpool-tray-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcpool-app"));
    cmd.args(args)
        .env("HOME", &dir)
        .env("MCPOOL_CONFIG", dir.join("config.json"))
        .env("MCPOOL_TOKEN", "cli-test-token")
        .env_remove("MCPOOL_LISTEN")
        .kill_on_drop(true);
    for var in env_remove {
        cmd.env_remove(var);
    }
    cmd.envs(env.iter().copied());
    let out = tokio::time::timeout(Duration::from_secs(30), cmd.output())
        .await
        .context("the app was still running after 30 s")??;
    Ok((
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

#[tokio::test]
async fn without_a_display_it_says_so_and_points_to_mcpool_serve() -> anyhow::Result<()> {
    let (code, stdout, stderr) = launch(&["--listen", "127.0.0.1:0"], &["DISPLAY", "WAYLAND_DISPLAY"]).await?;
    assert_eq!(code, Some(2), "exit code; stderr:\n{stderr}");
    assert!(stderr.contains("no display"), "{stderr}");
    assert!(stderr.contains("mcpool serve"), "points to mcpool serve: {stderr}");
    assert!(!stdout.contains("listening"), "started a pool anyway: {stdout}");
    Ok(())
}

/// The app stopped at start as it should: with no panic, and before it
/// listened.
#[track_caller]
fn assert_stopped_cleanly(stdout: &str, stderr: &str) {
    assert!(!stderr.contains("panicked"), "no panic: {stderr}");
    assert!(!stdout.contains("listening"), "{stdout}");
}

#[tokio::test]
async fn a_display_that_cannot_be_opened_is_said_plainly() -> anyhow::Result<()> {
    // No X server has this number (its socket would be /tmp/.X11-unix/X4093).
    assert!(!std::path::Path::new("/tmp/.X11-unix/X4093").exists());
    let (code, stdout, stderr) = launch_with(
        &["--listen", "127.0.0.1:0"],
        &["WAYLAND_DISPLAY"],
        &[("DISPLAY", ":4093")],
    )
    .await?;
    assert_eq!(code, Some(2), "exit code; stderr:\n{stderr}");
    assert!(stderr.contains("cannot open the display (DISPLAY=:4093)"), "{stderr}");
    assert!(stderr.contains("mcpool serve"), "points to mcpool serve: {stderr}");
    assert_stopped_cleanly(&stdout, &stderr);
    Ok(())
}

#[tokio::test]
async fn a_taken_address_is_said_plainly_with_what_to_do() -> anyhow::Result<()> {
    if std::env::var_os("DISPLAY").is_none() {
        anyhow::bail!("needs an X display: run `bash scripts/desktop.sh cargo test -p mcpool-app`");
    }
    let taken = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = taken.local_addr()?.to_string();
    let (code, stdout, stderr) = launch(&["--listen", &addr], &[]).await?;
    assert_eq!(code, Some(1), "exit code; stderr:\n{stderr}");
    assert!(stderr.contains(&format!("mcpool: cannot listen on {addr}")), "{stderr}");
    assert!(stderr.contains("is mcpool already running?"), "{stderr}");
    assert_stopped_cleanly(&stdout, &stderr);
    Ok(())
}

#[tokio::test]
async fn it_refuses_a_non_loopback_address_as_mcpool_serve_does() -> anyhow::Result<()> {
    let (code, stdout, stderr) = launch(&["--listen", "0.0.0.0:0"], &[]).await?;
    assert_eq!(code, Some(1), "exit code; stderr:\n{stderr}");
    assert!(stderr.contains("--allow-non-loopback"), "names the flag: {stderr}");
    assert!(!stdout.contains("listening"), "{stdout}");
    let (code, _, stderr) = launch(&["--no-such-flag"], &[]).await?;
    assert_eq!(code, Some(2), "an unknown flag is a usage error: {stderr}");
    assert!(stderr.contains("--no-such-flag"), "{stderr}");
    Ok(())
}
