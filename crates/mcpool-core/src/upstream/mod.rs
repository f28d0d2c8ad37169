//! Connections to upstream servers: spawn or dial, agree on a protocol
//! revision (`server/discover` for 2026-07-28, else the `initialize`
//! handshake), and hand back a live peer plus what is needed to stop it and
//! to tell why it ended.

pub mod fold_lines;
pub mod handler;
pub mod http_client;
pub mod kept_http;
pub mod ledger;
pub mod line_limit;
pub mod probe;
pub mod sse;
pub mod stdio;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::ProtocolVersion;
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, Peer, RoleClient, RunningService};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;

use crate::config::{ServerSpec, TransportSpec};
use crate::errors::{chain_text, ConnectError};
use crate::os::process::{self, ProcessTree};
use crate::stderr_tail::StderrTail;
pub use handler::{Signal, UpstreamHandler};
use ledger::Observed;

pub type Running = RunningService<RoleClient, UpstreamHandler>;

/// A live connection: its peer, the service task, and for a local server its
/// process group and stderr tail.
pub struct Established {
    pub peer: Peer<RoleClient>,
    pub running: Running,
    pub group: Option<ProcessTree>,
    pub stderr: Option<StderrTail>,
}

/// Connects to `spec`. The caller bounds it with the server's timeout;
/// dropping the future midway stops a spawned process group.
/// `signin` signs every request of a remote server (its bearer token);
/// `log` takes a local server's stderr lines.
pub async fn connect(
    spec: &ServerSpec,
    handler: UpstreamHandler,
    signin: Option<Arc<crate::oauth::Signin>>,
    log: Option<crate::server_logs::ServerLog>,
) -> Result<Established, ConnectError> {
    match &spec.transport {
        TransportSpec::Stdio { .. } => {
            let verdict = probe::Verdict::default();
            let lifecycle = newest_first();
            match local(spec, handler.clone(), lifecycle, Some(verdict.clone()), log.clone()).await {
                // It was only slow to start: a 2026-07-28 server, asked
                // again, this time with nothing but `server/discover`.
                Err(_) if verdict.modern_after_silence() => {
                    let discover = ClientLifecycleMode::Discover {
                        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                    };
                    local(spec, handler, discover, None, log).await
                }
                other => other,
            }
        }
        TransportSpec::Http { url, headers } => streamable(url, headers, handler, signin, newest_first()).await,
        TransportSpec::Sse { url, headers } => legacy_sse(&spec.name, url, headers, handler, signin).await,
    }
}

/// Dials a legacy HTTP+SSE server, with the sign-in's bearer when it has
/// one. That transport belongs to the session revisions: `initialize`.
async fn legacy_sse(
    server: &str,
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
    handler: UpstreamHandler,
    signin: Option<Arc<crate::oauth::Signin>>,
) -> Result<Established, ConnectError> {
    let ledger = handler.ledger.clone();
    let mut headers = headers.clone();
    if let Some(signin) = signin {
        match signin.bearer().await {
            Ok(Some(token)) => {
                headers.insert("Authorization".into(), format!("Bearer {token}"));
            }
            Ok(None) => {}
            Err(e) => return Err(ConnectError::from_transport(&e)),
        }
    }
    let transport = sse::open(server, url, &headers).await?;
    remote(handler, transport, ClientLifecycleMode::Initialize, ledger).await
}

/// A second connection to a Streamable HTTP server, on a session revision
/// (`initialize`, asking for 2025-11-25): for session agents of a server
/// that the pool speaks 2026-07-28 with (supervisor/session_upstream.rs).
/// `None` for the other transports: a local server would be a second
/// process, and a legacy SSE one is on a session revision already.
pub async fn connect_session(
    spec: &ServerSpec,
    handler: UpstreamHandler,
    signin: Option<Arc<crate::oauth::Signin>>,
) -> Option<Result<Established, ConnectError>> {
    match &spec.transport {
        TransportSpec::Http { url, headers } => {
            Some(streamable(url, headers, handler, signin, ClientLifecycleMode::Initialize).await)
        }
        TransportSpec::Stdio { .. } | TransportSpec::Sse { .. } => None,
    }
}

/// A second connection with `initialize`, whatever the transport (a local
/// server's is a second process of it), declaring what `handler` declares:
/// the MCP Apps connection of a server on a session revision
/// (supervisor/session_upstream.rs).
pub async fn connect_declaring(
    spec: &ServerSpec,
    handler: UpstreamHandler,
    signin: Option<Arc<crate::oauth::Signin>>,
) -> Result<Established, ConnectError> {
    match &spec.transport {
        TransportSpec::Stdio { .. } => local(spec, handler, ClientLifecycleMode::Initialize, None, None).await,
        TransportSpec::Http { url, headers } => {
            streamable(url, headers, handler, signin, ClientLifecycleMode::Initialize).await
        }
        TransportSpec::Sse { url, headers } => legacy_sse(&spec.name, url, headers, handler, signin).await,
    }
}

