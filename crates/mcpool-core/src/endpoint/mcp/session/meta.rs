//! The meta-tools on `/mcp` and `/profiles/NAME/mcp` (behaviour.md rule
//! 19): the listing each mode sends, `mcpool__search_tools` (found tools
//! join the agent's own listing, which is told `list_changed`) and
//! `mcpool__call_tool`, which becomes the direct call it names. The
//! search itself is the pool's ([`crate::pool::Pool::search_tools`]).

use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, JsonObject, ServerNotification, Tool};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;

use std::sync::{Mutex, OnceLock};

use super::routing::Routes;
use super::{no_profile, speaks_2026};
use crate::endpoint::mcp::found::FoundBook;
use crate::hub::{ListKind, Registration};
use crate::pool::SearchScope;
use crate::search::listing::{FoundTools, ListingMode, Sent};
use crate::search::meta::{self, Delivery, Found, CALL_TOOL, SEARCH_TOOL};
use rmcp::model::ErrorData as McpError;

/// A session's meta-tools and the tools its searches found.
pub(super) struct MetaTools<'a> {
    pub routes: Routes<'a>,
    /// What this session's searches found (a session agent's).
    pub found: &'a Mutex<FoundTools>,
    /// What 2026-07-28 agents found, shared by every endpoint.
    pub stateless_found: &'a FoundBook,
    /// Set once the session is initialized.
    pub agent: &'a OnceLock<Registration>,
}

impl MetaTools<'_> {
    fn profile_name(&self) -> Option<&str> {
        self.routes.profile_name()
    }

    /// Who this request's found tools belong to: the session, or for a
    /// 2026-07-28 agent its endpoint and client.
    fn stateless_key(&self, ctx: &RequestContext<RoleServer>) -> Option<String> {
        if !speaks_2026(ctx) {
            return None;
        }
        let client = ctx.meta.client_info().map(|c| format!("{}@{}", c.name, c.version));
        Some(format!("{:?}|{}", self.routes.scope, client.unwrap_or_default()))
    }

    fn found_contains(&self, ctx: &RequestContext<RoleServer>) -> impl Fn(&str) -> bool {
        let found = match self.stateless_key(ctx) {
            Some(key) => self.stateless_found.get(&key),
            None => crate::sync::lock(self.found).clone(),
        };
        move |name| found.contains(name)
    }

    /// What `tools/list` sends on an aggregated endpoint, and which mode it is.
    pub fn aggregated_tools(&self, ctx: &RequestContext<RoleServer>) -> Result<(Vec<Tool>, Sent), McpError> {
        let found = self.found_contains(ctx);
        let listed = self
            .routes
            .pool
            .listed(self.profile_name(), url_mode(ctx), &found)
            .ok_or_else(|| no_profile(self.profile_name().unwrap_or_default()))?;
        Ok((listed.tools, listed.sent))
    }

    /// `mcpool__search_tools`.
    pub async fn search_call(
        &self,
        arguments: Option<&JsonObject>,
        ctx: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let args = match SearchArgs::parse(arguments) {
            Ok(a) => a,
            Err(sentence) => return CallToolResult::error(vec![ContentBlock::text(sentence)]),
        };
        if let Some(server) = &args.server {
            if self
                .routes
                .pool
                .server(server)
                .is_none_or(|_| !self.routes.in_scope(server))
            {
                return CallToolResult::error(vec![ContentBlock::text(format!(
                    "There is no server '{server}' behind this mcpool endpoint; leave 'server' out to search them all."
                ))]);
            }
        }
        let scope = SearchScope {
            callable_only: true,
            server: args.server.clone(),
            profile: self
                .profile_name()
                .and_then(|p| self.routes.pool.tool_control().profile(p)),
        };
        let matches = self.routes.pool.search_tools(&args.query, args.limit, &scope);
        let found: Vec<Found> = matches
            .iter()
            .map(|m| {
                Found::new(
                    m.public.clone(),
                    m.server.clone(),
                    m.status.as_str().to_string(),
                    &m.tool,
                )
            })
            .collect();
        let unserved = found
            .is_empty()
            .then(|| self.routes.pool.unserved_service(&args.query))
            .flatten();
        let delivery = self.deliver(&found, ctx).await;
        meta::answer(&args.query, &found, args.limit, delivery, unserved.as_deref())
    }

    /// Adds the found tools to this agent's listing when it lists by
    /// search, and tells it its list changed.
    async fn deliver(&self, found: &[Found], ctx: &RequestContext<RoleServer>) -> Delivery {
        if self.routes.pool.sends(self.profile_name(), url_mode(ctx)) == Some(Sent::All) {
            return Delivery::Listed;
        }
        let names: Vec<&str> = found
            .iter()
            .map(|f| f.name.as_str())
            .filter(|n| !meta::is_meta(n))
            .collect();
        match self.stateless_key(ctx) {
            Some(key) => {
                if self.stateless_found.add(&key, &names) {
                    let scope = self.routes.scope.clone();
                    self.routes
                        .pool
                        .hub()
                        .notify_list_changed(ListKind::Tools, |s| *s == scope);
                }
                Delivery::Listed
            }
            None if self.agent.get().is_some() => {
                let changed = crate::sync::lock(self.found).add(names.iter().copied());
                if changed {
                    let notification = ServerNotification::ToolListChangedNotification(Default::default());
                    let _ = ctx.peer.send_notification(notification).await;
                }
                Delivery::Listed
            }
            None => Delivery::CallTool,
        }
    }
}

