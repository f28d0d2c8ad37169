//! MCP registries (README "Registry", docs/behaviour.md): `mcpool registry
//! search`, `/api/registry/search` (offline: the last results), `/api/
//! registry/server` and `mcpool registry add` against a loopback registry
//! serving the published example server.json documents of tests/registry/
//! in the official API's shapes. Secrets go to the real keyring.

use std::path::Path;

use mcpool_core::secrets::SecretStore;
use mcpool_tests::secrets::new_secret;
use mcpool_tests::*;
use serde_json::{json, Value};

mod server;
use server::TestRegistry;

/// A directory on PATH holding only stand-ins for `commands`.
fn fake_path(dir: &Path, commands: &[&str]) -> anyhow::Result<String> {
    let bin = dir.join("fake-bin");
    std::fs::create_dir_all(&bin)?;
    for c in commands {
        let file = bin.join(c);
        write_script(&file, "#!/bin/sh\nexit 0\n")?;
    }
    Ok(bin.display().to_string())
}

fn names(v: &Value) -> Vec<String> {
    names_in(&v["servers"])
}

#[tokio::test]
async fn cli_search_reads_the_configured_registries() -> anyhow::Result<()> {
    let registry = TestRegistry::start().await?;
    let dead = format!("http://127.0.0.1:{}", free_port()?);
    let dir = TempDir::new("registry-search");
    let config = write_config(dir.path(), &json!({"registries": [format!("{}/", registry.url)]}))?;
    let cfg = config.display().to_string();

    // `registry search ARGS --config CFG`.
    let search = async |args: &[&str]| {
        let args = [&["registry", "search"][..], args, &["--config", cfg.as_str()]].concat();
        mcpool_cli(dir.path(), &args, None, &[]).await
    };
    // The same with `--json`, which must succeed: its JSON.
    let search_json = async |query: &str| -> anyhow::Result<Value> {
        let o = search(&[query, "--json"]).await?;
        assert!(o.status.success(), "{}", stderr(&o));
        Ok(serde_json::from_str(&stdout(&o))?)
    };

    let o = search(&["brave"]).await?;
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("io.modelcontextprotocol.anonymous/brave-search  1.0.2  local (npm)  needs BRAVE_API_KEY"),
        "{out}"
    );
    assert!(out.contains("MCP server for Brave Search API integration"), "{out}");
    let asked = registry.queries.lock().map(|q| q.clone()).unwrap_or_default();
    assert!(
        asked
            .iter()
            .any(|q| q.contains("search=brave") && q.contains("version=latest") && q.contains("limit=")),
        "{asked:?}"
    );

    // A registry that is down is named; the other's results still come.
    write_config(dir.path(), &json!({"registries": [dead, registry.url]}))?;
    let v = search_json("filesystem").await?;
    assert_eq!(
        names(&v),
        [
            "io.github.modelcontextprotocol/filesystem",
            "io.modelcontextprotocol.anonymous/mcp-fs"
        ]
    );
    assert_eq!(v["offline"], false);
    assert!(v["error"].as_str().unwrap_or_default().contains(&dead), "{v}");
    let fs = &v["servers"][0];
    assert_eq!(fs["kind"], "local");
    assert_eq!(fs["packages"], json!(["npm", "oci"]));
    assert_eq!(fs["registry"], registry.url);
    assert_eq!(fs["title"], "Filesystem");
    assert_eq!(fs["repository"], "https://github.com/modelcontextprotocol/servers");
    assert_eq!(v["servers"][1]["kind"], "remote");

    // Two registries listing the same server: listed once, from the first.
    let second = TestRegistry::start().await?;
    write_config(dir.path(), &json!({"registries": [second.url, registry.url]}))?;
    let v = search_json("brave").await?;
    assert_eq!(
        names(&v),
        [
            "io.modelcontextprotocol.anonymous/brave-search",
            "io.modelcontextprotocol/brave-search"
        ]
    );
    assert!(
        v["servers"]
            .as_array()
            .into_iter()
            .flatten()
            .all(|s| s["registry"] == second.url),
        "{v}"
    );
    assert_eq!(v["error"], Value::Null);

    // Every registry down: said, and a failure.
    write_config(dir.path(), &json!({"registries": [dead]}))?;
    let o = search(&["brave"]).await?;
    assert!(!o.status.success());
    assert_said(&o, &format!("the registry {dead} could not be reached"));
    Ok(())
}

