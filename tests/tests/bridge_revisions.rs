//! `mcpool stdio` serves both revisions from the agent's first message, as
//! the HTTP endpoint does: official 2026-07-28 SDK clients spawn it and
//! connect at once (the Python SDK 2.x in its default mode, which probes
//! with `server/discover`, and pinned to 2026-07-28, which sends its first
//! request straight away; the TypeScript SDK v2 in `auto` mode), then call
//! a tool. Without an instance, what the agent sent is answered with the
//! sentence, not left to time out. The bridge keeps its connections to
//! mcpool alive across messages.

use std::process::Stdio;
use std::time::{Duration, Instant};

use mcpool_tests::proxy::CountingProxy;
use mcpool_tests::sdk_agents::sdk_agent_2026;
use mcpool_tests::*;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

const LIMIT: Duration = Duration::from_secs(30);
/// The SDKs' own probe waits 10 s (Python) to 60 s (TypeScript) for an
/// answer before they fall back; connecting must take well under that.
const QUICK: Duration = Duration::from_secs(8);

#[tokio::test]
async fn stateless_sdk_clients_connect_through_mcpool_stdio_at_once_and_call() -> anyhow::Result<()> {
    let (dir, log) = TempDir::with_spawn_log("bridge-revisions");
    let pool = Mcpool::start_connected(json!({"mcpServers": {"f": faulty_stdio(&log, &[])}})).await?;
    let listen = format!("127.0.0.1:{}", pool.port);
    let profile = profile_for(dir.path());
    let env = [
        ("MCPOOL_LISTEN", listen.as_str()),
        ("MCPOOL_TOKEN", pool.token.as_str()),
        ("MCPOOL_PROFILE", profile.as_str()),
    ];
    let stdio_cmd = format!("{} stdio", bin("mcpool").display());

    let agents = [("py2", "auto"), ("py2", "2026-07-28"), ("v2", "auto")];
    for (n, (sdk, mode)) in agents.into_iter().enumerate() {
        let text = format!("hello from {sdk} in {mode}");
        let args = json!({"text": text}).to_string();
        let mut argv = vec!["--stdio-cmd", &stdio_cmd, "--tool", "f__echo", "--args", &args];
        if sdk == "py2" {
            argv.extend(["--mode", mode]);
        }
        let started = Instant::now();
        let report = sdk_agent_2026(sdk, &argv, &env).await?;
        let took = started.elapsed();
        let connect = Duration::from_secs_f64(report["connect_s"].as_f64().unwrap_or(f64::MAX));
        println!("{sdk} ({mode}) through mcpool stdio: connected in {connect:?}, whole run {took:?}");
        assert_eq!(report["text"], text, "{sdk} {mode}: {report}");
        assert_eq!(report["is_error"], false, "{sdk} {mode}: {report}");
        assert_eq!(
            report["protocol"], "2026-07-28",
            "{sdk} {mode}: the bridge answered server/discover: {report}"
        );
        assert!(connect < QUICK, "{sdk} {mode}: connecting took {connect:?}");
        assert_eq!(
            count_lines(&log, "call echo"),
            n + 1,
            "each call reached the server once"
        );
    }
    Ok(())
}

/// Writes one message to the bridge's stdin.
async fn send(stdin: &mut tokio::process::ChildStdin, message: Value) -> anyhow::Result<()> {
    stdin.write_all(format!("{message}\n").as_bytes()).await?;
    stdin.flush().await?;
    Ok(())
}

/// The next answer the bridge writes, past any notification the pool sends
/// meanwhile (a list that changed may be told between two calls).
async fn answer(lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>) -> anyhow::Result<Value> {
    loop {
        let line = tokio::time::timeout(LIMIT, lines.next_line())
            .await??
            .ok_or_else(|| anyhow::anyhow!("the bridge closed stdout"))?;
        let message: Value = serde_json::from_str(&line)?;
        if message.get("id").is_some() || message.get("method").is_none() {
            return Ok(message);
        }
    }
}

#[tokio::test]
async fn without_an_instance_the_requests_are_answered_with_the_sentence() -> anyhow::Result<()> {
    let dir = TempDir::new("bridge-revisions-none");
    let (mut child, listen) = stdio_bridge_to_nothing(dir.path())?;
    let mut stdin = child.stdin.take().ok_or_else(|| anyhow::anyhow!("stdin"))?;
    let mut lines = BufReader::new(child.stdout.take().ok_or_else(|| anyhow::anyhow!("stdout"))?).lines();
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let discover = json!({"jsonrpc": "2.0", "id": "d", "method": "server/discover", "params": {"_meta": meta}});
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    for message in [discover, initialize] {
        send(&mut stdin, message).await?;
    }

    let mut ids = Vec::new();
    for _ in 0..2 {
        let reply = answer(&mut lines).await?;
        let said = reply["error"]["message"].as_str().unwrap_or_default();
        assert!(
            said.contains(&format!("no mcpool instance is running at {listen}")),
            "{reply}"
        );
        ids.push(reply["id"].clone());
    }
    ids.sort_by_key(|id| id.to_string());
    assert_eq!(ids, vec![json!("d"), json!(1)], "each got its own answer");
    let status = tokio::time::timeout(LIMIT, child.wait()).await??;
    assert!(!status.success());
    Ok(())
}

#[tokio::test]
async fn the_bridge_keeps_one_connection_alive_across_messages() -> anyhow::Result<()> {
    let (dir, log) = TempDir::with_spawn_log("bridge-keepalive");
    let pool = Mcpool::start_connected(json!({"mcpServers": {"f": faulty_stdio(&log, &[])}})).await?;
    let proxy = CountingProxy::start(format!("127.0.0.1:{}", pool.port).parse()?).await?;
    let mut child = Command::new(bin("mcpool"))
        .arg("stdio")
        .env("MCPOOL_LISTEN", proxy.addr.to_string())
        .env("MCPOOL_TOKEN", &pool.token)
        .env("MCPOOL_PROFILE", profile_for(dir.path()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()?;
    let mut stdin = child.stdin.take().ok_or_else(|| anyhow::anyhow!("stdin"))?;
    let mut lines = BufReader::new(child.stdout.take().ok_or_else(|| anyhow::anyhow!("stdout"))?).lines();
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
    )
    .await?;
    assert!(answer(&mut lines).await?["result"].is_object());
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await?;
    const CALLS: u64 = 12;
    for id in 1..=CALLS {
        send(
            &mut stdin,
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": "f__echo", "arguments": {"text": "again"}}}),
        )
        .await?;
        let reply = answer(&mut lines).await?;
        assert_eq!(reply["id"], id, "{reply}");
        assert_eq!(reply["result"]["content"][0]["text"], "again", "{reply}");
    }
    let connections = proxy.accepted();
    println!("{} messages over {connections} connections", CALLS + 2);
    // The probe, the session's event stream and the POSTs: a few
    // connections, not one per message.
    assert!(connections <= 4, "{connections} connections for {} messages", CALLS + 2);
    Ok(())
}
