//! The supervisor as the wake healer's patient, and the keepalive probe of
//! its remote connections (rule 12): a failed or timed-out `ping` is a drop,
//! never a hang.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::ClientRequest;
use tokio::time::Instant;

use super::{Link, Supervisor};
use crate::config::TransportSpec;
use crate::lifecycle::{Admission, Event, Refusal, Status};
use crate::wake::gate;
use crate::wake::healer::{Patient, Retry};

/// How a server waiting for the network starts its error.
pub const WAITING_PREFIX: &str = "waiting for the network";
/// The longest a probe `ping` may take.
pub const PING_TIMEOUT: Duration = Duration::from_secs(10);

impl Supervisor {
    /// Host and port of a remote server, `None` for a local one.
    pub fn remote_target(&self) -> Option<(String, u16)> {
        match &self.lock().spec.transport {
            TransportSpec::Http { url, .. } | TransportSpec::Sse { url, .. } => gate::target(url),
            TransportSpec::Stdio { .. } => None,
        }
    }

    /// Whether a wake should heal this server: it is connected, or it
    /// dropped (or failed transiently) with its tools kept.
    pub fn healable(&self) -> bool {
        let inner = self.lock();
        match inner.machine.admit(Instant::now()) {
            Admission::Ready | Admission::Dial => {
                inner.machine.status() != Status::Pending || inner.machine.lists().is_some()
            }
            Admission::Refuse(Refusal::Backoff { .. }) => true,
            Admission::Refuse(_) => false,
        }
    }

    /// Pings the live connection. A failure or timeout drops it (tools kept)
    /// and returns false; no connection also returns false.
    pub async fn probe(self: &Arc<Self>, timeout: Duration) -> bool {
        let Some(link) = self.lock().live.as_ref().map(|l| l.link()) else {
            return false;
        };
        self.ping(&link, timeout).await
    }

    async fn ping(self: &Arc<Self>, link: &Link, timeout: Duration) -> bool {
        let ping = link.peer.send_request(ClientRequest::PingRequest(Default::default()));
        let reason = match tokio::time::timeout(timeout, ping).await {
            Ok(Ok(_)) => return true,
            // A server without ping support still answered: it is there.
            Ok(Err(rmcp::ServiceError::McpError(_))) => return true,
            Ok(Err(e)) => format!("the keepalive ping failed: {}", crate::errors::chain_text(&e)),
            Err(_) => format!("the keepalive ping got no answer within {} s", timeout.as_secs()),
        };
        self.dropped(link.generation, &reason);
        false
    }

    /// Pings a remote connection that has been idle for a whole interval.
    pub(super) fn keepalive(self: &Arc<Self>, link: &Link) {
        let Some(every) = self.ctx.keepalive else { return };
        let this = Arc::downgrade(self);
        let link = link.clone();
        tokio::spawn(async move {
            let mut seen = link.activity.load(Ordering::Relaxed);
            loop {
                tokio::time::sleep(every).await;
                let Some(this) = this.upgrade() else { return };
                if !matches!(&this.lock().live, Some(l) if l.generation == link.generation) {
                    return;
                }
                let now = link.activity.load(Ordering::Relaxed);
                let idle = now == seen;
                seen = now;
                if idle && !this.ctx.asleep.load(Ordering::Relaxed) && !this.ping(&link, PING_TIMEOUT).await {
                    return;
                }
            }
        });
    }
}

/// A supervisor seen by the healer.
pub struct SupervisorPatient(pub Arc<Supervisor>);

impl Patient for SupervisorPatient {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn target(&self) -> Option<(String, u16)> {
        self.0.remote_target()
    }

    fn waiting(&self, reason: &str) {
        let sup = &self.0;
        let changed = {
            let mut inner = sup.lock();
            let error = format!("{WAITING_PREFIX}: {reason} (tools kept; reconnects when the network is back)");
            let before = inner.machine.error().map(str::to_string);
            sup.apply(&mut inner, Event::WaitingForNetwork { error: error.clone() });
            before.as_deref() != Some(error.as_str())
        };
        if changed {
            sup.notify_status();
        }
    }

    fn reset_backoff(&self) {
        let mut inner = self.0.lock();
        self.0.apply(&mut inner, Event::ResetBackoff);
    }

    async fn reconnect(&self) -> Result<(), Retry> {
        // On a task of its own: a newer power event aborts the healing
        // batch, and the refresh and attempt it started should still end.
        let sup = self.0.clone();
        let attempt = tokio::spawn(async move {
            // A sign-in that ran out while asleep is refreshed before the
            // reconnect, so no browser is needed.
            sup.refresh_signin().await;
            sup.lock().next_cause = Some("wake");
            sup.peer().await.is_ok()
        });
        if attempt.await.unwrap_or(false) {
            return Ok(());
        }
        let inner = self.0.lock();
        match inner.machine.admit(Instant::now()) {
            Admission::Ready => Ok(()),
            Admission::Refuse(Refusal::Backoff { retry_in, .. }) => Err(Retry::After(retry_in)),
            Admission::Dial => Err(Retry::After(Duration::from_secs(1))),
            Admission::Refuse(_) => Err(Retry::Never),
        }
    }
}