/// The call `mcpool__call_tool` stands for, or why there is none.
pub(super) fn unwrap_call(request: &CallToolRequestParams) -> Result<CallToolRequestParams, String> {
    let args = request.arguments.as_ref();
    let name = match args.and_then(|a| a.get("name")) {
        Some(Value::String(n)) if !n.is_empty() => n.clone(),
        Some(_) => return Err(format!("{CALL_TOOL}: 'name' must be a tool's name (a string).")),
        None => {
            return Err(format!(
                "{CALL_TOOL} needs the argument 'name': a tool's name as {SEARCH_TOOL} gave it."
            ))
        }
    };
    if meta::is_meta(&name) {
        return Err(format!("{CALL_TOOL} calls the servers' tools; call {name} directly."));
    }
    let arguments = match args.and_then(|a| a.get("arguments")) {
        None | Some(Value::Null) => None,
        Some(Value::Object(map)) => Some(map.clone()),
        Some(_) => {
            return Err(format!(
                "{CALL_TOOL}: 'arguments' must be an object of the tool's arguments."
            ))
        }
    };
    let mut inner = request.clone();
    inner.name = name.into();
    inner.arguments = arguments;
    Ok(inner)
}

/// `?toolListing=all|search|auto` of the request's URL.
fn url_mode(ctx: &RequestContext<RoleServer>) -> Option<ListingMode> {
    let parts = ctx.extensions.get::<http::request::Parts>()?;
    super::super::cached_list::mode_in_query(parts.uri.query())
}

struct SearchArgs {
    query: String,
    limit: usize,
    server: Option<String>,
}

impl SearchArgs {
    fn parse(arguments: Option<&JsonObject>) -> Result<Self, String> {
        let get = |k: &str| arguments.and_then(|a| a.get(k)).filter(|v| !v.is_null());
        let query = match get("query") {
            Some(Value::String(q)) if !q.trim().is_empty() => q.trim().to_string(),
            _ => {
                return Err(format!(
                    "{SEARCH_TOOL} needs the argument 'query': what you want to do, in plain words."
                ))
            }
        };
        let limit = match get("limit") {
            None => meta::DEFAULT_LIMIT,
            Some(v) => match v
                .as_u64()
                .or_else(|| v.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0).map(|f| f as u64))
            {
                Some(n) => (n as usize).clamp(1, meta::MAX_LIMIT),
                None => {
                    return Err(format!(
                        "{SEARCH_TOOL}: 'limit' must be a whole number from 1 to {}.",
                        meta::MAX_LIMIT
                    ))
                }
            },
        };
        let server = match get("server") {
            None => None,
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            Some(_) => return Err(format!("{SEARCH_TOOL}: 'server' must be a server's name.")),
        };
        Ok(SearchArgs { query, limit, server })
    }
}
