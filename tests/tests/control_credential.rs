//! behaviour.md "control API" and "endpoint auth": the agents' token reads
//! the control API and may reconnect or disconnect; every other change
//! needs the control credential (mcpool's own CLI, from a 0600 file in the
//! runtime dir, never the keyring) or a dashboard session, else HTTP 403 and
//! nothing written. And `mcpool secret` leaves the keyring daemon running.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use mcpool_tests::faulty::faulty_stdio;
use mcpool_tests::*;
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(20);

async fn started() -> anyhow::Result<Mcpool> {
    let dir = TempDir::new("control");
    let entry = faulty_stdio(&dir.path().join("spawns.log"), &[]);
    let pool = Mcpool::start_in(dir, json!({"mcpServers": {"f": entry}}), &[]).await?;
    pool.wait_status("f", "connected", LIMIT).await?;
    Ok(pool)
}

#[tokio::test]
async fn the_agents_token_reads_but_changes_nothing() -> anyhow::Result<()> {
    let pool = started().await?;
    let before = std::fs::read(pool.config_path())?;
    let changes = [
        (
            reqwest::Method::PUT,
            "/api/servers/f",
            Some(json!({"entry": {"command": "sh"}})),
        ),
        (
            reqwest::Method::POST,
            "/api/servers/f/sandbox/allow",
            Some(json!({"access": "read", "path": "~/.ssh"})),
        ),
        (
            reqwest::Method::POST,
            "/api/servers",
            Some(json!({"name": "sh", "entry": {"command": "sh"}})),
        ),
        (reqwest::Method::DELETE, "/api/servers/f", None),
        (reqwest::Method::POST, "/api/servers/f/tools/echo/disable", None),
        (reqwest::Method::POST, "/api/servers/f/login", None),
        (
            reqwest::Method::POST,
            "/api/secrets",
            Some(json!({"name": "x", "value": "y"})),
        ),
        (reqwest::Method::POST, "/api/ui/link", None),
    ];
    for (method, path, body) in changes {
        let (status, answer) = pool.api_as_agent(method.clone(), path, body).await?;
        assert_eq!(status, 403, "{method} {path}: {answer}");
        let sentence = answer["error"].as_str().unwrap_or_default();
        assert!(sentence.contains("mcpool ui"), "{method} {path}: {answer}");
    }
    assert_eq!(std::fs::read(pool.config_path())?, before, "nothing written");
    let server = pool.server("f").await?;
    assert_eq!(server["status"], "connected");

    // Reading, reconnecting and disconnecting stay the agents' own.
    let (status, _) = pool.api_as_agent(reqwest::Method::GET, "/api/servers", None).await?;
    assert_eq!(status, 200);
    let (status, answer) = pool
        .api_as_agent(reqwest::Method::POST, "/api/servers/f/disconnect", None)
        .await?;
    assert_eq!(status, 200, "{answer}");
    let (status, answer) = pool
        .api_as_agent(reqwest::Method::POST, "/api/servers/f/reconnect", None)
        .await?;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["server"]["status"], "connected");
    assert_eq!(std::fs::read(pool.config_path())?, before);
    Ok(())
}

#[tokio::test]
async fn the_control_credential_and_a_dashboard_session_change_things() -> anyhow::Result<()> {
    let mut pool = started().await?;
    // The file: the user's alone, in a folder of the user's alone.
    let file = pool.control_file();
    let mode = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.permissions().mode() & 0o777);
    assert_eq!(mode(&file)?, 0o600);
    assert_eq!(mode(file.parent().unwrap())?, 0o700);
    let control = pool.control()?;
    assert_eq!(control.len(), 64);
    assert_ne!(control, pool.token);
    assert!(!pool.logs().contains(&control), "never logged");
    assert_no_keyring_item_holds(&control)?;

    let (status, answer) = pool
        .api(reqwest::Method::POST, "/api/servers/f/tools/echo/disable", None)
        .await?;
    assert_eq!(status, 200, "{answer}");
    let text = std::fs::read_to_string(pool.config_path())?;
    assert!(text.contains("disabledTools"), "{text}");

    // A dashboard session, from a link only the control credential gets.
    let (status, link) = pool.api(reqwest::Method::POST, "/api/ui/link", None).await?;
    assert_eq!(status, 200, "{link}");
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let signed_in = http
        .get(pool.url(link["path"].as_str().unwrap_or_default()))
        .send()
        .await?;
    assert_eq!(signed_in.status(), 303);
    let cookie = signed_in.headers()["set-cookie"]
        .to_str()?
        .split(';')
        .next()
        .unwrap_or_default()
        .to_string();
    let enabled = http
        .post(pool.url("/api/servers/f/tools/echo/enable"))
        .header("cookie", &cookie)
        .header("origin", pool.url(""))
        .header("sec-fetch-site", "same-origin")
        .send()
        .await?;
    assert_eq!(enabled.status(), 200, "{}", enabled.text().await?);
    let text = std::fs::read_to_string(pool.config_path())?;
    assert!(!text.contains("\"echo\""), "{text}");

    // mcpool's own CLI reads the file: `mcpool ui` gets a link.
    let o = pool.cli(&["ui", "--no-open"], None).await?;
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("/ui/login?code="));

    // A clean stop takes the file away.
    pool.stop().await?;
    assert!(!file.exists(), "{} is left", file.display());
    Ok(())
}

