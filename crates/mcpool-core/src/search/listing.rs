//! What `tools/list` sends on an aggregated endpoint: every tool (`all`),
//! or the pinned tools, the session's found tools and the meta-tools
//! (`search`), or `auto`: `all` until the full listing's estimated tokens
//! pass the budget. Parsed from the config's `toolListing`,
//! `toolListingBudget`, `pinnedTools` and `pinMostUsed`, at the top level
//! and per profile (a profile's own value wins).

use std::collections::BTreeSet;

use rmcp::model::Tool;
use serde::Serialize;
use serde_json::{Map, Value};

/// The query parameter that sets an endpoint URL's listing mode
/// (`/mcp?toolListing=all`), as `mcpool connect` writes it per client.
pub const URL_PARAM: &str = "toolListing";

/// The budget of `auto` when the config sets none, in estimated tokens.
pub const DEFAULT_BUDGET: usize = 15_000;
/// Most tools `pinMostUsed` may ask for.
pub const MAX_PIN_MOST_USED: usize = 100;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ListingMode {
    All,
    Search,
    #[default]
    Auto,
}

impl ListingMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ListingMode::All => "all",
            ListingMode::Search => "search",
            ListingMode::Auto => "auto",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "all" => Some(ListingMode::All),
            "search" => Some(ListingMode::Search),
            "auto" => Some(ListingMode::Auto),
            _ => None,
        }
    }
}

/// What was sent, after `auto` decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Sent {
    All,
    Search,
}

/// The listing keys of the top level or of one profile, as written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListingSettings {
    pub mode: Option<ListingMode>,
    pub budget: Option<usize>,
    pub pinned: Option<BTreeSet<String>>,
    pub pin_most_used: Option<usize>,
}

/// The settings in force for one endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Listing {
    pub mode: ListingMode,
    pub budget: usize,
    pub pinned: BTreeSet<String>,
    pub pin_most_used: usize,
}

impl ListingSettings {
    /// These settings over `base` (a profile's over the top level's).
    pub fn over(&self, base: &ListingSettings) -> Listing {
        Listing {
            mode: self.mode.or(base.mode).unwrap_or_default(),
            budget: self.budget.or(base.budget).unwrap_or(DEFAULT_BUDGET),
            pinned: self.pinned.clone().or_else(|| base.pinned.clone()).unwrap_or_default(),
            pin_most_used: self.pin_most_used.or(base.pin_most_used).unwrap_or(0),
        }
    }
}

impl Listing {
    /// What to send when the full listing costs `full_tokens`.
    pub fn decide(&self, full_tokens: usize) -> Sent {
        match self.mode {
            ListingMode::All => Sent::All,
            ListingMode::Search => Sent::Search,
            ListingMode::Auto if full_tokens > self.budget => Sent::Search,
            ListingMode::Auto => Sent::All,
        }
    }
}

/// The `search` listing: the meta-tools, then the tools of `full` (in its
/// order) that are pinned or were found by this session.
pub fn search_listing(meta: Vec<Tool>, full: &[Tool], keep: impl Fn(&str) -> bool) -> Vec<Tool> {
    let mut tools = meta;
    let taken: BTreeSet<String> = tools.iter().map(|t| t.name.to_string()).collect();
    tools.extend(
        full.iter()
            .filter(|t| !taken.contains(t.name.as_ref()) && keep(&t.name))
            .cloned(),
    );
    tools
}

/// What one endpoint's `tools/list` sends ([`plan`]).
pub struct Plan {
    pub tools: Vec<Tool>,
    pub sent: Sent,
    /// What `all` would send: its tools and estimated tokens.
    pub full_count: usize,
    pub full_tokens: usize,
}

/// Decides, in this one place, what an endpoint's `tools/list` sends: from
/// the settings in force, the meta-tools, every tool the endpoint may list
/// (`full`, costing `full_tokens` without the meta-tools), the most used
/// tools (asked for only when a `search` listing pins them), and `found`,
/// the tools the asking agent's searches found (`None`: decide, build
/// nothing).
pub fn plan(
    listing: &Listing,
    meta: Vec<Tool>,
    full: &[Tool],
    full_tokens: usize,
    most_used: impl FnOnce(usize) -> Vec<String>,
    found: Option<&dyn Fn(&str) -> bool>,
) -> Plan {
    let full_tokens = full_tokens + crate::search::compact::listing_tokens(&meta);
    let full_count = full.len() + meta.len();
    let sent = listing.decide(full_tokens);
    let tools = match (sent, found) {
        (_, None) => Vec::new(),
        (Sent::All, Some(_)) => meta.into_iter().chain(full.iter().cloned()).collect(),
        (Sent::Search, Some(found)) => {
            let mut pinned = listing.pinned.clone();
            pinned.extend(most_used(listing.pin_most_used));
            search_listing(meta, full, |n| pinned.contains(n) || found(n))
        }
    };
    Plan {
        tools,
        sent,
        full_count,
        full_tokens,
    }
}

