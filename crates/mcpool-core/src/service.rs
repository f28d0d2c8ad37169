//! The running pool as `mcpool serve` and the tray app both start it: the
//! config loaded and followed, the keyring and tool cache, wake healing and
//! the HTTP endpoint. [`start`] sets it all up; the caller decides when to
//! [`Service::shutdown`].

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::serve::ListenerExt;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::cache::{self, ToolCache};
use crate::endpoint::session_store::{self, SessionFile};
use crate::endpoint::{self, EndpointOptions, SessionOptions};
use crate::pool::{Pool, PoolOptions};
use crate::secrets::{self, Keyring};
use crate::token::{self, TokenError};
use crate::wake::{self, gate::DnsTcp, healer::HealConfig};
use crate::{config, paths};

/// How often the config file is checked for changes.
const CONFIG_POLL: Duration = Duration::from_secs(2);
/// How long open agent streams get to finish at shutdown.
const DRAIN: Duration = Duration::from_secs(3);

/// The flags and environment of `mcpool serve`, which the tray app takes
/// too, so agents cannot tell which one runs (`cli` feature: clap).
#[derive(Debug, Clone)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct ServeArgs {
    /// Config file (JSON with `mcpServers` or VS Code's `servers`).
    #[cfg_attr(feature = "cli", arg(long, env = "MCPOOL_CONFIG"))]
    pub config: Option<PathBuf>,
    /// Address to listen on.
    #[cfg_attr(feature = "cli", arg(long, env = "MCPOOL_LISTEN", default_value = crate::paths::DEFAULT_LISTEN))]
    pub listen: SocketAddr,
    /// Allow a listen address other than loopback.
    #[cfg_attr(feature = "cli", arg(long))]
    pub allow_non_loopback: bool,
    /// Cache dir for tool lists.
    #[cfg_attr(feature = "cli", arg(long, env = "MCPOOL_CACHE_DIR"))]
    pub cache_dir: Option<PathBuf>,
    /// Agent sessions open at once on the HTTP endpoint; past it the longest
    /// idle is closed.
    #[cfg_attr(feature = "cli", arg(long, env = "MCPOOL_MAX_SESSIONS", default_value_t = crate::endpoint::sessions::DEFAULT_MAX_SESSIONS as u32, value_parser = clap::value_parser!(u32).range(1..)))]
    pub max_sessions: u32,
}

impl ServeArgs {
    /// A non-loopback address needs `--allow-non-loopback`: checked before
    /// anything else starts.
    pub fn check_listen(&self) -> Result<(), ServiceError> {
        if !self.listen.ip().is_loopback() && !self.allow_non_loopback {
            return Err(ServiceError::NonLoopback(self.listen));
        }
        Ok(())
    }

    /// The service these flags ask for, serving `token`.
    pub fn options(self, token: String) -> Result<ServiceOptions, ServiceError> {
        self.check_listen()?;
        Ok(ServiceOptions {
            config_path: self.config.unwrap_or_else(crate::paths::default_config),
            listen: self.listen,
            allow_non_loopback: self.allow_non_loopback,
            cache_dir: self.cache_dir,
            max_sessions: self.max_sessions as usize,
            token,
        })
    }
}

