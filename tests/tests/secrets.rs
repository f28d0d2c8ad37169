//! behaviour.md §2 (secrets in config, `mcpool secret`) and §3 rules 8 and 14
//! against the real binary and the real Secret Service (a throwaway keyring
//! on a private D-Bus session, see scripts/with-keyring.sh): secrets reach
//! the child's env and the request's headers and nothing else.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mcpool_tests::secrets::*;
use mcpool_tests::*;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(20);
const NO_BUS: (&str, &str) = ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/mcpool-test-bus");
#[tokio::test]
async fn no_secret_reaches_the_cache_the_log_the_api_or_an_error() -> anyhow::Result<()> {
    let bin_dir = TempDir::new("nosecret-bin");
    let dir = TempDir::new("nosecret");
    let key = new_secret("key");
    let bearer = new_secret("bearer");
    for (name, value) in [("svc-key", &key), ("svc-bearer", &bearer)] {
        let o = mcpool_cli(dir.path(), &["secret", "set", name], Some(&format!("{value}\n")), &[]).await?;
        assert!(o.status.success(), "{}", stderr(&o));
        assert_clean("`secret set` output", &[o.stdout, o.stderr].concat(), &[&key, &bearer]);
    }

    let (svc, svc_log) = key_checking_server(bin_dir.path(), "svc", &key, false)?;
    let (leaky, _) = key_checking_server(bin_dir.path(), "leaky", &key, true)?;
    let (_remote, url) = faulty_http(&bin_dir.path().join("remote.log"), &["--require-bearer", &bearer]).await?;
    let closed = format!("http://127.0.0.1:{}/mcp?key=${{keyring:svc-key}}", free_port()?);
    let pool = Mcpool::start_in(
        dir,
        json!({"mcpServers": {
            "svc": {"command": svc, "env": {"API_KEY": "${keyring:svc-key}"}},
            "leaky": {"command": leaky, "env": {"API_KEY": "${keyring:svc-key}"}},
            "remote": {"url": url, "headers": {"Authorization": "Bearer ${keyring:svc-bearer}"}},
            "closed": {"url": closed},
        }}),
        &[],
    )
    .await?;
    let secrets = [key.as_str(), bearer.as_str()];

    // The child got the key (it refuses to start otherwise), the remote
    // server the bearer (it answers 401 otherwise).
    pool.wait_status("svc", "connected", LIMIT).await?;
    pool.wait_status("remote", "connected", LIMIT).await?;
    assert_eq!(count_lines(&svc_log, "initialize"), 1);
    let leaky_status = pool.wait_status("leaky", "failed", LIMIT).await?;
    let leaky_error = leaky_status["error"].as_str().unwrap_or_default();
    assert!(leaky_error.contains("giving up although the key"), "{leaky_error}");
    let closed_status = pool.wait_status("closed", "failed", LIMIT).await?;
    assert!(closed_status["error"].is_string(), "{closed_status}");

    // Every text an agent, the UI or the CLI gets.
    let mut texts: Vec<(String, Vec<u8>)> = Vec::new();
    texts.push(("/api/servers".into(), serde_json::to_vec(&pool.servers().await?)?));
    let agent = pool.agent("/mcp").await?;
    assert_eq!(text(&agent.call("svc__echo", json!({"text": "hi"})).await?), "hi");
    assert_eq!(text(&agent.call("remote__echo", json!({"text": "hi"})).await?), "hi");
    let status = agent.call("mcpool__status", json!({})).await?;
    texts.push(("mcpool__status".into(), text(&status).into_bytes()));
    for server in ["closed", "leaky"] {
        let r = agent.call("mcpool__reconnect", json!({"server": server})).await?;
        let t = text(&r);
        assert!(!t.is_empty(), "{r:?}");
        texts.push((format!("mcpool__reconnect {server}"), t.into_bytes()));
        let (code, body) = pool.post(&format!("/api/servers/{server}/reconnect")).await?;
        assert_ne!(code, 200, "{body}");
        texts.push((format!("POST reconnect {server}"), serde_json::to_vec(&body)?));
        let o = pool.cli(&["reconnect", server], None).await?;
        assert!(!o.status.success());
        assert!(!stderr(&o).is_empty());
        texts.push((format!("mcpool reconnect {server}"), [o.stdout, o.stderr].concat()));
    }
    let o = pool.cli(&["status"], None).await?;
    assert!(o.status.success(), "{}", stderr(&o));
    texts.push(("mcpool status".into(), o.stdout));
    let o = pool.cli(&["secret", "list"], None).await?;
    assert_eq!(stdout(&o).lines().collect::<Vec<_>>(), ["svc-bearer", "svc-key"]);
    texts.push(("mcpool secret list".into(), [o.stdout, o.stderr].concat()));
    texts.push(("/api/servers after".into(), serde_json::to_vec(&pool.servers().await?)?));
    for (what, t) in &texts {
        assert_clean(what, t, &secrets);
    }

    // Every file of the instance: config, log, cache, data. The two
    // servers that connected have their cache files among them.
    agent.service.cancel().await?;
    let mut pool = pool;
    pool.stop().await?;
    let cache = pool.cache_dir().join("mcp").join("tools");
    let cached: Vec<PathBuf> = files_under(&cache);
    assert_eq!(cached.len(), 2, "{cached:?}");
    let files = files_under(pool.dir.path());
    assert!(files.contains(&pool.stderr_log));
    for file in files {
        assert_clean(&file.display().to_string(), &std::fs::read(&file)?, &secrets);
    }
    Ok(())
}

