//! Live server logs (`/api/servers/NAME/logs`, its download and its stream)
//! against the real binary, the real keyring and our fault-injecting server
//! behind a wrapper that prints its key on stderr, as careless servers do:
//! stderr and mcpool's own lines are there, filtered and streamed, bounded
//! on disk, and neither the key nor a tool argument reaches any of them.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use mcpool_tests::secrets::*;
use mcpool_tests::*;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(20);
const MIB: u64 = 1024 * 1024;

/// A local server that writes about 3 MiB of numbered lines to stderr, then
/// serves.
fn noisy_server(dir: &Path) -> anyhow::Result<std::path::PathBuf> {
    let script = dir.join("noisy.sh");
    let body = format!(
        "#!/bin/sh\nawk 'BEGIN {{ for (i = 0; i < 30000; i++) printf \"noise %08d %s\\n\", i, \"{pad}\" }}' >&2\nexec '{}' stdio\n",
        bin("mcpool-faulty").display(),
        pad = "n".repeat(90),
    );
    write_script(&script, body)?;
    Ok(script)
}

async fn get(pool: &Mcpool, path: &str) -> anyhow::Result<reqwest::Response> {
    Ok(reqwest::Client::new()
        .get(pool.url(path))
        .bearer_auth(&pool.token)
        .send()
        .await?)
}

