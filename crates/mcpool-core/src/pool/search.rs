//! The pool's side of tool search: the index kept current as servers'
//! lists change, searches narrowed to what an endpoint may call, the
//! summaries that describe the search tool, and the most-used tools.

use rmcp::model::Tool;

use super::{Pool, PoolInner};
use crate::lifecycle::Status;
use crate::search::meta::{summarize, ServerSummary};
use crate::supervisor::ToolState;
use crate::sync::{read, write};
use crate::toolctl::{Profile, Verdict};

/// The index's name for the endpoint's own tools: no configured server can
/// be named so.
const BUILTIN_KEY: &str = "";

/// What a search may find.
#[derive(Debug, Clone, Default)]
pub struct SearchScope {
    /// Only tools agents may call now (listed: enabled and approved).
    /// `false` (the dashboard): disabled and held-back tools too.
    pub callable_only: bool,
    pub server: Option<String>,
    pub profile: Option<Profile>,
}

/// One tool a search found.
#[derive(Debug, Clone)]
pub struct ToolMatch {
    /// Its public name on the aggregated endpoint.
    pub public: String,
    /// The server's name (`mcpool` for the endpoint's own tools).
    pub server: String,
    /// The definition as agents see it (under its public name).
    pub tool: Tool,
    pub status: Status,
    pub state: ToolState,
    pub enabled: bool,
    pub score: f32,
}

impl PoolInner {
    /// Re-indexes `server`'s tools (`None`: removed).
    pub(super) fn reindex(&self, server: &str, tools: Option<&[Tool]>) {
        let about = read(&self.servers).get(server).and_then(|s| s.info()).map(|info| {
            let own = info.server_info.as_ref();
            let own = [
                own.and_then(|i| i.title.as_deref()),
                own.and_then(|i| i.description.as_deref()),
                info.instructions.as_deref(),
            ];
            own.into_iter().flatten().collect::<Vec<_>>().join(". ")
        });
        let mut index = write(&self.index);
        match tools {
            Some(tools) => index.set_server(server, about.as_deref().unwrap_or_default(), tools),
            None => index.remove_server(server),
        }
    }

    pub(super) fn index_builtins(&self) {
        write(&self.index).set_server(
            BUILTIN_KEY,
            "mcpool: the pool of MCP servers itself",
            &self.builtin_tools,
        );
    }
}

impl Pool {
    /// The service `query` names that no server in the pool is and no
    /// tool mentions (`search::services`).
    pub fn unserved_service(&self, query: &str) -> Option<String> {
        crate::search::services::unserved(&read(&self.inner.index), query)
    }

    /// The tools best matching `query`, best first, at most `limit`.
    pub fn search_tools(&self, query: &str, limit: usize, scope: &SearchScope) -> Vec<ToolMatch> {
        let view = self.tool_view();
        let control = self.tool_control();
        let builtin = crate::names::BUILTIN_SERVER;
        let public_of = |server: &str, tool: &str| -> Option<String> {
            if server == BUILTIN_KEY {
                return Some(tool.to_string());
            }
            view.names.public_name(server, tool).map(str::to_string)
        };
        let accept = |server: &str, tool: &str| {
            let shown = if server == BUILTIN_KEY { builtin } else { server };
            if scope.server.as_deref().is_some_and(|s| s != shown) {
                return false;
            }
            let Some(public) = public_of(server, tool) else {
                return false;
            };
            if let Some(p) = &scope.profile {
                let owner = (server != BUILTIN_KEY).then_some(server);
                if !p.includes_tool(owner, &public) {
                    return false;
                }
            }
            !scope.callable_only || view.get(&public).is_some()
        };
        let index = read(&self.inner.index);
        let hits = crate::search::plan::search(&index, query, limit, &crate::search::Ranking::default(), accept);
        drop(index);
        hits.into_iter()
            .filter_map(|hit| {
                let public = public_of(&hit.server, &hit.tool)?;
                if hit.server == BUILTIN_KEY {
                    let tool = view.get(&public)?.clone();
                    return Some(ToolMatch {
                        public,
                        server: builtin.to_string(),
                        tool,
                        status: Status::Connected,
                        state: ToolState::Live,
                        enabled: true,
                        score: hit.score,
                    });
                }
                let sup = self.server(&hit.server)?;
                let (own, source) = sup.tool_and_source(&hit.tool)?;
                let state = match control.verdict(&hit.server, &own) {
                    Verdict::Approved => source.into(),
                    Verdict::Changed { .. } => ToolState::Changed,
                    Verdict::Quarantined => ToolState::Quarantined,
                };
                let mut tool = view.get(&public).cloned().unwrap_or(own);
                tool.name = public.clone().into();
                Some(ToolMatch {
                    public,
                    server: hit.server.clone(),
                    enabled: control.enabled(&hit.server, &hit.tool),
                    tool,
                    status: sup.status(),
                    state,
                    score: hit.score,
                })
            })
            .collect()
    }

