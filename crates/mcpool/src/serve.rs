//! `mcpool serve`: load the config, start every server, serve the endpoint,
//! follow config changes, and stop every child on SIGINT/SIGTERM.

use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context};
use mcpool_core::endpoint::{self, EndpointOptions};
use std::sync::Arc;

use axum::serve::ListenerExt;
use mcpool_core::cache::{self, ToolCache};
use mcpool_core::pool::{Pool, PoolOptions};
use mcpool_core::secrets::{self, Keyring};
use mcpool_core::wake::{self, gate::DnsTcp, healer::HealConfig};
use mcpool_core::{config, paths};
use tokio::signal::unix::{signal, SignalKind};
use tokio_util::sync::CancellationToken;

/// How often the config file is checked for changes.
const CONFIG_POLL: Duration = Duration::from_secs(2);
/// How long open agent streams get to finish at shutdown.
const DRAIN: Duration = Duration::from_secs(3);

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Config file (JSON with `mcpServers` or VS Code's `servers`).
    #[arg(long, env = "MCPOOL_CONFIG")]
    config: Option<PathBuf>,
    /// Address to listen on.
    #[arg(long, env = "MCPOOL_LISTEN", default_value = paths::DEFAULT_LISTEN)]
    listen: SocketAddr,
    /// Allow a listen address other than loopback.
    #[arg(long)]
    allow_non_loopback: bool,
    /// Cache dir for tool lists.
    #[arg(long, env = "MCPOOL_CACHE_DIR")]
    cache_dir: Option<PathBuf>,
}

pub async fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    init_tracing();
    if !args.listen.ip().is_loopback() && !args.allow_non_loopback {
        bail!(
            "refusing to listen on {} because it is not a loopback address; pass --allow-non-loopback if you really want other machines to reach your tools",
            args.listen
        );
    }
    let config_path = crate::config_path(args.config);
    let token = crate::client::token_or_create().await?;
    let pool = Pool::new(pool_options(args.cache_dir).await?);
    let mut config_stamp = stamp(&config_path);
    match config::load(&config_path) {
        Ok(c) => {
            tracing::info!("config {}: {} servers", config_path.display(), c.servers.len());
            pool.apply_config(&c);
        }
        Err(problem) => tracing::error!("{problem}; starting with no servers until the file is fixed"),
    }

    let shutdown = CancellationToken::new();
    start_healing(&pool, &shutdown)?;
    let app = endpoint::router(
        pool.clone(),
        EndpointOptions {
            token,
            any_host: args.allow_non_loopback,
            shutdown: shutdown.clone(),
        },
    );
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let local = listener.local_addr()?;
    println!("mcpool listening on http://{local}/mcp");
    tracing::info!("endpoint at http://{local}/mcp, config {}", config_path.display());

    let server_shutdown = shutdown.clone();
    let mut server = tokio::spawn(async move {
        // Small JSON-RPC messages must not wait for Nagle's algorithm.
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, app)
            .with_graceful_shutdown(async move { server_shutdown.cancelled().await })
            .await
    });

    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut poll = tokio::time::interval(CONFIG_POLL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            _ = term.recv() => break,
            _ = int.recv() => break,
            r = &mut server => {
                pool.shutdown().await;
                r??;
                return Ok(ExitCode::FAILURE);
            }
            _ = poll.tick() => {
                let now = stamp(&config_path);
                if now != config_stamp {
                    config_stamp = now;
                    reload(&pool, &config_path);
                }
            }
        }
    }
    tracing::info!("stopping");
    shutdown.cancel();
    pool.shutdown().await;
    if tokio::time::timeout(DRAIN, &mut server).await.is_err() {
        server.abort();
    }
    Ok(ExitCode::SUCCESS)
}

/// The keyring of this profile, and the tool cache with its fingerprint key
/// (from the keyring, or a 0600 file with a warning where there is none).
async fn pool_options(cache_dir: Option<PathBuf>) -> anyhow::Result<PoolOptions> {
    let profile = secrets::profile();
    let keyring = Keyring::for_profile(&profile);
    let cache_dir = cache_dir.unwrap_or_else(paths::default_cache_dir);
    let store = keyring.clone();
    let (fingerprinter, warning) =
        tokio::task::spawn_blocking(move || cache::load_or_create_key(&store, &paths::data_dir())).await??;
    if let Some(w) = warning {
        tracing::warn!("{w}");
    }
    tracing::info!("tool cache in {}", cache_dir.display());
    Ok(PoolOptions {
        backoff: Default::default(),
        secrets: Arc::new(keyring),
        cache: Some((ToolCache::new(&cache_dir), fingerprinter)),
        profile,
        keepalive: match env_secs("MCPOOL_KEEPALIVE_SECS")? {
            Some(0) => None,
            Some(s) => Some(Duration::from_secs(s)),
            None => Some(mcpool_core::pool::DEFAULT_KEEPALIVE),
        },
    })
}

/// A whole number of seconds from the environment, with an error naming it.
fn env_secs(name: &str) -> anyhow::Result<Option<u64>> {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .map(Some)
            .with_context(|| format!("{name}={v:?} is not a whole number of seconds")),
        Err(_) => Ok(None),
    }
}

/// Sleep, wake and network changes heal the pool by themselves (rule 11).
fn start_healing(pool: &Pool, stop: &CancellationToken) -> anyhow::Result<()> {
    let mut config = HealConfig::default();
    if let Some(secs) = env_secs("MCPOOL_WAKE_WINDOW_SECS")? {
        config.window = Duration::from_secs(secs);
    }
    let events = wake::spawn(wake::platform_watchers(), stop.clone());
    tokio::spawn(wake::driver::run(
        pool.clone(),
        events,
        Arc::new(DnsTcp),
        config,
        stop.clone(),
    ));
    Ok(())
}

fn reload(pool: &Pool, path: &Path) {
    match config::load(path) {
        Ok(c) => {
            tracing::info!("config changed: {} servers", c.servers.len());
            pool.apply_config(&c);
        }
        // A half-written or broken file never takes the running servers down.
        Err(problem) => tracing::error!("{problem}; keeping the servers that are running"),
    }
}

fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("MCPOOL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,rmcp=warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(RedactingStderr::default)
        .try_init();
}

/// One log event on its way to stderr, redacted as a whole of every value
/// resolved from the keyring (SPEC rule 14): libraries such as rmcp log
/// errors that quote the request URL, which may carry one.
#[derive(Default)]
struct RedactingStderr(Vec<u8>);

impl Write for RedactingStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for RedactingStderr {
    fn drop(&mut self) {
        if self.0.is_empty() {
            return;
        }
        let line = secrets::redact_resolved(&String::from_utf8_lossy(&self.0));
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }
}
