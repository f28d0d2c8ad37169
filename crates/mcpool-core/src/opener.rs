//! Opens a URL for the person at the machine: the command in `BROWSER`
//! when set (the URL as its one argument), else the desktop's default
//! browser. Shared by `mcpool ui`, `mcpool login` and the tray app.
//! `BROWSER` is the desktop's setting, not one of mcpool's (those are all
//! read once, in `service::ServeArgs` and `service::Setup`): it is read when
//! a browser is opened, as `xdg-open` reads it.

use std::ffi::OsString;
use std::process::{Command, Stdio};

/// How the URL was handed on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Opened {
    /// Through the command named by `BROWSER`.
    Browser(String),
    /// Through the desktop's opener (`xdg-open`, `open`).
    Desktop,
}

/// Starts the browser at `url` without waiting for it; its output is not
/// ours to show. An error means nothing could be started: the caller prints
/// the URL instead.
pub fn open_url(url: &str) -> std::io::Result<Opened> {
    open_with(std::env::var_os("BROWSER"), url)
}

fn open_with(browser: Option<OsString>, url: &str) -> std::io::Result<Opened> {
    if let Some(command) = browser.filter(|b| !b.is_empty()) {
        spawn(Command::new(&command).arg(url))?;
        return Ok(Opened::Browser(command.to_string_lossy().into_owned()));
    }
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else {
        "xdg-open"
    };
    spawn(Command::new(opener).arg(url))?;
    Ok(Opened::Desktop)
}

fn spawn(command: &mut Command) -> std::io::Result<()> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map(drop)
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

    #[test]
    fn a_missing_browser_command_is_an_error() {
        assert!(open_with(Some("/nonexistent/browser".into()), "http://x").is_err());
    }
}
