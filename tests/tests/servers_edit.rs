//! Adding, changing and removing servers (behaviour.md §2 "adding
//! servers") through `mcpool add|remove|list` and `/api/servers`, against
//! the real binary, the real keyring (a throwaway Secret Service) and a
//! config file full of comments: secrets reach the keyring and the server,
//! the file holds only references and keeps its comments, and bad input
//! writes nothing.

use std::path::{Path, PathBuf};
use std::time::Duration;

use mcpool_tests::secrets::*;
use mcpool_tests::*;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(20);

const COMMENTED: &str = r#"{
  // mcpool's servers. Keep this comment.
  "mcpServers": {
    /* nothing here yet */
  },
  "approveNewTools": "auto", // trailing comma next
}
"#;

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn assert_comments_kept(config: &str) {
    for c in ["// mcpool's servers. Keep this comment.", "// trailing comma next"] {
        assert!(config.contains(c), "comment {c:?} lost:\n{config}");
    }
}

#[tokio::test]
async fn cli_add_list_remove_work_on_the_file_without_an_instance() -> anyhow::Result<()> {
    let dir = TempDir::new("edit-cli");
    let config = dir.path().join("config.json");
    std::fs::write(&config, COMMENTED)?;
    let secret = new_secret("cli-add");
    let (script, _log) = key_checking_server(dir.path(), "keyed", &secret, false)?;
    let cfg = config.display().to_string();
    let script_s = script.display().to_string();
    let cli = |args: Vec<&str>, stdin: Option<String>| {
        let dir = dir.path().to_path_buf();
        let args: Vec<String> = args.into_iter().map(str::to_string).collect();
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            mcpool_cli(&dir, &args, stdin.as_deref(), &[]).await
        }
    };

    let o = cli(
        vec![
            "add",
            "keyed",
            "--config",
            &cfg,
            "--env",
            "LOG_LEVEL=debug",
            "--secret-env",
            "API_KEY",
            "--",
            &script_s,
            "--extra-tools",
            "2",
        ],
        Some(format!("{secret}\n")),
    )
    .await?;
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("keyed.env.API_KEY"), "{}", text(&o));
    let written = read(&config);
    assert_comments_kept(&written);
    assert!(written.contains("${keyring:keyed.env.API_KEY}"), "{written}");
    assert!(written.contains("\"LOG_LEVEL\": \"debug\""), "{written}");
    assert_clean("config.json", written.as_bytes(), &[&secret]);
    assert_eq!(read(&dir.path().join("config.json.bak")), COMMENTED);
    let listed = cli(vec!["secret", "list"], None).await?;
    assert!(text(&listed).contains("keyed.env.API_KEY"), "{}", text(&listed));

    // Without an instance, list shows the file's servers as not running.
    let o = cli(vec!["list", "--config", &cfg, "--listen", "127.0.0.1:9"], None).await?;
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        out.contains("keyed") && out.contains("(not running)") && out.contains("stdio"),
        "{out}"
    );

    // Bad input: named, nothing written, no secret asked for.
    for (args, words) in [
        (
            vec!["add", "keyed", "--config", &cfg, "--", "true"],
            "already in the config",
        ),
        (
            vec!["add", "web", "--config", &cfg, "--url", "not a url"],
            "field 'url': invalid URL",
        ),
        (
            vec![
                "add",
                "web",
                "--config",
                &cfg,
                "--url",
                "https://x.test/mcp",
                "--header",
                "Bad Name: v",
            ],
            "field 'headers.Bad Name'",
        ),
        (
            vec!["add", "web", "--config", &cfg, "--header", "X: y", "--", "srv"],
            "for a remote server",
        ),
        (
            vec!["add", "nothing", "--config", &cfg],
            "give the server's command after `--`",
        ),
        (vec!["add", "a/b", "--config", &cfg, "--", "srv"], "field 'name'"),
    ] {
        let before = read(&config);
        let o = cli(args.clone(), None).await?;
        assert!(!o.status.success(), "{args:?} succeeded: {}", text(&o));
        assert!(text(&o).contains(words), "{args:?}: {}", text(&o));
        assert_eq!(read(&config), before, "{args:?} wrote the file");
    }

    let o = cli(vec!["remove", "keyed", "--config", &cfg, "--secrets"], None).await?;
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("removed the keyring entry keyed.env.API_KEY"),
        "{}",
        text(&o)
    );
    let after = read(&config);
    assert_comments_kept(&after);
    assert!(!after.contains("keyed"), "{after}");
    let listed = cli(vec!["secret", "list"], None).await?;
    assert!(!text(&listed).contains("keyed.env.API_KEY"), "{}", text(&listed));
    let o = cli(vec!["remove", "keyed", "--config", &cfg], None).await?;
    assert!(
        !o.status.success() && text(&o).contains("has no server 'keyed'"),
        "{}",
        text(&o)
    );
    Ok(())
}

