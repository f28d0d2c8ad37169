//! What a 2026-07-28 (stateless) server announces on its own: list changes
//! and resource updates arrive only on a `subscriptions/listen` stream. One
//! stream per connection, opened after connecting, reopened when it ends
//! while the connection lives, and reopened with the new URIs when the
//! agents' resource subscriptions change (`resources/subscribe` is gone in
//! that revision).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{NotificationMetaObject, ServerNotification, ServerResult, SubscriptionFilter};
use rmcp::service::{Peer, RoleClient};
use tokio::sync::{mpsc, watch};

use super::{RequestError, Supervisor};
use crate::hub::Hub;
use crate::upstream::Signal;

/// The longest a subscribe waits for the server to acknowledge the new stream.
const ACK_WAIT: Duration = Duration::from_secs(5);
/// Pause before reopening a stream that ended, doubled per failure up to 30 s.
const REOPEN_AFTER: Duration = Duration::from_millis(500);

/// One stateless connection's `subscriptions/listen` stream: the agents'
/// resource subscriptions as it has them, and the task that keeps it open.
/// Each set of URIs wanted is numbered, so that an acknowledgment is known
/// to be of that set or a later one, not of a stream opened before it.
#[derive(Default)]
pub struct Listen {
    /// The URIs the stream should carry updates for, numbered.
    wanted: watch::Sender<(u64, BTreeSet<String>)>,
    /// The number and URIs of the stream the server acknowledged last.
    acked: watch::Sender<(u64, BTreeSet<String>)>,
}

impl Listen {
    /// Reopens the stream with `uris`; with a `uri` that must be in it,
    /// waits (bounded) until the server acknowledged a stream of this set or
    /// a later one that has it.
    async fn want(&self, uris: BTreeSet<String>, uri: Option<&str>) {
        let mut number = 0;
        self.wanted.send_modify(|(n, wanted)| {
            *n += 1;
            number = *n;
            *wanted = uris;
        });
        let Some(uri) = uri else { return };
        let mut acked = self.acked.subscribe();
        let acknowledged = acked.wait_for(|(n, a)| *n >= number && a.contains(uri));
        let _ = tokio::time::timeout(ACK_WAIT, acknowledged).await;
    }

    /// For a stateless connection: the stream's control, and its task, which
    /// ends with the connection.
    pub(super) fn open(
        sup: &Arc<Supervisor>,
        generation: u64,
        peer: &Peer<RoleClient>,
        signals: mpsc::UnboundedSender<Signal>,
    ) -> Option<Arc<Listen>> {
        let stateless = peer.peer_info().is_some_and(|i| !i.protocol_version.has_initialize());
        if !stateless {
            return None;
        }
        let listen = Arc::new(Listen::default());
        listen.wanted.send_replace((0, sup.hub.subscribed_uris(&sup.name)));
        let this = Arc::downgrade(sup);
        let peer = peer.clone();
        let control = listen.clone();
        tokio::spawn(async move {
            let mut wanted = control.wanted.subscribe();
            let mut failures = 0u32;
            loop {
                let (number, uris) = wanted.borrow_and_update().clone();
                let Some(filter) = filter(&peer, &uris) else { return };
                match peer.listen(filter).await {
                    Ok(mut sub) => {
                        failures = 0;
                        control.acked.send_replace((number, uris));
                        loop {
                            tokio::select! {
                                n = sub.next() => match n {
                                    Ok(Some(n)) => {
                                        let Some(this) = this.upgrade() else { return };
                                        announced(&this.hub, &this.name, n, &signals);
                                    }
                                    // Ended, cancelled, or lagged behind:
                                    // reopen, and re-list what may have been missed.
                                    _ => {
                                        let _ = signals.send(Signal::ToolsChanged);
                                        break;
                                    }
                                },
                                changed = wanted.changed() => {
                                    if changed.is_err() {
                                        return;
                                    }
                                    let _ = sub.cancel().await;
                                    break;
                                }
                            }
                        }
                    }
                    // A server without `subscriptions/listen`: nothing to hear.
                    Err(rmcp::ServiceError::McpError(e)) => {
                        tracing::debug!("subscriptions/listen refused: {}", e.message);
                        return;
                    }
                    Err(_) => failures += 1,
                }
                let live = this.upgrade().is_some_and(|s| s.is_live(generation));
                if !live || peer.is_transport_closed() {
                    return;
                }
                let pause = REOPEN_AFTER.saturating_mul(2u32.saturating_pow(failures.min(6)));
                tokio::time::sleep(pause.min(Duration::from_secs(30))).await;
            }
        });
        Some(listen)
    }

    /// `resources/subscribe` and `resources/unsubscribe` for a stateless
    /// server: the stream is reopened with the URIs the agents now want.
    pub(super) async fn resubscribe(
        &self,
        hub: &Hub,
        server: &str,
        uri: &str,
        subscribe: bool,
    ) -> Result<ServerResult, RequestError> {
        let mut uris = hub.subscribed_uris(server);
        if subscribe {
            uris.insert(uri.to_string());
            self.want(uris, Some(uri)).await;
        } else {
            uris.remove(uri);
            self.want(uris, None).await;
        }
        Ok(ServerResult::empty(()))
    }
}

/// What to ask the server for, of what it says it sends.
fn filter(peer: &Peer<RoleClient>, uris: &BTreeSet<String>) -> Option<SubscriptionFilter> {
    let info = peer.peer_info()?;
    let mut wanted = SubscriptionFilter::builder()
        .tools_list_changed()
        .prompts_list_changed()
        .resources_list_changed()
        .build();
    wanted.resource_subscriptions = Some(uris.iter().cloned().collect());
    let filter = wanted.supported_by(&info.capabilities);
    let empty = filter.tools_list_changed.is_none()
        && filter.prompts_list_changed.is_none()
        && filter.resources_list_changed.is_none()
        && filter.resource_subscriptions.is_none();
    (!empty).then_some(filter)
}

/// One notification from the stream, to the supervisor or the agents.
fn announced(hub: &Hub, server: &str, notification: ServerNotification, signals: &mpsc::UnboundedSender<Signal>) {
    let signal = match notification {
        ServerNotification::ToolListChangedNotification(_) => Signal::ToolsChanged,
        ServerNotification::PromptListChangedNotification(_) => Signal::PromptsChanged,
        ServerNotification::ResourceListChangedNotification(_) => Signal::ResourcesChanged,
        ServerNotification::ResourceUpdatedNotification(n) => {
            let meta = n.extensions.get::<NotificationMetaObject>().cloned();
            let mut params = n.params;
            params.meta = params.meta.or(meta).and_then(crate::upstream::handler::passed_meta);
            hub.route_resource_updated(server, params);
            return;
        }
        _ => return,
    };
    let _ = signals.send(signal);
}
