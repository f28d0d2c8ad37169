//! Opens a URL for the person at the machine: the command in `BROWSER`
//! when set (the URL as its one argument), else the desktop's default
//! browser through the platform's opener (`linux.rs`: `xdg-open`,
//! `macos.rs`: `open`, `windows.rs`: Explorer). The one opener of `mcpool
//! ui`, `mcpool login` and the tray app. `BROWSER` is the desktop's
//! setting, not one of mcpool's (those are all read once, in
//! `service::ServeArgs` and `service::Setup`): it is read when a browser is
//! opened, as `xdg-open` reads it.

#[cfg(all(unix, not(target_os = "macos")))]
mod linux;
#[cfg(all(unix, not(target_os = "macos")))]
use linux as backend;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as backend;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as backend;

use std::ffi::OsString;
use std::process::{Command, Stdio};

/// How the URL was handed on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Opened {
    /// Through the command named by `BROWSER`.
    Browser(String),
    /// Through the desktop's opener (`xdg-open`, `open`, Explorer).
    Desktop,
}

/// Starts the browser at `url` without waiting for it; its output is not
/// ours to show. An error means nothing could be started: the caller says
/// so or shows the URL instead.
pub fn open_url(url: &str) -> std::io::Result<Opened> {
    open_with(std::env::var_os("BROWSER"), url)
}

/// [`open_url`], then waits up to `wait` for the opener to end: one that
/// ends in failure found no browser, which is an error the caller can say.
/// Still running at the end of `wait`: it is showing the page. For a
/// command line, which may wait; the tray opens without waiting.
pub fn open_url_checked(url: &str, wait: std::time::Duration) -> std::io::Result<Opened> {
    open_checked(std::env::var_os("BROWSER"), url, wait)
}

fn open_checked(browser: Option<OsString>, url: &str, wait: std::time::Duration) -> std::io::Result<Opened> {
    let (mut command, opened) = command_for(browser, url)?;
    let mut child = spawn(&mut command)?;
    if opened == Opened::Desktop && !backend::STATUS_SAYS_WHETHER_SHOWN {
        return Ok(opened);
    }
    let until = std::time::Instant::now() + wait;
    while std::time::Instant::now() < until {
        match child.try_wait()? {
            Some(status) if status.success() => break,
            Some(status) => {
                return Err(std::io::Error::other(format!(
                    "{} ended with {status} without showing the page",
                    command.get_program().to_string_lossy()
                )))
            }
            None => std::thread::sleep(std::time::Duration::from_millis(50)),
        }
    }
    Ok(opened)
}

/// The command that opens `url`: `browser` (the `BROWSER` setting) when
/// set, else the desktop's opener; an error when there is no desktop to
/// show the page on.
fn command_for(browser: Option<OsString>, url: &str) -> std::io::Result<(Command, Opened)> {
    let (mut command, opened) = match browser.filter(|b| !b.is_empty()) {
        Some(b) => (Command::new(&b), Opened::Browser(b.to_string_lossy().into_owned())),
        None => {
            if let Some(why) = backend::no_desktop() {
                return Err(std::io::Error::new(std::io::ErrorKind::NotFound, why));
            }
            (Command::new(backend::OPENER), Opened::Desktop)
        }
    };
    command.arg(url);
    Ok((command, opened))
}

fn open_with(browser: Option<OsString>, url: &str) -> std::io::Result<Opened> {
    let (mut command, opened) = command_for(browser, url)?;
    spawn(&mut command)?;
    Ok(opened)
}

fn spawn(command: &mut Command) -> std::io::Result<std::process::Child> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn browser_gets_the_url_as_its_one_argument() {
        let dir = crate::scratch::made_scratch_dir("opener");
        let out = dir.join("got");
        let script = dir.join("browser.sh");
        std::fs::write(
            &script,
            format!("#!/bin/sh\nprintf '%s|%s' \"$#\" \"$1\" > '{}'\n", out.display()),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let url = "http://127.0.0.1:1/authorize?a=1&b=two words";
        let how = open_with(Some(script.clone().into_os_string()), url).unwrap();
        assert_eq!(how, Opened::Browser(script.display().to_string()));
        for _ in 0..100 {
            if std::fs::read_to_string(&out).is_ok_and(|s| !s.is_empty()) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert_eq!(std::fs::read_to_string(&out).unwrap(), format!("1|{url}"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[test]
    fn an_opener_that_fails_at_once_is_an_error_one_that_shows_the_page_is_not() {
        let wait = std::time::Duration::from_secs(5);
        let err = open_checked(Some("false".into()), "http://x", wait).unwrap_err();
        assert!(err.to_string().contains("without showing the page"), "{err}");
        assert_eq!(
            open_checked(Some("true".into()), "http://x", wait).unwrap(),
            Opened::Browser("true".into())
        );
        // Still running when the wait ends: it is showing the page.
        let short = std::time::Duration::from_millis(100);
        assert!(open_checked(Some("sleep".into()), "2", short).is_ok());
    }

    #[test]
    fn a_missing_browser_command_is_an_error() {
        assert!(open_with(Some("/nonexistent/browser".into()), "http://x").is_err());
    }
}
