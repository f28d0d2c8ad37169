//! `GET /metrics` against the real binary and the fault server, parsed by
//! the official Prometheus Python client (`prometheus_client`'s OpenMetrics
//! parser): tool calls by outcome, errors, the duration histogram,
//! reconnects by cause, status per server, sessions and tool cache hits;
//! 401 without the token; the token-less `--metrics-listen` listener; a
//! keyring secret and a tool argument never in a scrape.

use std::path::Path;
use std::time::Duration;

use mcpool_tests::secrets::*;
use mcpool_tests::*;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(20);

/// The fault server behind a wrapper that sleeps first while `<dir>/slow`
/// exists (its identity, and so its tool cache key, stays the same).
fn wrapped_faulty(dir: &Path) -> anyhow::Result<std::path::PathBuf> {
    let script = dir.join("faulty.sh");
    let body = format!(
        "#!/bin/sh\nif [ -f '{slow}' ]; then sleep 4; fi\nexec '{bin}' stdio --spawn-log '{log}'\n",
        slow = dir.join("slow").display(),
        bin = bin("mcpool-faulty").display(),
        log = dir.join("faulty.log").display(),
    );
    write_script(&script, body)?;
    Ok(script)
}

/// The samples of a scrape as the Prometheus client's text parser reads them.
fn parse(text: &str) -> anyhow::Result<Vec<Value>> {
    parse_with(text, &[])
}

/// The same with its OpenMetrics parser.
fn parse_openmetrics(text: &str) -> anyhow::Result<Vec<Value>> {
    parse_with(text, &["openmetrics"])
}

