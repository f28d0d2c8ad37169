//! `mcpool stdio` keeps a stdio agent's session while mcpool restarts: the
//! real `mcpool serve` on a port chosen by the test, stopped (SIGTERM or
//! SIGKILL) and started again on the same port, under an rmcp client that
//! spawned `mcpool stdio` as a stdio-only client does.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{anyhow, Context};
use mcpool_tests::*;
use rmcp::model::{ClientRequest, PingRequest};
use rmcp::service::ServiceExt;
use rmcp::transport::TokioChildProcess;
use serde_json::{json, Value};
use tokio::process::{Child, Command};

const LIMIT: Duration = Duration::from_secs(20);

/// `mcpool serve` on a fixed loopback port, so it can come back where the
/// bridge looks for it.
struct Instance {
    dir: TempDir,
    port: u16,
    token: String,
    child: Option<Child>,
    starts: usize,
}

impl Instance {
    fn new(tag: &str, config: Value) -> anyhow::Result<Self> {
        let dir = TempDir::new(tag);
        write_config(dir.path(), &config)?;
        let port = free_port()?;
        Ok(Instance {
            dir,
            port,
            token: format!("restart-token-{}", std::process::id()),
            child: None,
            starts: 0,
        })
    }

    fn listen(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("spawns.log")
    }

