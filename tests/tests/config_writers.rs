//! behaviour.md rule 20 and §2 "config writes": every program of mcpool's
//! that writes the config holds one lock across read, edit and replace, so
//! an edit answered with success is in the file afterwards, whoever wrote
//! at the same time; a writer killed mid-write leaves the old file or the
//! new one, never a torn one.
//!
//! Dozens of writers at once against one running instance: `mcpool add`,
//! `mcpool import` and `mcpool remove` processes beside `POST` and
//! `DELETE /api/servers` requests, while a reader parses the file over and
//! over. Then `mcpool add` processes SIGKILLed at every moment of their
//! life over a large config.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcpool_tests::*;
use serde_json::json;

/// Writers of each kind started at once.
const EACH: usize = 24;

const START: &str = r#"{
  // Kept through every write.
  "mcpServers": {
    "seed": { "command": "/bin/false", "disabled": true }, // seed
  },
}
"#;

/// Adds the disabled server `name` through `POST /api/servers`; its name,
/// once the instance answered success.
async fn api_add(m: &Mcpool, name: String) -> anyhow::Result<String> {
    let body = json!({"name": name, "entry": {"command": "/bin/false", "disabled": true}});
    let (status, answer) = m.api(reqwest::Method::POST, "/api/servers", Some(body)).await?;
    anyhow::ensure!(status == 200, "POST {name}: {status} {answer}");
    Ok(name)
}

/// The server names the config holds; an error if it does not parse.
fn names(path: &Path) -> anyhow::Result<BTreeSet<String>> {
    let text = std::fs::read_to_string(path)?;
    let config = mcpool_core::config::parse(path, &text).map_err(|p| anyhow::anyhow!("{p}:\n{text}"))?;
    anyhow::ensure!(config.problems.is_empty(), "{:?}:\n{text}", config.problems);
    Ok(config.servers.keys().cloned().collect())
}

/// Parses the file over and over until `stop`; counts the reads.
fn keep_parsing(
    path: PathBuf,
    stop: Arc<AtomicBool>,
    reads: Arc<AtomicUsize>,
) -> std::thread::JoinHandle<anyhow::Result<()>> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            names(&path)?;
            reads.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(())
    })
}

