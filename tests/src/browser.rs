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

/// Where a browser script saves its screenshot: `$var` when set (to keep
/// it, e.g. for the docs), else `default` (a file the test throws away).
pub fn screenshot_path(var: &str, default: std::path::PathBuf) -> std::ffi::OsString {
    std::env::var_os(var).unwrap_or_else(|| default.into())
}

pub struct BrowserScript {
    node: Child,
    input: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
    errors: tokio::task::JoinHandle<String>,
    /// Every line the script printed, in order.
    pub said: Vec<String>,
    /// The one-time sign-in link the script was given (used by now).
    pub link: String,
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
            out.status.success(),
            "mcpool ui failed: {link}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        ensure!(
            link.starts_with(&pool.url("/ui/login?code=")),
            "one line, the sign-in link: {link}"
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
            link,
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

    /// Reads the script's lines to its end within `limit`, replying to each
    /// (trimmed) what `answer` gives for it (`None`: nothing), and judges
    /// the run as [`finish`](Self::finish) does.
    pub async fn drive(
        mut self,
        pool: &Mcpool,
        limit: Duration,
        mut answer: impl AsyncFnMut(&str) -> anyhow::Result<Option<&'static str>>,
    ) -> anyhow::Result<Vec<String>> {
        let driven = tokio::time::timeout(limit, async {
            while let Some(line) = self.next_line().await? {
                if let Some(reply) = answer(line.trim()).await? {
                    self.reply(reply).await?;
                }
            }
            Ok(())
        })
        .await;
        self.finish(driven, &pool.logs()).await
    }

    /// Runs a script that needs no replies to its end, within `limit`:
    /// every line it said (judged as [`finish`](Self::finish) does).
    pub async fn run(
        pool: &Mcpool,
        script: &str,
        env: &[(&str, OsString)],
        limit: Duration,
    ) -> anyhow::Result<Vec<String>> {
        let mut browser = Self::open(pool, script, env).await?;
        drop(browser.input.take());
        let driven = tokio::time::timeout(limit, async {
            while browser.next_line().await?.is_some() {}
            Ok(())
        })
        .await;
        browser.end(driven, &pool.logs()).await
    }

    /// Waits for the script's exit and judges the run: `driven` is the
    /// test's own loop, bounded by a timeout; `logs` go into the failure.
    /// Answers the `STEP` lines and the final `OK`, in order.
    pub async fn finish(
        self,
        driven: Result<anyhow::Result<()>, tokio::time::error::Elapsed>,
        logs: &str,
    ) -> anyhow::Result<Vec<String>> {
        let said = self.end(driven, logs).await?;
        Ok(said
            .into_iter()
            .filter(|l| l.starts_with("STEP ") || l.trim() == "OK")
            .collect())
    }

    /// [`finish`](Self::finish), answering every line said.
    async fn end(
        mut self,
        driven: Result<anyhow::Result<()>, tokio::time::error::Elapsed>,
        logs: &str,
    ) -> anyhow::Result<Vec<String>> {
        drop(self.input.take());
        let status = tokio::time::timeout(Duration::from_secs(30), self.node.wait()).await??;
        let errors = self.errors.await.unwrap_or_default();
        let said = self.said;
        match driven {
            Ok(Ok(())) if status.success() => Ok(said),
            Ok(Ok(())) => bail!("the browser script failed ({status}) after {said:?}:\n{errors}\n{logs}"),
            Ok(Err(e)) => bail!("{e:#} after {said:?}:\n{errors}\n{logs}"),
            Err(_) => bail!("the browser script timed out after {said:?}:\n{errors}\n{logs}"),
        }
    }
}