fn parse_with(text: &str, args: &[&str]) -> anyhow::Result<Vec<Value>> {
    use std::io::Write;
    let mut child = std::process::Command::new(python())
        .arg(repo_root().join("tests/py/metrics_check.py"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    child
        .stdin
        .take()
        .map(|mut s| s.write_all(text.as_bytes()))
        .transpose()?;
    let out = child.wait_with_output()?;
    anyhow::ensure!(
        out.status.success(),
        "the Prometheus parser refused the scrape: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8(out.stdout)?
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?)
}

/// The value of the sample `name` whose labels include `labels`.
fn value(samples: &[Value], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|s| s["name"] == name && labels.iter().all(|(k, v)| s["labels"][*k] == *v))
        .and_then(|s| s["value"].as_f64())
}

async fn scrape(url: &str, token: Option<&str>) -> anyhow::Result<(u16, String, String)> {
    scrape_accepting(url, token, None).await
}

async fn scrape_accepting(
    url: &str,
    token: Option<&str>,
    accept: Option<&str>,
) -> anyhow::Result<(u16, String, String)> {
    let mut request = reqwest::Client::new().get(url);
    if let Some(accept) = accept {
        request = request.header("accept", accept);
    }
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await?;
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    Ok((status, kind, response.text().await?))
}

/// The address of mcpool's `metrics at http://ADDR/metrics` log line.
async fn metrics_url(pool: &Mcpool) -> anyhow::Result<String> {
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        let logs = pool.logs();
        if let Some(at) = logs.find("metrics at http://") {
            let rest = &logs[at + "metrics at ".len()..];
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            return Ok(rest[..end].to_string());
        }
        anyhow::ensure!(tokio::time::Instant::now() < deadline, "no metrics listener in\n{logs}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn metrics_count_calls_errors_reconnects_and_cache_hits_and_hold_no_secret() -> anyhow::Result<()> {
    let Keyed { dir, scripts, key } = Keyed::new("metrics", "metrics-key").await?;
    let argument = format!("argument-{}", new_secret("metrics-argument"));
    let mut pool = Mcpool::start_in(
        dir,
        json!({"mcpServers": {
            "faulty": {"command": wrapped_faulty(scripts.path())?, "env": {"API_KEY": "${keyring:metrics-key}"}},
            "off": {"command": bin("mcpool-faulty"), "args": ["stdio"], "disabled": true},
        }}),
        &[("MCPOOL_METRICS_LISTEN", "127.0.0.1:0")],
    )
    .await?;
    pool.wait_status("faulty", "connected", LIMIT).await?;
    let agent = pool.agent("/servers/faulty/mcp").await?;
    for _ in 0..2 {
        agent.call("echo", json!({"text": argument})).await?;
    }
    let failed = agent.call("fail", json!({"text": argument})).await?;
    assert_eq!(failed.is_error, Some(true));
    // A crash: the call is unavailable, the next one reconnects on demand.
    let crashed = agent.call("crash", json!({"message": argument})).await?;
    assert_eq!(crashed.is_error, Some(true));
    pool.wait_status("faulty", "failed", LIMIT).await?;
    agent.call("echo", json!({"text": "again"})).await?;
    pool.wait_status("faulty", "connected", LIMIT).await?;
    let (status, _) = pool.post("/api/servers/faulty/reconnect").await?;
    assert!(status < 300, "reconnect answered {status}");
    pool.wait_status("faulty", "connected", LIMIT).await?;
    let calls_before_reconnects = 5.0;

    let (status, _, _) = scrape(&pool.url("/metrics"), None).await?;
    assert_eq!(status, 401, "/metrics without the token");
    let (status, kind, text) = scrape(&pool.url("/metrics"), Some(&pool.token)).await?;
    assert_eq!(status, 200, "{text}");
    assert!(kind.starts_with("text/plain; version=0.0.4"), "{kind}");
    let samples = parse(&text)?;
    let counter = samples.iter().find(|s| s["name"] == "mcpool_tool_calls_total").cloned();
    assert_eq!(counter.map(|s| s["type"].clone()), Some(json!("counter")), "{text}");
    // OpenMetrics to a scraper that asks for it, as Prometheus does.
    let (_, om_kind, om) = scrape_accepting(
        &pool.url("/metrics"),
        Some(&pool.token),
        Some("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"),
    )
    .await?;
    assert!(om_kind.starts_with("application/openmetrics-text"), "{om_kind}");
    let om_samples = parse_openmetrics(&om)?;
    assert_eq!(
        value(
            &om_samples,
            "mcpool_tool_calls_total",
            &[("tool", "echo"), ("outcome", "ok")]
        ),
        value(
            &samples,
            "mcpool_tool_calls_total",
            &[("tool", "echo"), ("outcome", "ok")]
        ),
    );
    let echo = [("server", "faulty"), ("tool", "echo")];
    let calls = |tool: &str, outcome: &str| {
        value(
            &samples,
            "mcpool_tool_calls_total",
            &[("server", "faulty"), ("tool", tool), ("outcome", outcome)],
        )
    };
    assert_eq!(calls("echo", "ok"), Some(3.0), "{text}");
    assert_eq!(calls("fail", "tool_error"), Some(1.0), "{text}");
    let crash = samples
        .iter()
        .filter(|s| s["name"] == "mcpool_tool_calls_total" && s["labels"]["tool"] == "crash")
        .map(|s| s["labels"]["outcome"].as_str().unwrap_or_default().to_string())
        .collect::<Vec<_>>();
    assert_eq!(crash.len(), 1, "{text}");
    assert_ne!(crash[0], "ok", "{text}");
    assert_eq!(
        value(&samples, "mcpool_tool_call_errors_total", &[("tool", "fail")]),
        Some(1.0)
    );
    assert_eq!(
        value(&samples, "mcpool_tool_call_errors_total", &[("tool", "crash")]),
        Some(1.0)
    );
    assert_eq!(
        value(&samples, "mcpool_tool_call_errors_total", &echo),
        None,
        "echo never failed"
    );
    // The histogram: every call in its count and in the +Inf bucket, the
    // buckets never decreasing.
    assert_eq!(
        value(&samples, "mcpool_tool_call_duration_seconds_count", &echo),
        Some(3.0)
    );
    let inf = [("server", "faulty"), ("tool", "echo"), ("le", "+Inf")];
    assert_eq!(
        value(&samples, "mcpool_tool_call_duration_seconds_bucket", &inf),
        Some(3.0)
    );
    let buckets: Vec<f64> = samples
        .iter()
        .filter(|s| s["name"] == "mcpool_tool_call_duration_seconds_bucket" && s["labels"]["tool"] == "echo")
        .filter_map(|s| s["value"].as_f64())
        .collect();
    assert_eq!(buckets.len(), 15, "{text}");
    assert!(buckets.windows(2).all(|w| w[0] <= w[1]), "{buckets:?}");
    let all_calls: f64 = samples
        .iter()
        .filter(|s| s["name"] == "mcpool_tool_calls_total" && s["labels"]["server"] == "faulty")
        .filter_map(|s| s["value"].as_f64())
        .sum();
    assert_eq!(all_calls, calls_before_reconnects, "{text}");
    // Reconnects by cause: the one after the crash, the user's; never the start.
    let reconnect = |cause| {
        value(
            &samples,
            "mcpool_reconnects_total",
            &[("server", "faulty"), ("cause", cause)],
        )
    };
    assert_eq!(reconnect("user"), Some(1.0), "{text}");
    assert!(reconnect("demand").is_some_and(|n| n >= 1.0), "{text}");
    assert_eq!(reconnect("start"), None, "{text}");
    // Status: 1 for the current one, 0 for the others.
    let status_of = |server, status| {
        value(
            &samples,
            "mcpool_server_status",
            &[("server", server), ("status", status)],
        )
    };
    assert_eq!(status_of("faulty", "connected"), Some(1.0), "{text}");
    assert_eq!(status_of("faulty", "failed"), Some(0.0), "{text}");
    assert_eq!(status_of("off", "disabled"), Some(1.0), "{text}");
    assert_eq!(status_of("off", "connected"), Some(0.0), "{text}");
    assert!(
        value(&samples, "mcpool_agent_sessions", &[]).is_some_and(|n| n >= 1.0),
        "{text}"
    );

    // The token-less listener serves the same metrics and nothing else.
    let open = metrics_url(&pool).await?;
    let (status, _, plain) = scrape(&open, None).await?;
    assert_eq!(status, 200, "{plain}");
    assert_eq!(
        value(
            &parse(&plain)?,
            "mcpool_tool_calls_total",
            &[("tool", "echo"), ("outcome", "ok")]
        ),
        Some(3.0)
    );
    let (status, _, _) = scrape(&open.replace("/metrics", "/api/servers"), None).await?;
    assert_eq!(status, 404, "the metrics listener serves only /metrics");

    // After a restart the cached tool list is offered while the server is slow.
    drop(agent);
    std::fs::write(scripts.path().join("slow"), "")?;
    pool.restart().await?;
    let (_, _, restarted) = scrape(&pool.url("/metrics"), Some(&pool.token)).await?;
    let hits = value(&parse(&restarted)?, "mcpool_tool_cache_hits_total", &[]);
    assert!(hits.is_some_and(|n| n >= 1.0), "{restarted}\n{}", pool.logs());

    for (what, text) in [
        ("/metrics", &text),
        ("the metrics listener", &plain),
        ("/metrics after restart", &restarted),
    ] {
        assert_clean(what, text.as_bytes(), &[&key, &argument]);
        assert!(!text.contains("metrics-argument"), "{what} holds the argument");
    }
    Ok(())
}