#[tokio::test]
async fn api_search_the_add_form_and_offline_with_the_last_results() -> anyhow::Result<()> {
    let mut registry = TestRegistry::start().await?;
    let dir = TempDir::new("registry-api");
    let path = fake_path(dir.path(), &["npx"])?;
    let mcpool = Mcpool::start_in(
        dir,
        json!({"registries": [registry.url], "mcpServers": {}}),
        &[("PATH", &path)],
    )
    .await?;

    let v = mcpool.get_json("/api/registry/search?q=weather").await?;
    assert_eq!(names(&v), ["io.github.example/weather-mcp"]);
    assert_eq!(v["offline"], false);
    assert_eq!(v["error"], Value::Null);
    let row = &v["servers"][0];
    assert_eq!(row["needs"], json!(["WEATHER_API_KEY"]));
    assert_eq!(row["packages"], json!(["pypi"]));
    assert_eq!(row["version"], "0.5.0");

    let form = mcpool
        .get_json("/api/registry/server?name=io.github.example/weather-mcp")
        .await?;
    assert_eq!(form["suggested_name"], "weather-mcp");
    assert_eq!(form["entry"]["command"], "uvx");
    assert_eq!(form["entry"]["args"], json!(["weather-mcp-server==0.5.0"]));
    assert_eq!(form["variables"][0]["name"], "WEATHER_API_KEY");
    assert_eq!(form["variables"][0]["secret"], true);
    assert_eq!(form["variables"][0]["target"], "env");
    assert_eq!(form["variables"][1]["default"], "celsius");
    assert_eq!(form["runtime"]["command"], "uvx");
    assert_eq!(form["runtime"]["present"], false);
    assert!(
        form["runtime"]["install"]
            .as_str()
            .unwrap_or_default()
            .contains("install uv"),
        "{form}"
    );

    let brave = mcpool
        .get_json("/api/registry/server?name=io.modelcontextprotocol.anonymous/brave-search&version=1.0.2")
        .await?;
    assert_eq!(brave["runtime"]["present"], true);
    assert_eq!(brave["runtime"]["install"], Value::Null);
    let remote = mcpool
        .get_json("/api/registry/server?name=io.modelcontextprotocol.anonymous/hybrid-mcp&choice=remote:0")
        .await?;
    assert_eq!(remote["kind"], "remote");
    assert_eq!(remote["entry"]["headers"]["X-API-Key"], "{X-API-Key}");
    assert_eq!(remote["runtime"], Value::Null);
    assert_eq!(remote["choices"].as_array().map(Vec::len), Some(3));
    let missing = mcpool
        .get("/api/registry/server?name=io.github.example/nothing")
        .await?;
    assert_eq!(missing.status(), 404);
    let unauthorized = reqwest::get(mcpool.url("/api/registry/search?q=weather")).await?;
    assert_eq!(unauthorized.status(), 401);

    // The dashboard's add: the form filled in, the secret to the keyring.
    let key = new_secret("api-add");
    let control = mcpool.control()?;
    let post = |body: Value| {
        reqwest::Client::new()
            .post(mcpool.url("/api/registry/add"))
            .bearer_auth(&control)
            .json(&body)
            .send()
    };
    let r = post(json!({"name": "io.modelcontextprotocol.anonymous/brave-search", "values": {}})).await?;
    assert_eq!(r.status(), 422);
    let body: Value = r.json().await?;
    assert!(
        body["error"].as_str().unwrap_or_default().contains("BRAVE_API_KEY"),
        "{body}"
    );
    let r = post(
        json!({"name": "io.modelcontextprotocol.anonymous/brave-search", "as": "brave",
                        "values": {"BRAVE_API_KEY": key}}),
    )
    .await?;
    assert_eq!(r.status(), 200, "{}", r.text().await?);
    let text = std::fs::read_to_string(mcpool.config_path())?;
    assert!(!text.contains(&key), "{text}");
    let written: Value = mcpool_core::jsonc::value(&text)?;
    assert_eq!(written["mcpServers"]["brave"]["command"], "npx", "{text}");
    let name = keyring_name(&written["mcpServers"]["brave"]["env"]["BRAVE_API_KEY"]);
    let keyring = mcpool_core::secrets::Keyring::for_profile(&profile_for(mcpool.dir.path()));
    let stored = tokio::task::spawn_blocking(move || keyring.get(&name)).await??;
    assert_eq!(stored.as_deref(), Some(key.as_str()));
    assert!(mcpool.server("brave").await.is_ok(), "the pool loaded it");

    registry.stop().await;
    let v = mcpool.get_json("/api/registry/search?q=weather").await?;
    assert_eq!(v["offline"], true);
    assert_eq!(names(&v), ["io.github.example/weather-mcp"], "the last results: {v}");
    assert!(v["error"].as_str().unwrap_or_default().contains(&registry.url), "{v}");
    let v = mcpool.get_json("/api/registry/search?q=never-searched").await?;
    assert_eq!(v["offline"], true);
    assert_eq!(v["servers"], json!([]));
    Ok(())
}

