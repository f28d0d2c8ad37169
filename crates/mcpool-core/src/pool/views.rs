//! The aggregated view agents see: every server's tools and prompts under
//! public names (built-ins first), built once per change of some server's
//! lists, and a profile's part of it.

use std::sync::Arc;

use rmcp::model::{Prompt, Tool};

use super::Pool;
use crate::names::NameTable;
use crate::supervisor::Lists;
use crate::sync::lock;

/// Aggregated tools with the table that maps their public names back.
pub struct ToolView {
    pub tools: Vec<Tool>,
    pub names: NameTable,
    /// Each listed tool's place in `tools`, by public name.
    pub by_name: std::collections::HashMap<String, usize>,
    tokens: std::sync::OnceLock<usize>,
}

impl ToolView {
    /// The listed tool `public`, if agents see it.
    pub fn get(&self, public: &str) -> Option<&Tool> {
        self.by_name.get(public).and_then(|i| self.tools.get(*i))
    }

    /// The estimated tokens of the whole listing (computed once).
    pub fn tokens(&self) -> usize {
        *self
            .tokens
            .get_or_init(|| crate::search::compact::listing_tokens(&self.tools))
    }
}

pub struct PromptView {
    pub prompts: Vec<Prompt>,
    pub names: NameTable,
}

/// The views built since the last change of some server's lists.
#[derive(Default)]
pub(super) struct Views {
    pub(super) generation: u64,
    pub(super) tools: Option<Arc<ToolView>>,
    pub(super) prompts: Option<Arc<PromptView>>,
    /// What each server offers, for the search tool's description.
    pub(super) summaries: Option<Arc<Vec<crate::search::meta::ServerSummary>>>,
    /// `tools/list` results as JSON, by endpoint and URL mode
    /// ([`Pool::listing_json`]).
    pub(super) listings: Vec<ListingJson>,
}

/// One endpoint's `tools/list` result, serialised once per change of the
/// lists: the same bytes for every agent while it sends every tool.
pub(super) struct ListingJson {
    pub(super) profile: Option<String>,
    pub(super) mode: Option<crate::search::ListingMode>,
    /// The settings it was decided under.
    pub(super) listing: crate::search::Listing,
    /// `None`: that listing is a `search` one, whose tools differ by agent.
    pub(super) json: Option<Arc<[u8]>>,
}

impl Pool {
    /// The tools a profile's agents see, or `None` when there is no such
    /// profile: the aggregated view narrowed to its servers and tools.
    pub fn profile_tools(&self, name: &str) -> Option<Vec<Tool>> {
        let profile = self.inner.ctx.tools.profile(name)?;
        let view = self.tool_view();
        Some(profile_filter(&view, &profile))
    }

    /// Every visible tool under its public name, built-ins first; rebuilt
    /// only after some server's lists changed.
    pub fn tool_view(&self) -> Arc<ToolView> {
        self.cached_view(|v| &mut v.tools, || self.build_tool_view())
    }

    /// The aggregated prompts, rebuilt only after some server's lists changed.
    pub fn prompt_view(&self) -> Arc<PromptView> {
        self.cached_view(|v| &mut v.prompts, || self.build_prompt_view())
    }

    pub(super) fn cached_view<T>(
        &self,
        slot: impl Fn(&mut Views) -> &mut Option<Arc<T>>,
        build: impl FnOnce() -> T,
    ) -> Arc<T> {
        let (generation, cached) = {
            let mut v = lock(&self.inner.views);
            (v.generation, slot(&mut v).clone())
        };
        if let Some(view) = cached {
            return view;
        }
        let view = Arc::new(build());
        let mut v = lock(&self.inner.views);
        // A change that landed while building makes this view stale.
        if v.generation == generation {
            *slot(&mut v) = Some(view.clone());
        }
        view
    }

    /// Every server's name and its current lists, which the views are built from.
    fn server_lists(&self) -> Vec<(String, Lists)> {
        self.servers()
            .iter()
            .map(|s| (s.name().to_string(), s.lists()))
            .collect()
    }

    fn build_tool_view(&self) -> ToolView {
        let lists = self.server_lists();
        let control = &self.inner.ctx.tools;
        tool_view_of(&self.inner.builtin_tools, &lists, |server, tool| {
            control.visible(server, tool)
        })
    }

    fn build_prompt_view(&self) -> PromptView {
        let lists = self.server_lists();
        let pairs = lists
            .iter()
            .flat_map(|(server, l)| l.prompts.iter().map(move |p| (server.as_str(), p.name.as_str())));
        let names = NameTable::build(pairs);
        let control = &self.inner.ctx.tools;
        let mut prompts = Vec::new();
        for (server, l) in &lists {
            for prompt in &l.prompts {
                // Named like the rest (a hold never renames another), not listed.
                if control.prompt_held(server, prompt) {
                    continue;
                }
                if let Some(public) = names.public_name(server, &prompt.name) {
                    let mut p = prompt.clone();
                    p.name = public.to_string();
                    prompts.push(p);
                }
            }
        }
        PromptView { prompts, names }
    }
}

/// The aggregated tools: `builtin` first, under their own names, then public
/// names over every server's tool (hidden ones too, so a switch never
/// renames another tool), listing only the `visible` ones.
pub(super) fn tool_view_of(
    builtin: &[Tool],
    lists: &[(String, Lists)],
    visible: impl Fn(&str, &Tool) -> bool,
) -> ToolView {
    let pairs = lists
        .iter()
        .flat_map(|(server, l)| l.tools.iter().map(move |t| (server.as_str(), t.name.as_ref())));
    let reserved: Vec<&str> = builtin.iter().map(|t| t.name.as_ref()).collect();
    let names = NameTable::build_reserving(&reserved, pairs);
    let mut tools = builtin.to_vec();
    for (server, l) in lists {
        for tool in &l.tools {
            if !visible(server, tool) {
                continue;
            }
            if let Some(public) = names.public_name(server, &tool.name) {
                let mut t = tool.clone();
                t.name = public.to_string().into();
                tools.push(t);
            }
        }
    }
    let by_name = tools.iter().enumerate().map(|(i, t)| (t.name.to_string(), i)).collect();
    ToolView {
        tools,
        names,
        by_name,
        tokens: Default::default(),
    }
}

/// The tools of `view` a profile lets through.
pub(super) fn profile_filter(view: &ToolView, profile: &crate::toolctl::Profile) -> Vec<Tool> {
    view.tools
        .iter()
        .filter(|t| {
            let server = view.names.resolve(&t.name).map(|(s, _)| s);
            profile.includes_tool(server, &t.name)
        })
        .cloned()
        .collect()
}
