//! The running pool as `mcpool serve` and the tray app both start it: the
//! config loaded and followed, the keyring and tool cache, wake healing and
//! the HTTP endpoint. [`start`] sets it all up; the caller decides when to
//! [`Service::shutdown`].

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::serve::ListenerExt;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::agent_config::Dirs;
use crate::cache::{self, ToolCache};
use crate::config;
use crate::control::Control;
use crate::control_credential::ControlCredential;
use crate::endpoint::browser::BrowserAuth;
use crate::endpoint::mcp::session_store::{self, SessionFile};
use crate::endpoint::{self, EndpointOptions, SessionOptions};
use crate::os::paths;
use crate::pool::{Pool, PoolOptions};
use crate::secrets::{self, Keyring};
use crate::token::{self, TokenError};

mod background;
mod wake_driver;
use background::{flush_usage, follow_config, stamp, start_healing};

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
    #[cfg_attr(feature = "cli", arg(long, env = "MCPOOL_LISTEN", default_value = crate::os::paths::DEFAULT_LISTEN))]
    pub listen: SocketAddr,
    /// Allow a listen address other than loopback.
    #[cfg_attr(feature = "cli", arg(long))]
    pub allow_non_loopback: bool,
    /// Cache dir for tool lists.
    #[cfg_attr(feature = "cli", arg(long, env = "MCPOOL_CACHE_DIR"))]
    pub cache_dir: Option<PathBuf>,
    /// Agent sessions open at once on the HTTP endpoint; past it the longest
    /// idle is closed.
    #[cfg_attr(feature = "cli", arg(long, env = "MCPOOL_MAX_SESSIONS", default_value_t = crate::endpoint::mcp::sessions::DEFAULT_MAX_SESSIONS as u32, value_parser = clap::value_parser!(u32).range(1..)))]
    pub max_sessions: u32,
    /// Seconds an agent session may stay idle (no request open and none
    /// sent) before it ends; an open request keeps it alive however long it
    /// takes.
    #[cfg_attr(feature = "cli", arg(long, env = "MCPOOL_SESSION_IDLE_SECS", value_name = "SECS", default_value_t = crate::pool::DEFAULT_SESSION_IDLE.as_secs(), value_parser = clap::value_parser!(u64).range(1..)))]
    pub session_idle_secs: u64,
    /// Largest request body the endpoint takes, in bytes; a larger one gets
    /// HTTP 413 with a JSON-RPC error.
    #[cfg_attr(feature = "cli", arg(long, env = "MCPOOL_MAX_REQUEST_BYTES", value_name = "BYTES", default_value_t = crate::endpoint::mcp::request_check::DEFAULT_MAX_REQUEST_BYTES as u64, value_parser = clap::value_parser!(u64).range(1..)))]
    pub max_request_bytes: u64,
    /// Seconds between keep-alive pings of idle remote connections (0: none).
    #[cfg_attr(feature = "cli", arg(long, env = "MCPOOL_KEEPALIVE_SECS", value_name = "SECS"))]
    pub keepalive_secs: Option<u64>,
    /// Seconds after a wake during which a failed server is retried as soon
    /// as its address resolves and its port answers.
    #[cfg_attr(feature = "cli", arg(long, env = "MCPOOL_WAKE_WINDOW_SECS", value_name = "SECS"))]
    pub wake_window_secs: Option<u64>,
    /// A second address serving only `GET /metrics`, without the token, for
    /// a Prometheus scraper (loopback unless --allow-non-loopback).
    #[cfg_attr(feature = "cli", arg(long, env = "MCPOOL_METRICS_LISTEN", value_name = "ADDR"))]
    pub metrics_listen: Option<SocketAddr>,
    #[cfg_attr(feature = "cli", command(flatten))]
    pub setup: Setup,
}

impl ServeArgs {
    /// A non-loopback address needs `--allow-non-loopback`: checked before
    /// anything else starts.
    pub fn check_listen(&self) -> Result<(), ServiceError> {
        for addr in std::iter::once(self.listen).chain(self.metrics_listen) {
            if !addr.ip().is_loopback() && !self.allow_non_loopback {
                return Err(ServiceError::NonLoopback(addr));
            }
        }
        Ok(())
    }

