//! `mcpool-faulty`: the command line, and the faults that happen before serving.
//!
//! A fault-injecting MCP server for mcpool's integration tests, over stdio or
//! Streamable HTTP. See `tools.rs` for the per-call faults and `http.rs` for
//! the HTTP faults switched at runtime.

mod asks;
mod http;
mod oauth;
mod schemas;
mod server;
mod shared;
mod stdio;
mod tasks;
mod tools;

use std::{io::Write as _, net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};
use rmcp::model::ProtocolVersion;

use crate::{http::HttpOptions, shared::Shared};

/// Lines written before the `--exit-at-start` message, so a client that keeps
/// only the last lines of stderr has more than it keeps.
const EXIT_NOISE_LINES: usize = 30;

#[derive(Debug, Parser)]
#[command(version, about = "A fault-injecting MCP server for mcpool's tests")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve one session on stdin/stdout.
    Stdio {
        #[command(flatten)]
        common: Common,
    },
    /// Serve Streamable HTTP at /mcp, with /control and /stats.
    Http {
        /// Address to bind; port 0 picks a free port (announced on stdout).
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: SocketAddr,
        /// Answer /mcp requests lacking `Authorization: Bearer TOKEN` with 401.
        #[arg(long, value_name = "TOKEN")]
        require_bearer: Option<String>,
        /// Also accept this name in `Host` (repeatable), e.g. a hostname a test maps in /etc/hosts.
        #[arg(long, value_name = "HOST")]
        allow_host: Vec<String>,
        /// Serve a small OAuth authorization server beside /mcp and require its tokens.
        #[arg(long)]
        oauth: bool,
        #[command(flatten)]
        common: Common,
    },
    /// Run until killed, ignoring stdin (the grandchild the `spawn` tool
    /// starts, with its parent's arguments after `linger`, so that a test
    /// finds it by them).
    Linger {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        parent_args: Vec<String>,
    },
}

#[derive(Debug, Args)]
struct Common {
    /// serverInfo name.
    #[arg(long, default_value = "faulty")]
    name: String,
    /// Append "start <pid>", "initialize", "call <tool>", "traceparent <value>"
    /// (of a call that has one) and "cancelled hang" lines to FILE.
    #[arg(long, value_name = "FILE")]
    spawn_log: Option<PathBuf>,
    /// Sleep this long before serving.
    #[arg(long, value_name = "MS")]
    startup_delay_ms: Option<u64>,
    /// Spend this much CPU time before serving, as a Node or Python server
    /// does loading its code (a delay that costs the machine, for start-up
    /// benchmarks: a hundred of them at once share the cores).
    #[arg(long, value_name = "MS")]
    busy_start_ms: Option<u64>,
    /// Write 30 noise lines then MSG to stderr and exit with code 1.
    #[arg(long, value_name = "MSG")]
    exit_at_start: Option<String>,
    /// Exit at start as --exit-at-start does while FILE does not exist
    /// (a server that is not ready yet), serve once it does.
    #[arg(long, value_name = "FILE")]
    fail_until: Option<PathBuf>,
    /// Write TEXT to stderr at start, then serve normally.
    #[arg(long, value_name = "TEXT")]
    stderr_at_start: Option<String>,
    /// Never answer initialize.
    #[arg(long)]
    hang_at_start: bool,
    /// (stdio) Never see `server/discover`: no answer at all, as servers on
    /// SDKs that drop unknown requests before `initialize` do.
    #[arg(long)]
    ignore_discover: bool,
    /// (stdio) Print a non-JSON line to stdout before serving.
    #[arg(long)]
    malformed_at_start: bool,
    /// (stdio) A JSON file holding an array of tool definitions, appended
    /// as written to every tools/list result (broken ones included).
    #[arg(long, value_name = "FILE")]
    raw_tools: Option<PathBuf>,
    /// Prefix every tool name with P.
    #[arg(long, value_name = "P", default_value = "")]
    tools_prefix: String,
    /// Also serve N dynamic echo tools, `extra_0` to `extra_{N-1}` (for
    /// scale benchmarks: many tools per server).
    #[arg(long, value_name = "N", default_value_t = 0)]
    extra_tools: usize,
    /// Newest protocol version to negotiate, e.g. 2025-06-18. The default,
    /// 2025-11-25, keeps it a session server, whose sampling, elicitation and
    /// roots are requests of its own; 2026-07-28 adds the stateless revision.
    #[arg(long, value_name = "VERSION", value_parser = known_version, default_value = "2025-11-25")]
    max_protocol_version: ProtocolVersion,
    /// Oldest protocol version to negotiate; 2026-07-28 (with
    /// --max-protocol-version 2026-07-28) makes a stateless-only server that
    /// refuses `initialize`.
    #[arg(long, value_name = "VERSION", value_parser = known_version)]
    min_protocol_version: Option<ProtocolVersion>,
    /// (2026-07-28) `elicit` asks even a client that did not declare
    /// elicitation, instead of refusing with -32021 as a server should.
    #[arg(long)]
    ignore_client_capabilities: bool,
}