/// One problem with a listing key: (field, message).
pub type Problem = (String, String);

/// The listing keys of `obj`; `prefix` names where they are (`""` or
/// `profiles.NAME.`). A bad value is left out (its default applies) and
/// reported.
pub fn parse_settings(obj: &Map<String, Value>, prefix: &str) -> (ListingSettings, Vec<Problem>) {
    let mut problems = Vec::new();
    let mut settings = ListingSettings::default();
    let field = |k: &str| format!("{prefix}{k}");
    match obj.get("toolListing") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if ListingMode::parse(s).is_some() => settings.mode = ListingMode::parse(s),
        Some(_) => problems.push((
            field("toolListing"),
            "expected \"all\", \"search\" or \"auto\"; using \"auto\" until it is fixed".into(),
        )),
    }
    match obj.get("toolListingBudget") {
        None | Some(Value::Null) => {}
        Some(v) => match v.as_u64().filter(|n| *n > 0) {
            Some(n) => settings.budget = Some(usize::try_from(n).unwrap_or(usize::MAX)),
            None => problems.push((
                field("toolListingBudget"),
                format!("expected a whole number of tokens above 0; using {DEFAULT_BUDGET}"),
            )),
        },
    }
    match obj.get("pinnedTools") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            let mut pinned = BTreeSet::new();
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(s) if !s.is_empty() => {
                        pinned.insert(s.clone());
                    }
                    _ => problems.push((
                        field(&format!("pinnedTools[{i}]")),
                        "expected a tool's public name (such as \"github__create_issue\")".into(),
                    )),
                }
            }
            settings.pinned = Some(pinned);
        }
        Some(_) => problems.push((field("pinnedTools"), "expected an array of public tool names".into())),
    }
    match obj.get("pinMostUsed") {
        None | Some(Value::Null) => {}
        Some(v) => match v.as_u64().filter(|n| *n as usize <= MAX_PIN_MOST_USED) {
            Some(n) => settings.pin_most_used = Some(n as usize),
            None => problems.push((
                field("pinMostUsed"),
                format!("expected a whole number from 0 to {MAX_PIN_MOST_USED}; using 0"),
            )),
        },
    }
    (settings, problems)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> (ListingSettings, Vec<Problem>) {
        parse_settings(v.as_object().unwrap(), "")
    }

    #[test]
    fn settings_parse_and_bad_values_are_named() {
        let (s, problems) = parse(
            json!({"toolListing": "search", "toolListingBudget": 2000, "pinnedTools": ["a__b"], "pinMostUsed": 3}),
        );
        assert!(problems.is_empty());
        assert_eq!(s.mode, Some(ListingMode::Search));
        assert_eq!(s.budget, Some(2000));
        assert_eq!(s.pinned, Some(BTreeSet::from(["a__b".to_string()])));
        assert_eq!(s.pin_most_used, Some(3));
        let (s, problems) = parse(
            json!({"toolListing": "some", "toolListingBudget": -1, "pinnedTools": ["", 3, "ok"], "pinMostUsed": 1000}),
        );
        let fields: Vec<&str> = problems.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            fields,
            [
                "toolListing",
                "toolListingBudget",
                "pinnedTools[0]",
                "pinnedTools[1]",
                "pinMostUsed"
            ]
        );
        assert_eq!(s.over(&ListingSettings::default()).mode, ListingMode::Auto);
        assert_eq!(s.pinned, Some(BTreeSet::from(["ok".to_string()])));
        let (_, problems) = parse_settings(json!({"pinnedTools": "x"}).as_object().unwrap(), "profiles.p.");
        assert_eq!(problems[0].0, "profiles.p.pinnedTools");
    }

    #[test]
    fn a_profile_overrides_the_top_level_key_by_key() {
        let top = ListingSettings {
            mode: Some(ListingMode::Search),
            budget: Some(100),
            pinned: Some(BTreeSet::from(["x".into()])),
            pin_most_used: Some(2),
        };
        let profile = ListingSettings {
            mode: Some(ListingMode::All),
            ..Default::default()
        };
        let l = profile.over(&top);
        assert_eq!((l.mode, l.budget, l.pin_most_used), (ListingMode::All, 100, 2));
        assert!(l.pinned.contains("x"));
        let d = ListingSettings::default().over(&ListingSettings::default());
        assert_eq!(
            (d.mode, d.budget, d.pin_most_used),
            (ListingMode::Auto, DEFAULT_BUDGET, 0)
        );
    }

    fn tool(name: &str) -> Tool {
        Tool::new(name.to_string(), "d", std::sync::Arc::new(serde_json::Map::new()))
    }

    fn names(tools: &[Tool]) -> Vec<&str> {
        tools.iter().map(|t| t.name.as_ref()).collect()
    }

    #[test]
    fn a_plan_sends_meta_pinned_most_used_and_found_in_search_mode() {
        let full = [tool("a__one"), tool("a__two"), tool("b__three"), tool("b__four")];
        let mut listing = ListingSettings::default().over(&ListingSettings::default());
        listing.mode = ListingMode::Search;
        listing.pinned = BTreeSet::from(["a__two".to_string()]);
        listing.pin_most_used = 1;
        let found = |n: &str| n == "b__four";
        let p = plan(
            &listing,
            vec![tool("mcpool__search_tools")],
            &full,
            100,
            |n| {
                assert_eq!(n, 1);
                vec!["b__three".to_string()]
            },
            Some(&found),
        );
        assert_eq!(p.sent, Sent::Search);
        assert_eq!(
            names(&p.tools),
            ["mcpool__search_tools", "a__two", "b__three", "b__four"]
        );
        assert_eq!(p.full_count, 5);
        assert!(p.full_tokens > 100, "the meta-tools count too");

        listing.mode = ListingMode::Auto;
        let p = plan(
            &listing,
            vec![tool("m")],
            &full,
            10,
            |_| panic!("all needs no pins"),
            Some(&found),
        );
        assert_eq!((p.sent, p.tools.len()), (Sent::All, 5));
        let decided = plan(&listing, vec![tool("m")], &full, listing.budget, |_| Vec::new(), None);
        assert_eq!(
            (decided.sent, decided.tools.len()),
            (Sent::Search, 0),
            "the meta-tools tip the budget"
        );
    }

    #[test]
    fn auto_lists_all_until_the_budget() {
        let l = ListingSettings::default().over(&ListingSettings::default());
        assert_eq!(l.decide(DEFAULT_BUDGET), Sent::All);
        assert_eq!(l.decide(DEFAULT_BUDGET + 1), Sent::Search);
        let all = Listing {
            mode: ListingMode::All,
            ..l.clone()
        };
        assert_eq!(all.decide(usize::MAX), Sent::All);
        let search = Listing {
            mode: ListingMode::Search,
            ..l
        };
        assert_eq!(search.decide(0), Sent::Search);
    }

    #[test]
    fn the_search_listing_is_meta_then_kept_tools_in_listing_order() {
        let t = |n: &str| Tool::new(n.to_string(), "d", std::sync::Arc::new(Default::default()));
        let full = vec![t("mcpool__search_tools"), t("a__x"), t("b__y"), t("c__z")];
        let listed = search_listing(vec![t("mcpool__search_tools"), t("mcpool__call_tool")], &full, |n| {
            n == "c__z" || n == "a__x"
        });
        let names: Vec<&str> = listed.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, ["mcpool__search_tools", "mcpool__call_tool", "a__x", "c__z"]);
    }
}

