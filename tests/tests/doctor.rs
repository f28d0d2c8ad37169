//! `mcpool doctor` on real machines in miniature: a runtime missing from
//! PATH, a broken config, a server down beside one up (through a running
//! instance and without one), a healthy setup, and the support bundle,
//! which holds no secret and no tool argument.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use mcpool_tests::secrets::{assert_clean, key_checking_server, new_secret, Keyed};
use mcpool_tests::*;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(20);

/// The environment that keeps the agents' config files inside `dir`.
fn agent_dirs(dir: &Path) -> Vec<(String, String)> {
    let at = |p: &str| dir.join(p).display().to_string();
    vec![
        ("HOME".into(), at("home")),
        ("CLAUDE_CONFIG_DIR".into(), at("home/claude")),
        ("CODEX_HOME".into(), at("home/codex")),
    ]
}

/// `mcpool doctor ARGS` in `dir` (its keyring profile and folders), with
/// `env` added.
async fn doctor(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> anyhow::Result<Output> {
    let agents = agent_dirs(dir);
    let mut all: Vec<(&str, &str)> = agents.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    all.extend_from_slice(env);
    let mut argv = vec!["doctor"];
    argv.extend_from_slice(args);
    mcpool_cli(dir, &argv, None, &all).await
}

/// The output line of `check`, e.g. `server files`.
fn line<'a>(out: &'a str, check: &str) -> &'a str {
    out.lines()
        .find(|l| l.get(5..).is_some_and(|rest| rest.starts_with(&format!("{check}: "))))
        .unwrap_or("")
}

/// A config in `dir` with the server `name` as `entry` beside `files`, a
/// fault server that connects; its path.
fn config_beside_files(dir: &Path, name: &str, entry: Value) -> anyhow::Result<PathBuf> {
    let files = faulty_stdio(&dir.join("spawns.log"), &[]);
    write_config(dir, &json!({"mcpServers": {name: entry, "files": files}}))
}

#[tokio::test]
async fn a_runtime_missing_from_path_fails_naming_the_server_and_what_to_install() -> anyhow::Result<()> {
    let dir = TempDir::new("doctor-runtime");
    let config = config_beside_files(
        dir.path(),
        "fetch",
        json!({"command": "uvx", "args": ["mcp-server-fetch"]}),
    )?;
    let empty = dir.path().join("empty-bin");
    std::fs::create_dir_all(&empty)?;
    let (listen, path, config) = (
        free_listen()?,
        empty.display().to_string(),
        config.display().to_string(),
    );
    let o = doctor(
        dir.path(),
        &["--config", &config],
        &[("PATH", &path), ("MCPOOL_LISTEN", &listen)],
    )
    .await?;
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    let uvx = line(&out, "runtime uvx");
    assert!(
        uvx.starts_with("FAIL runtime uvx: uvx (uv) is not on PATH; needed by fetch — install uv"),
        "{out}"
    );
    // The server that needs it cannot connect either; the other one can.
    assert!(line(&out, "server fetch").starts_with("FAIL server fetch: "), "{out}");
    assert!(
        line(&out, "server files").starts_with("ok   server files: connects ("),
        "{out}"
    );
    assert!(line(&out, "runtime mcpool-faulty").starts_with("ok   "), "{out}");
    Ok(())
}

/// Whether process `pid` still runs (a zombie no one reaped counts as gone).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| stat.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
        .unwrap_or(false)
}

#[tokio::test]
async fn a_version_that_hangs_is_stopped_with_the_children_it_started() -> anyhow::Result<()> {
    let dir = TempDir::new("doctor-hang");
    let pid_file = dir.path().join("child.pid");
    // As a launcher that hangs does: `--version` starts a child that holds
    // the output open, and waits for it.
    let script = dir.path().join("hangs.sh");
    write_script(
        &script,
        format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then sleep 300 & echo $! > '{}'; wait; fi\nexec '{}' stdio\n",
            pid_file.display(),
            bin("mcpool-faulty").display()
        ),
    )?;
    let config = write_config(dir.path(), &json!({"mcpServers": {"slow": {"command": script}}}))?;
    let (listen, config) = (free_listen()?, config.display().to_string());
    let o = doctor(dir.path(), &["--config", &config], &[("MCPOOL_LISTEN", &listen)]).await?;
    let out = stdout(&o);
    let check = line(&out, "runtime hangs.sh");
    assert!(
        check.starts_with("ok   runtime hangs.sh: no version from `--version` within 5 s"),
        "{out}{}",
        stderr(&o)
    );
    assert!(
        line(&out, "server slow").starts_with("ok   server slow: connects ("),
        "{out}"
    );
    let pid: i32 = std::fs::read_to_string(&pid_file)?.trim().parse()?;
    let deadline = std::time::Instant::now() + LIMIT;
    while running(pid) {
        if std::time::Instant::now() > deadline {
            // Not left behind by this test either.
            // SAFETY: the `sleep` this test's script started, by its pid.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            anyhow::bail!("the child `--version` started (pid {pid}) still runs after doctor ended");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

#[tokio::test]
async fn a_broken_config_names_file_server_and_field() -> anyhow::Result<()> {
    let dir = TempDir::new("doctor-config");
    let config = config_beside_files(dir.path(), "bad", json!({"command": "x", "timeout": "soon"}))?;
    let (listen, path) = (free_listen()?, config.display().to_string());
    let o = doctor(dir.path(), &["--config", &path], &[("MCPOOL_LISTEN", &listen)]).await?;
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    let wanted = format!("FAIL config: {path}: server 'bad': field 'timeout': ");
    assert!(out.lines().any(|l| l.starts_with(&wanted)), "{wanted}\n{out}");
    assert!(line(&out, "server files").starts_with("ok   "), "{out}");

    // A file that is not JSON at all: one line for the whole file.
    std::fs::write(&config, "{\"mcpServers\": {")?;
    let o = doctor(dir.path(), &["--config", &path], &[("MCPOOL_LISTEN", &listen)]).await?;
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with(&format!("FAIL config: {path}: invalid JSON at line 1"))),
        "{out}"
    );
    Ok(())
}