    /// The number of tools the index holds (every server's, hidden ones
    /// too, and the endpoint's own).
    pub fn indexed_tools(&self) -> usize {
        read(&self.inner.index).len()
    }

    /// What each server in `include` offers, for the search tool's
    /// description: in name order, built once per change of some server's
    /// lists.
    pub fn server_summaries(&self, include: impl Fn(&str) -> bool) -> Vec<ServerSummary> {
        let all = self.cached_view(|v| &mut v.summaries, || self.build_summaries());
        all.iter().filter(|s| include(&s.name)).cloned().collect()
    }

    fn build_summaries(&self) -> Vec<ServerSummary> {
        let view = self.tool_view();
        self.servers()
            .iter()
            .map(|s| {
                let names: Vec<String> = s
                    .lists()
                    .tools
                    .iter()
                    .filter(|t| {
                        view.names
                            .public_name(s.name(), &t.name)
                            .is_some_and(|p| view.get(p).is_some())
                    })
                    .map(|t| t.name.to_string())
                    .collect();
                let info = s.info();
                let about = info.as_ref().and_then(|i| {
                    i.instructions
                        .as_deref()
                        .or(i.server_info.as_ref().and_then(|s| s.description.as_deref()))
                        .map(str::to_string)
                });
                let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                ServerSummary {
                    name: s.name().to_string(),
                    summary: summarize(about.as_deref(), &refs),
                    tools: names.len(),
                }
            })
            .collect()
    }

    /// One call that reached `tool` of `server`, for `pinMostUsed`.
    pub fn count_call(&self, server: &str, tool: &str) {
        self.inner.usage.record(server, tool, crate::usage::today());
    }

    /// The public names of the `n` tools called most in the last 7 days
    /// that agents may call now.
    pub fn most_used(&self, n: usize) -> Vec<String> {
        if n == 0 {
            return Vec::new();
        }
        let view = self.tool_view();
        // Asked for more than n: some may be hidden or gone.
        self.inner
            .usage
            .top(n.saturating_mul(2).max(n + 8), crate::usage::today())
            .into_iter()
            .filter_map(|(server, tool)| view.names.public_name(&server, &tool).map(str::to_string))
            .filter(|public| view.get(public).is_some())
            .take(n)
            .collect()
    }

    /// Writes changed call counts (blocking; see [`crate::usage::Usage::flush`]).
    pub fn flush_usage(&self) {
        if let Err(e) = self.inner.usage.flush(crate::usage::today()) {
            tracing::warn!("cannot save the tool usage counts: {e}");
        }
    }
}

/// What an aggregated endpoint's `tools/list` sends.
#[derive(Debug, Clone)]
pub struct Listed {
    pub tools: Vec<Tool>,
    pub sent: crate::search::Sent,
    /// The settings in force (the URL's mode applied).
    pub listing: crate::search::Listing,
    /// What `all` would send: its tools and estimated tokens.
    pub full_count: usize,
    pub full_tokens: usize,
}

impl Pool {
    /// The meta-tools of `/mcp` (`None`) or a profile, the search tool
    /// described from the servers it serves.
    pub fn meta_tools(&self, profile: Option<&Profile>) -> Vec<Tool> {
        let summaries = self.server_summaries(|s| profile.is_none_or(|p| p.includes_server(s)));
        vec![
            crate::search::meta::search_tool(&summaries),
            crate::search::meta::call_tool(),
            crate::search::meta::run_script_tool(),
        ]
    }

