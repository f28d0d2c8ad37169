//! A live connection's watchers: its end (a drop, tools kept), the list
//! changes it announces, and what a new connection must be told again.

use std::sync::{Arc, Weak};
use std::time::Duration;

use rmcp::model::{ClientRequest, Request, SubscribeRequestParams};
use rmcp::service::{Peer, RoleClient};
use tokio::sync::mpsc;

use super::{list_all, Supervisor, RELIST_AFTER};
use crate::hub::Hub;
use crate::lifecycle::Event;
use crate::upstream::{self, Signal};

/// The watchers of one connection (`generation`): its end, and the list
/// changes it announces. They hold the supervisor weakly.
pub(super) struct Watch {
    sup: Weak<Supervisor>,
    generation: u64,
}

impl Watch {
    pub(super) fn new(sup: &Arc<Supervisor>, generation: u64) -> Self {
        Watch {
            sup: Arc::downgrade(sup),
            generation,
        }
    }

    /// Watches the connection: its end, and the list changes it announces.
    pub(super) fn spawn(
        self,
        running: upstream::Running,
        exit: Option<tokio::sync::watch::Receiver<Option<std::process::ExitStatus>>>,
        stderr: Option<crate::stderr_tail::StderrTail>,
        mut signals: mpsc::UnboundedReceiver<Signal>,
    ) {
        let generation = self.generation;
        let this = self.sup.clone();
        tokio::spawn(async move {
            let quit = running.waiting().await;
            let Some(this) = this.upgrade() else { return };
            let reason = match exit {
                Some(mut exit) => {
                    let _ = tokio::time::timeout(Duration::from_millis(500), exit.wait_for(Option::is_some)).await;
                    let status = *exit.borrow();
                    crate::os::process::describe_exit(status)
                }
                None => match quit {
                    Ok(_) => "the connection closed".to_string(),
                    Err(e) => format!("the connection task failed: {e}"),
                },
            };
            // The exit can be seen before the stderr reader has read the
            // process's last words.
            let tail = match stderr {
                Some(stderr) => stderr.last_words(Duration::from_millis(300)).await,
                None => Vec::new(),
            };
            this.dropped(generation, &crate::stderr_tail::with_stderr(&reason, &tail));
        });
        let this = self.sup;
        tokio::spawn(async move {
            let mut relist = Box::pin(tokio::time::sleep(RELIST_AFTER));
            let mut relisted = false;
            loop {
                tokio::select! {
                    _ = &mut relist, if !relisted => relisted = true,
                    signal = signals.recv() => if signal.is_none() { return },
                }
                let Some(this) = this.upgrade() else { return };
                Self::relist(&this, generation).await;
            }
        });
    }

    async fn relist(sup: &Arc<Supervisor>, generation: u64) {
        let peer = {
            let inner = sup.lock();
            match &inner.live {
                Some(live) if live.generation == generation => live.peer.clone(),
                _ => return,
            }
        };
        let Ok((lists, warnings)) = list_all(&peer).await else {
            return;
        };
        let changed = {
            let mut inner = sup.lock();
            if !matches!(&inner.live, Some(l) if l.generation == generation) {
                return;
            }
            inner.recent.listed(&sup.name, warnings);
            sup.apply(&mut inner, Event::Relisted { lists }).lists_changed
        };
        if changed {
            sup.notify_lists();
        }
    }
}

/// A new connection knows nothing of the agents' resource subscriptions:
/// subscribe again to every URI an open session still holds.
pub(super) fn renew_subscriptions(hub: &Hub, server: &str, peer: &Peer<RoleClient>) {
    // A stateless server has them in its `subscriptions/listen` stream.
    if peer.peer_info().is_some_and(|i| !i.protocol_version.has_initialize()) {
        return;
    }
    let uris = hub.subscribed_uris(server);
    if uris.is_empty() {
        return;
    }
    let peer = peer.clone();
    tokio::spawn(async move {
        for uri in uris {
            let request = ClientRequest::SubscribeRequest(Request::new(SubscribeRequestParams::new(uri)));
            let _ = peer.send_request(request).await;
        }
    });
}
