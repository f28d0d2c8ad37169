//! One connection to the server: what a request borrows of it (`Link`),
//! what the supervisor keeps of it (`Live`), listing it, and closing it.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use rmcp::model::ServerPeerInfo;
use rmcp::service::{Peer, RoleClient, RunningServiceCancellationToken};
use rmcp::ServiceError;

use super::listen;
use crate::lifecycle::Lists;
use crate::upstream::ledger::ProgressLedger;
use crate::upstream::stdio::{self, ProcessGroup};

/// A live connection as a request uses it.
#[derive(Clone)]
pub struct Link {
    pub peer: Peer<RoleClient>,
    pub generation: u64,
    pub(super) ledger: Arc<ProgressLedger>,
    pub(super) activity: Arc<AtomicU64>,
    /// A stateless server's `subscriptions/listen` stream.
    pub(super) listen: Option<Arc<listen::Listen>>,
}

/// The connection as the supervisor keeps it while connected.
pub(super) struct Live {
    pub(super) peer: Peer<RoleClient>,
    pub(super) ledger: Arc<ProgressLedger>,
    /// Requests forwarded on this connection; keepalive pings only when
    /// it has not moved for a whole interval.
    pub(super) activity: Arc<AtomicU64>,
    pub(super) listen: Option<Arc<listen::Listen>>,
    pub(super) info: Option<Arc<ServerPeerInfo>>,
    pub(super) generation: u64,
    pub(super) cancel: Option<RunningServiceCancellationToken>,
    pub(super) group: Option<ProcessGroup>,
}

impl Live {
    pub(super) fn link(&self) -> Link {
        Link {
            peer: self.peer.clone(),
            generation: self.generation,
            ledger: self.ledger.clone(),
            activity: self.activity.clone(),
            listen: self.listen.clone(),
        }
    }
}

/// Closes the connection and stops its process group (TERM, then KILL).
pub(super) async fn close(mut live: Live) {
    if let Some(c) = live.cancel.take() {
        c.cancel();
    }
    if let Some(mut group) = live.group.take() {
        group.stop(stdio::STOP_GRACE).await;
    }
    let _ = live.generation;
    let _ = live.info;
}

/// The server's lists; only its tools must list, the rest may fail.
pub(super) async fn list_all(peer: &Peer<RoleClient>) -> Result<Lists, ServiceError> {
    let caps = peer.peer_info().map(|i| i.capabilities.clone()).unwrap_or_default();
    let tools = if caps.tools.is_some() {
        peer.list_all_tools().await?
    } else {
        Vec::new()
    };
    let prompts = if caps.prompts.is_some() {
        peer.list_all_prompts().await.unwrap_or_default()
    } else {
        Vec::new()
    };
    let (resources, templates) = if caps.resources.is_some() {
        (
            peer.list_all_resources().await.unwrap_or_default(),
            peer.list_all_resource_templates().await.unwrap_or_default(),
        )
    } else {
        (Vec::new(), Vec::new())
    };
    Ok(Lists {
        tools,
        prompts,
        resources,
        templates,
    })
}