#[tokio::test]
async fn a_server_down_beside_one_up_and_a_bundle_without_secrets() -> anyhow::Result<()> {
    let Keyed { dir, scripts, key } = Keyed::new("doctor-down", "doctor-key").await?;
    let literal = new_secret("doctor-header");
    let argument = format!("argument-{}", new_secret("doctor-argument"));
    // It prints the key it got to stderr, as careless servers do.
    let (keyed, _log) = key_checking_server(scripts.path(), "keyed", &key, false)?;
    let (_remote, remote_url) = faulty_http(&scripts.path().join("remote.log"), &[]).await?;
    let pool = Mcpool::start_in(
        dir,
        json!({"mcpServers": {
            "keyed": {"command": keyed, "env": {"API_KEY": "${keyring:doctor-key}"}},
            "broken": {"command": bin("mcpool-faulty"), "args": ["stdio", "--exit-at-start", "no API key"]},
            "remote": {"url": remote_url, "headers": {"X-Api-Key": literal}},
        }}),
        &[],
    )
    .await?;
    pool.wait_status("keyed", "connected", LIMIT).await?;
    pool.wait_status("remote", "connected", LIMIT).await?;
    let broken = pool.wait_status("broken", "failed", LIMIT).await?;
    let agent = pool.agent("/mcp").await?;
    agent.call("keyed__echo", json!({"text": argument})).await?;
    let config = pool.config_path().display().to_string();
    let agents = agent_dirs(pool.dir.path());
    let listen = format!("127.0.0.1:{}", pool.port);
    let mut env: Vec<(&str, &str)> = agents.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    env.extend([
        ("MCPOOL_LISTEN", listen.as_str()),
        ("MCPOOL_TOKEN", pool.token.as_str()),
    ]);

    let mut args = vec!["doctor", "--config", &config];
    let o = mcpool_cli(pool.dir.path(), &args, None, &env).await?;
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    // The error's sentence, and the last words of the process it quotes.
    let error: Vec<&str> = broken["error"].as_str().unwrap_or_default().lines().collect();
    assert_eq!(error.last(), Some(&"no API key"), "{broken}");
    let sentence = format!("{} … no API key", error[0]);
    assert_eq!(
        line(&out, "server broken"),
        format!(
            "FAIL server broken: failed: {sentence} — fix its entry or what it needs, then `mcpool reconnect broken`"
        ),
        "{out}"
    );
    assert!(
        line(&out, "server keyed").starts_with("ok   server keyed: connected ("),
        "{out}"
    );
    assert!(
        line(&out, "server remote").starts_with("ok   server remote: connected ("),
        "{out}"
    );
    assert_eq!(
        line(&out, "port"),
        format!("ok   port: 127.0.0.1:{} is held by mcpool (3 servers)", pool.port),
        "{out}"
    );
    let secrets = [key.as_str(), literal.as_str(), argument.as_str()];
    assert_clean(
        "doctor's lines",
        &[o.stdout.clone(), o.stderr.clone()].concat(),
        &secrets,
    );

    // --json and --bundle.
    let bundle_path = pool.dir.path().join("bundle.json");
    let bundle_arg = bundle_path.display().to_string();
    args.extend(["--json", "--bundle", &bundle_arg]);
    let o = mcpool_cli(pool.dir.path(), &args, None, &env).await?;
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_clean(
        "doctor --json --bundle output",
        &[o.stdout.clone(), o.stderr.clone()].concat(),
        &secrets,
    );
    let checks: Vec<Value> = serde_json::from_slice(&o.stdout)?;
    let broken_check = checks
        .iter()
        .find(|c| c["check"] == "server broken")
        .cloned()
        .unwrap_or_default();
    assert_eq!(broken_check["status"], "fail", "{checks:?}");
    assert!(broken_check["hint"].is_string(), "{broken_check}");
    assert!(checks
        .iter()
        .all(|c| ["ok", "warn", "fail"].contains(&c["status"].as_str().unwrap_or("?")) && c["detail"].is_string()));
    assert_said(&o, "It contains no secrets");

    let mode = std::fs::metadata(&bundle_path)?.permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let raw = std::fs::read(&bundle_path)?;
    assert_clean("the bundle", &raw, &secrets);
    let bundle: Value = serde_json::from_slice(&raw)?;
    for section in [
        "mcpool_version",
        "os",
        "arch",
        "doctor",
        "config",
        "statuses",
        "logs",
        "runtimes",
    ] {
        assert!(!bundle[section].is_null(), "no {section}: {bundle:#}");
    }
    assert_eq!(bundle["doctor"].as_array().map(Vec::len), Some(checks.len()));
    let servers = &bundle["config"]["content"]["mcpServers"];
    assert_eq!(
        servers["keyed"]["env"]["API_KEY"], "${keyring:doctor-key}",
        "{bundle:#}"
    );
    assert_eq!(servers["remote"]["headers"]["X-Api-Key"], "<redacted>", "{bundle:#}");
    assert_eq!(bundle["statuses"].as_array().map(Vec::len), Some(3), "{bundle:#}");
    let tail = bundle["logs"]["servers_stderr"]["keyed"].to_string();
    assert!(tail.contains("starting with API_KEY=[secret]"), "{bundle:#}");
    assert!(
        bundle["runtimes"].as_object().is_some_and(|r| r.len() == 2),
        "{bundle:#}"
    );
    Ok(())
}

