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

/// The extensions the servers behind an endpoint offer (MCP Apps' UI, a
/// vendor's), added to its own: an agent sees each one some server in
/// reach offers, with the settings of the first such server by name. Tasks
/// stay mcpool's own settings (it routes them), declared only when some
/// server in reach offers them: no agent is told of tasks no server makes.
/// Only servers that have connected are known; one that connects later
/// adds its extensions for agents that connect after it.
fn merge_extensions(own: &mut ServerCapabilities, servers: impl Iterator<Item = ServerCapabilities>) {
    let servers: Vec<ServerCapabilities> = servers.collect();
    // A 2025-11-25 server's tasks reach a 2026-07-28 agent as the
    // extension's (session/tasks.rs bridges them).
    let mut tasks = servers.iter().any(offers_session_tasks);
    for offered in servers.into_iter().filter_map(|c| c.extensions) {
        for (id, settings) in offered {
            if id == rmcp::model::TASKS_EXTENSION_ID {
                tasks = true;
                continue;
            }
            own.extensions
                .get_or_insert_with(Default::default)
                .entry(id)
                .or_insert(settings);
        }
    }
    if !tasks {
        if let Some(extensions) = own.extensions.as_mut() {
            extensions.remove(rmcp::model::TASKS_EXTENSION_ID);
        }
        if own.extensions.as_ref().is_some_and(|e| e.is_empty()) {
            own.extensions = None;
        }
    }
}

/// Whether a server on a session revision offers 2025-11-25's tasks for
/// tool calls.
fn offers_session_tasks(capabilities: &ServerCapabilities) -> bool {
    crate::kept::kept_capabilities(capabilities)
        .and_then(|kept| kept.get("tasks"))
        .is_some_and(|tasks| tasks["requests"]["tools"]["call"].is_object())
}

/// Whether a server on 2026-07-28 offers the tasks extension.
fn offers_extension_tasks(capabilities: &ServerCapabilities) -> bool {
    capabilities
        .extensions
        .as_ref()
        .is_some_and(|e| e.contains_key(rmcp::model::TASKS_EXTENSION_ID))
}

/// 2025-11-25's `tasks` capability in `own` (which rmcp does not model, so
/// it travels in `experimental` until the reply goes out: kept/), as
/// mcpool routes tasks: it lists and cancels for any server. For where a
/// server in reach makes tasks at either revision (session/tasks.rs
/// bridges a 2026-07-28 server's for session agents).
fn add_session_tasks(own: &mut ServerCapabilities) {
    if offers_session_tasks(own) {
        return;
    }
    let tasks = serde_json::json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}});
    let experimental = own.experimental.get_or_insert_with(Default::default);
    let mut kept = serde_json::Map::new();
    kept.insert("tasks".into(), tasks);
    if experimental.is_empty() {
        kept.insert("experimental".into(), serde_json::Value::Bool(false));
    }
    experimental.insert(crate::kept::KEY.into(), kept);
}

/// What a session's agent is told of the endpoint behind it.
pub(super) struct Identity<'a> {
    pub routes: Routes<'a>,
}

impl Identity<'_> {
    pub fn info(&self) -> ServerConfig {
        match self.routes.scope {
            Scope::All | Scope::Profile(_) => {
                let mut info = aggregated_info();
                let servers = self.routes.pool.servers();
                let offered = servers
                    .iter()
                    .filter(|sup| self.routes.in_scope(sup.name()))
                    .filter_map(|sup| sup.info());
                let offered: Vec<ServerCapabilities> = offered.map(|peer| peer.capabilities.clone()).collect();
                if offered
                    .iter()
                    .any(|c| offers_extension_tasks(c) || offers_session_tasks(c))
                {
                    add_session_tasks(&mut info.capabilities);
                }
                merge_extensions(&mut info.capabilities, offered.into_iter());
                info
            }
            Scope::One(name) => match self.routes.pool.server(name) {
                Some(sup) => {
                    let mut info = mirrored_info(&sup);
                    // Its 2025-11-25 tasks, bridged for 2026-07-28 agents;
                    // its tasks extension, for session agents.
                    if offers_session_tasks(&info.capabilities) {
                        let extensions = info.capabilities.extensions.get_or_insert_with(Default::default);
                        extensions
                            .entry(rmcp::model::TASKS_EXTENSION_ID.to_string())
                            .or_default();
                    }
                    if offers_extension_tasks(&info.capabilities) {
                        add_session_tasks(&mut info.capabilities);
                    }
                    info
                }
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn capabilities(value: serde_json::Value) -> ServerCapabilities {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn servers_extensions_are_added_to_the_endpoints_own() {
        let mut own = aggregated_info().capabilities;
        let ui = "io.modelcontextprotocol/ui";
        let servers = [
            capabilities(json!({"tools": {}})),
            capabilities(json!({"extensions": {ui: {"mimeTypes": ["text/html;profile=mcp-app"]}}})),
            capabilities(json!({"extensions": {
                ui: {"mimeTypes": ["other"]},
                "com.example/x": {},
                rmcp::model::TASKS_EXTENSION_ID: {"server's": true},
            }})),
        ];
        merge_extensions(&mut own, servers.into_iter());
        let extensions = serde_json::to_value(&own.extensions).unwrap();
        assert_eq!(extensions[ui], json!({"mimeTypes": ["text/html;profile=mcp-app"]}));
        assert_eq!(extensions["com.example/x"], json!({}));
        // Tasks are mcpool's own advertisement, not a server's.
        assert_eq!(
            extensions[rmcp::model::TASKS_EXTENSION_ID],
            serde_json::to_value(&aggregated_info().capabilities.extensions).unwrap()[rmcp::model::TASKS_EXTENSION_ID]
        );
        // No server in reach makes tasks: none declared.
        let mut none = aggregated_info().capabilities;
        merge_extensions(&mut none, [capabilities(json!({"tools": {}}))].into_iter());
        assert_eq!(none.extensions, None);
    }
}