/// The keyring name a `${keyring:NAME}` value refers to.
fn keyring_name(value: &Value) -> String {
    let text = value.as_str().unwrap_or_default();
    text.strip_prefix("${keyring:")
        .and_then(|t| t.strip_suffix('}'))
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn add_writes_the_entry_and_puts_secrets_in_the_keyring() -> anyhow::Result<()> {
    let registry = TestRegistry::start().await?;
    let dir = TempDir::new("registry-add");
    let path = fake_path(dir.path(), &["npx"])?;
    let config = write_config(
        dir.path(),
        &json!({"registries": [registry.url], "mcpServers": {"kept": {"command": "true"}}}),
    )?;
    let cfg = config.display().to_string();
    let key = new_secret("brave");
    let env = [("PATH", path.as_str())];
    let pair = format!("BRAVE_API_KEY={key}");
    let args = [
        "registry",
        "add",
        "io.modelcontextprotocol.anonymous/brave-search@1.0.2",
        "--config",
        &cfg,
        "--env",
        &pair,
    ];
    let o = mcpool_cli(dir.path(), &args, None, &env).await?;
    assert!(o.status.success(), "{}", stderr(&o));
    assert_said(&o, "added 'brave-search'");
    let text = std::fs::read_to_string(&config)?;
    assert!(!text.contains(&key), "the secret is not in the config: {text}");
    let written: Value = mcpool_core::jsonc::value(&text)?;
    let entry = &written["mcpServers"]["brave-search"];
    assert_eq!(entry["command"], "npx");
    assert_eq!(
        entry["args"],
        json!(["-y", "@modelcontextprotocol/server-brave-search@1.0.2"])
    );
    assert_eq!(written["mcpServers"]["kept"]["command"], "true");
    let name = keyring_name(&entry["env"]["BRAVE_API_KEY"]);
    assert!(!name.is_empty(), "a keyring reference: {entry}");
    let keyring = mcpool_core::secrets::Keyring::for_profile(&profile_for(dir.path()));
    let stored = tokio::task::spawn_blocking(move || keyring.get(&name)).await??;
    assert_eq!(stored.as_deref(), Some(key.as_str()));

    // The same name again is refused; --as gives another.
    let o = mcpool_cli(dir.path(), &args, None, &env).await?;
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("server 'brave-search'") && err.contains("already in the config"),
        "{err}"
    );
    assert!(err.contains("--as NAME"), "{err}");

    // A remote with a secret header.
    let header = format!("X-API-Key={key}");
    let o = mcpool_cli(
        dir.path(),
        &[
            "registry",
            "add",
            "io.modelcontextprotocol.anonymous/hybrid-mcp",
            "--choice",
            "remote:0",
            "--as",
            "hybrid",
            "--config",
            &cfg,
            "--env",
            &header,
        ],
        None,
        &env,
    )
    .await?;
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&config)?;
    assert!(!text.contains(&key));
    let written: Value = mcpool_core::jsonc::value(&text)?;
    let hybrid = &written["mcpServers"]["hybrid"];
    assert_eq!(hybrid["type"], "http");
    assert_eq!(hybrid["url"], "https://mcp.anonymous.modelcontextprotocol.io/http");
    assert_eq!(hybrid["headers"]["X-Region"], "us-east-1");
    assert!(!keyring_name(&hybrid["headers"]["X-API-Key"]).is_empty(), "{hybrid}");
    Ok(())
}

