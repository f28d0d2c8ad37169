//! A dashboard script (tests/ui/*.mjs) in a real headless Chromium: signed
//! in through a one-time link from `mcpool ui --no-open`, read line by line
//! (its `STEP name` lines are where the test checks files, the keyring and
//! the API, then replies), and its end judged with everything it said.

use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, ensure, Context};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::{node_modules, repo_root, Mcpool, TempDir};

pub struct BrowserScript {
    node: Child,
    input: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
    errors: tokio::task::JoinHandle<String>,
    /// Every line the script printed, in order.
    pub said: Vec<String>,
    _profile: TempDir,
}

impl BrowserScript {
    /// Runs `tests/ui/<script>` against `pool`'s dashboard with `env` added
    /// to what every script gets: `LINK`, `USER_DATA_DIR`, `PLAYWRIGHT_CORE`.
    pub async fn open(pool: &Mcpool, script: &str, env: &[(&str, OsString)]) -> anyhow::Result<Self> {
        ensure!(
            Path::new("/usr/bin/chromium").exists(),
            "chromium is missing: run scripts/test-env.sh"
        );
        let playwright = node_modules().join("playwright-core/index.mjs");
        ensure!(
            playwright.exists(),
            "{} is missing: run scripts/test-env.sh",
            playwright.display()
        );
        let out = pool.cli(&["ui", "--no-open"], None).await?;
        let link = String::from_utf8_lossy(&out.stdout).trim().to_string();
        ensure!(
            link.starts_with(&pool.url("/ui/login?code=")),
            "no sign-in link: {link}"
        );
        let profile = TempDir::new("browser");
        let mut cmd = Command::new("node");
        cmd.arg(repo_root().join("tests/ui").join(script))
            .env("LINK", &link)
            .env("USER_DATA_DIR", profile.path().join("chromium-profile"))
            .env("PLAYWRIGHT_CORE", &playwright)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut node = cmd.spawn().context("cannot run node")?;
        let input = node.stdin.take().context("stdin")?;
        let lines = BufReader::new(node.stdout.take().context("stdout")?).lines();
        let mut stderr = node.stderr.take().context("stderr")?;
        let errors = tokio::spawn(async move {
            let mut s = String::new();
            let _ = tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut s).await;
            s
        });
        Ok(BrowserScript {
            node,
            input: Some(input),
            lines,
            errors,
            said: Vec::new(),
            _profile: profile,
        })
    }

    /// The script's next line (kept in `said`), `None` when it is done.
    pub async fn next_line(&mut self) -> anyhow::Result<Option<String>> {
        let line = self.lines.next_line().await?;
        if let Some(l) = &line {
            self.said.push(l.clone());
        }
        Ok(line)
    }

    /// A line to the script (after a `STEP`, it waits for one).
    pub async fn reply(&mut self, text: &str) -> anyhow::Result<()> {
        let input = self.input.as_mut().context("the script's stdin is closed")?;
        input.write_all(format!("{text}\n").as_bytes()).await?;
        input.flush().await?;
        Ok(())
    }

    /// Waits for the script's exit and judges the run: `driven` is the
    /// test's own loop, bounded by a timeout; `logs` go into the failure.
    /// Answers the `STEP` lines and the final `OK`, in order.
    pub async fn finish(
        mut self,
        driven: Result<anyhow::Result<()>, tokio::time::error::Elapsed>,
        logs: &str,
    ) -> anyhow::Result<Vec<String>> {
        drop(self.input.take());
        let status = tokio::time::timeout(Duration::from_secs(30), self.node.wait()).await??;
        let errors = self.errors.await.unwrap_or_default();
        let steps: Vec<String> = self
            .said
            .iter()
            .filter(|l| l.starts_with("STEP ") || l.trim() == "OK")
            .cloned()
            .collect();
        match driven {
            Ok(Ok(())) if status.success() => Ok(steps),
            Ok(Ok(())) => bail!("the browser script failed ({status}) after {steps:?}:\n{errors}"),
            Ok(Err(e)) => bail!("{e:#} after {steps:?}:\n{errors}\n{logs}"),
            Err(_) => bail!("the browser script timed out after {steps:?}:\n{errors}"),
        }
    }
}