/// What `mcpool serve` takes from its flags and environment.
#[derive(Debug, Clone)]
pub struct ServiceOptions {
    pub config_path: PathBuf,
    pub listen: SocketAddr,
    pub allow_non_loopback: bool,
    pub cache_dir: Option<PathBuf>,
    /// Agent sessions open at once on the HTTP endpoint.
    pub max_sessions: usize,
    pub token: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("refusing to listen on {0} because it is not a loopback address; pass --allow-non-loopback if you really want other machines to reach your tools")]
    NonLoopback(SocketAddr),
    #[error("cannot listen on {addr}: {error}{hint}", hint = in_use_hint(error))]
    Listen { addr: SocketAddr, error: std::io::Error },
    #[error("cannot set up the tool cache key: {0}")]
    CacheKey(std::io::Error),
    #[error("{name}={value:?} is not a whole number of seconds")]
    EnvSeconds { name: &'static str, value: String },
    #[error(transparent)]
    Token(#[from] TokenError),
    #[error("the endpoint stopped: {0}")]
    Server(std::io::Error),
    #[error("a setup task failed: {0}")]
    Join(#[from] tokio::task::JoinError),
}

/// The pool and its endpoint, running. Dropping it does not stop them: call
/// [`shutdown`](Service::shutdown).
pub struct Service {
    pub pool: Pool,
    /// Where the endpoint really listens (the port is known after binding).
    pub local_addr: SocketAddr,
    pub config_path: PathBuf,
    pub token: String,
    shutdown: CancellationToken,
    server: JoinHandle<std::io::Result<()>>,
}

/// What to try when the address is taken: most often mcpool itself.
fn in_use_hint(error: &std::io::Error) -> &'static str {
    if error.kind() == std::io::ErrorKind::AddrInUse {
        " (is mcpool already running? `mcpool status` asks it; or pick another address with --listen or MCPOOL_LISTEN)"
    } else {
        ""
    }
}

/// Starts everything `mcpool serve` runs. The config is loaded now (a broken
/// one starts an empty pool and is logged) and watched from then on.
pub async fn start(options: ServiceOptions) -> Result<Service, ServiceError> {
    if !options.listen.ip().is_loopback() && !options.allow_non_loopback {
        return Err(ServiceError::NonLoopback(options.listen));
    }
    // Everything that can fail comes before the first server starts, so a
    // failed start leaves no process behind.
    let listen_error = |error| ServiceError::Listen {
        addr: options.listen,
        error,
    };
    let listener = tokio::net::TcpListener::bind(options.listen)
        .await
        .map_err(listen_error)?;
    let local_addr = listener.local_addr().map_err(listen_error)?;
    let pool_options = pool_options(options.cache_dir).await?;
    let session_file = session_file(&pool_options, options.max_sessions).await?;
    let pool = Pool::new(pool_options);
    let shutdown = CancellationToken::new();
    start_healing(&pool, &shutdown)?;

    let config_path = options.config_path;
    // Stamped before reading, so a change made while loading is seen.
    let config_stamp = stamp(&config_path);
    let loaded = config::load(&config_path);
    match &loaded {
        Ok(c) => tracing::info!("config {}: {} servers", config_path.display(), c.servers.len()),
        Err(problem) => tracing::error!("{problem}; starting with no servers until the file is fixed"),
    }
    pool.config_loaded(&config_path, loaded.as_ref());
    tokio::spawn(follow_config(
        pool.clone(),
        config_path.clone(),
        config_stamp,
        shutdown.clone(),
    ));
    let app = endpoint::router_with_sessions(
        pool.clone(),
        EndpointOptions {
            token: options.token.clone(),
            any_host: options.allow_non_loopback,
            shutdown: shutdown.clone(),
        },
        SessionOptions {
            max: options.max_sessions,
            file: session_file,
        },
    );
    tracing::info!("endpoint at http://{local_addr}/mcp, config {}", config_path.display());

    let server_shutdown = shutdown.clone();
    let server = tokio::spawn(async move {
        // Small JSON-RPC messages must not wait for Nagle's algorithm.
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, app)
            .with_graceful_shutdown(async move { server_shutdown.cancelled().await })
            .await
    });
    Ok(Service {
        pool,
        local_addr,
        config_path,
        token: options.token,
        shutdown,
        server,
    })
}

impl Service {
    /// `http://127.0.0.1:PORT/mcp`.
    pub fn endpoint_url(&self) -> String {
        format!("http://{}/mcp", self.local_addr)
    }

    /// Resolves only if the endpoint stops on its own, which is an error.
    pub async fn stopped(&mut self) -> ServiceError {
        match (&mut self.server).await {
            Ok(Ok(())) => ServiceError::Server(std::io::Error::other("the HTTP server ended")),
            Ok(Err(e)) => ServiceError::Server(e),
            Err(e) => ServiceError::Join(e),
        }
    }

    /// Stops every server (and child process), then gives open agent streams
    /// a moment to end.
    pub async fn shutdown(mut self) {
        self.shutdown.cancel();
        self.pool.shutdown().await;
        if tokio::time::timeout(DRAIN, &mut self.server).await.is_err() {
            self.server.abort();
        }
    }
}