#[tokio::test]
async fn missing_values_and_runtimes_are_refused_with_nothing_written() -> anyhow::Result<()> {
    let registry = TestRegistry::start().await?;
    let dir = TempDir::new("registry-refuse");
    let with_npx_docker = fake_path(dir.path(), &["npx", "docker"])?;
    let config = write_config(dir.path(), &json!({"registries": [registry.url]}))?;
    let cfg = config.display().to_string();
    let before = std::fs::read(&config)?;
    // `registry add ARGS --config CFG` with `path` as PATH: refused, with
    // stderr containing each of `said`, and nothing written.
    let refused = async |args: &[&str], path: &str, said: &[&str]| -> anyhow::Result<()> {
        let args = [&["registry", "add"][..], args, &["--config", cfg.as_str()]].concat();
        let o = mcpool_cli(dir.path(), &args, None, &[("PATH", path)]).await?;
        assert!(!o.status.success());
        let err = stderr(&o);
        for s in said {
            assert!(err.contains(s), "{err}");
        }
        assert_eq!(std::fs::read(&config)?, before, "nothing written");
        Ok(())
    };

    refused(
        &["io.modelcontextprotocol.anonymous/brave-search"],
        &with_npx_docker,
        &[
            "needs a value for this required variable: BRAVE_API_KEY",
            "--env NAME=VALUE",
        ],
    )
    .await?;
    refused(
        &["io.github.example/database-manager", "--env", "DB_USERNAME=me"],
        &with_npx_docker,
        &["these required variables: DB_PASSWORD, db_type, database_name"],
    )
    .await?;
    // uvx is not on this PATH: said, with what to install, and nothing written.
    refused(
        &["io.github.example/weather-mcp", "--env", "WEATHER_API_KEY=k"],
        &with_npx_docker,
        &["'weather-mcp' needs uvx (uv) which is not on PATH; install uv", "--yes"],
    )
    .await?;
    let empty = dir.path().join("empty-bin");
    std::fs::create_dir_all(&empty)?;
    refused(
        &[
            "io.modelcontextprotocol.anonymous/brave-search",
            "--env",
            "BRAVE_API_KEY=k",
        ],
        &empty.display().to_string(),
        &["needs npx (Node.js (npm)) which is not on PATH; install Node.js"],
    )
    .await?;
    // An --env naming no variable is a mistake, not ignored.
    refused(
        &["io.github.example/weather-mcp", "--env", "WEATHER_KEY=k", "--yes"],
        &with_npx_docker,
        &["has no variable 'WEATHER_KEY'"],
    )
    .await?;

    // With --yes it is added all the same (non-secret values in the entry).
    let o = mcpool_cli(
        dir.path(),
        &[
            "registry",
            "add",
            "io.github.example/weather-mcp",
            "--config",
            &cfg,
            "--env",
            "WEATHER_API_KEY=k",
            "--env",
            "WEATHER_UNITS=fahrenheit",
            "--yes",
        ],
        None,
        &[("PATH", &with_npx_docker)],
    )
    .await?;
    assert!(o.status.success(), "{}", stderr(&o));
    assert_said(&o, "not on PATH");
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&config)?)?;
    assert_eq!(
        written["mcpServers"]["weather-mcp"]["env"]["WEATHER_UNITS"],
        "fahrenheit"
    );
    assert_eq!(written["mcpServers"]["weather-mcp"]["command"], "uvx");
    Ok(())
}

/// On a terminal (a pty from util-linux `script`), `add` asks for each
/// variable with its description and default, the secret without echo
/// (what the test types is queued before the prompt turns echo off, so
/// the pty echoes it: only the config and the keyring are checked).
#[tokio::test]
async fn add_asks_on_a_terminal() -> anyhow::Result<()> {
    let registry = TestRegistry::start().await?;
    let dir = TempDir::new("registry-tty");
    let path = fake_path(dir.path(), &["uvx"])?;
    let config = write_config(dir.path(), &json!({"registries": [registry.url]}))?;
    let key = new_secret("weather");
    let line = format!(
        "'{}' registry add io.github.example/weather-mcp --config '{}'",
        bin("mcpool").display(),
        config.display()
    );
    let mut cmd = tokio::process::Command::new("script");
    cmd.args(["-qec", &line, "/dev/null"])
        .env("PATH", format!("{path}:/usr/bin:/bin"))
        .env_remove("MCPOOL_CONFIG")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    for (k, v) in instance_env(dir.path()) {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        use tokio::io::AsyncWriteExt;
        // The secret, then Enter for the default units.
        stdin.write_all(format!("{key}\n\n").as_bytes()).await?;
    }
    let o = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait_with_output()).await??;
    let shown = stdout(&o);
    assert!(o.status.success(), "{shown}{}", stderr(&o));
    assert!(shown.contains("API key for weather service"), "{shown}");
    assert!(
        shown.contains("WEATHER_API_KEY (required, secret: kept in the keyring): "),
        "{shown}"
    );
    assert!(shown.contains("WEATHER_UNITS (optional) [celsius]: "), "{shown}");
    let text = std::fs::read_to_string(&config)?;
    assert!(!text.contains(&key), "{text}");
    let written: Value = serde_json::from_str(&text)?;
    let entry = &written["mcpServers"]["weather-mcp"];
    assert_eq!(entry["env"]["WEATHER_UNITS"], "celsius", "{entry}");
    let name = keyring_name(&entry["env"]["WEATHER_API_KEY"]);
    let keyring = mcpool_core::secrets::Keyring::for_profile(&profile_for(dir.path()));
    let stored = tokio::task::spawn_blocking(move || keyring.get(&name)).await??;
    assert_eq!(stored.as_deref(), Some(key.as_str()));
    Ok(())
}
