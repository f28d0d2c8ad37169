//! README's "Quick start", run as a newcomer runs it: every `$ ` command of
//! its `console` blocks, verbatim, through `bash -c` in a fresh home (no
//! XDG folders, nothing of mcpool's yet), each one's output (stdout and
//! stderr as a terminal shows them) compared with the lines README quotes.
//!
//! In the quoted output `…` stands for any text within a line, and a line
//! that is `…` alone for any number of lines; the home folder is quoted as
//! `/home/you` and the address as `127.0.0.1:7410`. `mcpool serve`, which a
//! person leaves running in a terminal of its own, is started and left
//! running; the next block starts once it has printed the lines quoted.
//! Afterwards nothing of mcpool's may be left in the home but its own
//! folders and what the commands were said to write.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context};
use mcpool_tests::*;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// How long one command may take (the first `npx` start reads its cache).
const STEP: Duration = Duration::from_secs(120);
const QUOTED_HOME: &str = "/home/you";
const QUOTED_LISTEN: &str = "127.0.0.1:7410";

/// One command of a block and the output README quotes for it.
#[derive(Debug)]
struct Step {
    command: String,
    output: Vec<String>,
}

/// The `console` blocks of README's `## Quick start` section, in order.
fn quick_start(readme: &str) -> anyhow::Result<Vec<Vec<Step>>> {
    let start = readme
        .find("\n## Quick start\n")
        .context("README has no `## Quick start` section")?;
    let section = &readme[start + 1..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
    let mut blocks = Vec::new();
    let mut lines = section.lines();
    while let Some(line) = lines.next() {
        if line.trim() != "```console" {
            continue;
        }
        let mut steps: Vec<Step> = Vec::new();
        for line in lines.by_ref() {
            if line.trim() == "```" {
                break;
            }
            match line.strip_prefix("$ ") {
                Some(command) => steps.push(Step {
                    command: command.to_string(),
                    output: Vec::new(),
                }),
                None => steps
                    .last_mut()
                    .context("a console block starts with output, not a `$ ` command")?
                    .output
                    .push(line.to_string()),
            }
        }
        blocks.push(steps);
    }
    if blocks.is_empty() {
        bail!("README's Quick start has no console block");
    }
    Ok(blocks)
}

/// Whether `line` is what `quoted` says, `…` standing for any text
/// (trailing blanks, which a terminal does not show, left out).
fn line_matches(quoted: &str, line: &str) -> bool {
    let (quoted, line) = (quoted.trim_end(), line.trim_end());
    let mut parts = quoted.split('…');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = line.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// Whether `lines` are what `quoted` says, a `…` line standing for any
/// number of lines.
fn output_matches(quoted: &[String], lines: &[String]) -> bool {
    match quoted.split_first() {
        None => lines.is_empty(),
        Some((q, rest)) if q == "…" => (0..=lines.len()).any(|skip| output_matches(rest, &lines[skip..])),
        Some((q, rest)) => lines
            .split_first()
            .is_some_and(|(l, more)| line_matches(q, l) && output_matches(rest, more)),
    }
}

/// Whether `lines`, so far, begin with what `quoted` says (the output of a
/// command still running).
fn output_begins(quoted: &[String], lines: &[String]) -> bool {
    (0..=lines.len()).any(|n| output_matches(quoted, &lines[..n]))
}

/// A fresh home and what every command sees: only the system's `PATH`
/// with mcpool's programs first, no XDG folder but the runtime one (which
/// a login session has, outside the home), the test's own keyring profile,
/// and npm kept offline on the repository's packages.
struct Newcomer {
    home: PathBuf,
    env: Vec<(String, String)>,
    listen: String,
}

impl Newcomer {
    fn new(dir: &Path) -> anyhow::Result<Self> {
        let home = dir.join("home");
        let run = dir.join("run");
        std::fs::create_dir_all(&home)?;
        std::fs::create_dir_all(&run)?;
        std::os::unix::fs::symlink(node_modules(), home.join("node_modules"))?;
        let listen = free_listen()?;
        let path = format!("{}:/usr/local/bin:/usr/bin:/bin", bin_dir().display());
        let mut env = vec![
            ("HOME".to_string(), home.display().to_string()),
            ("PATH".to_string(), path),
            ("XDG_RUNTIME_DIR".to_string(), run.display().to_string()),
            ("MCPOOL_LISTEN".to_string(), listen.clone()),
            ("MCPOOL_PROFILE".to_string(), profile_for(dir)),
            ("npm_config_offline".to_string(), "true".to_string()),
            ("npm_config_update_notifier".to_string(), "false".to_string()),
            ("LANG".to_string(), "C.UTF-8".to_string()),
        ];
        // The desktop session's bus, where the keyring is.
        for key in ["DBUS_SESSION_BUS_ADDRESS", "DISPLAY"] {
            if let Ok(value) = std::env::var(key) {
                env.push((key.to_string(), value));
            }
        }
        Ok(Newcomer { home, env, listen })
    }

    fn command(&self, line: &str) -> Command {
        let mut cmd = Command::new("bash");
        cmd.args(["-c", line])
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&self.home)
            .stdin(Stdio::null())
            .kill_on_drop(true);
        cmd
    }

    /// Runs `line` to its end: its output as a terminal shows it (stdout
    /// and stderr on one pipe), quoted as README quotes it.
    async fn run(&self, line: &str) -> anyhow::Result<Vec<String>> {
        let (reader, writer) = std::io::pipe()?;
        let mut cmd = self.command(line);
        cmd.stdout(writer.try_clone()?).stderr(writer);
        let mut child = cmd.spawn().with_context(|| format!("cannot run `{line}`"))?;
        drop(cmd);
        let read = tokio::task::spawn_blocking(move || std::io::read_to_string(reader));
        tokio::time::timeout(STEP, child.wait())
            .await
            .with_context(|| format!("`{line}` did not end within {STEP:?}"))??;
        let text = tokio::time::timeout(STEP, read).await???;
        Ok(text.lines().map(|l| self.quoted(l)).collect())
    }

    /// A line with the home and the address as README writes them.
    fn quoted(&self, line: &str) -> String {
        line.replace(&self.home.display().to_string(), QUOTED_HOME)
            .replace(&self.listen, QUOTED_LISTEN)
    }

    /// Starts `line` (a server left running) and waits until its output
    /// begins as `quoted` says; the process and what it said so far.
    async fn start(&self, line: &str, quoted: &[String]) -> anyhow::Result<Child> {
        let mut cmd = self.command(line);
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn()?;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for pipe in [
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(pipe).lines();
                while let Ok(Some(l)) = lines.next_line().await {
                    let _ = tx.send(l);
                }
            });
        }
        let mut seen = Vec::new();
        let waited = tokio::time::timeout(STEP, async {
            while !output_begins(quoted, &seen) {
                match rx.recv().await {
                    Some(l) => seen.push(self.quoted(&l)),
                    None => return false,
                }
            }
            true
        })
        .await;
        if waited != Ok(true) {
            bail!(
                "`{line}` did not print what README quotes.\nREADME:\n{}\nprinted:\n{}",
                quoted.join("\n"),
                seen.join("\n")
            );
        }
        Ok(child)
    }
}

