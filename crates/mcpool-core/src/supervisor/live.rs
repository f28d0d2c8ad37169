//! One connection to the server: what a request borrows of it (`Link`),
//! what the supervisor keeps of it (`Live`), listing it, and closing it.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use rmcp::model::{
    ClientRequest, CustomResult, ListToolsRequest, PaginatedRequestParams, ServerPeerInfo, ServerResult,
};
use rmcp::service::{Peer, RoleClient, RunningServiceCancellationToken};
use rmcp::ServiceError;
use serde_json::Value;

use super::listen;
use crate::lifecycle::Lists;
use crate::os::process::{self, ProcessTree};
use crate::tool_check::{self, ToolWarning};
use crate::upstream::ledger::ProgressLedger;

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
    pub(super) group: Option<ProcessTree>,
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
        group.stop(process::STOP_GRACE).await;
    }
    let _ = live.generation;
    let _ = live.info;
}

/// The server's lists; only its tools must list, the rest may fail. Each
/// tool is checked on its own (tool_check.rs): the warnings say what was
/// repaired or left out.
pub(super) async fn list_all(peer: &Peer<RoleClient>) -> Result<(Lists, Vec<ToolWarning>), ServiceError> {
    let caps = peer.peer_info().map(|i| i.capabilities.clone()).unwrap_or_default();
    let checked = if caps.tools.is_some() {
        tool_check::check(list_raw_tools(peer).await?)
    } else {
        Default::default()
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
    let lists = Lists {
        tools: checked.tools,
        prompts,
        resources,
        templates,
    };
    Ok((lists, checked.warnings))
}

/// Pages of `tools/list` followed at most this far: a server whose cursor
/// never ends is not followed forever.
const MAX_TOOL_PAGES: usize = 100;

/// Every page of the server's `tools/list`, each tool as raw JSON. A page
/// that rmcp reads whole gives its tools back as JSON; one with a tool that
/// rmcp cannot read arrives as a custom result, whose tools are taken one by
/// one, so that one tool never costs the others.
async fn list_raw_tools(peer: &Peer<RoleClient>) -> Result<Vec<Value>, ServiceError> {
    let mut tools = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_TOOL_PAGES {
        let params = PaginatedRequestParams::default().with_cursor(cursor);
        let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(params));
        let next = match peer.send_request(request).await? {
            ServerResult::ListToolsResult(page) => {
                tools.extend(page.tools.iter().map(tool_check::raw));
                page.next_cursor
            }
            ServerResult::CustomResult(CustomResult(Value::Object(mut page))) => {
                let Some(Value::Array(items)) = page.remove("tools") else {
                    return Err(ServiceError::UnexpectedResponse);
                };
                tools.extend(items);
                page.remove("nextCursor").and_then(|c| c.as_str().map(str::to_string))
            }
            _ => return Err(ServiceError::UnexpectedResponse),
        };
        match next {
            Some(next) if !next.is_empty() => cursor = Some(next),
            _ => break,
        }
    }
    Ok(tools)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `list_raw_tools` relies on: rmcp hands a page it cannot read as
    /// a `ListToolsResult` over whole, as a custom result.
    #[test]
    fn a_page_with_a_tool_rmcp_cannot_read_arrives_whole_as_a_custom_result() {
        for broken in [
            serde_json::json!({"name": "s", "inputSchema": "a string"}),
            serde_json::json!({"name": "n", "inputSchema": null}),
            serde_json::json!({"inputSchema": {"type": "object"}}),
            serde_json::json!({"name": "m"}),
        ] {
            let page = serde_json::json!({
                "tools": [{"name": "ok", "inputSchema": {"type": "object"}}, broken],
                "nextCursor": "2",
            });
            let result: ServerResult = serde_json::from_value(page.clone()).unwrap();
            match result {
                ServerResult::CustomResult(CustomResult(value)) => assert_eq!(value, page),
                other => panic!("{broken}: {other:?}"),
            }
        }
    }
}
