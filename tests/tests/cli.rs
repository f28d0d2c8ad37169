//! The `mcpool` command line (behaviour.md §2): the commands that talk to a running
//! instance, the token, the listen and auth rules, config problems, an absent
//! config, following config edits, and a clean stop.

use std::os::unix::fs::PermissionsExt;
use std::process::{Output, Stdio};
use std::time::Duration;

use mcpool_tests::*;
use serde_json::{json, Value};
use tokio::process::Command;

const LIMIT: Duration = Duration::from_secs(20);
/// The config is polled every 2 s; a change shows within two polls.
const RELOAD: Duration = Duration::from_secs(10);

/// `mcpool ARGS` with a private data dir and the environment in `env`.
async fn mcpool(args: &[&str], env: &[(&str, &str)], data: &std::path::Path) -> anyhow::Result<Output> {
    let mut cmd = Command::new(bin("mcpool"));
    cmd.args(args)
        .env_remove("MCPOOL_TOKEN")
        .env_remove("MCPOOL_LISTEN")
        .env_remove("MCPOOL_CONFIG")
        .env("XDG_DATA_HOME", data)
        .env("XDG_CONFIG_HOME", data.join("config"))
        .env("XDG_CACHE_HOME", data.join("cache"))
        .env("MCPOOL_PROFILE", profile_for(data))
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    Ok(tokio::time::timeout(Duration::from_secs(60), cmd.output()).await??)
}

/// The columns of the table row for `server`.
fn row(table: &str, server: &str) -> Vec<String> {
    table
        .lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .find(|cols| cols.first().map(String::as_str) == Some(server))
        .unwrap_or_default()
}

#[tokio::test]
async fn status_reconnect_and_disconnect_talk_to_the_running_instance() -> anyhow::Result<()> {
    let (dir, log) = TempDir::with_spawn_log("cli-status");
    let pool = Mcpool::start(json!({"mcpServers": {
        "files": faulty_stdio(&log, &[]),
        "broken": {"command": bin("mcpool-faulty"), "args": ["stdio", "--exit-at-start", "no API key"]},
        // As `npx` fails: the runtime's notices around the one line that says why.
        "noisy": {"command": "sh", "args": ["-c", "echo 'npm notice' >&2; echo 'npm notice New major version of npm available! 10.8.2 -> 11.6.2' >&2; echo 'None of the specified directories are accessible' >&2; echo 'npm notice' >&2; exit 1"]},
    }}))
    .await?;
    pool.wait_status("files", "connected", LIMIT).await?;
    pool.wait_status("broken", "failed", LIMIT).await?;
    pool.wait_status("noisy", "failed", LIMIT).await?;
    let listen = format!("127.0.0.1:{}", pool.port);
    let env = [
        ("MCPOOL_LISTEN", listen.as_str()),
        ("MCPOOL_TOKEN", pool.token.as_str()),
    ];
    let tools = pool.server("files").await?["tools"].as_array().map_or(0, Vec::len);
    assert!(tools > 0);

    // A table: a header, then one row per server.
    let o = mcpool(&["status"], &env, dir.path()).await?;
    assert!(o.status.success(), "{}", stderr(&o));
    let table = stdout(&o);
    let header: Vec<&str> = table.lines().next().unwrap_or_default().split_whitespace().collect();
    assert_eq!(header, ["SERVER", "STATUS", "TOOLS", "ERROR"], "{table}");
    assert_eq!(
        row(&table, "files")[..3],
        ["files", "connected", &tools.to_string()],
        "{table}"
    );
    let broken = table.lines().find(|l| l.starts_with("broken")).unwrap_or_default();
    assert!(broken.contains("failed"), "{table}");
    assert!(
        broken.contains("exited with status 1") && broken.contains("no API key"),
        "{table}"
    );
    // The cause, not the excerpt's heading nor npm's notices.
    let noisy = table.lines().find(|l| l.starts_with("noisy")).unwrap_or_default();
    assert!(
        noisy.contains("status 1: None of the specified directories are accessible"),
        "{table}"
    );
    assert!(!table.contains("lines):") && !table.contains("npm notice"), "{table}");
    assert_eq!(table.lines().count(), 4, "{table}");

    // --listen works as well as MCPOOL_LISTEN.
    let o = mcpool(
        &["status", "--listen", &listen],
        &[("MCPOOL_TOKEN", &pool.token)],
        dir.path(),
    )
    .await?;
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(row(&stdout(&o), "files")[1], "connected");

    // reconnect: a fresh process, the same tools.
    let o = mcpool(&["reconnect", "files"], &env, dir.path()).await?;
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), format!("files: connected ({tools} tools)"));
    assert_eq!(count_lines(&log, "start"), 2);

    // A reconnect that fails says why and exits non-zero.
    let o = mcpool(&["reconnect", "broken"], &env, dir.path()).await?;
    assert_failed_saying(&o, "no API key");

    // disconnect: the tools go.
    let o = mcpool(&["disconnect", "files"], &env, dir.path()).await?;
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "files: disabled (0 tools)");
    let o = mcpool(&["status"], &env, dir.path()).await?;
    assert_eq!(
        row(&stdout(&o), "files")[..3],
        ["files", "disabled", "0"],
        "{}",
        stdout(&o)
    );

    // An unknown name fails clearly, for both.
    for verb in ["reconnect", "disconnect"] {
        let o = mcpool(&[verb, "nope"], &env, dir.path()).await?;
        assert!(!o.status.success(), "{verb}");
        assert!(stderr(&o).contains("no server named 'nope'"), "{verb}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{verb}: {}", stdout(&o));
    }

    // The wrong token is refused, and said so.
    let o = mcpool(
        &["status"],
        &[("MCPOOL_LISTEN", &listen), ("MCPOOL_TOKEN", "wrong")],
        dir.path(),
    )
    .await?;
    assert_failed_saying(&o, "refused the token");
    Ok(())
}