    /// The service these flags ask for, serving `token`: every setting of
    /// the pool and its endpoint, read here once.
    pub fn options(self, token: String) -> Result<ServiceOptions, ServiceError> {
        let setup = &self.setup;
        self.check_listen()?;
        Ok(ServiceOptions {
            config_path: self.config.unwrap_or_else(crate::os::paths::default_config),
            listen: self.listen,
            allow_non_loopback: self.allow_non_loopback,
            cache_dir: self.cache_dir,
            max_sessions: self.max_sessions as usize,
            session_idle: Duration::from_secs(self.session_idle_secs.max(1)),
            max_request_bytes: usize::try_from(self.max_request_bytes.max(1)).unwrap_or(usize::MAX),
            token,
            token_fixed: setup.fixed_token().is_some(),
            profile: setup.profile().to_string(),
            keepalive: match self.keepalive_secs {
                Some(0) => None,
                Some(s) => Some(Duration::from_secs(s)),
                None => Some(crate::pool::DEFAULT_KEEPALIVE),
            },
            wake_window: self.wake_window_secs.map(Duration::from_secs),
            client_dirs: Dirs::from_env(),
            metrics_listen: self.metrics_listen,
        })
    }
}

/// Which mcpool setup this is, from flags or the environment, for every
/// command: the profile (`--profile`, `MCPOOL_PROFILE`) separates keyring
/// entries, tool cache identities and saved agent sessions of independent
/// setups on one machine; `MCPOOL_TOKEN` fixes the endpoint's token.
#[derive(Debug, Clone, Default)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct Setup {
    /// Keeps this setup's keyring entries, tool cache identities and saved
    /// agent sessions apart from other mcpool setups on this machine.
    #[cfg_attr(
        feature = "cli",
        arg(long = "profile", env = "MCPOOL_PROFILE", value_name = "NAME", global = true)
    )]
    profile: Option<String>,
    /// The endpoint's bearer token, instead of the one kept in the keyring
    /// (from the environment: a flag would show it to every process).
    #[cfg_attr(
        feature = "cli",
        arg(long = "token", env = token::ENV, hide = true, hide_env_values = true, global = true)
    )]
    token: Option<String>,
}

impl Setup {
    pub fn new(profile: Option<&str>, token: Option<&str>) -> Setup {
        Setup {
            profile: profile.map(str::to_string),
            token: token.map(str::to_string),
        }
    }

    /// The profile given, else `default` (a blank one counts as none).
    pub fn profile(&self) -> &str {
        self.profile
            .as_deref()
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .unwrap_or(secrets::DEFAULT_PROFILE)
    }

    /// This profile's keyring.
    pub fn keyring(&self) -> Keyring {
        Keyring::for_profile(self.profile())
    }