fn known_version(text: &str) -> Result<ProtocolVersion, String> {
    ProtocolVersion::KNOWN_VERSIONS
        .iter()
        .find(|version| version.as_str() == text)
        .cloned()
        .ok_or_else(|| {
            let known: Vec<_> = ProtocolVersion::KNOWN_VERSIONS.iter().map(|v| v.as_str()).collect();
            format!("unknown protocol version; known: {}", known.join(", "))
        })
}

impl Common {
    fn shared(&self, injector: Option<shared::StdoutInjector>) -> Shared {
        let mut shared = Shared::new(
            self.name.clone(),
            self.tools_prefix.clone(),
            Some(self.max_protocol_version.clone()),
            self.spawn_log.clone(),
            injector,
        );
        shared.min_protocol_version = self.min_protocol_version.clone();
        shared.ignore_client_capabilities = self.ignore_client_capabilities;
        shared.add_extra_tools((0..self.extra_tools).map(|i| format!("extra_{i}")));
        shared
    }

    /// The faults that happen before any MCP traffic.
    async fn start(&self) {
        if let Some(path) = &self.spawn_log {
            shared::append_line(path, &format!("start {}", std::process::id()));
        }
        if let Some(text) = &self.stderr_at_start {
            eprintln!("{text}");
        }
        if let Some(ms) = self.startup_delay_ms {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        if let Some(ms) = self.busy_start_ms {
            burn_cpu(Duration::from_millis(ms));
        }
        let not_ready = self
            .fail_until
            .as_ref()
            .filter(|f| !f.exists())
            .map(|f| format!("{} is not there yet", f.display()));
        if let Some(message) = self.exit_at_start.as_ref().or(not_ready.as_ref()) {
            let mut stderr = std::io::stderr().lock();
            for line in 1..=EXIT_NOISE_LINES {
                let _ = writeln!(stderr, "stderr line {line}");
            }
            let _ = writeln!(stderr, "{message}");
            let _ = stderr.flush();
            std::process::exit(1);
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Stdio { common } => {
            common.start().await;
            if common.hang_at_start {
                // Keep reading so the client's writes succeed, but never answer.
                let mut sink = tokio::io::sink();
                tokio::io::copy(&mut tokio::io::stdin(), &mut sink).await?;
                return Ok(());
            }
            if common.malformed_at_start {
                let mut stdout = std::io::stdout().lock();
                writeln!(stdout, "this is not json at start")?;
                stdout.flush()?;
            }
            let raw_tools = match &common.raw_tools {
                Some(path) => {
                    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
                    serde_json::from_slice(&bytes)
                        .with_context(|| format!("{}: expected a JSON array", path.display()))?
                }
                None => Vec::new(),
            };
            stdio::serve(
                common.ignore_discover,
                |injector| common.shared(Some(injector)),
                raw_tools,
            )
            .await
        }
        Command::Http {
            listen,
            require_bearer,
            allow_host,
            oauth,
            common,
        } => {
            common.start().await;
            let options = HttpOptions {
                require_bearer,
                hang_at_start: common.hang_at_start,
                allow_hosts: allow_host,
                oauth,
            };
            http::serve(Arc::new(common.shared(None)), listen, options).await
        }
        Command::Linger { .. } => loop {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        },
    }
}

/// Busy until this process has used `cpu` of CPU time (not wall time: on a
/// loaded machine it takes longer, as loading code does). CPU time is read
/// from `/proc/thread-self/schedstat` (this loop runs on one thread); where there is none, wall time counts.
fn burn_cpu(cpu: Duration) {
    let started = std::time::Instant::now();
    let used = || {
        std::fs::read_to_string("/proc/thread-self/schedstat")
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
            .map_or_else(|| started.elapsed(), Duration::from_nanos)
    };
    let mut x = 0u64;
    while used() < cpu {
        for i in 0..100_000u64 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
        }
    }
}
