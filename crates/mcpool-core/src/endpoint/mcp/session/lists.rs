//! The lists an agent reads: on `/mcp` and `/profiles/NAME/mcp` the pool's
//! aggregated lists from memory (never waiting for a server), on
//! `/servers/NAME/mcp` the server's own, else the list kept from before
//! (rule 2).

use std::sync::Arc;

use rmcp::model::{
    CacheScope, ClientRequest, CustomResult, ErrorData as McpError, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, RequestOptionalParam, ServerResult,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;

use super::forward::Forwarder;
use super::meta::MetaTools;
use super::routing::Routes;
use super::{speaks_2026, unexpected};
use crate::hub::Scope;
use crate::supervisor::{Lists, Supervisor};
use crate::tool_check;

/// `ttlMs` of an aggregated list for a 2026-07-28 agent: mcpool answers
/// from memory at once and a list changes whenever a server connects or
/// re-lists, which `subscriptions/listen` announces, so it is not to be
/// reused without asking (behaviour.md rule 16).
pub(super) const AGGREGATED_TTL_MS: u64 = 0;

/// Sets the cache hints of an aggregated list for a 2026-07-28 agent; the
/// list depends on this user's config, so only this client may keep it.
macro_rules! hinted {
    ($ctx:expr, $result:expr) => {{
        let mut result = $result;
        if speaks_2026($ctx) {
            result.ttl_ms = Some(AGGREGATED_TTL_MS);
            result.cache_scope = Some(CacheScope::Private);
        }
        result
    }};
}

/// A server's `tools/list` page with each tool checked on its own
/// (tool_check.rs); rmcp hands over a page with a tool it cannot read as a
/// custom result, whose tools are checked one by one too.
fn checked_page(result: ServerResult) -> Option<ListToolsResult> {
    match result {
        ServerResult::ListToolsResult(mut page) => {
            page.tools = tool_check::check(page.tools.iter().map(tool_check::raw).collect()).tools;
            Some(page)
        }
        ServerResult::CustomResult(CustomResult(Value::Object(mut page))) => {
            let Some(Value::Array(raw)) = page.remove("tools") else {
                return None;
            };
            let mut checked = ListToolsResult::with_all_items(tool_check::check(raw).tools);
            checked.next_cursor = page.remove("nextCursor").and_then(|c| c.as_str().map(str::to_string));
            Some(checked)
        }
        _ => None,
    }
}

fn non_empty<T>(items: Vec<T>) -> Option<Vec<T>> {
    (!items.is_empty()).then_some(items)
}

/// The lists a session's agent reads.
pub(super) struct Listing<'a> {
    pub routes: Routes<'a>,
    pub forwarder: Forwarder<'a>,
    /// The aggregated tool list depends on the listing mode and searches.
    pub meta: MetaTools<'a>,
}

