//! The log writer every mcpool process uses: stderr, redacted of every
//! secret resolved so far (behaviour.md rule 14).

use std::io::{IsTerminal, Write};

use crate::secrets;

/// One log event on its way to stderr, redacted as a whole of every value
/// resolved from the keyring: libraries such as rmcp log errors that quote
/// the request URL, which may carry one. Give `RedactingStderr::default` to
/// `tracing_subscriber`'s `with_writer`: one writer per event, so a secret
/// split across two `write` calls is still whole when redacted on drop.
#[derive(Default)]
pub struct RedactingStderr(Vec<u8>);

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

/// The log of `mcpool serve` and the tray app: stderr through
/// [`RedactingStderr`], filtered by `MCPOOL_LOG` (default [`DEFAULT_FILTER`]),
/// and each server's own log ([`crate::server_logs::layer`]), which takes
/// `info` and above whatever the filter.
/// mcpool's own `info` and up, rmcp's warnings, but not those of its
/// session loop (`rmcp::service`): each is about a reply to a peer that
/// has gone ("failed to send pending response during drain", "Error
/// sending response"), at `ERROR` though nothing failed that mcpool does
/// not account for itself (the call's outcome, the server's status).
/// `MCPOOL_LOG=info,rmcp=warn` shows them.
pub const DEFAULT_FILTER: &str = "info,rmcp=warn,rmcp::service=off";

pub fn init() {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::Layer;
    let filter = tracing_subscriber::EnvFilter::try_from_env("MCPOOL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_FILTER));
    let stderr = tracing_subscriber::fmt::layer()
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(RedactingStderr::default)
        .with_filter(filter);
    let servers = crate::server_logs::layer().with_filter(tracing_subscriber::filter::LevelFilter::INFO);
    let _ = tracing_subscriber::registry().with(stderr).with(servers).try_init();
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::Layer;

    /// Each event's target and level that passes `DEFAULT_FILTER`.
    #[derive(Clone, Default)]
    struct Seen(Arc<Mutex<Vec<String>>>);

    impl<S: tracing::Subscriber> Layer<S> for Seen {
        fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
            let m = event.metadata();
            crate::sync::lock(&self.0).push(format!("{} {}", m.level(), m.target()));
        }
    }

    #[test]
    fn an_agent_gone_mid_reply_is_not_an_error_in_the_log() {
        let seen = Seen::default();
        let filter = tracing_subscriber::EnvFilter::new(super::DEFAULT_FILTER);
        let subscriber = tracing_subscriber::registry().with(seen.clone().with_filter(filter));
        tracing::subscriber::with_default(subscriber, || {
            tracing::error!(target: "rmcp::service", "failed to send pending response during drain");
            tracing::warn!(target: "rmcp::transport::streamable_http_server", "a library warning");
            tracing::debug!(target: "rmcp::transport", "library detail");
            tracing::info!(target: "mcpool_core::pool", "mcpool's own");
        });
        assert_eq!(
            *crate::sync::lock(&seen.0),
            ["WARN rmcp::transport::streamable_http_server", "INFO mcpool_core::pool"]
        );
    }
}