/// The token agents need: `MCPOOL_TOKEN`, else the stored one, made now if
/// none exists yet. The second value is a warning to show once (no keyring).
pub async fn token_or_create() -> Result<(String, Option<String>), ServiceError> {
    let env = std::env::var(token::ENV).ok();
    let resolved = tokio::task::spawn_blocking(move || {
        token::resolve(env, &secrets::Keyring::default(), &paths::data_dir(), true)
    })
    .await??;
    let t = resolved.ok_or(ServiceError::Token(TokenError::Empty {
        path: token::token_file(&paths::data_dir()),
    }))?;
    Ok((t.value, t.warning))
}

/// The keyring of this profile, and the tool cache with its fingerprint key
/// (from the keyring, or a 0600 file with a warning where there is none).
async fn pool_options(cache_dir: Option<PathBuf>) -> Result<PoolOptions, ServiceError> {
    let profile = secrets::profile();
    let keyring = Keyring::for_profile(&profile);
    let cache_dir = cache_dir.unwrap_or_else(paths::default_cache_dir);
    let store = keyring.clone();
    let (fingerprinter, warning) =
        tokio::task::spawn_blocking(move || cache::load_or_create_key(&store, &paths::data_dir()))
            .await?
            .map_err(ServiceError::CacheKey)?;
    if let Some(w) = warning {
        tracing::warn!("{w}");
    }
    tracing::info!("tool cache in {}", cache_dir.display());
    Ok(PoolOptions {
        approvals_file: Some(crate::toolctl::approvals::file_for(&paths::data_dir(), &profile)),
        backoff: Default::default(),
        secrets: Arc::new(keyring),
        cache: Some((ToolCache::new(&cache_dir), fingerprinter)),
        profile,
        keepalive: match env_secs("MCPOOL_KEEPALIVE_SECS")? {
            Some(0) => None,
            Some(s) => Some(Duration::from_secs(s)),
            None => Some(crate::pool::DEFAULT_KEEPALIVE),
        },
        builtin_tools: crate::endpoint::builtin::tools(),
    })
}

/// The profile's saved agent sessions (`<data dir>/sessions/<profile>.json`),
/// stamped with its fingerprint key, so agents carry on after a restart.
async fn session_file(pool: &PoolOptions, max: usize) -> Result<Option<Arc<SessionFile>>, ServiceError> {
    let Some((_, fingerprinter)) = &pool.cache else {
        return Ok(None);
    };
    let profile = pool.profile.clone();
    let stamp = session_store::stamp(fingerprinter, &profile);
    let path = session_store::file_for(&paths::data_dir(), &profile);
    let file = tokio::task::spawn_blocking(move || SessionFile::open(path, &profile, stamp, max)).await?;
    Ok(Some(Arc::new(file)))
}

/// Resolves when the process is asked to stop: SIGTERM or SIGINT on Unix,
/// Ctrl-C elsewhere. `mcpool serve` and the tray app then stop every server.
pub async fn stop_requested() -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        Ok(())
    }
    #[cfg(not(unix))]
    tokio::signal::ctrl_c().await
}

/// A whole number of seconds from the environment, with an error naming it.
pub fn env_secs(name: &'static str) -> Result<Option<u64>, ServiceError> {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| ServiceError::EnvSeconds { name, value: v }),
        Err(_) => Ok(None),
    }
}

/// Sleep, wake and network changes heal the pool by themselves (rule 11).
fn start_healing(pool: &Pool, stop: &CancellationToken) -> Result<(), ServiceError> {
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

/// Applies the config file whenever it changes, until `stop`.
async fn follow_config(pool: Pool, path: PathBuf, mut seen: Option<(SystemTime, u64)>, stop: CancellationToken) {
    let mut poll = tokio::time::interval(CONFIG_POLL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = poll.tick() => {
                let now = stamp(&path);
                if now != seen {
                    seen = now;
                    reload(&pool, &path);
                }
            }
        }
    }
}

fn reload(pool: &Pool, path: &Path) {
    let loaded = config::load(path);
    match &loaded {
        Ok(c) => tracing::info!("config changed: {} servers", c.servers.len()),
        // A half-written or broken file never takes the running servers down.
        Err(problem) => tracing::error!("{problem}; keeping the servers that are running"),
    }
    pool.config_loaded(path, loaded.as_ref());
}

fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}