#[tokio::test]
async fn a_healthy_setup_exits_0_with_and_without_an_instance() -> anyhow::Result<()> {
    let dir = TempDir::new("doctor-healthy");
    let entry = json!({"mcpServers": {"files": faulty_stdio(&dir.path().join("spawns.log"), &[])}});
    let config = write_config(dir.path(), &entry)?;
    let (listen, path) = (free_listen()?, config.display().to_string());
    let o = doctor(dir.path(), &["--config", &path], &[("MCPOOL_LISTEN", &listen)]).await?;
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(
        line(&out, "server files").starts_with("ok   server files: connects ("),
        "{out}"
    );
    assert_eq!(
        line(&out, "port"),
        format!("ok   port: {listen} is free (no mcpool instance is running)")
    );
    assert!(line(&out, "keyring").starts_with("ok   keyring: "), "{out}");
    assert!(!out.contains("FAIL"), "{out}");
    for l in out.lines() {
        assert!(
            ["ok   ", "warn ", "FAIL "].iter().any(|w| l.starts_with(w)) && l.contains(": "),
            "not a check line: {l:?}"
        );
    }

    // With an instance, and Cursor pointed at it.
    let pool = Mcpool::start_in(dir, entry, &[]).await?;
    pool.wait_status("files", "connected", LIMIT).await?;
    let agents = agent_dirs(pool.dir.path());
    std::fs::create_dir_all(pool.dir.path().join("home/.cursor"))?;
    std::fs::create_dir_all(pool.dir.path().join("home/.gemini"))?;
    let env: Vec<(&str, &str)> = agents.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let listen = format!("127.0.0.1:{}", pool.port);
    let mut with_instance = env.clone();
    with_instance.extend([
        ("MCPOOL_LISTEN", listen.as_str()),
        ("MCPOOL_TOKEN", pool.token.as_str()),
    ]);
    let o = mcpool_cli(
        pool.dir.path(),
        &["connect", "cursor", "--write", "--yes"],
        None,
        &with_instance,
    )
    .await?;
    assert!(o.status.success(), "{}", stderr(&o));
    let config = pool.config_path().display().to_string();
    let o = mcpool_cli(pool.dir.path(), &["doctor", "--config", &config], None, &with_instance).await?;
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(
        line(&out, "server files").starts_with("ok   server files: connected ("),
        "{out}"
    );
    assert!(line(&out, "port").contains("is held by mcpool (1 server)"), "{out}");
    let url = format!("http://{listen}/mcp");
    assert!(
        line(&out, "client cursor").starts_with("ok   client cursor: ") && line(&out, "client cursor").ends_with(&url),
        "{out}"
    );
    assert_eq!(
        line(&out, "client gemini"),
        format!(
            "warn client gemini: no mcpool entry in {} — run `mcpool connect gemini --write`",
            pool.dir.path().join("home/.gemini/settings.json").display()
        ),
        "{out}"
    );
    assert_clean("doctor's lines", &o.stdout, &[pool.token.as_str()]);
    Ok(())
}
