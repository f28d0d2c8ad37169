//! `mcpool connect CLIENT`: what to add to an agent so it uses mcpool, and
//! with `--write` the edit of that agent's user config in place (a plan
//! first, a backup of the file, a question unless `--yes`).

use std::io::{BufRead, IsTerminal, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::{bail, Context};
use mcpool_core::agent_config::{self as agents, Client, Connection, Dirs};

use crate::Instance;

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ClientKind {
    ClaudeCode,
    ClaudeDesktop,
    Cursor,
    Vscode,
    Opencode,
    Gemini,
    Codex,
}

impl From<ClientKind> for Client {
    fn from(kind: ClientKind) -> Client {
        match kind {
            ClientKind::ClaudeCode => Client::ClaudeCode,
            ClientKind::ClaudeDesktop => Client::ClaudeDesktop,
            ClientKind::Cursor => Client::Cursor,
            ClientKind::Vscode => Client::VsCode,
            ClientKind::Opencode => Client::OpenCode,
            ClientKind::Gemini => Client::Gemini,
            ClientKind::Codex => Client::Codex,
        }
    }
}

#[derive(clap::Args)]
pub struct ConnectArgs {
    client: ClientKind,
    #[command(flatten)]
    instance: Instance,
    /// Add mcpool to the client's user config in place (a backup first).
    #[arg(long)]
    write: bool,
    /// With --write: also switch off, in the client's config, the servers
    /// that mcpool serves, so their tools are not listed twice.
    #[arg(long, requires = "write")]
    replace: bool,
    /// Only show what --write would change.
    #[arg(long)]
    dry_run: bool,
    /// Write without asking.
    #[arg(long, short = 'y')]
    yes: bool,
    /// mcpool's config file (for --replace: which servers mcpool serves).
    #[arg(long, env = "MCPOOL_CONFIG")]
    config: Option<PathBuf>,
    /// The tool listing the client gets: `all` (every tool), `search` (the
    /// search and call tools plus pinned and found tools) or `auto`.
    /// Default: `all` for clients that search tools themselves (Claude
    /// Code, opencode, Cursor), `search` for the others.
    #[arg(long, value_name = "MODE", value_parser = ["all", "search", "auto"])]
    tool_listing: Option<String>,
}

/// How a client reaches the instance at `listen`.
/// `token_fixed`: the token came from `MCPOOL_TOKEN`, which a client does
/// not pass on to the stdio bridge it starts.
pub fn connection(listen: SocketAddr, token: String, token_fixed: bool) -> Connection {
    let mut stdio = vec![agents::mcpool_exe(), "stdio".to_string()];
    if listen.to_string() != mcpool_core::os::paths::DEFAULT_LISTEN {
        stdio.extend(["--listen".to_string(), listen.to_string()]);
    }
    Connection {
        url: format!("http://{listen}/mcp"),
        token,
        stdio,
        stdio_token: token_fixed,
    }
}

pub async fn run(args: ConnectArgs) -> anyhow::Result<ExitCode> {
    let setup = &args.instance.setup;
    let token = crate::client::token_or_create(setup).await?;
    let client = Client::from(args.client);
    let mode = args
        .tool_listing
        .as_deref()
        .and_then(mcpool_core::search::ListingMode::parse)
        .unwrap_or(client.default_listing());
    let conn = connection(args.instance.listen, token, setup.fixed_token().is_some()).with_listing(mode);
    let dirs = Dirs::from_env();
    if !args.write && !args.dry_run {
        let (path, _) = dirs.location(client);
        let hint = match client {
            Client::ClaudeCode => "Run this once (or `mcpool connect claude-code --write`):".to_string(),
            _ => format!(
                "Add to {} (or run `mcpool connect {} --write`):",
                path.display(),
                client.name()
            ),
        };
        eprintln!("{hint}");
        print!("{}", agents::snippet(client, &conn));
        return Ok(ExitCode::SUCCESS);
    }
    let served = if args.replace {
        let path = crate::config_path(args.config);
        let config = mcpool_core::config::load(&path).map_err(|p| anyhow::anyhow!("{p}"))?;
        agents::served(&config.servers.into_values().collect::<Vec<_>>())
    } else {
        Vec::new()
    };
    let plan = {
        let conn = conn.clone();
        tokio::task::spawn_blocking(move || {
            agents::plan(client, &dirs, &conn, &served, args.replace, SystemTime::now())
        })
        .await??
    };
    print!("{}", agents::describe(&plan, &conn));
    if plan.up_to_date() {
        return Ok(ExitCode::SUCCESS);
    }
    if args.dry_run {
        println!("Dry run: nothing written.");
        return Ok(ExitCode::SUCCESS);
    }
    if !args.yes && !confirm()? {
        println!("Nothing written.");
        return Ok(ExitCode::SUCCESS);
    }
    let path = plan.path.clone();
    let written = tokio::task::spawn_blocking(move || agents::apply(&plan)).await??;
    match written.backup {
        Some(backup) => println!("Wrote {} (the old file is in {}).", path.display(), backup.display()),
        None => println!("Wrote {}.", path.display()),
    }
    println!("Restart {} to pick it up.", client.label());
    Ok(ExitCode::SUCCESS)
}

fn confirm() -> anyhow::Result<bool> {
    if !std::io::stdin().is_terminal() {
        bail!("not writing without confirmation: run again with --yes (or --dry-run to only see the plan)");
    }
    print!("Write these changes? [y/N] ");
    std::io::stdout().flush()?;
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .context("cannot read the answer")?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "YES"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippets_carry_url_and_header() {
        let addr: SocketAddr = "127.0.0.1:7410".parse().unwrap();
        let conn = connection(addr, "T0K".into(), false);
        for client in Client::ALL {
            let s = agents::snippet(client, &conn);
            if client == Client::ClaudeDesktop {
                let v: serde_json::Value = serde_json::from_str(&s).unwrap();
                assert_eq!(v["mcpServers"]["mcpool"]["args"], serde_json::json!(["stdio"]), "{s}");
                continue;
            }
            assert!(s.contains("http://127.0.0.1:7410/mcp"), "{s}");
            assert!(s.contains("Bearer T0K"), "{s}");
        }
        let other = connection("127.0.0.1:9".parse().unwrap(), "T".into(), false);
        assert_eq!(other.stdio[1..], ["stdio", "--listen", "127.0.0.1:9"]);
    }
}
