//! `mcpool import` (behaviour.md §2): the configs of Claude Desktop, Claude Code,
//! Cursor, VS Code and opencode, written in each client's own format into a
//! fake home, are found, planned, imported with their literal secrets moved
//! into the real keyring, never modified, and the imported servers connect.

mod fixtures;

use std::os::unix::fs::PermissionsExt;

use mcpool_tests::*;
use serde_json::json;

use fixtures::*;

#[tokio::test]
async fn dry_run_finds_every_client_and_writes_nothing() -> anyhow::Result<()> {
    let s = Setup::new("import-dry");
    let sources = write_clients(&s);
    write_existing(&s);
    let before = snapshot(s.dir.path());

    let o = s.mcpool(&["import", "--dry-run"]).await?;
    let out = stdout(&o);
    assert!(o.status.success(), "{}\n{out}", stderr(&o));
    assert_no_secret(&out, "the plan");
    assert_no_secret(&stderr(&o), "stderr");

    // Every source is named, with its client.
    for (client, path) in ["Claude Desktop", "Claude Code", "Cursor", "VS Code", "opencode"]
        .iter()
        .zip(&sources)
    {
        let header = format!("From {client} ({}):", path.display());
        assert!(out.lines().any(|l| l == header), "no '{header}' in:\n{out}");
    }
    for server in [
        "github",
        "linear",
        "postgres",
        "search",
        "perplexity",
        "docs",
        "jira",
        "sentry",
    ] {
        assert!(plan_line(&out, server).starts_with("  + add"), "{server}:\n{out}");
    }
    // Already in mcpool, found twice, or a name mcpool uses for another server.
    assert!(plan_line(&out, "filesystem").starts_with("  = skip"), "{out}");
    assert!(plan_line(&out, "filesystem").ends_with("(already in mcpool)"), "{out}");
    assert_eq!(out.matches("add github").count(), 1, "{out}");
    assert_eq!(
        out.matches(&format!(
            "  = skip github (the same server as in {})",
            sources[0].display()
        ))
        .count(),
        1,
        "{out}"
    );
    assert!(plan_line(&out, "fetch").starts_with("  ! skip"), "{out}");

    // Secrets move by name, each said once.
    for (field, name) in [
        (
            "env.GITHUB_PERSONAL_ACCESS_TOKEN",
            "github.env.GITHUB_PERSONAL_ACCESS_TOKEN",
        ),
        ("headers.Authorization", "linear.headers.Authorization"),
        ("env.PGPASSWORD", "postgres.env.PGPASSWORD"),
        ("url query api_key", "search.url.api_key"),
        ("headers.X-Api-Key", "docs.headers.X-Api-Key"),
        ("env.JIRA_API_TOKEN", "jira.env.JIRA_API_TOKEN"),
        ("headers.Authorization", "sentry.headers.Authorization"),
    ] {
        let line = format!("secret {field} moves to the keyring as '{name}'");
        assert_eq!(out.matches(&line).count(), 1, "'{line}' in:\n{out}");
    }
    assert!(!out.contains("JIRA_SITE"), "a plain value is not a secret:\n{out}");
    // The VS Code input is not a literal: the user is told what to set.
    assert!(
        out.contains("mcpool secret set perplexity-key"),
        "the VS Code input needs a secret:\n{out}"
    );
    assert!(out.contains("Dry run: nothing written."), "{out}");

    assert_eq!(snapshot(s.dir.path()), before, "a dry run wrote something");
    assert!(s.secret_names().await?.is_empty());
    Ok(())
}