/// The tools a search found for one agent, which its `search` listing
/// adds: the most recent [`FoundTools::MAX`], newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FoundTools {
    names: std::collections::VecDeque<String>,
}

impl FoundTools {
    pub const MAX: usize = 32;

    /// Adds `names` as the most recent; answers whether the set changed
    /// (a name new to it; one already in only moves up).
    pub fn add<'a>(&mut self, names: impl IntoIterator<Item = &'a str>) -> bool {
        let mut changed = false;
        let names: Vec<&str> = names.into_iter().collect();
        for name in names.into_iter().rev() {
            match self.names.iter().position(|n| n == name) {
                Some(i) => {
                    if let Some(n) = self.names.remove(i) {
                        self.names.push_front(n);
                    }
                }
                None => {
                    self.names.push_front(name.to_string());
                    changed = true;
                }
            }
        }
        while self.names.len() > Self::MAX {
            self.names.pop_back();
        }
        changed
    }

    pub fn contains(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(String::as_str)
    }
}

#[cfg(test)]
mod found_tests {
    use super::FoundTools;

    #[test]
    fn found_tools_keep_the_most_recent_32() {
        let mut found = FoundTools::default();
        assert!(found.add(["a", "b"]));
        assert!(!found.add(["b"]), "a tool found again is not a change");
        assert_eq!(found.names().collect::<Vec<_>>(), ["b", "a"]);
        let many: Vec<String> = (0..40).map(|i| format!("t{i}")).collect();
        assert!(found.add(many.iter().map(String::as_str)));
        assert_eq!(found.names().count(), FoundTools::MAX);
        assert!(found.contains("t0") && found.contains("t31") && !found.contains("t39") && !found.contains("a"));
    }
}