    /// `MCPOOL_TOKEN`, unless unset or blank.
    pub fn fixed_token(&self) -> Option<&str> {
        self.token.as_deref().map(str::trim).filter(|t| !t.is_empty())
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
    /// How long an agent session may stay idle before it ends.
    pub session_idle: Duration,
    /// The largest request body the endpoint takes.
    pub max_request_bytes: usize,
    pub token: String,
    /// Whether the token came from `MCPOOL_TOKEN` (so a stdio bridge needs
    /// it in its environment too).
    pub token_fixed: bool,
    /// The setup's profile (see [`Setup`]).
    pub profile: String,
    /// Keep-alive pings of idle remote connections; `None`: none.
    pub keepalive: Option<Duration>,
    /// How long after a wake failed servers are retried as soon as they
    /// can be reached; `None`: the default.
    pub wake_window: Option<Duration>,
    /// Where the agents' own configs live (for `mcpool connect` in the dashboard).
    pub client_dirs: Dirs,
    /// Where `GET /metrics` is served without the token, if anywhere.
    pub metrics_listen: Option<SocketAddr>,
}

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("refusing to listen on {0} because it is not a loopback address; pass --allow-non-loopback if you really want other machines to reach your tools")]
    NonLoopback(SocketAddr),
    #[error("cannot listen on {addr}: {error}{hint}", hint = in_use_hint(error))]
    Listen { addr: SocketAddr, error: std::io::Error },
    #[error("cannot set up the tool cache key: {0}")]
    CacheKey(std::io::Error),
    #[error(transparent)]
    Token(#[from] TokenError),
    #[error("cannot write the control credential {path}: {error}")]
    Control { path: PathBuf, error: std::io::Error },
    #[error("the endpoint stopped: {0}")]
    Server(std::io::Error),
    #[error("a setup task failed: {0}")]
    Join(#[from] tokio::task::JoinError),
}

/// The pool and its endpoint, running. Dropping it does not stop them: call
/// [`shutdown`](Service::shutdown).
pub struct Service {
    pub pool: Pool,
    /// The pool's operations, as the dashboard's API performs them.
    pub control: Control,
    /// Issues the dashboard's one-time sign-in links.
    pub dashboard: Arc<BrowserAuth>,
    /// Where the endpoint really listens (the port is known after binding).
    pub local_addr: SocketAddr,
    pub config_path: PathBuf,
    pub token: String,
    /// Removed at [`shutdown`](Service::shutdown).
    control_credential: ControlCredential,
    shutdown: CancellationToken,
    server: JoinHandle<std::io::Result<()>>,
    /// Where the token-less metrics listener listens, if asked for.
    pub metrics_addr: Option<SocketAddr>,
}

/// What to try when the address is taken: most often mcpool itself.
fn in_use_hint(error: &std::io::Error) -> &'static str {
    if error.kind() == std::io::ErrorKind::AddrInUse {
        " (is mcpool already running? `mcpool status` asks it; or pick another address with --listen or MCPOOL_LISTEN)"
    } else {
        ""
    }
}

/// "1 server", "3 servers": the log's count of a config.
fn servers(n: usize) -> String {
    format!("{n} server{}", if n == 1 { "" } else { "s" })
}