#[tokio::test]
async fn secret_set_list_and_rm_use_the_real_keyring_and_never_show_values() -> anyhow::Result<()> {
    let dir = TempDir::new("secret-cli");
    let one = new_secret("one");
    let two = new_secret("two");
    let three = new_secret("three");
    let set = |name: &'static str, value: String| {
        let dir = dir.path().to_path_buf();
        async move { mcpool_cli(&dir, &["secret", "set", name], Some(&value), &[]).await }
    };
    let list = || {
        let dir = dir.path().to_path_buf();
        async move {
            let o = mcpool_cli(&dir, &["secret", "list"], None, &[]).await?;
            assert!(o.status.success(), "{}", stderr(&o));
            anyhow::Ok(stdout(&o))
        }
    };

    assert_eq!(list().await?, "", "a fresh profile has no secrets");
    let o = set("beta", format!("{two}\n")).await?;
    assert!(o.status.success(), "{}", stderr(&o));
    assert_said(&o, "${keyring:beta}");
    let o = set("alpha", one.clone()).await?;
    assert!(o.status.success(), "{}", stderr(&o));
    // Overwriting keeps one name.
    let o = set("alpha", format!("{three}\r\n")).await?;
    assert!(o.status.success(), "{}", stderr(&o));
    let listed = list().await?;
    assert_eq!(listed.lines().collect::<Vec<_>>(), ["alpha", "beta"]);
    assert_clean("`secret list`", listed.as_bytes(), &[&one, &two, &three]);

    // Another profile sees none of them.
    let other = TempDir::new("secret-cli-other");
    let o = mcpool_cli(other.path(), &["secret", "list"], None, &[]).await?;
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "");

    // Nothing is written to disk by any of this.
    for file in files_under(dir.path()) {
        assert_clean(
            &file.display().to_string(),
            &std::fs::read(&file)?,
            &[&one, &two, &three],
        );
    }

    // rm, and rm of a name that is not there.
    let o = mcpool_cli(dir.path(), &["secret", "rm", "alpha"], None, &[]).await?;
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(list().await?.lines().collect::<Vec<_>>(), ["beta"]);
    let o = mcpool_cli(dir.path(), &["secret", "rm", "alpha"], None, &[]).await?;
    assert_failed_saying(&o, "no secret named 'alpha'");

    // Bad input is refused and stores nothing.
    let o = set("empty", String::new()).await?;
    assert_failed_saying(&o, "no value given for 'empty'");
    let o = set("__internal", one.clone()).await?;
    assert_failed_saying(&o, "not a valid secret name");
    assert_eq!(list().await?.lines().collect::<Vec<_>>(), ["beta"]);

    let o = mcpool_cli(dir.path(), &["secret", "rm", "beta"], None, &[]).await?;
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(list().await?, "");
    Ok(())
}