/// An instance in a fresh dir `tag` started on [`COMMENTED`], a fresh
/// secret, and a server script `name` there that starts only with it.
async fn commented_with_keyed(tag: &str, name: &str) -> anyhow::Result<(Mcpool, String, PathBuf)> {
    let dir = TempDir::new(tag);
    std::fs::write(dir.path().join("config.json"), COMMENTED)?;
    let m = Mcpool::start_in_dir(dir, &[]).await?;
    let secret = new_secret(tag);
    let (script, _log) = key_checking_server(m.dir.path(), name, &secret, false)?;
    Ok((m, secret, script))
}

#[tokio::test]
async fn cli_add_reaches_a_running_instance_and_list_shows_its_status() -> anyhow::Result<()> {
    let (m, secret, script) = commented_with_keyed("edit-cli-live", "live").await?;
    let cfg = m.config_path().display().to_string();
    let script_s = script.display().to_string();
    let o = m
        .cli(
            &[
                "add",
                "live",
                "--config",
                &cfg,
                "--secret-env",
                "API_KEY",
                "--",
                &script_s,
            ],
            Some(&format!("{secret}\n")),
        )
        .await?;
    assert!(o.status.success(), "{}", text(&o));
    // The key came from the keyring: the server starts only with the right one.
    m.wait_status("live", "connected", LIMIT).await?;
    let o = m.cli(&["list", "--config", &cfg], None).await?;
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(out.contains("live") && out.contains("connected"), "{out}");
    let o = m.cli(&["list", "--config", &cfg, "--json"], None).await?;
    let rows: Value = serde_json::from_slice(&o.stdout)?;
    assert_eq!(rows[0]["status"], "connected", "{rows}");
    let o = m.cli(&["remove", "live", "--config", &cfg], None).await?;
    assert!(o.status.success(), "{}", text(&o));
    m.wait_gone("live", LIMIT).await?;
    assert_clean("log", m.logs().as_bytes(), &[&secret]);
    Ok(())
}

#[tokio::test]
async fn the_api_tests_adds_edits_and_removes_a_server() -> anyhow::Result<()> {
    let (m, secret, script) = commented_with_keyed("edit-api", "keyed").await?;
    let config = m.config_path();
    let body = |args: Vec<&str>| {
        json!({
            "name": "keyed",
            "entry": {"command": script, "args": args, "env": {"MODE": "test"}},
            "secretEnv": {"API_KEY": secret},
        })
    };
    use reqwest::Method;

    // Test before saving: the tools it offers, nothing added or written.
    let (status, probe) = m.api(Method::POST, "/api/servers/test", Some(body(vec![]))).await?;
    assert_eq!(status, 200, "{probe}");
    assert_eq!(probe["ok"], true, "{probe}");
    assert!(!probe["tools"].as_array().unwrap().is_empty(), "{probe}");
    assert_eq!(read(&config), COMMENTED);
    assert!(m.servers().await?.is_empty());
    // A wrong key: the error sentence with what the server said, no secret.
    let mut wrong = body(vec![]);
    wrong["secretEnv"]["API_KEY"] = json!(new_secret("wrong"));
    let (_, probe) = m.api(Method::POST, "/api/servers/test", Some(wrong.clone())).await?;
    assert_eq!(probe["ok"], false, "{probe}");
    let error = probe["error"].as_str().unwrap_or_default();
    assert!(error.contains("did not connect"), "{probe}");
    assert_clean(
        "test answer",
        probe.to_string().as_bytes(),
        &[wrong["secretEnv"]["API_KEY"].as_str().unwrap()],
    );

    // Save: the keyring holds the value, the file the reference.
    let (status, added) = m.api(Method::POST, "/api/servers", Some(body(vec![]))).await?;
    assert_eq!(status, 200, "{added}");
    assert_eq!(added["secrets"], json!(["keyed.env.API_KEY"]));
    let s = m.wait_status("keyed", "connected", LIMIT).await?;
    let tools = s["tools"].as_array().map(Vec::len).unwrap_or_default();
    let written = read(&config);
    assert_comments_kept(&written);
    assert!(written.contains("${keyring:keyed.env.API_KEY}"), "{written}");
    assert!(Path::new(&format!("{}.bak", config.display())).exists());

    // The edit form's view: references and whether they are set, never values.
    let view = m.get_json("/api/servers/keyed/entry").await?;
    assert_eq!(
        view["secrets"]["env"]["API_KEY"],
        json!({"reference": "keyed.env.API_KEY", "set": true})
    );
    let revision = view["revision"].as_str().unwrap().to_string();

    // Edit its args (the secret kept as its reference): more tools.
    let mut entry = view["entry"].clone();
    entry["args"] = json!(["--extra-tools", "3"]);
    let (status, changed) = m
        .api(
            Method::PUT,
            "/api/servers/keyed",
            Some(json!({"name": "keyed", "entry": entry, "revision": revision})),
        )
        .await?;
    assert_eq!(status, 200, "{changed}");
    m.wait_server("keyed", LIMIT, "the edit applied", |s| {
        s["status"] == "connected" && s["tools"].as_array().map(Vec::len) == Some(tools + 3)
    })
    .await?;
    assert_comments_kept(&read(&config));
    // An edit begun before that one is refused, and writes nothing.
    let before = read(&config);
    let (status, stale) = m
        .api(
            Method::PUT,
            "/api/servers/keyed",
            Some(json!({"name": "keyed", "entry": {"command": "x"}, "revision": revision})),
        )
        .await?;
    assert_eq!(status, 409, "{stale}");
    assert!(
        stale["error"].as_str().unwrap_or_default().contains("reload it"),
        "{stale}"
    );
    assert_eq!(read(&config), before);

    // Bad input: 400 with the field, nothing written.
    for (body, field) in [
        (json!({"name": "keyed", "entry": {"command": "x"}}), json!("name")),
        (json!({"name": "e", "entry": {"command": ""}}), json!("command")),
        (json!({"name": "u", "entry": {"url": "http//nope"}}), json!("url")),
        (
            json!({"name": "h", "entry": {"url": "https://x.test/mcp", "headers": {"X-Key": "a\r\nb"}}}),
            json!("headers.X-Key"),
        ),
        (json!({"name": "n", "entry": "command"}), json!("entry")),
    ] {
        let (status, e) = m.api(Method::POST, "/api/servers", Some(body.clone())).await?;
        assert_eq!((status, &e["field"]), (400, &field), "{body}: {e}");
        assert!(
            e["error"]
                .as_str()
                .unwrap_or_default()
                .contains(&config.display().to_string())
                || field == "entry",
            "{e}"
        );
        assert_eq!(read(&config), before, "{body} wrote the file");
    }
    let (status, _) = m.api(Method::DELETE, "/api/servers/nope", None).await?;
    assert_eq!(status, 404);

    // Remove with its keyring entry.
    let (status, removed) = m.api(Method::DELETE, "/api/servers/keyed?secrets=remove", None).await?;
    assert_eq!(status, 200, "{removed}");
    assert_eq!(removed["removed_secrets"], json!(["keyed.env.API_KEY"]));
    m.wait_gone("keyed", LIMIT).await?;
    let after = read(&config);
    assert_comments_kept(&after);
    assert!(!after.contains("keyed"), "{after}");
    let listed = m.cli(&["secret", "list"], None).await?;
    assert!(!text(&listed).contains("keyed.env.API_KEY"), "{}", text(&listed));
    for (what, bytes) in [
        ("log", m.logs()),
        ("config", after),
        ("backup", read(&config.with_extension("json.bak"))),
    ] {
        assert_clean(what, bytes.as_bytes(), &[&secret]);
    }
    Ok(())
}