#[tokio::test]
async fn status_without_a_running_instance_says_so() -> anyhow::Result<()> {
    let dir = TempDir::new("cli-none");
    let listen = free_listen()?;
    for command in [&["status"][..], &["reconnect", "x"][..], &["disconnect", "x"][..]] {
        let o = mcpool(
            command,
            &[("MCPOOL_LISTEN", &listen), ("MCPOOL_TOKEN", "t")],
            dir.path(),
        )
        .await?;
        assert!(!o.status.success(), "{command:?}");
        assert!(
            stderr(&o).contains(&format!("no mcpool instance is running at {listen}")),
            "{command:?}: {}",
            stderr(&o)
        );
    }
    Ok(())
}

#[tokio::test]
async fn token_prints_the_env_token_or_one_kept_in_the_keyring() -> anyhow::Result<()> {
    let dir = TempDir::new("cli-token");
    let o = mcpool(&["token"], &[("MCPOOL_TOKEN", "from-env")], dir.path()).await?;
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "from-env");
    let file = dir.path().join("mcpool/token");
    assert!(!file.exists(), "an env token must not be written down");

    // The test runs with a real Secret Service: the token lives there only.
    let o = mcpool(&["token"], &[], dir.path()).await?;
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
    let made = stdout(&o).trim().to_string();
    assert_eq!(made.len(), 64, "{made}");
    assert!(made.chars().all(|c| c.is_ascii_hexdigit()), "{made}");
    assert!(!file.exists(), "a keyring token must not be written to disk");
    let o = mcpool(&["token"], &[], dir.path()).await?;
    assert_eq!(stdout(&o).trim(), made, "the token changed between runs");

    // `--profile` is `MCPOOL_PROFILE`: another profile has a token of its own.
    let other = format!("{}-other", profile_for(dir.path()));
    let flag = mcpool(&["token", "--profile", &other], &[], dir.path()).await?;
    assert!(flag.status.success(), "{}", stderr(&flag));
    assert_ne!(
        stdout(&flag).trim(),
        made,
        "a second profile shares the first one's token"
    );
    let env = mcpool(&["token"], &[("MCPOOL_PROFILE", &other)], dir.path()).await?;
    assert_eq!(
        stdout(&env).trim(),
        stdout(&flag).trim(),
        "--profile and MCPOOL_PROFILE differ"
    );
    Ok(())
}

#[tokio::test]
async fn without_a_keyring_the_token_falls_back_to_a_0600_file_and_says_so() -> anyhow::Result<()> {
    let dir = TempDir::new("cli-token-file");
    let no_bus = [("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/mcpool-test-bus")];
    let o = mcpool(&["token"], &no_bus, dir.path()).await?;
    assert!(o.status.success(), "{}", stderr(&o));
    let made = stdout(&o).trim().to_string();
    assert_eq!(made.len(), 64, "{made}");
    let file = dir.path().join("mcpool/token");
    assert!(
        stderr(&o).contains("warning") && stderr(&o).contains(&file.display().to_string()),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_to_string(&file)?.trim(), made);
    assert_eq!(std::fs::metadata(&file)?.permissions().mode() & 0o777, 0o600);
    let o = mcpool(&["token"], &no_bus, dir.path()).await?;
    assert_eq!(stdout(&o).trim(), made, "the token changed between runs");
    assert!(
        !stderr(&o).contains("warning"),
        "said once, when the file was made: {}",
        stderr(&o)
    );
    Ok(())
}