#[tokio::test]
async fn a_missing_secret_fails_once_naming_it_and_connects_after_set_and_reconnect() -> anyhow::Result<()> {
    let bin_dir = TempDir::new("late-bin");
    let value = new_secret("late");
    let (a, a_log) = key_checking_server(bin_dir.path(), "a", &value, false)?;
    let (b, b_log) = key_checking_server(bin_dir.path(), "b", &value, false)?;
    let pool = Mcpool::start(json!({"mcpServers": {
        "a": {"command": a, "env": {"API_KEY": "${keyring:late-key}"}},
        "b": {"command": b, "env": {"API_KEY": "${keyring:late-key}"}},
    }}))
    .await?;
    for server in ["a", "b"] {
        let s = pool.wait_status(server, "failed", LIMIT).await?;
        let error = s["error"].as_str().unwrap_or_default();
        assert!(error.contains("'late-key'"), "{error}");
        assert!(error.contains("mcpool secret set late-key"), "{error}");
        assert_eq!(s["tools"], json!([]), "{s}");
        assert!(s["retry_in_ms"].is_null(), "a missing secret is not retried: {s}");
    }

    // Not retried in a loop: one attempt each, no process spawned.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let logs = pool.logs();
    for server in ["a", "b"] {
        let attempts = logs
            .lines()
            .filter(|l| l.contains("connection attempt failed") && l.ends_with(&format!("server={server}")))
            .count();
        assert_eq!(attempts, 1, "{logs}");
        assert_eq!(pool.server(server).await?["status"], "failed");
    }
    assert!(
        !a_log.exists() && !b_log.exists(),
        "a server was spawned without its secret"
    );

    // An agent's call says the same, at once.
    let agent = pool.agent("/mcp").await?;
    let r = agent.call("mcpool__status", json!({})).await?;
    assert!(text(&r).contains("mcpool secret set late-key"), "{}", text(&r));

    let o = pool.cli(&["secret", "set", "late-key"], Some(&value)).await?;
    assert!(o.status.success(), "{}", stderr(&o));
    let o = pool.cli(&["reconnect", "a"], None).await?;
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("a: connected ("), "{}", stdout(&o));
    let (code, body) = pool.post("/api/servers/b/reconnect").await?;
    assert_eq!(code, 200, "{body}");
    pool.wait_status("b", "connected", LIMIT).await?;
    assert_eq!(count_lines(&a_log, "start"), 1);
    assert_eq!(count_lines(&b_log, "start"), 1);
    assert_eq!(text(&agent.call("a__echo", json!({"text": "ok"})).await?), "ok");
    Ok(())
}

/// A config with one plain fault server `s` whose start is steered by
/// `mode` (`ok` starts it, anything else makes it exit 1); `env` is its env.
fn steered(dir: &Path, env: Value) -> anyhow::Result<(Value, PathBuf)> {
    let script = dir.join("s.sh");
    let mode = dir.join("s.mode");
    write_script(
        &script,
        format!(
            "#!/bin/sh\n[ \"$(cat '{}')\" = ok ] || {{ echo 'not today' >&2; exit 1; }}\nexec '{}' stdio\n",
            mode.display(),
            bin("mcpool-faulty").display()
        ),
    )?;
    std::fs::write(&mode, "ok")?;
    Ok((json!({"mcpServers": {"s": {"command": script, "env": env}}}), mode))
}

fn kept_tools(server: &Value) -> usize {
    server["tools"]
        .as_array()
        .map_or(0, |t| t.iter().filter(|t| t["state"] == "kept").count())
}

/// Restarts `pool` with the steered server failing: it must keep its
/// cached tools (the cache identity is unchanged).
async fn restart_failing(pool: &mut Mcpool, mode: &Path) -> anyhow::Result<()> {
    std::fs::write(mode, "fail")?;
    pool.restart().await?;
    let s = pool.wait_status("s", "failed", LIMIT).await?;
    assert!(kept_tools(&s) > 0, "{s}");
    Ok(())
}

