//! `mcpool scan [FILE]`: the scanner of tool definitions (mcpool-core's
//! `scan`). With FILE, a JSON array of definitions (`{"id"?, "server",
//! "name", "description", "inputSchema", "previous"?}`) scanned offline as
//! one pool; without, the running instance's tools as its last scan found
//! them (`GET /api/servers`). Either way one JSON line per definition:
//! `{"id", "server", "name", "verdict", "findings"}`, exit 0.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, Context};
use clap::Args;
use mcpool_core::scan::{self, Definition};
use serde_json::{json, Value};

use crate::client::send_accepted;
use crate::Instance;

#[derive(Args)]
pub struct ScanArgs {
    /// A JSON array of tool definitions to scan (without: the running
    /// instance's tools).
    file: Option<PathBuf>,
    #[command(flatten)]
    instance: Instance,
}

pub async fn run(args: ScanArgs) -> anyhow::Result<ExitCode> {
    let lines = match &args.file {
        Some(file) => scan_file(file)?,
        None => running(&args.instance).await?,
    };
    let mut out = std::io::stdout().lock();
    for line in lines {
        writeln!(out, "{line}")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// FILE's definitions, scanned as one pool.
fn scan_file(file: &PathBuf) -> anyhow::Result<Vec<Value>> {
    let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let definitions: Vec<Definition> = serde_json::from_str(&text).map_err(|e| {
        anyhow!(
            "{}: not a JSON array of definitions ({{\"server\", \"name\", \"description\", \"inputSchema\"}}): {e}",
            file.display()
        )
    })?;
    scan::scan_all(&definitions)
        .into_iter()
        .map(|report| serde_json::to_value(report).map_err(Into::into))
        .collect()
}

/// The running instance's tools, as its scan found them, and the prompts
/// and resource templates it holds back (with `"kind"`).
async fn running(instance: &Instance) -> anyhow::Result<Vec<Value>> {
    let response = send_accepted(instance, reqwest::Method::GET, "/api/servers").await?;
    let servers: Value = response.error_for_status()?.json().await?;
    let mut lines = Vec::new();
    for server in servers.as_array().into_iter().flatten() {
        for tool in server["tools"].as_array().into_iter().flatten() {
            // A server that is not scanned (`"scan": "off"`) says nothing.
            let Some(verdict) = tool["scan"].as_str() else { continue };
            lines.push(json!({
                "id": null,
                "server": server["name"],
                "name": tool["name"],
                "verdict": verdict,
                "findings": tool["findings"],
            }));
        }
        // Prompts and resource templates held back, named by their kind.
        for held in server["held_back"].as_array().into_iter().flatten() {
            lines.push(json!({
                "id": null,
                "server": server["name"],
                "name": held["name"],
                "kind": held["kind"],
                "verdict": held["verdict"],
                "findings": held["findings"],
            }));
        }
    }
    Ok(lines)
}
