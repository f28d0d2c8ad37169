//! Local servers in their sandboxes, enforced by this machine's kernel
//! (Landlock): the official filesystem server given the whole home folder
//! by its own arguments but sandboxed to one granted folder, the official
//! everything server and a Python SDK server started under `standard`, and
//! `strict` refusing TCP while what needs no network works. mcpool and its
//! unsandboxed servers go on as before.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use mcpool_tests::browser::{screenshot_path, BrowserScript};
use mcpool_tests::*;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(60);
const KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY----- test only";

/// A private home folder with a key in `.ssh` and a project folder.
fn home_with_key(dir: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    let home = dir.join("home");
    std::fs::create_dir_all(home.join(".ssh"))?;
    std::fs::write(home.join(".ssh/id_ed25519"), KEY)?;
    let project = home.join("projects/notes");
    std::fs::create_dir_all(&project)?;
    std::fs::write(project.join("readme.txt"), "the notes")?;
    Ok((home, project))
}

fn filesystem_js() -> PathBuf {
    node_modules().join("@modelcontextprotocol/server-filesystem/dist/index.js")
}

fn probe(sandbox: Value) -> Value {
    let script = repo_root().join("tests/py/probe_server.py");
    json!({"command": python(), "args": [script], "sandbox": sandbox})
}

/// mcpool with `home` as its home folder and a variable of its own that
/// only an unconfined or `standard` server inherits.
async fn start_at_home(dir: TempDir, home: &Path, config: Value) -> anyhow::Result<Mcpool> {
    let home = home.display().to_string();
    Mcpool::start_in(dir, config, &[("HOME", &home), ("SANDBOX_TEST_SECRET", "s3cret")]).await
}

/// What the probe server's `tool` answered.
async fn said(agent: &Agent, tool: &str, args: Value) -> anyhow::Result<String> {
    Ok(text(&agent.call(&format!("probe__{tool}"), args).await?))
}

/// The probe's answer is a refusal by the kernel.
fn assert_denied(answer: &str) {
    assert!(
        answer.starts_with("refused:") && answer.contains("Permission denied"),
        "{answer}"
    );
}

/// A `standard` probe server that cannot start without a file of `dir`
/// its sandbox does not give: the file and the entry.
fn probe_needing(dir: &TempDir) -> anyhow::Result<(PathBuf, Value)> {
    let data = dir.0.join("data");
    std::fs::create_dir_all(&data)?;
    let needed = data.join("needed.txt");
    std::fs::write(&needed, "settings")?;
    let mut entry = probe(json!("standard"));
    entry["env"] = json!({"PROBE_NEED": &needed});
    Ok((needed, entry))
}

/// Whether `/proc/PID/status` says the process runs with no_new_privs.
fn no_new_privs(status: &str) -> bool {
    status.contains("NoNewPrivs:\t1")
}

/// The sandbox `/api/servers` gives `name`.
async fn sandbox_of(pool: &Mcpool, name: &str) -> anyhow::Result<Value> {
    Ok(pool.wait_status(name, "connected", LIMIT).await?["sandbox"].clone())
}

#[tokio::test]
async fn the_filesystem_server_sees_only_its_grant_and_the_pool_goes_on() -> anyhow::Result<()> {
    let dir = TempDir::new("sandbox-fs");
    let (home, project) = home_with_key(&dir.0)?;
    let config = json!({"mcpServers": {
        "files": {
            "command": "node",
            "args": [filesystem_js(), &home],
            "sandbox": {"mode": "standard", "allowRead": [&project]},
        },
        "plain": faulty_stdio(&dir.0.join("spawns.log"), &[]),
    }});
    let pool = start_at_home(dir, &home, config).await?;
    let sandbox = sandbox_of(&pool, "files").await?;
    assert_eq!(sandbox["mode"], "standard");
    assert_eq!(sandbox["state"], "enforced", "{sandbox}");
    assert_eq!(
        sandbox["grants"],
        json!([{"path": project.display().to_string(), "access": "read"}])
    );
    assert_eq!(sandbox_of(&pool, "plain").await?["mode"], "off");

    let agent = pool.agent("/mcp").await?;
    let listed = agent.call("files__list_directory", json!({"path": project})).await?;
    assert!(text(&listed).contains("readme.txt"), "{}", text(&listed));
    let key = agent
        .call("files__read_text_file", json!({"path": home.join(".ssh/id_ed25519")}))
        .await?;
    let said = text(&key);
    assert_eq!(key.is_error, Some(true), "{said}");
    assert!(!said.contains(KEY), "the key never reaches the agent: {said}");
    assert!(
        said.to_lowercase().contains("permission denied") || said.contains("EACCES"),
        "the read fails as denied: {said}"
    );
    // The server, mcpool and its other servers go on.
    let after = [
        ("files__list_directory", json!({"path": project}), "readme.txt"),
        ("plain__echo", json!({"text": "still here"}), "still here"),
    ];
    for (tool, args, expected) in after {
        let answer = text(&agent.call(tool, args).await?);
        assert!(answer.contains(expected), "{tool}: {answer}");
    }
    assert_eq!(pool.server("files").await?["status"], "connected");
    Ok(())
}

