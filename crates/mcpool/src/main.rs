//! `mcpool`: the headless pool and endpoint (`serve`), and the commands that
//! talk to a running instance.

mod activity_cmd;
mod bridge;
mod client;
mod connect;
mod doctor;
mod import_cmd;
mod login;
mod registry_cmd;
mod scan_cmd;
mod secret;
mod serve;
mod servers_cmd;
mod tools_cmd;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use mcpool_core::service::Setup;

#[derive(Parser)]
#[command(
    name = "mcpool",
    version,
    about = "One shared, self-healing pool of MCP connections for every agent on this machine"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Clone)]
pub struct Instance {
    /// Address of the endpoint (loopback).
    #[arg(long, env = "MCPOOL_LISTEN", default_value = mcpool_core::os::paths::DEFAULT_LISTEN, global = true)]
    pub listen: SocketAddr,
    #[command(flatten)]
    pub setup: Setup,
}

#[derive(Subcommand)]
enum Command {
    /// Run the pool and its endpoint in the foreground until SIGINT/SIGTERM.
    Serve(serve::ServeArgs),
    /// Show every server of the running instance as a table.
    Status {
        #[command(flatten)]
        instance: Instance,
        /// Print the raw JSON of /api/servers instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Reconnect one server now, bypassing any backoff.
    Reconnect {
        name: String,
        #[command(flatten)]
        instance: Instance,
    },
    /// Disconnect one server: its tools go away until it is enabled again.
    Disconnect {
        name: String,
        #[command(flatten)]
        instance: Instance,
    },
    /// Sign in to a remote server (OAuth) in the browser; waits until it is connected.
    Login {
        name: String,
        #[command(flatten)]
        instance: Instance,
    },
    /// Forget a remote server's sign-in (its tokens).
    Logout {
        name: String,
        #[command(flatten)]
        instance: Instance,
    },
    /// Print the endpoint's bearer token.
    Token {
        #[command(flatten)]
        setup: Setup,
    },
    /// Add the servers of a Claude Desktop, Claude Code, Cursor, VS Code or opencode config.
    Import(import_cmd::ImportArgs),
    /// Manage secrets in the OS keyring, used in the config as ${keyring:NAME}.
    Secret(secret::SecretArgs),
    /// Print what to add to an agent so it uses mcpool, or with --write add it
    /// to the agent's user config in place.
    Connect(connect::ConnectArgs),
    /// Print a one-time link to the dashboard and open it in the browser.
    Ui {
        #[command(flatten)]
        instance: Instance,
        /// Only print the link.
        #[arg(long)]
        no_open: bool,
    },
    /// A stdio MCP server relaying to the running instance (for stdio-only clients).
    Stdio(bridge::StdioArgs),
    /// Add a server to the config: `mcpool add NAME -- COMMAND [ARGS...]` or `mcpool add NAME --url URL`.
    Add(servers_cmd::AddArgs),
    /// Remove a server from the config.
    Remove(servers_cmd::RemoveArgs),
    /// List the config's servers (with their status when an instance runs).
    List(servers_cmd::ListArgs),
    /// Search and list the running instance's tools.
    #[command(subcommand)]
    Tools(tools_cmd::ToolsCommand),
    /// What agents and servers did: tool calls, prompts, reads and server
    /// events from the activity log, oldest first.
    Activity(activity_cmd::ActivityArgs),
    /// Search MCP registries and add a server from one.
    #[command(subcommand)]
    Registry(registry_cmd::RegistryCommand),
    /// Check what usually goes wrong (keyring, config, runtimes, port,
    /// servers, agents, desktop) and say what to do; exit 1 when something is.
    Doctor(doctor::DoctorArgs),
    /// Scan tool definitions for poisoning (hidden text, hidden
    /// instructions, requests for secrets, shadowing): a JSON file of them,
    /// or the running instance's tools; one JSON line per tool.
    Scan(scan_cmd::ScanArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if matches!(cli.command, Command::Serve(_)) {
        // Before the runtime's threads: it forks.
        mcpool_core::os::process::start_guardian();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mcpool: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Serve(args) => serve::run(args).await,
            Command::Status { instance, json } => client::status(&instance, json).await,
            Command::Reconnect { name, instance } => client::action(&instance, &name, "reconnect").await,
            Command::Disconnect { name, instance } => client::action(&instance, &name, "disconnect").await,
            Command::Login { name, instance } => login::login(&instance, &name).await,
            Command::Logout { name, instance } => login::logout(&instance, &name).await,
            Command::Token { setup } => client::print_token(&setup).await,
            Command::Import(args) => import_cmd::run(args).await,
            Command::Secret(args) => secret::run(args).await,
            Command::Connect(args) => connect::run(args).await,
            Command::Ui { instance, no_open } => client::ui(&instance, no_open).await,
            Command::Stdio(args) => bridge::run(args).await,
            Command::Tools(command) => tools_cmd::run(command).await,
            Command::Registry(command) => registry_cmd::run(command).await,
            Command::Activity(args) => activity_cmd::run(args).await,
            Command::Add(args) => servers_cmd::add(args).await,
            Command::Remove(args) => servers_cmd::remove(args).await,
            Command::List(args) => servers_cmd::list(args).await,
            Command::Doctor(args) => doctor::run(args).await,
            Command::Scan(args) => scan_cmd::run(args).await,
        }
    });
    // A command that used the keyring lets go of it before exiting.
    mcpool_core::secrets::close_keyring();
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("mcpool: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `--config`, else `MCPOOL_CONFIG`, else the platform default.
pub fn config_path(flag: Option<PathBuf>) -> PathBuf {
    flag.unwrap_or_else(mcpool_core::os::paths::default_config)
}
