//! The supervisor as the wake healer's patient ([`SupervisorPatient`]);
//! the probe `ping` is [`Keepalive`](super::keepalive::Keepalive)'s.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::Supervisor;
use crate::lifecycle::{Admission, Event, Refusal};
use crate::wake::healer::{Patient, Retry};

/// How a server waiting for the network starts its error.
pub const WAITING_PREFIX: &str = "waiting for the network";

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
