//! What an agent learns about the endpoint: `initialize`'s answer (session
//! revisions) and `server/discover`'s (2026-07-28), the same capabilities.

use std::borrow::Cow;

use rmcp::model::{DiscoverResult, Implementation, ProtocolVersion, ServerCapabilities, ServerConfig};

use super::routing::Routes;
use crate::hub::Scope;
use crate::supervisor::Supervisor;

/// Every revision rmcp knows, 2026-07-28 included: rmcp's Streamable HTTP
/// service tells a stateless request (per-request `_meta`, no session id)
/// from a session one, per request (behaviour.md rule 16).
pub(super) fn supported_versions() -> Cow<'static, [ProtocolVersion]> {
    Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2026_07_28))
}

pub(super) fn aggregated_info() -> ServerConfig {
    let capabilities = ServerCapabilities::builder()
        .enable_tools()
        .enable_tool_list_changed()
        .enable_prompts()
        .enable_prompts_list_changed()
        .enable_resources()
        .enable_resources_list_changed()
        .enable_resources_subscribe()
        .enable_logging()
        .enable_completions()
        // Tasks pass through to the server that made them (behaviour.md rule 16).
        .enable_tasks()
        .build();
    let mut info = ServerConfig::default();
    info.capabilities = capabilities;
    info.server_info = Implementation::new("mcpool", env!("CARGO_PKG_VERSION"));
    info.instructions = Some(
        "mcpool pools this machine's MCP servers. Tools are named <server>__<tool>. Call mcpool__status to see each server's health and mcpool__reconnect to mend one."
            .into(),
    );
    info
}

/// What an upstream said about itself, as this endpoint's own `initialize`
/// result, so a client cannot tell mcpool from the server.
pub(super) fn mirrored_info(sup: &Supervisor) -> ServerConfig {
    let mut info = ServerConfig::default();
    match sup.info() {
        Some(peer) => {
            info.capabilities = peer.capabilities.clone();
            info.server_info = peer
                .server_info
                .clone()
                .unwrap_or_else(|| Implementation::new(sup.name(), "unknown"));
            info.instructions = peer.instructions.clone();
        }
        None => {
            let mut generic = aggregated_info();
            generic.server_info = Implementation::new(sup.name(), "unknown");
            generic.instructions = None;
            info = generic;
        }
    }
    info
}

/// What a session's agent is told of the endpoint behind it.
pub(super) struct Identity<'a> {
    pub routes: Routes<'a>,
}

impl Identity<'_> {
    pub fn info(&self) -> ServerConfig {
        match self.routes.scope {
            Scope::All | Scope::Profile(_) => aggregated_info(),
            Scope::One(name) => match self.routes.pool.server(name) {
                Some(sup) => mirrored_info(&sup),
                None => aggregated_info(),
            },
        }
    }

    /// `server/discover`: on `/servers/NAME/mcp` the server is connected
    /// first, so the answer carries its own identity (as `initialize` does).
    pub async fn discovered(&self) -> DiscoverResult {
        if let Scope::One(_) = self.routes.scope {
            if let Ok(sup) = self.routes.single() {
                let _ = sup.peer().await;
            }
        }
        DiscoverResult::from_server_info(supported_versions().into_owned(), self.info())
    }
}
