//! What mcpool answers as the client of one upstream server: requests and
//! notifications from the server go to the agents through the [`Hub`], list
//! changes go to the server's supervisor.

// Logging, sampling and roots are deprecated by SEP-2577 but agents and
// servers in use today still rely on them, so the pool passes them through.
#![allow(deprecated)]

use std::sync::Arc;

use rmcp::model::{
    ClientCapabilities, ClientConfig, ClientResult, ErrorData as McpError, GetMeta, Implementation,
    NotificationMetaObject, ProtocolVersion, ServerNotification, ServerRequest,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient, Service};
use tokio::sync::mpsc;

use super::ledger::{Turn, TURN_WAIT};
use crate::hub::Hub;

/// A change an upstream announced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    ToolsChanged,
    PromptsChanged,
    ResourcesChanged,
}

/// Cloned for a second try at the same connection (see `connect`).
#[derive(Clone)]
pub struct UpstreamHandler {
    pub server: String,
    pub hub: Arc<Hub>,
    pub signals: mpsc::UnboundedSender<Signal>,
    pub ledger: Arc<super::ledger::ProgressLedger>,
    /// The extensions this connection's `initialize` declares (MCP Apps'
    /// UI, for the connection of agents that show apps); none for the
    /// server's own connection.
    pub extensions: Option<rmcp::model::ExtensionCapabilities>,
}

pub fn client_config() -> ClientConfig {
    let capabilities = ClientCapabilities::builder()
        .enable_roots()
        .enable_roots_list_changed()
        .enable_sampling()
        .enable_elicitation()
        .build();
    // The version `initialize` asks for (SSE, or a server that is not on
    // 2026-07-28): the newest that has the handshake.
    ClientConfig::new(capabilities, Implementation::new("mcpool", env!("CARGO_PKG_VERSION")))
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
}

/// The notification `_meta` keys that belong to the connection between
/// mcpool and the server, not to the notification: the subscription id of a
/// stateless server's `subscriptions/listen` stream (an agent's own stream
/// gets its own id from rmcp).
pub const OWNED_NOTIFICATION_KEYS: [&str; 1] = ["io.modelcontextprotocol/subscriptionId"];

/// A server's notification `_meta` as it goes on to agents: unchanged but
/// for [`OWNED_NOTIFICATION_KEYS`] (rmcp hands it over apart from the
/// params, in the notification's context).
pub fn passed_meta(mut meta: NotificationMetaObject) -> Option<NotificationMetaObject> {
    for key in OWNED_NOTIFICATION_KEYS {
        meta.remove(key);
    }
    (!meta.is_empty()).then_some(meta)
}

/// A notification's `_meta` as rmcp hands it over: in the context's
/// extensions (rmcp moves the extensions out before it reads the meta from
/// them, so `context.meta` stays empty), else in `context.meta`.
pub fn notification_meta<R: rmcp::service::ServiceRole>(context: &NotificationContext<R>) -> NotificationMetaObject {
    let mut meta = context.meta.clone();
    if let Some(moved) = context.extensions.get::<NotificationMetaObject>() {
        meta.extend(moved.clone());
    }
    meta
}

impl Service<RoleClient> for UpstreamHandler {
    async fn handle_request(
        &self,
        mut request: ServerRequest,
        context: RequestContext<RoleClient>,
    ) -> Result<ClientResult, McpError> {
        // rmcp hands the request's `_meta` over apart from it: it goes on
        // to the agent but for the progress token (the agent's request gets
        // one of its own connection).
        let mut meta = context.meta;
        meta.remove("progressToken");
        if !meta.is_empty() {
            request.get_meta_mut().extend(meta);
        }
        match request {
            ServerRequest::PingRequest(_) => Ok(ClientResult::empty(())),
            // With no agent to ask, a server that lists roots sees none
            // rather than an error.
            ServerRequest::ListRootsRequest(_) if !self.hub.has_agent_for(&self.server) => {
                Ok(ClientResult::ListRootsResult(Default::default()))
            }
            other => self.hub.forward_request(&self.server, other).await,
        }
    }

    async fn handle_notification(
        &self,
        notification: ServerNotification,
        context: NotificationContext<RoleClient>,
    ) -> Result<(), McpError> {
        let meta = passed_meta(notification_meta(&context));
        match notification {
            ServerNotification::ProgressNotification(n) => {
                let token = n.params.progress_token.clone();
                // In the order the server sent them, not the order rmcp's
                // tasks happen to run (the hub drops progress that would
                // go backwards).
                if let Some(turn) = context.extensions.get::<Turn>() {
                    self.ledger.wait_turn(&token, *turn, TURN_WAIT).await;
                }
                let mut params = n.params;
                params.meta = meta;
                params.progress_token = self.ledger.hub_token(&token);
                self.hub.route_progress(&self.server, params).await;
                self.ledger.handled(&token);
            }
            ServerNotification::LoggingMessageNotification(n) => {
                let mut params = n.params;
                params.meta = meta;
                self.hub.route_log(&self.server, true, params.clone());
                self.hub.route_log_to_calls(&self.server, params).await;
            }
            ServerNotification::ResourceUpdatedNotification(n) => {
                let mut params = n.params;
                params.meta = meta;
                self.hub.route_resource_updated(&self.server, params)
            }
            ServerNotification::TaskStatusNotification(n) => {
                // A 2025-11-25 server's params, kept whole (kept/); else
                // rmcp's model of them.
                let whole = meta
                    .as_ref()
                    .and_then(|m| m.get(crate::kept::KEY))
                    .and_then(|k| k.get(crate::kept::WHOLE))
                    .cloned();
                if let Some(params) = whole.or_else(|| serde_json::to_value(&n.params).ok()) {
                    self.hub.route_task_status(&self.server, params);
                }
            }
            // Params rmcp's model refused: kept whole in their own `_meta`.
            ServerNotification::CustomNotification(n) if n.method == crate::kept::TASK_STATUS => {
                if let Some(mut params) = n.params {
                    crate::kept::unfold(&mut params);
                    self.hub.route_task_status(&self.server, params);
                }
            }
            ServerNotification::ToolListChangedNotification(_) => {
                let _ = self.signals.send(Signal::ToolsChanged);
            }
            ServerNotification::PromptListChangedNotification(_) => {
                let _ = self.signals.send(Signal::PromptsChanged);
            }
            ServerNotification::ResourceListChangedNotification(_) => {
                let _ = self.signals.send(Signal::ResourcesChanged);
            }
            _ => {}
        }
        Ok(())
    }

    fn get_info(&self) -> ClientConfig {
        let mut config = client_config();
        config.capabilities.extensions = self.extensions.clone();
        config
    }
}