#[tokio::test]
async fn a_taken_address_fails_before_any_server_starts_and_says_what_to_do() -> anyhow::Result<()> {
    let dir = TempDir::new("cli-taken");
    let log = dir.path().join("spawn.log");
    let config = write_config(dir.path(), &json!({"mcpServers": {"s": faulty_stdio(&log, &[])}}))?;
    // Another program (here the test) holds the port.
    let taken = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = taken.local_addr()?.to_string();
    let o = mcpool(
        &["serve", "--config", &config.display().to_string(), "--listen", &addr],
        &[("MCPOOL_TOKEN", "t")],
        dir.path(),
    )
    .await?;
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(err.contains(&format!("cannot listen on {addr}")), "{err}");
    assert!(err.contains("is mcpool already running?"), "says what to try: {err}");
    assert_eq!(
        err.matches("Address already in use").count(),
        1,
        "the cause once: {err}"
    );
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    assert_eq!(count_lines(&log, "start"), 0, "no server was started");
    Ok(())
}

#[tokio::test]
async fn a_non_loopback_listen_address_needs_the_flag() -> anyhow::Result<()> {
    let dir = TempDir::new("cli-listen");
    let config = write_config(dir.path(), &json!({"mcpServers": {}}))?;
    let config = config.display().to_string();
    let o = mcpool(
        &["serve", "--config", &config, "--listen", "0.0.0.0:0"],
        &[("MCPOOL_TOKEN", "t")],
        dir.path(),
    )
    .await?;
    assert_failed_saying(&o, "not a loopback address");
    assert_said(&o, "--allow-non-loopback");
    assert!(stdout(&o).is_empty(), "it listened: {}", stdout(&o));

    // MCPOOL_LISTEN is held to the same rule.
    let o = mcpool(
        &["serve", "--config", &config],
        &[("MCPOOL_TOKEN", "t"), ("MCPOOL_LISTEN", "0.0.0.0:0")],
        dir.path(),
    )
    .await?;
    assert_failed_saying(&o, "not a loopback address");

    // With the flag it serves (reached here over loopback only).
    let mut child = Command::new(bin("mcpool"))
        .args([
            "serve",
            "--config",
            &config,
            "--listen",
            "0.0.0.0:0",
            "--allow-non-loopback",
        ])
        .env("MCPOOL_TOKEN", "t")
        .env("XDG_DATA_HOME", dir.path())
        .env("XDG_CACHE_HOME", dir.path().join("cache"))
        .env_remove("MCPOOL_LISTEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let line = first_line(&mut child, LIMIT).await?;
    let port = listening_port(&line)?;
    let r = reqwest::Client::new()
        .get(format!("http://127.0.0.1:{port}/api/servers"))
        .bearer_auth("t")
        .send()
        .await?;
    assert_eq!(r.status(), 200);
    if let Some(pid) = child.id() {
        // SAFETY: signals the child we spawned.
        unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    }
    let status = tokio::time::timeout(LIMIT, child.wait()).await??;
    assert!(status.success(), "{status}");
    Ok(())
}

#[tokio::test]
async fn requests_need_the_token_and_a_loopback_origin() -> anyhow::Result<()> {
    let pool = Mcpool::start(json!({"mcpServers": {}})).await?;
    let http = reqwest::Client::new();
    let init = initialize_request();
    for path in ["/mcp", "/servers/x/mcp"] {
        let post = || {
            http.post(pool.url(path))
                .header("accept", "application/json, text/event-stream")
                .json(&init)
        };
        assert_eq!(post().send().await?.status(), 401, "{path} without a token");
        let r = post().bearer_auth("not-the-token").send().await?;
        assert_eq!(r.status(), 401, "{path} with a wrong token");
        assert!(r.headers().contains_key("www-authenticate"));
        let r = post()
            .bearer_auth(&pool.token)
            .header("origin", "https://evil.example")
            .send()
            .await?;
        assert_eq!(r.status(), 403, "{path} from a foreign origin");
    }
    for (method, path) in [
        ("GET", "/api/servers"),
        ("POST", "/api/servers/x/reconnect"),
        ("GET", "/api/events"),
    ] {
        let method: reqwest::Method = method.parse()?;
        let r = http.request(method.clone(), pool.url(path)).send().await?;
        assert_eq!(r.status(), 401, "{method} {path}");
        let r = http
            .request(method.clone(), pool.url(path))
            .bearer_auth(&pool.token)
            .header("origin", "http://attacker.example:7410")
            .send()
            .await?;
        assert_eq!(r.status(), 403, "{method} {path}");
    }
    // A loopback origin with the token is fine.
    let r = http
        .get(pool.url("/api/servers"))
        .bearer_auth(&pool.token)
        .header("origin", "http://localhost:3000")
        .send()
        .await?;
    assert_eq!(r.status(), 200);

    // The Python SDK agent sees the same.
    let url = pool.url("/mcp");
    let report = python_agent(&["--url", &url, "--scenario", "ping"]).await;
    let error = format!("{report:?}");
    assert!(
        error.contains("\"http_status\":401") || error.contains("401"),
        "{error}"
    );
    let report = python_agent(&[
        "--url",
        &url,
        "--token",
        &pool.token,
        "--header",
        "Origin: http://evil.example",
        "--scenario",
        "ping",
    ])
    .await;
    let error = format!("{report:?}");
    assert!(error.contains("403"), "{error}");
    let report = python_agent(&["--url", &url, "--token", &pool.token, "--scenario", "ping"]).await?;
    assert_eq!(report["ping"], true, "{report}");
    Ok(())
}

#[tokio::test]
async fn one_bad_entry_is_named_and_the_others_start() -> anyhow::Result<()> {
    let (_dir, log) = TempDir::with_spawn_log("cli-bad");
    let pool = Mcpool::start(json!({"mcpServers": {
        "good": faulty_stdio(&log, &[]),
        "bad": {"command": 42},
        "slow": {"command": "x", "timeout": "soon"},
    }}))
    .await?;
    pool.wait_status("good", "connected", LIMIT).await?;
    let names: Vec<Value> = pool.servers().await?.iter().map(|s| s["name"].clone()).collect();
    assert_eq!(names, [json!("good")]);
    let logs = pool.logs();
    let config = pool.config_path().display().to_string();
    let line = logs
        .lines()
        .find(|l| l.contains("server 'bad'"))
        .unwrap_or_else(|| panic!("no problem logged for 'bad':\n{logs}"));
    assert!(line.contains(&config), "{line}");
    assert!(line.contains("field 'command'"), "{line}");
    let line = logs
        .lines()
        .find(|l| l.contains("server 'slow'"))
        .unwrap_or_else(|| panic!("no problem logged for 'slow':\n{logs}"));
    assert!(line.contains(&config) && line.contains("field 'timeout'"), "{line}");
    Ok(())
}

#[tokio::test]
async fn an_absent_config_starts_an_empty_pool_that_an_agent_can_use() -> anyhow::Result<()> {
    let pool = Mcpool::start_without_config().await?;
    assert!(!pool.config_path().exists());
    assert!(pool.servers().await?.is_empty());
    let agent = pool.agent("/mcp").await?;
    assert_eq!(
        agent.tool_names().await?,
        [
            "mcpool__search_tools",
            "mcpool__call_tool",
            "mcpool__run_script",
            "mcpool__status",
            "mcpool__reconnect"
        ]
    );

    let r = agent.call("mcpool__status", json!({})).await?;
    assert_ne!(r.is_error, Some(true));
    assert!(
        text(&r).starts_with("mcpool has no servers configured."),
        "{}",
        text(&r)
    );
    let r = agent.call("mcpool__reconnect", json!({"server": "github"})).await?;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(
        text(&r),
        "There is no server 'github' in mcpool; the servers are: none."
    );
    let r = agent.call("mcpool__reconnect", json!({})).await?;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("needs the argument 'server'"), "{}", text(&r));

    // The file appears: its server starts, and the built-ins see it.
    let (_dir, log) = TempDir::with_spawn_log("cli-absent");
    std::fs::write(
        pool.config_path(),
        serde_json::to_vec(&json!({"mcpServers": {"f": faulty_stdio(&log, &[])}}))?,
    )?;
    pool.wait_status("f", "connected", RELOAD).await?;
    let r = agent.call("mcpool__status", json!({})).await?;
    let servers = &r.structured_content.clone().unwrap_or_default()["servers"];
    assert_eq!(servers[0]["name"], "f", "{servers}");
    assert_eq!(servers[0]["status"], "connected", "{servers}");
    let tools = servers[0]["tools"].as_u64().unwrap_or(0);
    assert!(tools > 0, "{servers}");
    let r = agent.call("mcpool__reconnect", json!({"server": "f"})).await?;
    assert_eq!(text(&r), format!("Server 'f' is connected with {tools} tools."));
    assert_eq!(count_lines(&log, "start"), 2);
    assert!(agent.tool_names().await?.contains(&"f__echo".to_string()));
    Ok(())
}