#[tokio::test]
async fn a_remote_server_is_tested_with_its_secret_header_and_a_sign_in_is_named() -> anyhow::Result<()> {
    let m = Mcpool::start(json!({"mcpServers": {}})).await?;
    let (_faulty, url) = faulty_http(&m.dir.path().join("r.log"), &[]).await?;
    let token = new_secret("header");
    let body = json!({
        "name": "remote",
        "entry": {"url": url, "headers": {"X-Trace": "on"}},
        "secretHeaders": {"Authorization": format!("Bearer {token}")},
    });
    let (status, probe) = m
        .api(reqwest::Method::POST, "/api/servers/test", Some(body.clone()))
        .await?;
    assert_eq!((status, &probe["ok"]), (200, &json!(true)), "{probe}");
    assert!(probe["tools"].as_array().is_some_and(|t| !t.is_empty()), "{probe}");
    control(&url, json!({"mode": "401"})).await?;
    let (_, probe) = m
        .api(reqwest::Method::POST, "/api/servers/test", Some(body.clone()))
        .await?;
    assert_eq!(
        (&probe["ok"], &probe["needs_auth"]),
        (&json!(false), &json!(true)),
        "{probe}"
    );
    assert!(
        probe["error"].as_str().unwrap_or_default().contains("needs sign-in"),
        "{probe}"
    );
    assert_clean("test answer", probe.to_string().as_bytes(), &[&token]);
    // Nothing was added by either test.
    assert!(m.servers().await?.is_empty());
    let config = read(&m.config_path());
    assert!(!config.contains("remote"), "{config}");
    // Saved, the header is a reference and the entry view says it is set.
    control(&url, json!({"mode": "ok"})).await?;
    let (status, added) = m.api(reqwest::Method::POST, "/api/servers", Some(body)).await?;
    assert_eq!(status, 200, "{added}");
    m.wait_status("remote", "connected", LIMIT).await?;
    let view = m.get_json("/api/servers/remote/entry").await?;
    assert_eq!(
        view["entry"]["headers"]["Authorization"],
        "${keyring:remote.headers.Authorization}"
    );
    assert_eq!(view["secrets"]["headers"]["Authorization"]["set"], true, "{view}");
    for (what, text) in [
        ("config", read(&m.config_path())),
        ("entry view", view.to_string()),
        ("servers", m.get_json("/api/servers").await?.to_string()),
        ("log", m.logs()),
    ] {
        assert_clean(what, text.as_bytes(), &[&token]);
    }
    Ok(())
}