/// Dials a Streamable HTTP server and agrees on a revision with `lifecycle`.
async fn streamable(
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
    handler: UpstreamHandler,
    signin: Option<Arc<crate::oauth::Signin>>,
    lifecycle: ClientLifecycleMode,
) -> Result<Established, ConnectError> {
    let ledger = handler.ledger.clone();
    url::Url::parse(url).map_err(|e| ConnectError::InvalidUrl(e.to_string()))?;
    let mut custom = HashMap::new();
    for (k, v) in headers {
        let name = http::HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| ConnectError::Other(format!("header '{k}' is not a valid name")))?;
        let value = http::HeaderValue::from_str(v)
            .map_err(|_| ConnectError::Other(format!("the value of header '{k}' is not valid")))?;
        custom.insert(name, value);
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(url)
        .custom_headers(custom)
        .reinit_on_expired_session(true);
    // The standalone event stream may retry a few times; after that the
    // connection counts as dropped instead of retrying forever.
    let mut retry = ExponentialBackoff::default();
    retry.max_times = Some(3);
    retry.base_duration = Duration::from_millis(500);
    retry.max_delay = Some(Duration::from_secs(4));
    config.retry_config = Arc::new(retry);
    match signin {
        Some(signin) => {
            let client =
                crate::oauth::SignedInClient::new(kept_http::KeptClient::new(http_client::http_client()), signin);
            let transport = StreamableHttpClientTransport::with_client(client, config);
            remote(handler, transport, lifecycle, ledger).await
        }
        None => {
            let client = kept_http::KeptClient::new(http_client::http_client());
            let transport = StreamableHttpClientTransport::with_client(client, config);
            remote(handler, transport, lifecycle, ledger).await
        }
    }
}

/// How long a local server may leave `server/discover` unanswered before it
/// gets `initialize` instead (rmcp alone waits 10 s at every connect).
pub const PROBE_SILENCE: Duration = Duration::from_secs(2);

/// Spawns a local server and agrees on a revision with `lifecycle`; with a
/// `verdict`, a probe unanswered for [`PROBE_SILENCE`] falls back to
/// `initialize`, and the verdict tells whether the server proved modern.
async fn local(
    spec: &ServerSpec,
    handler: UpstreamHandler,
    lifecycle: ClientLifecycleMode,
    verdict: Option<probe::Verdict>,
    log: Option<crate::server_logs::ServerLog>,
) -> Result<Established, ConnectError> {
    let ledger = handler.ledger.clone();
    let spawned = stdio::spawn(spec, log)?;
    let mut group = spawned.tree;
    // Our limit is enforced before rmcp's reader, whose own limit sits
    // above it: a reply over it fails its call instead of vanishing.
    // Fields rmcp's types would drop are folded in between (kept/).
    let stdout = fold_lines::FoldLines::new(
        line_limit::LineLimit::new(spawned.stdout, spec.max_message_bytes, &spec.name)
            .with_tail(spawned.stderr.clone()),
    );
    let mut probe = probe::LegacyProbe::new(
        AsyncRwTransport::new_client(stdout, fold_lines::UnfoldLines::new(spawned.stdin))
            .with_max_line_length(spec.max_message_bytes.saturating_add(line_limit::RMCP_HEADROOM)),
    );
    if let Some(verdict) = verdict {
        probe = probe.with_silence(PROBE_SILENCE, verdict);
    }
    let transport = Observed { inner: probe, ledger };
    match handler.serve_with_lifecycle(transport, lifecycle).await {
        Ok(running) => Ok(Established {
            peer: running.peer().clone(),
            running,
            group: Some(group),
            stderr: Some(spawned.stderr),
        }),
        Err(e) => {
            // Give a process that is exiting a moment, so its exit
            // status and last words make the error.
            let status = group.wait_exit(Duration::from_millis(300)).await;
            let reason = match status {
                Some(_) => process::describe_exit(status),
                None => chain_text(&e),
            };
            group.stop(process::STOP_GRACE).await;
            Err(ConnectError::Exited {
                reason,
                stderr: spawned.stderr.last_words(Duration::from_millis(300)).await,
            })
        }
    }
}

/// The newest revision the server supports: `server/discover` first
/// (2026-07-28, stateless); a server that answers it with an error that a
/// 2026-07-28 server would not give (method not found, a 400 to a request
/// without a session) is a session server and gets `initialize` on the same
/// connection, asking for 2025-11-25 (it answers with the newest it has).
/// So does one that refuses it naming only session revisions
/// ([`probe::LegacyProbe`]). A remote server that does not answer the probe
/// at all gets `initialize` after rmcp's 10 s; a local one after
/// [`PROBE_SILENCE`].
pub fn newest_first() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
    }
}

/// Agrees on a revision over a remote transport.
async fn remote<T>(
    handler: UpstreamHandler,
    transport: T,
    lifecycle: ClientLifecycleMode,
    ledger: Arc<ledger::ProgressLedger>,
) -> Result<Established, ConnectError>
where
    T: rmcp::transport::Transport<rmcp::service::RoleClient> + 'static,
{
    let running = handler
        .serve_with_lifecycle(
            Observed {
                inner: probe::LegacyProbe::new(transport),
                ledger,
            },
            lifecycle,
        )
        .await
        .map_err(|e| ConnectError::from_transport(&e))?;
    Ok(Established {
        peer: running.peer().clone(),
        running,
        group: None,
        stderr: None,
    })
}