#[tokio::test]
async fn config_edits_restart_only_the_changed_server() -> anyhow::Result<()> {
    let dir = TempDir::new("cli-reload");
    let log = |n: &str| dir.path().join(format!("{n}.log"));
    let config = |servers: Value| serde_json::to_vec_pretty(&json!({"mcpServers": servers}));
    let pool = Mcpool::start_connected(json!({"mcpServers": {
        "a": faulty_stdio(&log("a"), &[]),
        "b": faulty_stdio(&log("b"), &[]),
    }}))
    .await?;
    let agent = pool.agent("/mcp").await?;
    let a_pid = spawned_pids(&log("a"))[0];

    // b's entry changes and c is added; a is untouched.
    std::fs::write(
        pool.config_path(),
        config(json!({
            "a": faulty_stdio(&log("a"), &[]),
            "b": faulty_stdio(&log("b"), &["--stderr-at-start", "second life"]),
            "c": faulty_stdio(&log("c"), &[]),
        }))?,
    )?;
    pool.wait_status("c", "connected", RELOAD).await?;
    wait_for("b's restart", RELOAD, || count_lines(&log("b"), "start") == 2).await?;
    pool.wait_status("b", "connected", LIMIT).await?;
    assert_eq!(count_lines(&log("a"), "start"), 1, "a was restarted");
    assert_eq!(count_lines(&log("c"), "start"), 1);
    assert!(alive(a_pid));
    let tools = agent.tool_names().await?;
    for t in ["a__echo", "b__echo", "c__echo"] {
        assert!(tools.contains(&t.to_string()), "{t} missing: {tools:?}");
    }
    assert_eq!(text(&agent.call("c__echo", json!({"text": "new"})).await?), "new");

    // a is removed: its tools go, its process stops, the agent hears of it.
    let changes_before = agent.handler.tool_list_changes();
    std::fs::write(
        pool.config_path(),
        config(json!({
            "b": faulty_stdio(&log("b"), &["--stderr-at-start", "second life"]),
            "c": faulty_stdio(&log("c"), &[]),
        }))?,
    )?;
    let deadline = tokio::time::Instant::now() + RELOAD;
    while pool.servers().await?.iter().any(|s| s["name"] == "a") {
        assert!(tokio::time::Instant::now() < deadline, "a was not removed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let tools = agent.tool_names().await?;
    assert!(!tools.iter().any(|t| t.starts_with("a__")), "{tools:?}");
    assert!(tools.contains(&"b__echo".to_string()));
    let r = agent.call("a__echo", json!({"text": "x"})).await;
    let failed = match &r {
        Ok(r) => r.is_error == Some(true),
        Err(_) => true,
    };
    assert!(failed, "a removed server still answered: {r:?}");
    let h = agent.handler.clone();
    wait_for("list_changed for the removal", LIMIT, || {
        h.tool_list_changes() > changes_before
    })
    .await?;
    wait_for("a's process to stop", LIMIT, || !alive(a_pid)).await?;
    assert_eq!(count_lines(&log("b"), "start"), 2, "b restarted again");
    assert_eq!(count_lines(&log("c"), "start"), 1, "c restarted");

    // A broken edit keeps what runs.
    std::fs::write(pool.config_path(), "{\"mcpServers\": {")?;
    let deadline = tokio::time::Instant::now() + RELOAD;
    while !pool.logs().contains("keeping the servers that are running") {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no log of the broken file:\n{}",
            pool.logs()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(pool.server("b").await?["status"], "connected");
    assert_eq!(pool.server("c").await?["status"], "connected");
    Ok(())
}

#[tokio::test]
async fn sigterm_stops_the_instance_with_exit_zero() -> anyhow::Result<()> {
    let (mut pool, log) = Mcpool::start_with_faulty("cli-term", "f", &[]).await?;
    let agent = pool.agent("/mcp").await?;
    assert_eq!(text(&agent.call("f__echo", json!({"text": "x"})).await?), "x");
    let pid = spawned_pids(&log)[0];
    let status = pool.stop().await?;
    assert_eq!(status.code(), Some(0), "{status}");
    assert!(!alive(pid), "the server outlived mcpool");
    Ok(())
}