fn output(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[tokio::test]
async fn dozens_of_processes_and_api_writers_at_once_lose_no_accepted_edit() -> anyhow::Result<()> {
    let dir = TempDir::new("writers");
    std::fs::write(dir.path().join("config.json"), START)?;
    let m = Arc::new(Mcpool::start_in_dir(dir, &[]).await?);
    let config = m.config_path();
    let cfg = config.display().to_string();
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicUsize::new(0));
    let reader = keep_parsing(config.clone(), stop.clone(), reads.clone());

    // Round 1: adds. CLI adds, CLI imports (one server per file) and API adds.
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..EACH {
        let (m1, cfg1) = (m.clone(), cfg.clone());
        tasks.spawn(async move {
            let name = format!("cli{i}");
            let o = m1
                .cli(&["add", &name, "--config", &cfg1, "--", "/bin/false", "x"], None)
                .await?;
            anyhow::ensure!(o.status.success(), "add {name}: {}", output(&o));
            Ok::<_, anyhow::Error>(name)
        });
        let (m2, cfg2) = (m.clone(), cfg.clone());
        tasks.spawn(async move {
            let name = format!("imp{i}");
            let file = m2.dir.path().join(format!("import-{i}.json"));
            std::fs::write(
                &file,
                json!({"mcpServers": {&name: {"command": "/bin/false"}}}).to_string(),
            )?;
            let file = file.display().to_string();
            let o = m2.cli(&["import", &file, "--config", &cfg2, "--yes"], None).await?;
            anyhow::ensure!(o.status.success(), "import {name}: {}", output(&o));
            Ok(name)
        });
        let m3 = m.clone();
        tasks.spawn(async move {
            let name = api_add(&m3, format!("api{i}")).await?;
            Ok(name)
        });
    }
    let mut added = BTreeSet::new();
    while let Some(done) = tasks.join_next().await {
        added.insert(done??);
    }
    assert_eq!(added.len(), 3 * EACH);
    let now = names(&config)?;
    let missing: Vec<_> = added.difference(&now).collect();
    assert!(missing.is_empty(), "answered success but not in the file: {missing:?}");
    assert!(now.contains("seed"));

    // Round 2: removals of half of them, by CLI and API, beside more adds.
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..EACH {
        let (m1, cfg1) = (m.clone(), cfg.clone());
        tasks.spawn(async move {
            let name = format!("cli{i}");
            let o = m1.cli(&["remove", &name, "--config", &cfg1], None).await?;
            anyhow::ensure!(o.status.success(), "remove {name}: {}", output(&o));
            Ok::<_, anyhow::Error>((name, false))
        });
        let m2 = m.clone();
        tasks.spawn(async move {
            let name = format!("api{i}");
            let (status, answer) = m2
                .api(reqwest::Method::DELETE, &format!("/api/servers/{name}"), None)
                .await?;
            anyhow::ensure!(status == 200, "DELETE {name}: {status} {answer}");
            Ok((name, false))
        });
        let m3 = m.clone();
        tasks.spawn(async move {
            let name = api_add(&m3, format!("late{i}")).await?;
            Ok((name, true))
        });
    }
    let mut present = BTreeSet::new();
    let mut gone = BTreeSet::new();
    while let Some(done) = tasks.join_next().await {
        let (name, kept) = done??;
        if kept {
            present.insert(name);
        } else {
            gone.insert(name);
        }
    }
    stop.store(true, Ordering::Relaxed);
    reader.join().map_err(|_| anyhow::anyhow!("the reader panicked"))??;
    let now = names(&config)?;
    let back: Vec<_> = gone.intersection(&now).collect();
    assert!(back.is_empty(), "removed with success but still in the file: {back:?}");
    let lost: Vec<_> = present.difference(&now).collect();
    assert!(lost.is_empty(), "added with success but not in the file: {lost:?}");
    for i in 0..EACH {
        assert!(now.contains(&format!("imp{i}")), "imp{i} was lost by a later write");
    }
    let text = std::fs::read_to_string(&config)?;
    assert!(text.contains("// Kept through every write."), "{text}");
    assert!(reads.load(Ordering::Relaxed) > 10, "the reader hardly read");
    // The instance saw the file as it is: every server of the file listed.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let listed: BTreeSet<String> = m
            .servers()
            .await?
            .iter()
            .filter_map(|s| s["name"].as_str().map(str::to_string))
            .collect();
        if listed == now {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "instance lists {listed:?}, file has {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// A large config, so that each write takes long enough to be caught.
fn large_config(entries: usize) -> String {
    let mut servers = serde_json::Map::new();
    for i in 0..entries {
        servers.insert(
            format!("bulk{i:05}"),
            json!({"command": "/bin/false", "args": ["--a-long-argument-to-make-the-file-larger", i.to_string()], "disabled": true}),
        );
    }
    format!(
        "// a large config\n{}\n",
        serde_json::to_string_pretty(&json!({"mcpServers": servers})).unwrap_or_default()
    )
}

#[tokio::test]
async fn a_writer_killed_at_any_moment_leaves_the_old_or_the_new_file() -> anyhow::Result<()> {
    let dir = TempDir::new("writers-kill");
    let config = dir.path().join("config.json");
    std::fs::write(&config, large_config(3000))?;
    let add = |name: &str| {
        let mut cmd = tokio::process::Command::new(bin("mcpool"));
        cmd.args(["add", name, "--config"])
            .arg(&config)
            .args(["--", "/bin/false"])
            .env_remove("MCPOOL_CONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for (k, v) in instance_env(dir.path()) {
            cmd.env(k, v);
        }
        cmd.spawn()
    };
    // How long one add takes here, start to end, uninterrupted.
    let started = std::time::Instant::now();
    assert!(add("warm")?.wait().await?.success());
    let whole = started.elapsed();
    let mut expected = names(&config)?;
    assert!(expected.contains("warm"));
    const ROUNDS: u32 = 40;
    let mut killed_mid_way = 0;
    let mut finished = 0;
    for round in 0..ROUNDS {
        let name = format!("k{round}");
        let mut child = add(&name)?;
        // Spread the kills over the whole life of the process: start-up,
        // reading, editing, writing the backup and the new file, renaming.
        tokio::time::sleep(whole * round / ROUNDS).await;
        let pid = child.id().unwrap_or(0) as i32;
        let exited = child.try_wait()?.is_some();
        if !exited {
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let status = child.wait().await?;
        let now = names(&config).map_err(|e| anyhow::anyhow!("round {round}: torn file: {e}"))?;
        let with_new: BTreeSet<String> = expected.iter().cloned().chain([name.clone()]).collect();
        if now == with_new {
            expected = with_new;
            finished += usize::from(status.success());
        } else {
            assert_eq!(now, expected, "round {round}: neither the old file nor the new one");
            killed_mid_way += 1;
        }
    }
    // The lock went with the killed writers: the next write goes through.
    let o = mcpool_cli(
        dir.path(),
        &[
            "add",
            "after",
            "--config",
            &config.display().to_string(),
            "--",
            "/bin/false",
        ],
        None,
        &[],
    )
    .await?;
    assert!(o.status.success(), "{}", output(&o));
    assert!(names(&config)?.contains("after"));
    assert!(
        killed_mid_way > 0,
        "no writer was killed before it wrote (finished {finished}, one add takes {whole:?})"
    );
    assert!(
        finished > 0,
        "every writer was killed before it wrote (one add takes {whole:?})"
    );
    Ok(())
}
