//! Resource subscriptions (session revisions) and `subscriptions/listen`
//! (2026-07-28).
//!
//! rmcp acknowledges a listen stream before it hands it to the handler, and
//! an agent may change a resource the moment it reads the acknowledgment.
//! So the stream's resources are subscribed at their servers in the one
//! step rmcp takes before it acknowledges: choosing the filter
//! ([`Subscriptions::subscribe_early`]). That step is synchronous, so it
//! waits on the subscriptions with `block_in_place` (mcpool's runtime has
//! several threads; on a single-threaded one the stream subscribes them
//! itself, after the acknowledgment). rmcp makes a handler for each
//! 2026-07-28 request, so the handler's one list of early subscriptions is
//! that stream's.

use std::sync::{Arc, Mutex};

use rmcp::model::{
    ClientRequest, ErrorData as McpError, Request, SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, RoleServer, SubscriptionContext};

use super::forward::Forwarder;
use super::routing::Routes;
use crate::hub::Hub;
use crate::supervisor::Supervisor;
use crate::sync::lock;

/// One resource subscribed at its server for a listen stream.
type Subscribed = (Arc<Supervisor>, String);

/// A listen request's resources subscribed at their servers before rmcp
/// acknowledged the stream, until the stream takes them over; dropped with
/// the handler (unsubscribed) when rmcp refused the stream after all.
pub(super) struct EarlySubscriptions {
    hub: Arc<Hub>,
    subscribed: Mutex<Vec<Subscribed>>,
}

impl EarlySubscriptions {
    pub fn new(hub: Arc<Hub>) -> Self {
        EarlySubscriptions {
            hub,
            subscribed: Mutex::default(),
        }
    }
}

impl Drop for EarlySubscriptions {
    fn drop(&mut self) {
        let left = std::mem::take(self.subscribed.get_mut().unwrap_or_else(|p| p.into_inner()));
        if left.is_empty() {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(unsubscribe_unwanted(self.hub.clone(), None, left));
        }
    }
}

/// A session's resource subscriptions and a 2026-07-28 agent's listen stream.
pub(super) struct Subscriptions<'a> {
    pub routes: Routes<'a>,
    pub forwarder: Forwarder<'a>,
    pub early: &'a EarlySubscriptions,
}

impl Subscriptions<'_> {
    pub async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let sup = self.routes.owner_of_uri(&request.uri)?;
        let uri = request.uri.clone();
        self.forwarder
            .forward(&sup, ClientRequest::SubscribeRequest(Request::new(request)), &context)
            .await?;
        self.routes
            .pool
            .hub()
            .subscribe(self.forwarder.agent_id(), sup.name(), &uri, true);
        Ok(())
    }

    pub async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let sup = self.routes.owner_of_uri(&request.uri)?;
        let uri = request.uri.clone();
        let hub = self.routes.pool.hub();
        hub.subscribe(self.forwarder.agent_id(), sup.name(), &uri, false);
        if hub.others_subscribed(self.forwarder.agent_id(), sup.name(), &uri) {
            // Another agent still wants the updates of this resource.
            return Ok(());
        }
        self.forwarder
            .forward(&sup, ClientRequest::UnsubscribeRequest(Request::new(request)), &context)
            .await?;
        Ok(())
    }

    /// Subscribes a listen request's resources at their servers, before
    /// rmcp acknowledges the stream; [`Self::listen`] takes them over.
    pub fn subscribe_early(&self, filter: &SubscriptionFilter) {
        let runtime = tokio::runtime::Handle::current();
        if runtime.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
            return;
        }
        let uris = filter.resource_subscriptions.clone().unwrap_or_default();
        let subscribed = tokio::task::block_in_place(|| runtime.block_on(self.subscribe_at_servers(uris)));
        lock(&self.early.subscribed).extend(subscribed);
    }

    /// Subscribes each URI at the server that has it; gives those that took.
    async fn subscribe_at_servers(&self, uris: Vec<String>) -> Vec<Subscribed> {
        let mut subscribed = Vec::new();
        for uri in uris {
            let Ok(sup) = self.routes.owner_of_uri(&uri) else {
                continue;
            };
            let request = ClientRequest::SubscribeRequest(Request::new(SubscribeRequestParams::new(uri.clone())));
            match sup.forward(request, None).await {
                Ok(_) => subscribed.push((sup, uri)),
                Err(e) => tracing::debug!("a listen stream's subscription to {uri} failed: {e:?}"),
            }
        }
        subscribed
    }

    /// A 2026-07-28 agent's `subscriptions/listen` stream (rmcp has sent
    /// the acknowledgment): registered in the hub like a session, so the
    /// pool's `list_changed` and the resource updates it asked for reach it
    /// with the stream's subscription id, until the agent closes the stream.
    /// Its resources, subscribed at their servers before the acknowledgment
    /// (or now, where that could not be), are unsubscribed at the end
    /// unless another agent still wants them.
    pub async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let hub = self.routes.pool.hub().clone();
        let peer = context.request_context().peer.clone();
        let registration = hub.register_listener(self.routes.scope.clone(), peer, context.sink().clone());
        let id = registration.id();
        let mut subscribed = std::mem::take(&mut *lock(&self.early.subscribed));
        let late: Vec<String> = context
            .accepted()
            .resource_subscriptions
            .iter()
            .flatten()
            .filter(|uri| !subscribed.iter().any(|(_, early)| early == *uri))
            .cloned()
            .collect();
        subscribed.extend(self.subscribe_at_servers(late).await);
        for (sup, uri) in &subscribed {
            hub.subscribe(id, sup.name(), uri, true);
        }
        context.cancelled().await;
        for (sup, uri) in &subscribed {
            hub.subscribe(id, sup.name(), uri, false);
        }
        unsubscribe_unwanted(hub, Some(id), subscribed).await;
        drop(registration);
        Ok(())
    }
}

/// Unsubscribes each resource at its server unless an agent other than
/// `agent` still wants its updates.
/// `None`: no agent (a stream rmcp refused), so any subscribed agent counts.
async fn unsubscribe_unwanted(hub: Arc<Hub>, agent: Option<u64>, subscribed: Vec<Subscribed>) {
    for (sup, uri) in subscribed {
        if hub.others_subscribed(agent.unwrap_or(u64::MAX), sup.name(), &uri) {
            continue;
        }
        let request = ClientRequest::UnsubscribeRequest(Request::new(UnsubscribeRequestParams::new(uri)));
        let _ = sup.forward(request, None).await;
    }
}

/// What mcpool accepts of a listen request: all of it. rmcp keeps only
/// what was asked for and what the endpoint's capabilities announce.
pub(super) fn accepted(requested: &SubscriptionFilter) -> SubscriptionFilter {
    requested.clone()
}