#[tokio::test]
async fn the_everything_server_and_a_python_server_start_and_answer_under_standard() -> anyhow::Result<()> {
    let dir = TempDir::new("sandbox-standard");
    let (home, _) = home_with_key(&dir.0)?;
    let config = json!({
        "sandbox": "standard",
        "mcpServers": {
            "everything": {"command": "node", "args": [everything_js(), "stdio"]},
            "probe": probe(json!("standard")),
        }
    });
    let pool = start_at_home(dir, &home, config).await?;
    assert_eq!(
        sandbox_of(&pool, "everything").await?["mode"],
        "standard",
        "the config's default"
    );
    let agent = pool.agent("/mcp").await?;
    let echoed = agent.call("everything__echo", json!({"message": "hi"})).await?;
    assert!(text(&echoed).contains("hi"), "{}", text(&echoed));
    let key = said(&agent, "read", json!({"path": home.join(".ssh/id_ed25519")})).await?;
    assert_denied(&key);
    // Its own folder under mcpool's data folder is writable, and is its temp.
    let own = pool.data_dir().join("servers/probe/tmp/scratch.txt");
    let wrote = said(&agent, "write", json!({"path": own, "text": "mine"})).await?;
    assert_eq!(wrote, "written");
    let elsewhere = said(&agent, "write", json!({"path": home.join("dropped.txt"), "text": "x"})).await?;
    assert!(elsewhere.starts_with("refused:"), "{elsewhere}");
    // A child process is under the same limits.
    let child = said(&agent, "child_read", json!({"path": home.join(".ssh/id_ed25519")})).await?;
    assert_denied(&child);
    // The network stays on under standard.
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let connected = said(&agent, "connect", json!({"port": port})).await?;
    assert_eq!(connected, "connected");
    let inherited = said(&agent, "getenv", json!({"name": "SANDBOX_TEST_SECRET"})).await?;
    assert_eq!(inherited, "set: s3cret", "standard keeps mcpool's environment");
    Ok(())
}

#[tokio::test]
async fn strict_refuses_tcp_and_what_needs_no_network_works() -> anyhow::Result<()> {
    let dir = TempDir::new("sandbox-strict");
    let (home, project) = home_with_key(&dir.0)?;
    let (_remote, url) = faulty_http(&dir.0.join("remote.log"), &[]).await?;
    let config = json!({"mcpServers": {
        "probe": probe(json!({"mode": "strict", "allowRead": [&project]})),
        "remote": {"type": "http", "url": url},
    }});
    let pool = start_at_home(dir, &home, config).await?;
    let sandbox = sandbox_of(&pool, "probe").await?;
    assert_eq!(
        (sandbox["mode"].as_str(), sandbox["state"].as_str()),
        (Some("strict"), Some("enforced"))
    );
    let agent = pool.agent("/mcp").await?;
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let refused = said(&agent, "connect", json!({"port": port})).await?;
    assert_denied(&refused);
    let note = said(&agent, "read", json!({"path": project.join("readme.txt")})).await?;
    assert_eq!(note, "read: the notes");
    // Only the environment it names: mcpool's other variables stay behind.
    let secret = said(&agent, "getenv", json!({"name": "SANDBOX_TEST_SECRET"})).await?;
    assert_eq!(secret, "unset");
    let path = said(&agent, "getenv", json!({"name": "PATH"})).await?;
    assert!(path.starts_with("set: "), "{path}");
    // The limits are the server's alone: mcpool itself still reaches the
    // network (its HTTP server answers) and was never given no_new_privs.
    let echoed = agent.call("remote__echo", json!({"text": "through mcpool"})).await?;
    assert_eq!(text(&echoed), "through mcpool");
    let own = said(&agent, "read", json!({"path": "/proc/self/status"})).await?;
    let pid = pool.child.id().context("mcpool's pid")?;
    let mcpool = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    assert_eq!(
        (no_new_privs(&own), no_new_privs(&mcpool)),
        (true, false),
        "the server runs with no_new_privs, mcpool serve does not:\n{own}\n{mcpool}"
    );
    Ok(())
}

