//! Resource subscriptions (session revisions) and `subscriptions/listen`
//! (2026-07-28).

use rmcp::model::{
    ClientRequest, ErrorData as McpError, Request, SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, RoleServer, SubscriptionContext};

use super::forward::Forwarder;
use super::routing::Routes;

/// A session's resource subscriptions and a 2026-07-28 agent's listen stream.
pub(super) struct Subscriptions<'a> {
    pub routes: Routes<'a>,
    pub forwarder: Forwarder<'a>,
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

    /// A 2026-07-28 agent's `subscriptions/listen` stream (rmcp has sent
    /// the acknowledgment): registered in the hub like a session, so the
    /// pool's `list_changed` and the resource updates it asked for reach it
    /// with the stream's subscription id, until the agent closes the stream.
    /// Its resource URIs are subscribed upstream as `resources/subscribe`
    /// would, and unsubscribed at the end unless another agent still wants
    /// them.
    pub async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let hub = self.routes.pool.hub().clone();
        let peer = context.request_context().peer.clone();
        let registration = hub.register_listener(self.routes.scope.clone(), peer, context.sink().clone());
        let id = registration.id();
        let mut subscribed = Vec::new();
        for uri in context.accepted().resource_subscriptions.iter().flatten() {
            let Ok(sup) = self.routes.owner_of_uri(uri) else {
                continue;
            };
            let request = ClientRequest::SubscribeRequest(Request::new(SubscribeRequestParams::new(uri.clone())));
            match sup.forward(request, None).await {
                Ok(_) => {
                    hub.subscribe(id, sup.name(), uri, true);
                    subscribed.push((sup, uri.clone()));
                }
                Err(e) => tracing::debug!("a listen stream's subscription to {uri} failed: {e:?}"),
            }
        }
        context.cancelled().await;
        for (sup, uri) in subscribed {
            hub.subscribe(id, sup.name(), &uri, false);
            if !hub.others_subscribed(id, sup.name(), &uri) {
                let request = ClientRequest::UnsubscribeRequest(Request::new(UnsubscribeRequestParams::new(uri)));
                let _ = sup.forward(request, None).await;
            }
        }
        drop(registration);
        Ok(())
    }
}

/// What mcpool accepts of a listen request: all of it. rmcp keeps only
/// what was asked for and what the endpoint's capabilities announce.
pub(super) fn accepted(requested: &SubscriptionFilter) -> SubscriptionFilter {
    requested.clone()
}