#[tokio::test]
async fn without_the_control_file_the_cli_says_what_is_missing() -> anyhow::Result<()> {
    let pool = started().await?;
    std::fs::remove_file(pool.control_file())?;
    let o = pool.cli(&["ui", "--no-open"], None).await?;
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("control credential"), "{err}");
    // Reading and reconnecting still work with the agents' token.
    let o = pool.cli(&["reconnect", "f"], None).await?;
    assert!(o.status.success(), "{}", stderr(&o));
    let o = pool.cli(&["status"], None).await?;
    assert!(o.status.success(), "{}", stderr(&o));
    Ok(())
}

/// Every item of every collection of the test keyring: none holds `value`.
fn assert_no_keyring_item_holds(value: &str) -> anyhow::Result<()> {
    use secret_service::blocking::SecretService;
    let ss = SecretService::connect(secret_service::EncryptionType::Dh)?;
    let mut seen = 0;
    for collection in ss.get_all_collections()? {
        if collection.is_locked()? {
            collection.unlock()?;
        }
        for item in collection.get_all_items()? {
            // Other tests in this binary set and delete items meanwhile: an
            // item gone between the listing and the read holds nothing.
            let Ok(secret) = item.get_secret() else { continue };
            seen += 1;
            assert_ne!(secret, value.as_bytes(), "a keyring item holds the control credential");
        }
    }
    anyhow::ensure!(seen > 0, "the keyring holds no item at all (not even the token's)");
    Ok(())
}

/// The pid of the Secret Service on this session bus.
fn keyring_pid() -> anyhow::Result<u32> {
    let conn = zbus::blocking::Connection::session()?;
    let reply = conn.call_method(
        Some("org.freedesktop.DBus"),
        "/org/freedesktop/DBus",
        Some("org.freedesktop.DBus"),
        "GetConnectionUnixProcessID",
        &("org.freedesktop.secrets",),
    )?;
    Ok(reply.body().deserialize::<u32>()?)
}

/// 200 `mcpool secret` commands in a row, as `runs` does them; the daemon
/// that owns the Secret Service name keeps its pid (with-keyring.sh would
/// start a new one if it died, so the pid tells).
async fn two_hundred_secret_commands(dir: &std::path::Path, env: &[(&str, &str)]) -> anyhow::Result<()> {
    let pid = keyring_pid()?;
    for i in 0..200 {
        let name = format!("loop-{}", i % 7);
        let o = match i % 3 {
            0 => mcpool_cli(dir, &["secret", "set", &name], Some("value\n"), env).await?,
            1 => mcpool_cli(dir, &["secret", "list"], None, env).await?,
            _ => mcpool_cli(dir, &["secret", "rm", &name], None, env).await?,
        };
        let listed = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success() || stderr(&o).contains("there is no secret named"),
            "command {i}: {}{listed}",
            stderr(&o)
        );
    }
    assert_eq!(keyring_pid()?, pid, "gnome-keyring-daemon was restarted");
    Ok(())
}

#[tokio::test]
async fn two_hundred_secret_commands_without_an_instance_leave_the_keyring_running() -> anyhow::Result<()> {
    let dir = TempDir::new("secret-loop");
    two_hundred_secret_commands(dir.path(), &[]).await?;
    let o = mcpool_cli(dir.path(), &["secret", "list"], None, &[]).await?;
    assert!(o.status.success(), "{}", stderr(&o));
    Ok(())
}

#[tokio::test]
async fn secret_commands_go_through_the_running_instance() -> anyhow::Result<()> {
    let mut pool = started().await?;
    let listen = format!("127.0.0.1:{}", pool.port);
    let env = [("MCPOOL_LISTEN", listen.as_str())];
    two_hundred_secret_commands(pool.dir.path(), &env).await?;
    let o = pool
        .cli(&["secret", "set", "through-api"], Some("hidden-value\n"))
        .await?;
    assert!(o.status.success(), "{}", stderr(&o));
    let (status, names) = pool.api_as_agent(reqwest::Method::GET, "/api/secrets", None).await?;
    assert_eq!(status, 200);
    assert!(
        names["names"]
            .as_array()
            .is_some_and(|n| n.contains(&json!("through-api"))),
        "{names}"
    );
    assert!(!names.to_string().contains("hidden-value"), "names only");
    // Stored in the keyring itself: read there with no instance running.
    pool.stop().await?;
    let o = pool.cli(&["secret", "list"], None).await?;
    assert!(
        String::from_utf8_lossy(&o.stdout).lines().any(|l| l == "through-api"),
        "{}",
        stderr(&o)
    );
    let o = pool.cli(&["secret", "rm", "through-api"], None).await?;
    assert!(o.status.success(), "{}", stderr(&o));
    Ok(())
}