#[tokio::test]
async fn a_grant_that_does_not_exist_is_a_config_problem_naming_its_field() -> anyhow::Result<()> {
    let dir = TempDir::new("sandbox-grant");
    let missing = dir.0.join("no-such-folder");
    let config = json!({"mcpServers": {
        "probe": probe(json!({"mode": "standard", "allowWrite": [&missing]})),
        "plain": faulty_stdio(&dir.0.join("spawns.log"), &[]),
    }});
    let pool = Mcpool::start_in(dir, config, &[]).await?;
    pool.wait_status("plain", "connected", LIMIT).await?;
    let problems = pool.get_json("/api/config").await?["problems"].clone();
    let problem = &problems[0];
    assert_eq!(problem["server"], "probe", "{problems}");
    assert_eq!(problem["field"], "sandbox.allowWrite[0]", "{problems}");
    assert!(
        problem["message"]
            .as_str()
            .is_some_and(|m| m.contains("does not exist")),
        "{problems}"
    );
    Ok(())
}

/// `mcpool add NAME --config CONFIG ARGS`; its output and the config after.
async fn add(dir: &Path, config: &Path, name: &str, args: &[&str]) -> anyhow::Result<(std::process::Output, Value)> {
    let config_text = config.display().to_string();
    let mut argv = vec!["add", name, "--config", &config_text];
    argv.extend_from_slice(args);
    let out = mcpool_cli(dir, &argv, None, &[]).await?;
    let text = std::fs::read_to_string(config).unwrap_or_default();
    Ok((out, serde_json::from_str(&text).unwrap_or(Value::Null)))
}

/// `add` that must succeed: the config after it.
async fn add_ok(dir: &Path, config: &Path, name: &str, args: &[&str]) -> anyhow::Result<Value> {
    let (out, value) = add(dir, config, name, args).await?;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    Ok(value)
}

#[tokio::test]
async fn mcpool_add_writes_the_sandbox_and_refuses_a_missing_grant() -> anyhow::Result<()> {
    let dir = TempDir::new("sandbox-add");
    let readable = dir.0.join("docs");
    std::fs::create_dir_all(&readable)?;
    let config = dir.0.join("config.json");
    let readable_text = readable.display().to_string();
    let box_args = [
        "--sandbox",
        "strict",
        "--allow-read",
        &readable_text,
        "--network",
        "on",
        "--",
        "node",
        "s.js",
    ];
    let value = add_ok(&dir.0, &config, "box", &box_args).await?;
    let expected = json!({"mode": "strict", "allowRead": [readable_text], "network": true});
    assert_eq!(value["mcpServers"]["box"]["sandbox"], expected, "{value}");
    let value = add_ok(
        &dir.0,
        &config,
        "calc",
        &["--sandbox", "standard", "--", "node", "c.js"],
    )
    .await?;
    assert_eq!(
        value["mcpServers"]["calc"]["sandbox"], "standard",
        "a mode alone is its word"
    );

    let before = std::fs::read_to_string(&config)?;
    let (missing, _) = add(
        &dir.0,
        &config,
        "bad",
        &["--allow-write", "no-such-folder", "--", "node", "b.js"],
    )
    .await?;
    let said = String::from_utf8_lossy(&missing.stderr);
    assert!(!missing.status.success());
    assert!(
        said.contains("server 'bad'") && said.contains("sandbox.allowWrite[0]") && said.contains("does not exist"),
        "{said}"
    );
    assert_eq!(std::fs::read_to_string(&config)?, before, "nothing written");
    Ok(())
}

#[tokio::test]
async fn mcpool_doctor_says_what_the_kernel_gives_each_sandbox() -> anyhow::Result<()> {
    let dir = TempDir::new("sandbox-doctor");
    let boxed_and_open = json!({"mcpServers": {"boxed": probe(json!("strict")), "open": probe(json!("off"))}});
    let config_text = write_config(&dir.0, &boxed_and_open)?.display().to_string();
    let out = mcpool_cli(&dir.0, &["doctor", "--config", &config_text], None, &[]).await?;
    let said = String::from_utf8_lossy(&out.stdout);
    let line = said
        .lines()
        .find(|l| l.contains("sandbox boxed:"))
        .unwrap_or_else(|| panic!("no sandbox line for boxed:\n{said}"));
    assert!(line.starts_with("ok") && line.contains("strict, enforced"), "{line}");
    assert!(
        !said.contains("sandbox open:"),
        "a server without a sandbox has no line:\n{said}"
    );
    Ok(())
}

