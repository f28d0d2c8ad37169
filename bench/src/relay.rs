//! The floor: the least any Streamable HTTP → stdio gateway must do, as a
//! process of its own (`mcpool-bench relay PROGRAM ARGS...`). It takes each
//! POSTed JSON-RPC message, writes it to one child's stdin, and answers a
//! request with the child's line of the same id as `application/json` (a
//! notification or response gets 202). No sessions, no token, no names, no
//! MCP types: one `serde_json::Value` parse per line. Calls are serialised
//! on the one child, so it is measured sequentially only.
//!
//! The bench calls the same echo through it as through mcpool, so "relay −
//! direct" is the cost of the HTTP hop itself on this machine, and "mcpool −
//! relay" is what mcpool adds on top of it.

use crate::*;
use anyhow::Context;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt;
use rmcp::service::{RoleClient, RunningService};
use serde_json::Value;
use std::process::Stdio;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Mutex;

/// The subcommand's name: `mcpool-bench relay PROGRAM ARGS...`.
pub(crate) const SUBCOMMAND: &str = "relay";

struct Upstream {
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
}

/// Serves the relay until stdin closes; prints its URL first.
pub(crate) async fn serve(program: &str, args: &[String]) -> anyhow::Result<()> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("cannot start {program}"))?;
    let upstream = Upstream {
        stdin: child.stdin.take().context("no stdin")?,
        stdout: BufReader::new(child.stdout.take().context("no stdout")?).lines(),
    };
    let app = axum::Router::new()
        .route("/mcp", axum::routing::post(relay))
        .with_state(Arc::new(Mutex::new(upstream)));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("http://{}/mcp", listener.local_addr()?);
    // Ends when the bench closes our stdin (or dies).
    let stop = async {
        let mut sink = Vec::new();
        let _ = tokio::io::AsyncReadExt::read_to_end(&mut tokio::io::stdin(), &mut sink).await;
    };
    // As mcpool does: no Nagle delay on the answers.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app).with_graceful_shutdown(stop).await?;
    drop(child);
    Ok(())
}

async fn relay(State(upstream): State<Arc<Mutex<Upstream>>>, body: Bytes) -> Response {
    let Ok(message) = serde_json::from_slice::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let id = message.get("method").and(message.get("id")).cloned();
    let mut upstream = upstream.lock().await;
    let mut line = body.to_vec();
    line.push(b'\n');
    if upstream.stdin.write_all(&line).await.is_err() {
        return StatusCode::BAD_GATEWAY.into_response();
    }
    let Some(id) = id else {
        return StatusCode::ACCEPTED.into_response();
    };
    // Lines without this id (notifications, logs) are skipped.
    while let Ok(Some(reply)) = upstream.stdout.next_line().await {
        let matches = serde_json::from_str::<Value>(&reply).is_ok_and(|r| r.get("id") == Some(&id));
        if matches {
            return ([(header::CONTENT_TYPE, "application/json")], reply).into_response();
        }
    }
    StatusCode::BAD_GATEWAY.into_response()
}

/// The relay as the bench runs it: this binary, in front of one upstream.
pub(crate) struct Relay {
    child: Child,
    pub(crate) pid: u32,
    url: String,
}

impl Relay {
    pub(crate) async fn start(upstream: &crate::procs::Upstream) -> anyhow::Result<Self> {
        let me = std::env::current_exe()?;
        let mut child = Command::new(me)
            .arg(SUBCOMMAND)
            .arg(&upstream.command)
            .args(&upstream.args)
            // It ends when its stdin does; the pipe stays open in `child`.
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .context("cannot start the relay")?;
        let pid = child.id().context("the relay has no pid")?;
        let url = mcpool_tests::first_line(&mut child, STEP_LIMIT).await?;
        Ok(Relay { child, pid, url })
    }

    /// The same rmcp agent and keep-alive client as mcpool's (no token).
    pub(crate) async fn agent(&self) -> anyhow::Result<RunningService<RoleClient, ()>> {
        mcpool_tests::keep_alive_agent(&self.url, None, STEP_LIMIT).await
    }

    /// The upstream the relay spawned.
    pub(crate) fn upstream_pid(&self) -> Option<u32> {
        sys::descendants(self.pid).first().map(|p| p.pid)
    }

    pub(crate) async fn stop(mut self) {
        drop(self.child.stdin.take());
        if tokio::time::timeout(Duration::from_secs(10), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}