    /// The listing of `/mcp` (`profile` `None`) or of a profile (`None` when
    /// there is no such profile): `mode` over the configured one, `found`
    /// the tools the asking agent's searches found.
    pub fn listed(
        &self,
        profile: Option<&str>,
        mode: Option<crate::search::ListingMode>,
        found: &dyn Fn(&str) -> bool,
    ) -> Option<Listed> {
        self.plan_listing(profile, mode, Some(found))
    }

    /// The `tools/list` result (`ListToolsResult` as JSON, as rmcp sends
    /// it to a session agent) of `/mcp` (`profile` `None`) or of a profile,
    /// when it sends every tool and so is the same for every agent; serialised once per change of the lists
    /// or of the settings. `None` for a `search` listing or no such profile.
    pub fn listing_json(
        &self,
        profile: Option<&str>,
        mode: Option<crate::search::ListingMode>,
    ) -> Option<std::sync::Arc<[u8]>> {
        let mut listing = self.tool_control().listing(profile);
        if let Some(mode) = mode {
            listing.mode = mode;
        }
        let generation = {
            let v = crate::sync::lock(&self.inner.views);
            let cached = v
                .listings
                .iter()
                .find(|c| c.profile.as_deref() == profile && c.mode == mode && c.listing == listing);
            if let Some(c) = cached {
                return c.json.clone();
            }
            v.generation
        };
        let listed = self.plan_listing(profile, mode, Some(&|_| false))?;
        let json = (listed.sent == crate::search::Sent::All)
            .then(|| {
                use rmcp::model::{ListToolsResult, ServerResult};
                let mut result = ServerResult::ListToolsResult(ListToolsResult::with_all_items(listed.tools));
                // As rmcp answers a session agent: every protocol with
                // `initialize` is older than 2026-07-28.
                result.strip_result_type_for_legacy_peer();
                result.strip_non_object_output_for_legacy_peer();
                serde_json::to_vec(&result).ok()
            })
            .flatten()
            .map(std::sync::Arc::from);
        let mut v = crate::sync::lock(&self.inner.views);
        // A change that landed while serialising makes this one stale.
        if v.generation == generation {
            v.listings
                .retain(|c| !(c.profile.as_deref() == profile && c.mode == mode));
            v.listings.push(super::views::ListingJson {
                profile: profile.map(str::to_string),
                mode,
                listing: listed.listing,
                json: json.clone(),
            });
        }
        json
    }

    /// Which listing `/mcp` or a profile sends now, without building it.
    pub fn sends(
        &self,
        profile: Option<&str>,
        mode: Option<crate::search::ListingMode>,
    ) -> Option<crate::search::Sent> {
        self.plan_listing(profile, mode, None).map(|l| l.sent)
    }

    /// [`Self::listed`]; with `found` `None`, only the decision (no tools).
    fn plan_listing(
        &self,
        profile: Option<&str>,
        mode: Option<crate::search::ListingMode>,
        found: Option<&dyn Fn(&str) -> bool>,
    ) -> Option<Listed> {
        use crate::search::compact::listing_tokens;
        let control = self.tool_control();
        let view = self.tool_view();
        // Only the tools sent are copied: a `search` listing of thousands
        // of tools copies a handful.
        let (profile_tools, own) = match profile {
            Some(name) => (Some(self.profile_tools(name)?), Some(control.profile(name)?)),
            None => (None, None),
        };
        let (full, full_tokens) = match &profile_tools {
            Some(tools) => (tools.as_slice(), listing_tokens(tools)),
            None => (view.tools.as_slice(), view.tokens()),
        };
        let meta = self.meta_tools(own.as_ref());
        let mut listing = control.listing(profile);
        if let Some(mode) = mode {
            listing.mode = mode;
        }
        let crate::search::listing::Plan {
            tools,
            sent,
            full_count,
            full_tokens,
        } = crate::search::listing::plan(&listing, meta, full, full_tokens, |n| self.most_used(n), found);
        Some(Listed {
            tools,
            sent,
            listing,
            full_count,
            full_tokens,
        })
    }
}