#[tokio::test]
async fn a_refusal_is_named_on_the_server_and_allowing_it_restarts_the_server() -> anyhow::Result<()> {
    let dir = TempDir::new("sandbox-allow");
    let (needed, entry) = probe_needing(&dir)?;
    let pool = Mcpool::start_in(dir, json!({"mcpServers": {"probe": entry}}), &[]).await?;
    let needed_text = needed.display().to_string();
    let failed = pool
        .wait_server("probe", LIMIT, "the refusal named", |s| {
            s["sandbox"]["denied"]["path"] == needed_text.as_str()
        })
        .await?;
    let denied = &failed["sandbox"]["denied"];
    assert_eq!(denied["access"], "read", "{denied}");
    assert_eq!(
        denied["sentence"],
        format!("Its sandbox refused to let it read {needed_text}.")
    );
    let (status, body) = pool
        .api(
            reqwest::Method::POST,
            "/api/servers/probe/sandbox/allow",
            Some(json!({"access": "read", "path": &needed_text})),
        )
        .await?;
    assert_eq!(status, 200, "{body}");
    let written: Value = serde_json::from_str(&std::fs::read_to_string(pool.config_path())?)?;
    assert_eq!(
        written["mcpServers"]["probe"]["sandbox"],
        json!({"mode": "standard", "allowRead": [needed_text]}),
        "the grant is in the entry"
    );
    let connected = pool.wait_status("probe", "connected", LIMIT).await?;
    assert_eq!(connected["sandbox"]["denied"], Value::Null, "{connected}");
    let (status, body) = pool
        .api(
            reqwest::Method::POST,
            "/api/servers/probe/sandbox/allow",
            Some(json!({"access": "read", "path": "relative/path"})),
        )
        .await?;
    assert_eq!((status, body["field"].as_str()), (400, Some("sandbox")), "{body}");
    Ok(())
}

#[tokio::test]
async fn the_card_names_a_refusal_and_allow_grants_it_in_a_real_browser() -> anyhow::Result<()> {
    let dir = TempDir::new("sandbox-card");
    let (needed, probe_entry) = probe_needing(&dir)?;
    let hidden = dir.0.join("data/hidden.txt");
    std::fs::write(&hidden, "not for the quiet one")?;
    let mut quiet = probe(json!("standard"));
    quiet["env"] = json!({"PROBE_QUIET": &hidden});
    // A socket open to anyone that no grant names: masked until allowed.
    let socket = dir.0.join("data/daemon.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket)?;
    let mut socketed = probe(json!("standard"));
    socketed["env"] = json!({"PROBE_SOCKET": &socket});
    let config = json!({"mcpServers": {"probe": probe_entry, "quiet": quiet, "socketed": socketed}});
    let pool = Mcpool::start_in(dir, config, &[]).await?;
    let screenshot = screenshot_path("MCPOOL_SANDBOX_SCREENSHOT", pool.dir.path().join("sandbox.png"));
    let steps = BrowserScript::run(
        &pool,
        "sandbox.mjs",
        &[
            ("NEEDED", needed.clone().into()),
            ("SOCKET", socket.clone().into()),
            ("SCREENSHOT", screenshot),
        ],
        Duration::from_secs(150),
    )
    .await?;
    assert_eq!(steps, ["STEP named", "STEP allowed", "STEP socket", "STEP quiet", "OK"]);
    let written: Value = serde_json::from_str(&std::fs::read_to_string(pool.config_path())?)?;
    assert_eq!(
        written["mcpServers"]["probe"]["sandbox"],
        json!({"mode": "standard", "allowRead": [needed]}),
        "the click wrote the grant into the entry"
    );
    assert_eq!(
        written["mcpServers"]["socketed"]["sandbox"],
        json!({"mode": "standard", "allowSockets": [socket]}),
        "the socket's click wrote its grant"
    );
    assert_eq!(
        written["mcpServers"]["quiet"]["sandbox"], "standard",
        "the quiet one is left as it was"
    );
    Ok(())
}
