//! Starting an instance and waiting for its servers to connect, the way
//! most tests begin.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::process::Child;

use crate::{faulty_http, faulty_stdio, Mcpool, TempDir};

/// How long [`Mcpool::start_connected`] waits for each server.
const CONNECT_LIMIT: Duration = Duration::from_secs(30);

impl Mcpool {
    /// Starts with `config` and waits until every server its `mcpServers`
    /// names is connected.
    pub async fn start_connected(config: Value) -> anyhow::Result<Self> {
        Self::start_connected_in(TempDir::new("mcpool"), config).await
    }

    /// [`Self::start_connected`] in `dir`, which the test prepared.
    pub async fn start_connected_in(dir: TempDir, config: Value) -> anyhow::Result<Self> {
        let names: Vec<String> = config["mcpServers"]
            .as_object()
            .map(|servers| servers.keys().cloned().collect())
            .unwrap_or_default();
        let pool = Self::start_in(dir, config, &[]).await?;
        for name in &names {
            pool.wait_status(name, "connected", CONNECT_LIMIT).await?;
        }
        Ok(pool)
    }

    /// Starts the HTTP fault server with `args` and an instance in a fresh
    /// dir `tag` whose one server `name` is that remote (the fault server
    /// logs in the same dir, to `NAME.log`), and waits until it is
    /// connected: the instance, the fault server (stopped on drop) and its
    /// MCP URL.
    pub async fn start_with_faulty_remote(
        tag: &str,
        name: &str,
        args: &[&str],
    ) -> anyhow::Result<(Self, Child, String)> {
        let dir = TempDir::new(tag);
        let (faulty, url) = faulty_http(&dir.path().join(format!("{name}.log")), args).await?;
        let pool = Self::start_connected_in(dir, json!({"mcpServers": {name: {"url": url}}})).await?;
        Ok((pool, faulty, url))
    }

    /// Starts an instance in a fresh dir `tag` whose one server `name` is
    /// our fault server over stdio, started with `args`, and waits until it
    /// is connected: the instance and the server's spawn log (in that dir).
    pub async fn start_with_faulty(tag: &str, name: &str, args: &[&str]) -> anyhow::Result<(Self, PathBuf)> {
        let dir = TempDir::new(tag);
        let log = dir.path().join("spawns.log");
        let pool = Self::start_connected_in(dir, json!({"mcpServers": {name: faulty_stdio(&log, args)}})).await?;
        Ok((pool, log))
    }
}