    fn logs(&self) -> String {
        (1..=self.starts)
            .map(|n| std::fs::read_to_string(self.dir.path().join(format!("mcpool.{n}.stderr"))).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n---\n")
    }

    async fn launch(&mut self) -> anyhow::Result<()> {
        self.starts += 1;
        let stderr = std::fs::File::create(self.dir.path().join(format!("mcpool.{}.stderr", self.starts)))?;
        let mut cmd = Command::new(bin("mcpool"));
        cmd.args(["serve", "--config"])
            .arg(self.dir.path().join("config.json"))
            .args(["--listen", &self.listen()])
            .env("MCPOOL_TOKEN", &self.token)
            .env_remove("MCPOOL_LISTEN")
            .env_remove("MCPOOL_CONFIG")
            .env_remove("MCPOOL_CACHE_DIR")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true);
        for (k, v) in instance_env(self.dir.path()) {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn()?;
        first_line(&mut child, LIMIT)
            .await
            .with_context(|| format!("mcpool did not start listening: {}", self.logs()))?;
        self.child = Some(child);
        Ok(())
    }

    async fn stop(&mut self, signal: i32) -> anyhow::Result<()> {
        let mut child = self.child.take().context("not running")?;
        if let Some(pid) = child.id() {
            // SAFETY: signals the child we spawned.
            unsafe { libc::kill(pid as i32, signal) };
        }
        tokio::time::timeout(LIMIT, child.wait()).await??;
        Ok(())
    }

    async fn wait_connected(&self, name: &str) -> anyhow::Result<()> {
        let deadline = tokio::time::Instant::now() + LIMIT;
        loop {
            let servers: Value = match reqwest::Client::new()
                .get(format!("http://{}/api/servers", self.listen()))
                .bearer_auth(&self.token)
                .send()
                .await
            {
                Ok(r) => r.json().await.unwrap_or_default(),
                Err(_) => Value::Null,
            };
            let up = servers
                .as_array()
                .is_some_and(|a| a.iter().any(|s| s["name"] == name && s["status"] == "connected"));
            if up {
                return Ok(());
            }
            anyhow::ensure!(
                tokio::time::Instant::now() < deadline,
                "{name} did not connect: {}",
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// An agent that spawned `mcpool stdio` for this instance.
    async fn stdio_agent(&self, extra_env: &[(&str, &str)]) -> anyhow::Result<Agent> {
        stdio_agent(self.bridge_command(extra_env)?).await
    }

    /// `mcpool stdio` as a client runs it for this instance; its stderr
    /// goes to `bridge.stderr`.
    fn bridge_command(&self, extra_env: &[(&str, &str)]) -> anyhow::Result<(Command, std::fs::File)> {
        let mut cmd = Command::new(bin("mcpool"));
        cmd.arg("stdio")
            .env("MCPOOL_LISTEN", self.listen())
            .env("MCPOOL_TOKEN", &self.token)
            .env_remove("MCPOOL_STDIO_WAIT");
        for (k, v) in instance_env(self.dir.path()) {
            cmd.env(k, v);
        }
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        Ok((cmd, std::fs::File::create(self.bridge_log())?))
    }

    fn bridge_log(&self) -> PathBuf {
        self.dir.path().join("bridge.stderr")
    }

    fn bridge_logs(&self) -> String {
        std::fs::read_to_string(self.bridge_log()).unwrap_or_default()
    }
}

fn config(instance_log: &std::path::Path) -> Value {
    json!({"mcpServers": {"f": faulty_stdio(instance_log, &[])}})
}

async fn stdio_agent((cmd, stderr): (Command, std::fs::File)) -> anyhow::Result<Agent> {
    let (process, _) = TokioChildProcess::builder(cmd).stderr(stderr).spawn()?;
    let handler = AgentHandler::default();
    let service = handler.clone().serve(process).await?;
    Ok(Agent { service, handler })
}

async fn started(tag: &str) -> anyhow::Result<Instance> {
    let mut mcpool = Instance::new(tag, json!({}))?;
    write_config(mcpool.dir.path(), &config(&mcpool.log()))?;
    mcpool.launch().await?;
    mcpool.wait_connected("f").await?;
    Ok(mcpool)
}

async fn echo(agent: &Agent, said: &str) -> anyhow::Result<String> {
    let result = agent.call("f__echo", json!({"text": said})).await?;
    anyhow::ensure!(result.is_error != Some(true), "echo failed: {}", text(&result));
    Ok(text(&result))
}

async fn next_call_succeeds_after(signal: i32) -> anyhow::Result<()> {
    let mut mcpool = started(&format!("restart-{signal}")).await?;
    let agent = mcpool.stdio_agent(&[]).await?;
    assert_eq!(echo(&agent, "before").await?, "before");
    let changes_before = agent.handler.tool_list_changes();

    mcpool.stop(signal).await?;
    // The agent does nothing special: a call made while mcpool is away
    // waits for it, and goes through once it is back. Made once the bridge
    // has seen mcpool go: one written in the instant mcpool dies may have
    // reached it, and fails once with a sentence instead (README, "What
    // happens when a server fails").
    wait_for("the bridge to see mcpool go", LIMIT, || {
        mcpool.bridge_logs().contains("lost the connection to mcpool")
    })
    .await?;
    let peer = agent.service.peer().clone();
    let during = tokio::spawn(async move {
        let params = rmcp::model::CallToolRequestParams::new("f__echo")
            .with_arguments(json!({"text": "during"}).as_object().cloned().unwrap_or_default());
        peer.call_tool(params).await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    mcpool.launch().await?;
    let during = tokio::time::timeout(LIMIT, during).await??;
    assert_eq!(
        during.as_ref().map(text).ok().as_deref(),
        Some("during"),
        "{during:?}\nbridge:\n{}\nmcpool:\n{}",
        mcpool.bridge_logs(),
        mcpool.logs()
    );
    assert_eq!(echo(&agent, "after").await?, "after");
    let tools = agent.tool_names().await?;
    assert!(tools.contains(&"f__echo".to_string()), "{tools:?}");
    // It heard that the lists may have changed while mcpool was away.
    wait_for("tools/list_changed after the reconnect", LIMIT, || {
        agent.handler.tool_list_changes() > changes_before
    })
    .await?;
    assert!(
        mcpool.bridge_logs().contains("reconnected to mcpool at"),
        "{}",
        mcpool.bridge_logs()
    );

    // What mcpool sends outside any request reaches the agent again (the
    // new session's event stream): a server added to the config.
    let changes = agent.handler.tool_list_changes();
    let g_log = mcpool.dir.path().join("g.log");
    let both = json!({"mcpServers": {"f": faulty_stdio(&mcpool.log(), &[]), "g": faulty_stdio(&g_log, &[])}});
    write_config(mcpool.dir.path(), &both)?;
    mcpool.wait_connected("g").await?;
    wait_for("tools/list_changed from the new session", LIMIT, || {
        agent.handler.tool_list_changes() > changes
    })
    .await?;
    assert!(agent.tool_names().await?.contains(&"g__echo".to_string()));
    Ok(())
}

#[tokio::test]
async fn the_next_call_after_a_restart_succeeds() -> anyhow::Result<()> {
    next_call_succeeds_after(libc::SIGTERM).await
}

#[tokio::test]
async fn the_next_call_after_mcpool_was_killed_succeeds() -> anyhow::Result<()> {
    next_call_succeeds_after(libc::SIGKILL).await
}

#[tokio::test]
async fn a_call_in_flight_during_the_restart_gets_a_clear_error_and_is_not_retried() -> anyhow::Result<()> {
    let mut mcpool = started("restart-in-flight").await?;
    let agent = mcpool.stdio_agent(&[]).await?;
    let peer = agent.service.peer().clone();
    let slow = tokio::spawn(async move {
        let mut params = rmcp::model::CallToolRequestParams::new("f__slow");
        params = params.with_arguments(json!({"ms": 60_000}).as_object().cloned().unwrap_or_default());
        peer.call_tool(params).await
    });
    let log = mcpool.log();
    wait_for("the slow call to reach the server", LIMIT, || {
        count_lines(&log, "call slow") == 1
    })
    .await?;

    mcpool.stop(libc::SIGKILL).await?;
    let outcome = tokio::time::timeout(LIMIT, slow).await??;
    let message = match outcome {
        Ok(result) => panic!("the slow call was answered: {result:?}"),
        Err(e) => e.to_string(),
    };
    assert!(
        message.contains("ended while this request was in flight") && message.contains("it was not retried"),
        "{message}"
    );

    mcpool.launch().await?;
    assert_eq!(echo(&agent, "again").await?, "again");
    assert_eq!(count_lines(&log, "call slow"), 1, "the slow call was not sent again");
    Ok(())
}

#[tokio::test]
async fn a_call_while_mcpool_stays_away_fails_with_a_sentence_and_the_session_lives_on() -> anyhow::Result<()> {
    let mut mcpool = started("restart-away").await?;
    let agent = mcpool.stdio_agent(&[("MCPOOL_STDIO_WAIT", "1")]).await?;
    assert_eq!(echo(&agent, "before").await?, "before");
    mcpool.stop(libc::SIGTERM).await?;

    // The bridge still answers the agent's pings while mcpool is away.
    agent
        .service
        .peer()
        .send_request(ClientRequest::PingRequest(PingRequest::default()))
        .await
        .map_err(|e| anyhow!("ping while away: {e}\n{}", mcpool.bridge_logs()))?;

    let away = agent.call("f__echo", json!({"text": "nobody"})).await;
    let message = format!("{:?}", away.err().context("a call while mcpool is away succeeded")?);
    let sentence = format!(
        "mcpool at {} is not running; start it with `mcpool serve` or the tray app",
        mcpool.listen()
    );
    assert!(message.contains(&sentence), "{message}");

    mcpool.launch().await?;
    assert_eq!(echo(&agent, "back").await?, "back");
    Ok(())
}

#[tokio::test]
async fn an_agent_started_before_mcpool_waits_for_it() -> anyhow::Result<()> {
    let mut mcpool = Instance::new("restart-late", json!({}))?;
    write_config(mcpool.dir.path(), &config(&mcpool.log()))?;
    // As at login: the client spawns `mcpool stdio` before the tray app runs.
    let agent = {
        let connecting = stdio_agent(mcpool.bridge_command(&[])?);
        tokio::pin!(connecting);
        let slept = tokio::select! {
            agent = &mut connecting => Err(anyhow!("the session opened before mcpool ran: {:?}", agent.err())),
            () = tokio::time::sleep(Duration::from_millis(1500)) => Ok(()),
        };
        slept?;
        mcpool.launch().await?;
        tokio::time::timeout(LIMIT, connecting).await??
    };
    assert_eq!(echo(&agent, "late").await?, "late");
    assert!(
        mcpool.bridge_logs().contains("waiting up to 30 s"),
        "{}",
        mcpool.bridge_logs()
    );
    Ok(())
}