#[tokio::test]
async fn yes_moves_the_secrets_to_the_keyring_and_never_touches_the_sources() -> anyhow::Result<()> {
    let s = Setup::new("import-yes");
    write_clients(&s);
    let home_before = snapshot(&s.home());

    let o = s.mcpool(&["import", "--yes"]).await?;
    let out = stdout(&o);
    assert!(o.status.success(), "{}\n{out}", stderr(&o));
    assert_no_secret(&out, "stdout");
    assert_no_secret(&stderr(&o), "stderr");
    assert!(
        out.contains(&format!(
            "Added 10 servers to {} (7 secrets moved to the keyring).",
            s.config().display()
        )),
        "{out}"
    );

    // Every source file is byte-identical, and nothing new is in the home.
    assert_eq!(snapshot(&s.home()), home_before, "the import changed the fake home");

    // mcpool's config has references, never a literal secret.
    let text = std::fs::read_to_string(s.config())?;
    assert_no_secret(&text, "mcpool's config");
    let config = s.read_config()?;
    let servers = &config["mcpServers"];
    let mut names: Vec<&String> = servers.as_object().map(|m| m.keys().collect()).unwrap_or_default();
    names.sort();
    assert_eq!(
        names,
        [
            "docs",
            "fetch",
            "filesystem",
            "github",
            "jira",
            "linear",
            "perplexity",
            "postgres",
            "search",
            "sentry"
        ],
        "{config}"
    );
    assert_eq!(
        servers["github"],
        json!({
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-github"],
            "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${keyring:github.env.GITHUB_PERSONAL_ACCESS_TOKEN}"}
        })
    );
    assert_eq!(
        servers["linear"],
        json!({
            "url": "https://mcp.linear.example/mcp",
            "headers": {"Authorization": "Bearer ${keyring:linear.headers.Authorization}"}
        })
    );
    assert_eq!(
        servers["postgres"]["env"]["PGPASSWORD"],
        "${keyring:postgres.env.PGPASSWORD}"
    );
    assert_eq!(
        servers["postgres"]["args"],
        json!(["mcp-server-postgres", "postgresql://shop@localhost/shop"])
    );
    assert_eq!(
        servers["search"]["url"],
        "https://search.example/mcp?api_key=${keyring:search.url.api_key}&region=eu"
    );
    assert_eq!(
        servers["fetch"],
        json!({"command": "uvx", "args": ["mcp-server-fetch"]})
    );
    assert_eq!(
        servers["docs"]["headers"]["X-Api-Key"],
        "${keyring:docs.headers.X-Api-Key}"
    );
    assert_eq!(
        servers["perplexity"]["env"]["PERPLEXITY_API_KEY"],
        "${keyring:perplexity-key}"
    );
    assert_eq!(
        servers["jira"],
        json!({
            "command": "bunx",
            "args": ["jira-mcp", "--site", "acme"],
            "env": {"JIRA_API_TOKEN": "${keyring:jira.env.JIRA_API_TOKEN}", "JIRA_SITE": "acme"}
        })
    );
    assert_eq!(
        servers["sentry"],
        json!({
            "url": "https://mcp.sentry.example/mcp",
            "headers": {"Authorization": "Bearer ${keyring:sentry.headers.Authorization}"},
            "disabled": true
        })
    );

    // The secrets are in the real keyring, under this profile, by name.
    let expected = [
        ("docs.headers.X-Api-Key", DOCS_KEY),
        ("github.env.GITHUB_PERSONAL_ACCESS_TOKEN", GH_TOKEN),
        ("jira.env.JIRA_API_TOKEN", JIRA_TOKEN),
        ("linear.headers.Authorization", LINEAR_KEY),
        ("postgres.env.PGPASSWORD", PG_PASSWORD),
        ("search.url.api_key", SEARCH_KEY),
        ("sentry.headers.Authorization", SENTRY_TOKEN),
    ];
    let listed = s.secret_names().await?;
    assert_eq!(listed, expected.map(|(n, _)| n.to_string()), "mcpool secret list");
    for (name, value) in expected {
        assert_eq!(s.keyring_value(name).await?.as_deref(), Some(value), "{name}");
    }

    // A second import finds nothing new and writes nothing.
    let config_bytes = std::fs::read(s.config())?;
    let all_before = snapshot(s.dir.path());
    let o = s.mcpool(&["import", "--yes"]).await?;
    let out = stdout(&o);
    assert!(o.status.success(), "{}\n{out}", stderr(&o));
    assert!(out.contains("Nothing to import"), "{out}");
    assert!(!out.contains("+ add"), "{out}");
    assert!(!out.contains("moves to the keyring"), "{out}");
    assert_eq!(std::fs::read(s.config())?, config_bytes);
    assert_eq!(snapshot(s.dir.path()), all_before);
    assert_eq!(s.secret_names().await?, listed);
    Ok(())
}

#[tokio::test]
async fn a_file_argument_imports_only_that_file() -> anyhow::Result<()> {
    let s = Setup::new("import-file");
    let sources = write_clients(&s);
    let vscode = &sources[3];
    let before = snapshot(&s.home());

    let o = s.mcpool(&["import", &vscode.display().to_string(), "--yes"]).await?;
    let out = stdout(&o);
    assert!(o.status.success(), "{}\n{out}", stderr(&o));
    let headers: Vec<&str> = out.lines().filter(|l| l.starts_with("From ")).collect();
    assert_eq!(headers, [format!("From VS Code ({}):", vscode.display())], "{out}");
    let config = s.read_config()?;
    let names: Vec<&String> = config["mcpServers"]
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    // In the order the source lists them.
    assert_eq!(names, ["perplexity", "fetch", "docs"], "{config}");
    assert_eq!(
        config["mcpServers"]["perplexity"]["env"]["PERPLEXITY_API_KEY"],
        "${keyring:perplexity-key}"
    );
    assert!(out.contains("Still to set: mcpool secret set perplexity-key"), "{out}");
    assert_eq!(s.secret_names().await?, ["docs.headers.X-Api-Key"]);
    assert_eq!(snapshot(&s.home()), before);

    // A file outside the standard places, e.g. a project's .mcp.json.
    let project = s.write(
        &s.dir.path().join("project/.mcp.json"),
        &serde_json::to_string_pretty(&json!({"mcpServers": {
            "local-db": {"type": "stdio", "command": "db-mcp", "env": {"DB_PASSWORD": "hunter2-db"}}
        }}))?,
    );
    let o = s.mcpool(&["import", &project.display().to_string(), "--yes"]).await?;
    let out = stdout(&o);
    assert!(o.status.success(), "{}\n{out}", stderr(&o));
    assert!(
        out.starts_with(&format!("From Claude Code ({}):", project.display())),
        "{out}"
    );
    assert!(!out.contains("hunter2-db"), "{out}");
    let config = s.read_config()?;
    assert_eq!(
        config["mcpServers"]["local-db"],
        json!({"command": "db-mcp", "env": {"DB_PASSWORD": "${keyring:local-db.env.DB_PASSWORD}"}})
    );
    assert_eq!(config["mcpServers"].as_object().map(|m| m.len()), Some(4), "{config}");

    // A file that is not there fails clearly.
    let o = s.mcpool(&["import", "no-such.json", "--yes"]).await?;
    assert_failed_saying(&o, "cannot read no-such.json");
    Ok(())
}