#[test]
fn the_quoted_output_patterns_match_as_documented() {
    let s = |v: &[&str]| v.iter().map(|l| l.to_string()).collect::<Vec<_>>();
    assert!(line_matches("added … to /home/you/x", "added notes to /home/you/x"));
    assert!(!line_matches("added … to /home/you/x", "added notes to /home/you/y"));
    assert!(line_matches("a…", "a"));
    assert!(line_matches("notes   connected      14", "notes   connected      14  "));
    assert!(!line_matches("abc", "abcd"));
    assert!(output_matches(
        &s(&["one", "…", "four"]),
        &s(&["one", "two", "three", "four"])
    ));
    assert!(output_matches(&s(&["one", "…"]), &s(&["one"])));
    assert!(!output_matches(&s(&["one", "two"]), &s(&["one", "two", "three"])));
    assert!(output_begins(
        &s(&["one", "…", "three"]),
        &s(&["one", "two", "three", "four"])
    ));
    assert!(!output_begins(&s(&["one", "…", "three"]), &s(&["one", "two"])));
}

#[tokio::test]
async fn readme_quick_start_runs_verbatim_on_a_fresh_home() -> anyhow::Result<()> {
    let readme = std::fs::read_to_string(repo_root().join("README.md"))?;
    let blocks = quick_start(&readme)?;
    let dir = TempDir::new("quick-start");
    let newcomer = Newcomer::new(dir.path())?;
    let mut running = Vec::new();
    let mut failures = Vec::new();
    for step in blocks.iter().flatten() {
        if step.command.starts_with("mcpool serve") {
            running.push(newcomer.start(&step.command, &step.output).await?);
            continue;
        }
        let printed = newcomer.run(&step.command).await?;
        if !output_matches(&step.output, &printed) {
            failures.push(format!(
                "$ {}\nREADME quotes:\n{}\nit printed:\n{}",
                step.command,
                step.output.join("\n"),
                printed.join("\n")
            ));
        }
    }
    for mut child in running {
        // As a person stops it: Ctrl-C, and it stops its servers.
        if let Some(pid) = child.id() {
            let _ = Command::new("kill").args(["-INT", &pid.to_string()]).status().await;
        }
        if tokio::time::timeout(Duration::from_secs(20), child.wait())
            .await
            .is_err()
        {
            let _ = child.kill().await;
        }
    }
    assert!(
        failures.is_empty(),
        "README's quick start differs:\n\n{}",
        failures.join("\n\n")
    );
    // No lock of mcpool's beside an agent's file: only its own config's,
    // in its own folder.
    let own = newcomer.home.join(".config").join("mcpool");
    let mut left: Vec<String> = walk(&newcomer.home)
        .into_iter()
        .filter(|p| !p.starts_with(&own) && p.to_string_lossy().contains("mcpool-lock"))
        .map(|p| p.display().to_string())
        .collect();
    left.sort();
    assert!(left.is_empty(), "lock files left in the home: {left:?}");
    assert!(
        newcomer.home.join(".claude.json").is_file(),
        "connect --write wrote nothing"
    );
    Ok(())
}

/// Every file under `dir` (links not followed).
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() => out.extend(walk(&path)),
            _ => out.push(path),
        }
    }
    out
}
