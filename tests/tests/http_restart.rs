//! Agents on the HTTP endpoint survive a restart of mcpool: the official
//! Python and TypeScript SDK clients keep their client object and session id
//! while mcpool is stopped (SIGTERM, and separately SIGKILL) and started
//! again on the same port, and their next call simply works. A session is
//! accepted only by the profile that saved it, only on the endpoint it was
//! opened on, and restored sessions count toward the session limit and are
//! freed when they end.

use std::time::Duration;

use mcpool_tests::raw::RawSession;
use mcpool_tests::sdk_agents::LineAgent;
use mcpool_tests::*;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(20);

async fn echo(agent: &mut LineAgent, text: &str) -> anyhow::Result<()> {
    let answer = agent
        .command(json!({"op": "call", "tool": "f__echo", "args": {"text": text}}))
        .await?;
    anyhow::ensure!(
        answer["ok"] == true && answer["is_error"] == false && answer["text"] == text,
        "{} agent, call `{text}`: {answer}",
        agent.name
    );
    Ok(())
}

async fn session_of(agent: &mut LineAgent) -> anyhow::Result<Value> {
    Ok(agent.command(json!({"op": "session"})).await?["session_id"].clone())
}

#[tokio::test]
async fn sdk_agents_carry_on_after_a_restart() -> anyhow::Result<()> {
    let log = TempDir::new("restart-spawns");
    let mut pool =
        Mcpool::start_connected(json!({"mcpServers": {"f": faulty_stdio(&log.path().join("spawns"), &[])}})).await?;
    let url = pool.url("/mcp");
    let mut agents = vec![
        LineAgent::python(&url, &pool.token).await?,
        LineAgent::typescript(&url, &pool.token).await?,
    ];
    // A session on one server's own endpoint, by id.
    let single = RawSession::open(&pool, "/servers/f/mcp").await?;
    for agent in &mut agents {
        echo(agent, "before").await?;
    }
    assert_eq!(single.ping().await?, 200);
    let ids: Vec<Value> = futures::future::try_join_all(agents.iter_mut().map(session_of)).await?;

    for (round, kill) in [("SIGTERM", false), ("SIGKILL", true)] {
        let port = pool.port;
        pool.restart_on_same_port(kill, &[]).await?;
        assert_eq!(pool.port, port);
        // Every agent is tried, so a failure names all that failed.
        let mut failed = Vec::new();
        for agent in &mut agents {
            if let Err(e) = echo(agent, &format!("after {round}")).await {
                failed.push(e.to_string());
            }
        }
        let status = single.ping().await?;
        if status != 200 {
            failed.push(format!("/servers/f/mcp session: ping answered {status}"));
        }
        assert!(failed.is_empty(), "after {round}: {failed:#?}\nlogs:\n{}", pool.logs());
        let now: Vec<Value> = futures::future::try_join_all(agents.iter_mut().map(session_of)).await?;
        assert_eq!(now, ids, "the agents kept their sessions");
        let logs = pool.logs();
        assert!(logs.contains("agent sessions from the last run can carry on"), "{logs}");
        let counts = pool.sessions().await?;
        assert_eq!(counts["open"], 3, "{counts}");
        assert_eq!(counts["saved"], 3, "{counts}");
    }
    for agent in agents {
        agent.close().await?;
    }
    Ok(())
}

#[tokio::test]
async fn only_the_profile_and_endpoint_that_saved_a_session_accept_it() -> anyhow::Result<()> {
    let mut pool = Mcpool::start(json!({"mcpServers": {}})).await?;
    let session = RawSession::open(&pool, "/mcp").await?;
    assert_eq!(session.ping().await?, 200);
    let saved = pool
        .data_dir()
        .join("sessions")
        .join(format!("{}.json", profile_for(pool.dir.path())));
    let text = std::fs::read_to_string(&saved)?;
    assert!(text.contains(&session.id), "{text}");
    assert!(!text.contains(&pool.token), "the token is never saved");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&saved)?.permissions().mode() & 0o777, 0o600);

    // Another profile, even with the first one's file copied under its name.
    let other = format!("{}-other", profile_for(pool.dir.path()));
    std::fs::copy(&saved, saved.with_file_name(format!("{other}.json")))?;
    pool.restart_on_same_port(false, &[("MCPOOL_PROFILE", &other)]).await?;
    assert_eq!(session.ping().await?, 404, "another profile refuses the session");
    assert!(
        pool.logs().contains("belong to another profile or to a deleted one"),
        "{}",
        pool.logs()
    );
    assert!(
        !saved.with_file_name(format!("{other}.json")).exists(),
        "the foreign file is removed"
    );

    // Its own profile still has it, but only on the endpoint it was opened on.
    pool.restart_on_same_port(false, &[]).await?;
    let elsewhere = RawSession::with_id(&pool, "/servers/f/mcp", &session.id);
    assert_eq!(elsewhere.ping().await?, 404, "no server f");
    assert_eq!(session.ping().await?, 200, "the profile that saved it accepts it");

    // A session that was ended is not restored.
    assert_eq!(session.delete().await?, 204);
    pool.restart_on_same_port(false, &[]).await?;
    assert_eq!(session.ping().await?, 404);

    // A saved session is known before it is used again: ending it is 204.
    let saved_only = RawSession::open(&pool, "/mcp").await?;
    pool.restart_on_same_port(false, &[]).await?;
    assert_eq!(saved_only.delete().await?, 204);
    assert_eq!(saved_only.ping().await?, 404);
    Ok(())
}

#[tokio::test]
async fn restored_sessions_count_toward_the_limit_and_are_freed() -> anyhow::Result<()> {
    let mut pool = Mcpool::start_with(json!({"mcpServers": {}}), &[("MCPOOL_MAX_SESSIONS", "2")]).await?;
    let a = RawSession::open(&pool, "/mcp").await?;
    let b = RawSession::open(&pool, "/mcp").await?;
    let c = RawSession::open(&pool, "/mcp").await?;
    assert_eq!(a.ping().await?, 404, "closed for the limit, and forgotten");
    pool.restart_on_same_port(true, &[]).await?;
    assert_eq!(pool.sessions().await?["saved"], 2);
    assert_eq!(b.ping().await?, 200);
    assert_eq!(c.ping().await?, 200);
    assert_eq!(a.ping().await?, 404);
    pool.wait_sessions("open", 2, LIMIT).await?;
    pool.wait_sessions("hub_agents", 2, LIMIT).await?;

    // A new session past the limit closes the longest idle restored one.
    let d = RawSession::open(&pool, "/mcp").await?;
    assert_eq!(b.ping().await?, 404);
    assert_eq!(c.ping().await?, 200);
    // Restored, then deleted: freed, and gone from the file.
    assert_eq!(c.delete().await?, 204);
    pool.wait_sessions("open", 1, LIMIT).await?;
    pool.wait_sessions("hub_agents", 1, LIMIT).await?;
    pool.wait_sessions("saved", 1, LIMIT).await?;
    assert_eq!(d.ping().await?, 200);
    Ok(())
}