impl Listing<'_> {
    /// One server's list: forwarded, else what the pool kept of it (a
    /// server that dropped keeps its lists, rule 2) when there is something.
    async fn forward_or_kept<R>(
        &self,
        sup: &Arc<Supervisor>,
        request: ClientRequest,
        ctx: &RequestContext<RoleServer>,
        take: impl FnOnce(ServerResult) -> Option<R>,
        kept: impl FnOnce(Lists) -> Option<R>,
    ) -> Result<R, McpError> {
        match self.forwarder.forward(sup, request, ctx).await {
            Ok(result) => take(result).ok_or_else(unexpected),
            Err(e) => kept(sup.lists()).ok_or(e),
        }
    }

    pub async fn tools(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        match self.routes.scope {
            Scope::All | Scope::Profile(_) => {
                let (tools, _) = self.meta.aggregated_tools(&ctx)?;
                Ok(hinted!(&ctx, ListToolsResult::with_all_items(tools)))
            }
            Scope::One(_) => {
                let sup = self.routes.single()?;
                let control = self.routes.pool.tool_control().clone();
                let name = sup.name().to_string();
                let request =
                    ClientRequest::ListToolsRequest(RequestOptionalParam::with_param(request.unwrap_or_default()));
                // Disabled and held-back tools are not listed here either.
                self.forward_or_kept(
                    &sup,
                    request,
                    &ctx,
                    |r| {
                        // Checked as every listing is (rule 18): a name listed
                        // twice once, a broken tool left out, not the page.
                        let mut r = checked_page(r)?;
                        r.tools.retain(|t| control.visible(&name, t));
                        Some(r)
                    },
                    |kept| {
                        let mut tools = kept.tools;
                        tools.retain(|t| control.visible(sup.name(), t));
                        non_empty(tools).map(|t| hinted!(&ctx, ListToolsResult::with_all_items(t)))
                    },
                )
                .await
            }
        }
    }

    pub async fn prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        match self.routes.scope {
            Scope::All | Scope::Profile(_) => {
                let view = self.routes.pool.prompt_view();
                let prompts = view
                    .prompts
                    .iter()
                    .filter(|p| {
                        *self.routes.scope == Scope::All
                            || view
                                .names
                                .resolve(&p.name)
                                .is_some_and(|(s, _)| self.routes.in_scope(s))
                    })
                    .cloned()
                    .collect();
                Ok(hinted!(&ctx, ListPromptsResult::with_all_items(prompts)))
            }
            Scope::One(_) => {
                let sup = self.routes.single()?;
                let control = self.routes.pool.tool_control().clone();
                let name = sup.name().to_string();
                let request =
                    ClientRequest::ListPromptsRequest(RequestOptionalParam::with_param(request.unwrap_or_default()));
                // Prompts the scan holds back are not listed here either.
                self.forward_or_kept(
                    &sup,
                    request,
                    &ctx,
                    |r| match r {
                        ServerResult::ListPromptsResult(mut r) => {
                            r.prompts.retain(|p| !control.prompt_held(&name, p));
                            Some(r)
                        }
                        _ => None,
                    },
                    |kept| {
                        let mut prompts = kept.prompts;
                        prompts.retain(|p| !control.prompt_held(sup.name(), p));
                        non_empty(prompts).map(|p| hinted!(&ctx, ListPromptsResult::with_all_items(p)))
                    },
                )
                .await
            }
        }
    }

    pub async fn resources(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        match self.routes.scope {
            Scope::All | Scope::Profile(_) => {
                let mut seen = std::collections::BTreeSet::new();
                let resources = self
                    .routes
                    .pool
                    .servers()
                    .iter()
                    .filter(|s| self.routes.in_scope(s.name()))
                    .flat_map(|s| s.lists().resources)
                    .filter(|r| seen.insert(r.uri.clone()))
                    .collect();
                Ok(hinted!(&ctx, ListResourcesResult::with_all_items(resources)))
            }
            Scope::One(_) => {
                let sup = self.routes.single()?;
                let request =
                    ClientRequest::ListResourcesRequest(RequestOptionalParam::with_param(request.unwrap_or_default()));
                self.forward_or_kept(
                    &sup,
                    request,
                    &ctx,
                    |r| match r {
                        ServerResult::ListResourcesResult(r) => Some(r),
                        _ => None,
                    },
                    |kept| non_empty(kept.resources).map(|r| hinted!(&ctx, ListResourcesResult::with_all_items(r))),
                )
                .await
            }
        }
    }

    pub async fn templates(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        match self.routes.scope {
            Scope::All | Scope::Profile(_) => {
                let control = self.routes.pool.tool_control();
                let templates = self
                    .routes
                    .pool
                    .servers()
                    .iter()
                    .filter(|s| self.routes.in_scope(s.name()))
                    .flat_map(|s| {
                        let mut templates = s.lists().templates;
                        templates.retain(|t| !control.template_held(s.name(), t));
                        templates
                    })
                    .collect();
                Ok(hinted!(&ctx, ListResourceTemplatesResult::with_all_items(templates)))
            }
            Scope::One(_) => {
                let sup = self.routes.single()?;
                let control = self.routes.pool.tool_control().clone();
                let name = sup.name().to_string();
                let request = ClientRequest::ListResourceTemplatesRequest(RequestOptionalParam::with_param(
                    request.unwrap_or_default(),
                ));
                self.forward_or_kept(
                    &sup,
                    request,
                    &ctx,
                    |r| match r {
                        ServerResult::ListResourceTemplatesResult(mut r) => {
                            r.resource_templates.retain(|t| !control.template_held(&name, t));
                            Some(r)
                        }
                        _ => None,
                    },
                    |kept| {
                        let mut templates = kept.templates;
                        templates.retain(|t| !control.template_held(sup.name(), t));
                        non_empty(templates).map(|t| hinted!(&ctx, ListResourceTemplatesResult::with_all_items(t)))
                    },
                )
                .await
            }
        }
    }
}
