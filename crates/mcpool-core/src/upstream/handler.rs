//! What mcpool answers as the client of one upstream server: requests and
//! notifications from the server go to the agents through the [`Hub`], list
//! changes go to the server's supervisor.

// Logging, sampling and roots are deprecated by SEP-2577 but agents and
// servers in use today still rely on them, so the pool passes them through.
#![allow(deprecated)]

use std::sync::Arc;

use rmcp::model::{
    ClientCapabilities, ClientConfig, ClientResult, ErrorData as McpError, Implementation, ProtocolVersion,
    ServerNotification, ServerRequest,
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

impl Service<RoleClient> for UpstreamHandler {
    async fn handle_request(
        &self,
        request: ServerRequest,
        _context: RequestContext<RoleClient>,
    ) -> Result<ClientResult, McpError> {
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
                params.progress_token = self.ledger.hub_token(&token);
                self.hub.route_progress(&self.server, params).await;
                self.ledger.handled(&token);
            }
            ServerNotification::LoggingMessageNotification(n) => {
                self.hub.route_log(&self.server, true, n.params.clone());
                self.hub.route_log_to_calls(&self.server, n.params).await;
            }
            ServerNotification::ResourceUpdatedNotification(n) => {
                self.hub.route_resource_updated(&self.server, n.params)
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
        client_config()
    }
}