#[tokio::test]
async fn without_yes_and_without_a_terminal_it_refuses() -> anyhow::Result<()> {
    let s = Setup::new("import-refuse");
    write_clients(&s);
    let before = snapshot(s.dir.path());

    let o = s.mcpool(&["import"]).await?;
    assert!(!o.status.success(), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(err.contains("not writing without confirmation"), "{err}");
    assert!(err.contains("--yes"), "{err}");
    assert_no_secret(&stdout(&o), "stdout");
    assert_no_secret(&err, "stderr");
    assert_eq!(snapshot(s.dir.path()), before, "a refused import wrote something");
    assert!(!s.config().exists());
    assert!(s.secret_names().await?.is_empty());
    Ok(())
}

#[tokio::test]
async fn imported_servers_connect_with_their_secrets_from_the_keyring() -> anyhow::Result<()> {
    let s = Setup::new("import-serve");
    let log = s.dir.path().join("spawns.log");
    let secret = "ghp_0nlyTheKeyringKn0wsThisValue1234";
    // A local server that starts only when the secret reached its env.
    let wrapper = s.write(
        &s.dir.path().join("bin/needs-token.sh"),
        &format!(
            "#!/bin/sh\nif [ \"$GITHUB_TOKEN\" != '{secret}' ]; then echo \"wrong GITHUB_TOKEN: $GITHUB_TOKEN\" >&2; exit 1; fi\nexec '{}' stdio --spawn-log '{}'\n",
            bin("mcpool-faulty").display(),
            log.display()
        ),
    );
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))?;
    // A remote server that answers only with the bearer token.
    let remote_token = "sk-remote0123456789abcdefABCDEF";
    let (_remote, remote_url) = faulty_http(
        &s.dir.path().join("remote.log"),
        &["--require-bearer", remote_token, "--name", "remote"],
    )
    .await?;

    s.write(
        &s.xdg_config().join("Claude/claude_desktop_config.json"),
        &serde_json::to_string_pretty(&json!({"mcpServers": {
            "gh": {"command": "sh", "args": [wrapper], "env": {"GITHUB_TOKEN": secret, "LOG_LEVEL": "debug"}}
        }}))?,
    );
    s.write(
        &s.home().join(".cursor/mcp.json"),
        &serde_json::to_string_pretty(&json!({"mcpServers": {
            "remote": {"url": format!("{remote_url}?api_key=k-123456"), "headers": {"Authorization": format!("Bearer {remote_token}")}}
        }}))?,
    );
    let o = s.mcpool(&["import", "--yes"]).await?;
    assert!(o.status.success(), "{}\n{}", stderr(&o), stdout(&o));
    let written = std::fs::read_to_string(s.config())?;
    assert!(
        !written.contains(secret) && !written.contains(remote_token),
        "{written}"
    );
    let config = s.read_config()?;

    // `serve` runs the imported config under the same keyring profile.
    let profile = s.profile();
    let pool = Mcpool::start_with(config, &[("MCPOOL_PROFILE", &profile)]).await?;
    pool.wait_status("gh", "connected", LIMIT).await?;
    pool.wait_status("remote", "connected", LIMIT).await?;
    let agent = pool.agent("/mcp").await?;
    let r = agent.call("gh__echo", json!({"text": "from the keyring"})).await?;
    assert_eq!(text(&r), "from the keyring");
    let r = agent.call("remote__echo", json!({"text": "remote too"})).await?;
    assert_eq!(text(&r), "remote too");
    assert_eq!(count_lines(&log, "start"), 1);
    assert_no_secret_in(&pool.logs(), &[secret, remote_token]);
    Ok(())
}

fn assert_no_secret_in(text: &str, secrets: &[&str]) {
    for s in secrets {
        assert!(!text.contains(s), "{s} leaked:\n{text}");
    }
}