/// Polls the log of `server` until a line's text contains `needle`.
async fn wait_line(pool: &Mcpool, server: &str, needle: &str) -> anyhow::Result<Value> {
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        let body = pool.get_json(&format!("/api/servers/{server}/logs?limit=5000")).await?;
        let lines = body["lines"].as_array().cloned().unwrap_or_default();
        if let Some(line) = lines
            .iter()
            .find(|l| l["text"].as_str().is_some_and(|t| t.contains(needle)))
        {
            return Ok(line.clone());
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "no line with {needle:?} in the log of {server}: {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_servers_log_shows_stderr_and_mcpool_lines_live_bounded_and_redacted() -> anyhow::Result<()> {
    let Keyed { dir, scripts, key } = Keyed::new("logs", "svc-key").await?;
    let (svc, _) = key_checking_server(scripts.path(), "svc", &key, false)?;
    let noisy = noisy_server(scripts.path())?;
    let pool = Mcpool::start_in(
        dir,
        json!({"mcpServers": {
            "svc": {"command": svc, "env": {"API_KEY": "${keyring:svc-key}"}},
            "noisy": {"command": noisy},
        }}),
        &[],
    )
    .await?;
    pool.wait_status("svc", "connected", LIMIT).await?;
    let argument = new_secret("logs-argument");

    // The wrapper's stderr is there, its key redacted, and mcpool's lines.
    let started = wait_line(&pool, "svc", "starting with API_KEY=").await?;
    assert_eq!(started["source"], "stderr");
    assert_eq!(started["level"], Value::Null);
    assert_eq!(started["text"], "starting with API_KEY=[secret]");
    assert!(
        started["time"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z') && t.len() == 24),
        "{started}"
    );
    let connected = wait_line(&pool, "svc", "status connected").await?;
    assert_eq!(connected["source"], "mcpool");
    assert_eq!(connected["level"], "info");
    wait_line(&pool, "svc", "added from the config").await?;

    // The stream delivers lines as they are written: a call's argument
    // stays out, the crash's last words and mcpool's drop come in.
    let mut stream = get(&pool, "/api/servers/svc/logs/stream").await?;
    assert_eq!(stream.status(), 200);
    assert!(stream.headers()["content-type"]
        .to_str()?
        .starts_with("text/event-stream"));
    let agent = pool.agent("/mcp").await?;
    assert_eq!(
        text(&agent.call("svc__echo", json!({"text": argument})).await?),
        argument
    );
    let r = agent
        .call("svc__crash", json!({"message": "log-marker disk on fire"}))
        .await?;
    assert_eq!(r.is_error, Some(true));
    let mut streamed = String::new();
    let deadline = tokio::time::Instant::now() + LIMIT;
    while !(streamed.contains("log-marker disk on fire") && streamed.contains("connection dropped")) {
        let chunk = tokio::time::timeout_at(deadline, stream.chunk()).await??;
        let Some(chunk) = chunk else {
            anyhow::bail!("the stream ended: {streamed}")
        };
        streamed.push_str(&String::from_utf8_lossy(&chunk));
    }
    let events: Vec<Value> = streamed
        .split("\n\n")
        .filter(|b| b.lines().any(|l| l == "event: line"))
        .filter_map(|b| b.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let last_words = events
        .iter()
        .find(|e| e["text"] == "log-marker disk on fire")
        .ok_or_else(|| anyhow::anyhow!("{streamed}"))?;
    assert_eq!(last_words["source"], "stderr");
    let dropped = events
        .iter()
        .find(|e| e["text"].as_str().is_some_and(|t| t.starts_with("connection dropped")))
        .ok_or_else(|| anyhow::anyhow!("{streamed}"))?;
    assert_eq!(
        (&dropped["source"], &dropped["level"]),
        (&json!("mcpool"), &json!("warn"))
    );

    // The next call reconnects: the attempt and its outcome are logged.
    assert_eq!(text(&agent.call("svc__echo", json!({"text": "back"})).await?), "back");
    let before = pool.get_json("/api/servers/svc/logs?q=connecting").await?;
    assert!(before["lines"].as_array().is_some_and(|l| l.len() >= 2), "{before}");
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        let starts = pool.get_json("/api/servers/svc/logs?q=STARTING%20WITH").await?;
        if starts["lines"].as_array().map_or(0, Vec::len) >= 2 {
            break;
        }
        anyhow::ensure!(tokio::time::Instant::now() < deadline, "no second start: {starts}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // `q` matches text regardless of case; `limit` keeps the newest.
    let filtered = pool.get_json("/api/servers/svc/logs?q=STARTING%20WITH").await?;
    let lines = filtered["lines"].as_array().cloned().unwrap_or_default();
    assert!(
        lines.iter().all(|l| l["text"] == "starting with API_KEY=[secret]"),
        "{filtered}"
    );
    assert_eq!(filtered["server"], "svc");
    assert_eq!(filtered["truncated"], false);
    let all = pool.get_json("/api/servers/svc/logs").await?;
    let all_lines = all["lines"].as_array().cloned().unwrap_or_default();
    let two = pool.get_json("/api/servers/svc/logs?limit=2").await?;
    assert_eq!(two["truncated"], true);
    assert_eq!(two["lines"].as_array().map(Vec::len), Some(2));
    assert_eq!(two["lines"][1], all_lines[all_lines.len() - 1], "the newest last");
    let times: Vec<&str> = all_lines.iter().filter_map(|l| l["time"].as_str()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "oldest first: {times:?}");

    // The download is the whole log as a file.
    let download = get(&pool, "/api/servers/svc/logs?download=1").await?;
    assert_eq!(download.status(), 200);
    assert_eq!(download.headers()["content-type"], "text/plain; charset=utf-8");
    assert_eq!(
        download.headers()["content-disposition"],
        "attachment; filename=\"svc.log\""
    );
    let downloaded = download.text().await?;
    assert!(downloaded.contains(" stderr log-marker disk on fire\n"), "{downloaded}");
    assert!(downloaded.contains(" mcpool WARN connection dropped"), "{downloaded}");
    assert!(
        downloaded.contains(" stderr starting with API_KEY=[secret]\n"),
        "{downloaded}"
    );

    // An unknown server is a 404 on every path.
    for path in ["/api/servers/nobody/logs", "/api/servers/nobody/logs/stream"] {
        assert_eq!(get(&pool, path).await?.status(), 404, "{path}");
    }
    assert_eq!(
        reqwest::get(pool.url("/api/servers/svc/logs")).await?.status(),
        401,
        "the token is needed"
    );

    // The noisy server wrote about 4 MiB before serving (a burst faster
    // than the writer may lose lines, never the bound): at most 1 MiB per
    // file is kept.
    let logs_dir = pool.data_dir().join("logs");
    pool.wait_status("noisy", "connected", LIMIT).await?;
    let deadline = tokio::time::Instant::now() + LIMIT;
    let mut last = Value::Null;
    loop {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let now = pool.get_json("/api/servers/noisy/logs?limit=1&q=noise").await?;
        let rotated = files_under(&logs_dir).iter().any(|f| f.ends_with("noisy.log.1"));
        if rotated && now == last {
            break;
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the noise did not settle: {now}"
        );
        last = now;
    }
    let files = files_under(&logs_dir);
    let noisy_files: Vec<_> = files
        .iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("noisy.log"))
        })
        .collect();
    assert_eq!(noisy_files.len(), 2, "{files:?}");
    let mut total = 0;
    for f in &noisy_files {
        let meta = std::fs::metadata(f)?;
        assert!(meta.len() <= MIB, "{f:?}: {}", meta.len());
        assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{f:?}");
        total += meta.len();
    }
    assert!(total > MIB && total <= 2 * MIB, "{total}");
    let noisy_download = get(&pool, "/api/servers/noisy/logs?download=1").await?.text().await?;
    assert!(noisy_download.len() as u64 <= 2 * MIB);
    assert!(!noisy_download.contains("noise 00000000 "), "the oldest lines went");

    // Neither the key nor the argument anywhere: API, stream, download, files.
    let secrets = [key.as_str(), argument.as_str()];
    assert_clean("the log API", all.to_string().as_bytes(), &secrets);
    assert_clean("the log stream", streamed.as_bytes(), &secrets);
    assert_clean("the download", downloaded.as_bytes(), &secrets);
    for f in files_under(&logs_dir) {
        assert_clean(&format!("{f:?}"), &std::fs::read(&f)?, &secrets);
    }
    assert!(files_under(&logs_dir).iter().any(|f| f.ends_with("svc.log")));
    Ok(())
}
