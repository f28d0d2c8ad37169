//! The keepalive of a remote connection and the probe `ping` of a wake
//! (rule 12): a failed or timed-out `ping` is a drop, never a hang.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use rmcp::model::ClientRequest;

use super::{Link, Supervisor};

/// The longest a keepalive `ping` may take.
pub const PING_TIMEOUT: Duration = Duration::from_secs(10);

/// Pings one connection after each interval it was idle, until it goes.
pub(super) struct Keepalive {
    sup: Weak<Supervisor>,
    link: Link,
    every: Duration,
}

impl Keepalive {
    /// Starts the keepalive of `link`, when the pool has keepalive on.
    pub fn start(sup: &Arc<Supervisor>, link: &Link) {
        let Some(every) = sup.ctx.keepalive else { return };
        let keepalive = Keepalive {
            sup: Arc::downgrade(sup),
            link: link.clone(),
            every,
        };
        tokio::spawn(keepalive.run());
    }

    /// Pings a remote connection that has been idle for a whole interval.
    async fn run(self) {
        let Keepalive { sup, link, every } = self;
        let mut seen = link.activity.load(Ordering::Relaxed);
        loop {
            tokio::time::sleep(every).await;
            let Some(sup) = sup.upgrade() else { return };
            if !matches!(&sup.lock().live, Some(l) if l.generation == link.generation) {
                return;
            }
            let now = link.activity.load(Ordering::Relaxed);
            let idle = now == seen;
            seen = now;
            if idle && !sup.ctx.asleep.load(Ordering::Relaxed) && !Self::ping(&sup, &link, PING_TIMEOUT).await {
                return;
            }
        }
    }

    /// Pings `link`. A failure or timeout drops it (tools kept) and returns
    /// false.
    pub async fn ping(sup: &Arc<Supervisor>, link: &Link, timeout: Duration) -> bool {
        let ping = link.peer.send_request(ClientRequest::PingRequest(Default::default()));
        let reason = match tokio::time::timeout(timeout, ping).await {
            Ok(Ok(_)) => return true,
            // A server without ping support still answered: it is there.
            Ok(Err(rmcp::ServiceError::McpError(_))) => return true,
            Ok(Err(e)) => format!("the keepalive ping failed: {}", crate::errors::chain_text(&e)),
            Err(_) => format!("the keepalive ping got no answer within {} s", timeout.as_secs()),
        };
        sup.dropped(link.generation, &reason);
        false
    }
}