/// Starts everything `mcpool serve` runs. The config is loaded now (a broken
/// one starts an empty pool and is logged) and watched from then on.
pub async fn start(options: ServiceOptions) -> Result<Service, ServiceError> {
    for addr in std::iter::once(options.listen).chain(options.metrics_listen) {
        if !addr.ip().is_loopback() && !options.allow_non_loopback {
            return Err(ServiceError::NonLoopback(addr));
        }
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
    let metrics_listener = match options.metrics_listen {
        Some(addr) => {
            let error = |error| ServiceError::Listen { addr, error };
            let l = tokio::net::TcpListener::bind(addr).await.map_err(error)?;
            let bound = l.local_addr().map_err(error)?;
            Some((l, bound))
        }
        None => None,
    };
    // The standard OTEL_* variables, read where the SDK reads them. A
    // collector set up wrong never keeps the tools from agents.
    if let Err(e) = crate::telemetry::otel::start() {
        tracing::error!("{e}; running without it");
    }
    let mut pool_options = pool_options(options.cache_dir, options.profile, options.keepalive).await?;
    pool_options.session_idle = options.session_idle;
    let session_file = session_file(&pool_options, options.max_sessions).await?;
    // Made anew at every start (the last thing that may fail), for this port: mcpool's own CLI reads it to
    // make changes the agents' token may not.
    let control_credential = ControlCredential::create(local_addr.port()).map_err(|error| ServiceError::Control {
        path: crate::control_credential::file(local_addr.port()),
        error,
    })?;
    // mcpool's own lines about a server join its log from here on.
    crate::server_logs::install(pool_options.server_logs.clone());
    let pool = Pool::new(pool_options);
    let shutdown = CancellationToken::new();
    start_healing(&pool, options.wake_window, &shutdown);
    tokio::spawn(flush_usage(pool.clone(), shutdown.clone()));

    let config_path = options.config_path;
    // Stamped before reading, so a change made while loading is seen.
    let config_stamp = stamp(&config_path);
    let loaded = config::load(&config_path);
    match &loaded {
        Ok(c) => tracing::info!("config {}: {}", config_path.display(), servers(c.servers.len())),
        Err(problem) => tracing::error!("{problem}; starting with no servers until the file is fixed"),
    }
    pool.config_loaded(&config_path, loaded.as_ref());
    tokio::spawn(follow_config(
        pool.clone(),
        config_path.clone(),
        config_stamp,
        shutdown.clone(),
    ));
    let metrics = crate::telemetry::Metrics::watch(&pool);
    let control = Control::new(pool.clone());
    let dashboard = Arc::<BrowserAuth>::default();
    let app = endpoint::router_with_metrics(
        control.clone(),
        EndpointOptions {
            token: options.token.clone(),
            control: control_credential.value().to_string(),
            token_fixed: options.token_fixed,
            client_dirs: Arc::new(options.client_dirs),
            any_host: options.allow_non_loopback,
            max_request_bytes: options.max_request_bytes,
            shutdown: shutdown.clone(),
            dashboard: dashboard.clone(),
        },
        SessionOptions {
            max: options.max_sessions,
            idle: options.session_idle,
            file: session_file,
        },
        metrics.clone(),
    );
    let metrics_addr = metrics_listener.as_ref().map(|(_, a)| *a);
    if let Some((listener, addr)) = metrics_listener {
        tracing::info!("metrics at http://{addr}/metrics (no token)");
        let scrape = crate::telemetry::scrape::router(metrics, options.allow_non_loopback);
        let stop = shutdown.clone();
        // Ends with the service; a failure here is logged, never fatal.
        tokio::spawn(async move {
            let served = axum::serve(listener, scrape)
                .with_graceful_shutdown(async move { stop.cancelled().await })
                .await;
            if let Err(e) = served {
                tracing::error!("the metrics listener on {addr} stopped: {e}");
            }
        });
    }
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
    // Start-up is a burst of work too: what only it needed (its heap, the
    // code of parsing and loading) is given back once it is quiet.
    crate::os::memory::note_work(crate::os::memory::TRIM_AFTER);
    Ok(Service {
        pool,
        control,
        dashboard,
        local_addr,
        config_path,
        token: options.token,
        control_credential,
        shutdown,
        server,
        metrics_addr,
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
        self.control_credential.remove();
        self.shutdown.cancel();
        self.pool.shutdown().await;
        let pool = self.pool.clone();
        let _ = tokio::task::spawn_blocking(move || {
            pool.flush_usage();
            pool.activity().flush(DRAIN);
            if let Some(logs) = pool.server_logs() {
                logs.flush(DRAIN);
            }
            crate::telemetry::otel::flush();
        })
        .await;
        if tokio::time::timeout(DRAIN, &mut self.server).await.is_err() {
            self.server.abort();
        }
    }
}

/// The token agents need: `MCPOOL_TOKEN`, else the profile's stored one,
/// made now if none exists yet. The second value is a warning to show once
/// (no keyring).
pub async fn token_or_create(setup: &Setup) -> Result<(String, Option<String>), ServiceError> {
    let fixed = setup.fixed_token().map(str::to_string);
    let keyring = setup.keyring();
    let resolved =
        tokio::task::spawn_blocking(move || token::resolve(fixed, &keyring, &paths::data_dir(), true)).await??;
    let t = resolved.ok_or(ServiceError::Token(TokenError::Empty {
        path: token::token_file(&paths::data_dir()),
    }))?;
    Ok((t.value, t.warning))
}

/// The keyring of this profile, and the tool cache with its fingerprint key
/// (from the keyring, or a 0600 file with a warning where there is none).
async fn pool_options(
    cache_dir: Option<PathBuf>,
    profile: String,
    keepalive: Option<Duration>,
) -> Result<PoolOptions, ServiceError> {
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
    // The config's `activity` settings are applied when it loads.
    let activity = crate::activity::Activity::open(
        crate::activity::file_for(&paths::data_dir(), &profile),
        crate::activity::Retention::default(),
    );
    Ok(PoolOptions {
        approvals_file: Some(crate::toolctl::approvals::file_for(&paths::data_dir(), &profile)),
        usage_file: Some(crate::usage::file_for(&paths::data_dir(), &profile)),
        server_logs: Some(crate::server_logs::ServerLogs::open(crate::server_logs::file::dir_for(
            &paths::data_dir(),
            &profile,
        ))),
        backoff: Default::default(),
        secrets: Arc::new(keyring),
        cache: Some((ToolCache::new(&cache_dir), fingerprinter)),
        profile,
        keepalive,
        builtin_tools: crate::endpoint::mcp::builtin::tools(),
        activity,
        session_idle: crate::pool::DEFAULT_SESSION_IDLE,
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

/// Resolves when the process is asked to stop
/// ([`crate::os::process::stop_requested`]). `mcpool serve` and the tray
/// app then stop every server.
pub async fn stop_requested() -> std::io::Result<()> {
    crate::os::process::stop_requested().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_server_is_not_servers() {
        assert_eq!(servers(1), "1 server");
        assert_eq!(servers(0), "0 servers");
        assert_eq!(servers(491), "491 servers");
    }

    fn args(keepalive_secs: Option<u64>, wake_window_secs: Option<u64>, setup: Setup) -> ServeArgs {
        ServeArgs {
            config: None,
            listen: "127.0.0.1:0".parse().unwrap(),
            allow_non_loopback: false,
            cache_dir: None,
            max_sessions: 8,
            session_idle_secs: 1800,
            max_request_bytes: 4 << 20,
            keepalive_secs,
            wake_window_secs,
            metrics_listen: None,
            setup,
        }
    }

    #[test]
    fn a_blank_or_missing_profile_is_the_default_one() {
        assert_eq!(Setup::default().profile(), "default");
        assert_eq!(Setup::new(Some("  "), None).profile(), "default");
        assert_eq!(Setup::new(Some("work"), None).profile(), "work");
    }

    #[test]
    fn a_blank_token_is_no_fixed_token() {
        assert_eq!(Setup::new(None, Some(" ")).fixed_token(), None);
        assert_eq!(Setup::new(None, Some(" t0k ")).fixed_token(), Some("t0k"));
    }

    #[test]
    fn the_flags_become_the_service_settings() {
        let o = args(None, None, Setup::default()).options("T".into()).unwrap();
        assert_eq!(o.keepalive, Some(crate::pool::DEFAULT_KEEPALIVE));
        assert_eq!(o.wake_window, None);
        assert_eq!(o.profile, "default");
        assert!(!o.token_fixed);

        let o = args(Some(0), Some(7), Setup::new(Some("work"), Some("T")))
            .options("T".into())
            .unwrap();
        assert_eq!(o.keepalive, None, "0 turns the keep-alive off");
        assert_eq!(o.wake_window, Some(Duration::from_secs(7)));
        assert_eq!(o.profile, "work");
        assert!(o.token_fixed);

        let o = args(Some(30), None, Setup::default()).options("T".into()).unwrap();
        assert_eq!(o.keepalive, Some(Duration::from_secs(30)));

        let mut a = args(None, None, Setup::default());
        (a.session_idle_secs, a.max_request_bytes) = (2, 1000);
        let o = a.options("T".into()).unwrap();
        assert_eq!(o.session_idle, Duration::from_secs(2));
        assert_eq!(o.max_request_bytes, 1000);
    }

    #[test]
    fn a_non_loopback_address_needs_its_flag() {
        let mut a = args(None, None, Setup::default());
        a.listen = "0.0.0.0:0".parse().unwrap();
        assert!(matches!(a.options("T".into()), Err(ServiceError::NonLoopback(_))));
    }

    #[test]
    fn a_non_loopback_metrics_address_needs_the_same_flag() {
        let mut a = args(None, None, Setup::default());
        a.metrics_listen = Some("0.0.0.0:9464".parse().unwrap());
        let refused = a.clone().options("T".into());
        assert!(
            matches!(refused, Err(ServiceError::NonLoopback(addr)) if addr.port() == 9464),
            "{refused:?}"
        );
        a.allow_non_loopback = true;
        assert_eq!(
            a.options("T".into()).unwrap().metrics_listen,
            Some("0.0.0.0:9464".parse().unwrap())
        );
        let mut local = args(None, None, Setup::default());
        local.metrics_listen = Some("127.0.0.1:0".parse().unwrap());
        assert!(local.options("T".into()).is_ok());
    }
}
