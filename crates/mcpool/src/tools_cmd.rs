//! `mcpool tools search QUERY` and `mcpool tools list [--server NAME]`:
//! the running instance's tool search (`GET /api/tools/search`) and its
//! tools with their state and estimated token cost (`GET /api/servers`,
//! `GET /api/tools/listing`).

use std::process::ExitCode;

use anyhow::{anyhow, Context};
use clap::Subcommand;
use serde::Deserialize;

use crate::client::send_accepted;
use crate::Instance;

#[derive(Subcommand)]
pub enum ToolsCommand {
    /// Find tools by what they do, as agents do with mcpool__search_tools
    /// (disabled and held-back tools are shown too, with their state).
    Search {
        /// What you want to do, in plain words.
        query: String,
        /// Only this server's tools.
        #[arg(long)]
        server: Option<String>,
        /// How many results (1-100).
        #[arg(long, default_value_t = 10)]
        limit: usize,
        /// Print the raw JSON of /api/tools/search.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        instance: Instance,
    },
    /// List every server's tools with their state and estimated tokens,
    /// and what each endpoint's listing mode sends.
    List {
        /// Only this server's tools.
        #[arg(long)]
        server: Option<String>,
        #[command(flatten)]
        instance: Instance,
    },
}

pub async fn run(command: ToolsCommand) -> anyhow::Result<ExitCode> {
    match command {
        ToolsCommand::Search {
            query,
            server,
            limit,
            json,
            instance,
        } => search(&instance, &query, server.as_deref(), limit, json).await,
        ToolsCommand::List { server, instance } => list(&instance, server.as_deref()).await,
    }
}

async fn get_json(instance: &Instance, path: &str) -> anyhow::Result<serde_json::Value> {
    let response = send_accepted(instance, reqwest::Method::GET, path).await?;
    let text = response.error_for_status()?.text().await?;
    serde_json::from_str(&text).with_context(|| format!("unexpected answer from {path}"))
}

#[derive(Deserialize)]
struct Found {
    name: String,
    server: String,
    status: String,
    state: String,
    enabled: bool,
    description: String,
}

async fn search(
    instance: &Instance,
    query: &str,
    server: Option<&str>,
    limit: usize,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let mut path = format!("/api/tools/search?q={}&limit={limit}", encode(query));
    if let Some(s) = server {
        path.push_str(&format!("&server={}", encode(s)));
    }
    let answer = get_json(instance, &path).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&answer)?);
        return Ok(ExitCode::SUCCESS);
    }
    let found: Vec<Found> =
        serde_json::from_value(answer["tools"].clone()).context("unexpected answer from /api/tools/search")?;
    if found.is_empty() {
        println!("No tool matches \"{query}\".");
        return Ok(ExitCode::SUCCESS);
    }
    let name_w = found.iter().map(|f| f.name.len()).max().unwrap_or(4).max(4);
    println!("{:<name_w$}  {:<10}  {:<8}  DESCRIPTION", "NAME", "STATUS", "STATE");
    for f in &found {
        let state = if f.enabled {
            f.state.clone()
        } else {
            "disabled".to_string()
        };
        println!(
            "{:<name_w$}  {:<10}  {:<8}  {} ({})",
            f.name, f.status, state, f.description, f.server
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Deserialize)]
struct ServerTools {
    name: String,
    status: String,
    tools: Vec<ToolRow>,
    #[serde(default)]
    tool_tokens: usize,
}

#[derive(Deserialize)]
struct ToolRow {
    name: String,
    state: String,
    enabled: bool,
    #[serde(default)]
    tokens: usize,
}

async fn list(instance: &Instance, only: Option<&str>) -> anyhow::Result<ExitCode> {
    let servers: Vec<ServerTools> = serde_json::from_value(get_json(instance, "/api/servers").await?)
        .context("unexpected answer from /api/servers")?;
    let servers: Vec<&ServerTools> = servers.iter().filter(|s| only.is_none_or(|o| o == s.name)).collect();
    if let Some(o) = only.filter(|_| servers.is_empty()) {
        return Err(anyhow!("the running instance has no server named '{o}'"));
    }
    let server_w = servers.iter().map(|s| s.name.len()).max().unwrap_or(6).max(6);
    let tool_w = servers
        .iter()
        .flat_map(|s| s.tools.iter().map(|t| t.name.len()))
        .max()
        .unwrap_or(4)
        .max(4);
    println!(
        "{:<server_w$}  {:<tool_w$}  {:<8}  {:>6}",
        "SERVER", "TOOL", "STATE", "TOKENS"
    );
    for s in &servers {
        for t in &s.tools {
            let state = if t.enabled { t.state.as_str() } else { "disabled" };
            println!(
                "{:<server_w$}  {:<tool_w$}  {:<8}  {:>6}",
                s.name, t.name, state, t.tokens
            );
        }
        if s.tools.is_empty() {
            println!(
                "{:<server_w$}  {:<tool_w$}  {:<8}  {:>6}",
                s.name, "(no tools)", s.status, 0
            );
        }
    }
    let count: usize = servers.iter().map(|s| s.tools.len()).sum();
    let tokens: usize = servers.iter().map(|s| s.tool_tokens).sum();
    println!("\n{count} tools, about {tokens} tokens listed in full.");
    if only.is_none() {
        let listing = get_json(instance, "/api/tools/listing").await?;
        for e in listing["endpoints"].as_array().into_iter().flatten() {
            println!(
                "{}: toolListing {} (budget {}) sends {}: {} tools, about {} tokens (all would be {} tools, about {} tokens).",
                e["path"].as_str().unwrap_or("?"),
                e["mode"].as_str().unwrap_or("?"),
                e["budget"],
                e["sent"].as_str().unwrap_or("?"),
                e["sent_tools"],
                e["sent_tokens"],
                e["full_tools"],
                e["full_tokens"],
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn encode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}