#[tokio::test]
async fn the_fingerprint_key_lives_in_the_keyring_and_survives_restarts() -> anyhow::Result<()> {
    let bin_dir = TempDir::new("fp-keyring-bin");
    let (config, mode) = steered(bin_dir.path(), json!({}))?;
    let mut pool = Mcpool::start(config).await?;
    pool.wait_status("s", "connected", LIMIT).await?;
    let cache = pool.cache_dir().join("mcp").join("tools");
    wait_for("the cache file", LIMIT, || files_under(&cache).len() == 1).await?;
    assert!(!pool.data_dir().join("fingerprint.key").exists());
    assert!(!pool.logs().contains("fingerprint key"), "{}", pool.logs());

    // The same key after a restart: the file's name still matches, so a
    // failing start offers the cached tools.
    restart_failing(&mut pool, &mode).await?;
    assert!(!pool.data_dir().join("fingerprint.key").exists());
    assert!(!pool.logs().contains("fingerprint key"), "{}", pool.logs());
    Ok(())
}

#[tokio::test]
async fn without_a_keyring_serve_warns_once_and_keeps_the_fingerprint_key_in_a_0600_file() -> anyhow::Result<()> {
    let bin_dir = TempDir::new("fp-file-bin");
    let (config, mode) = steered(bin_dir.path(), json!({}))?;
    let mut pool = Mcpool::start_with(config, &[NO_BUS]).await?;
    pool.wait_status("s", "connected", LIMIT).await?;
    let key_file = pool.data_dir().join("fingerprint.key");
    let warned = |logs: &str| {
        logs.lines()
            .filter(|l| l.contains("fingerprint key") && l.contains(&key_file.display().to_string()))
            .count()
    };
    let logs = pool.logs();
    assert_eq!(warned(&logs), 1, "{logs}");
    assert!(
        logs.lines()
            .any(|l| l.contains("WARN") && l.contains("fingerprint key")),
        "{logs}"
    );
    assert_eq!(std::fs::metadata(&key_file)?.permissions().mode() & 0o777, 0o600);
    let key = std::fs::read_to_string(&key_file)?;
    assert_eq!(key.trim().len(), 64, "{key}");
    let cache = pool.cache_dir().join("mcp").join("tools");
    wait_for("the cache file", LIMIT, || files_under(&cache).len() == 1).await?;

    // The next start reads the same key: one warning again, cached tools hit.
    restart_failing(&mut pool, &mode).await?;
    assert_eq!(std::fs::read_to_string(&key_file)?, key);
    assert_eq!(warned(&pool.logs()), 1, "{}", pool.logs());
    Ok(())
}

#[tokio::test]
async fn a_new_secret_value_is_a_new_cache_identity() -> anyhow::Result<()> {
    let bin_dir = TempDir::new("rotate-bin");
    let dir = TempDir::new("rotate");
    let (first, second) = (new_secret("first"), new_secret("second"));
    let o = mcpool_cli(dir.path(), &["secret", "set", "rot"], Some(&first), &[]).await?;
    assert!(o.status.success(), "{}", stderr(&o));
    let (config, mode) = steered(bin_dir.path(), json!({"API_KEY": "${keyring:rot}"}))?;
    let mut pool = Mcpool::start_in(dir, config, &[]).await?;
    pool.wait_status("s", "connected", LIMIT).await?;
    let cache = pool.cache_dir().join("mcp").join("tools");
    wait_for("the cache file", LIMIT, || files_under(&cache).len() == 1).await?;

    // The control: the same secret, a failing start, the tools kept.
    restart_failing(&mut pool, &mode).await?;

    // Rotated in the keyring: the config is unchanged, the identity is not.
    let o = pool.cli(&["secret", "set", "rot"], Some(&second)).await?;
    assert!(o.status.success(), "{}", stderr(&o));
    pool.restart().await?;
    let s = pool.wait_status("s", "failed", LIMIT).await?;
    assert_eq!(
        s["tools"],
        json!([]),
        "tools cached under the old secret were offered: {s}"
    );
    Ok(())
}
