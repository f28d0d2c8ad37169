//! The user's control over each tool: per-server `disabledTools` and
//! `enabledTools`, profiles (named subsets of servers and tools served at
//! `/profiles/NAME/mcp`), and the approval of tool definitions, so a tool
//! whose description or input schema changed since the user approved it is
//! held back (`approvals.rs`), and the scanner's reports, so a tool found
//! dangerous is quarantined until the user allows it (`scans.rs`).
//! `write.rs` turns a dashboard switch into an edit of the config file.
//!
//! Everything here is pure except the approval store's file.

pub mod approvals;
pub mod scan_more;
pub mod scans;
pub mod write;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::sync::{read, write};

pub use approvals::{Approvals, Definition, Verdict};
pub use scans::{ScanReport, ScanSetting, Scans};

/// A server entry's `disabledTools` / `enabledTools` (the server's own tool
/// names). Both may be given: a tool is served when the allowlist (if any)
/// holds it and the blocklist does not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolFilter {
    pub disabled: BTreeSet<String>,
    pub enabled: Option<BTreeSet<String>>,
    /// `"scan": "off"` and `scanAllow`.
    pub scan: ScanSetting,
}

impl ToolFilter {
    pub fn allows(&self, tool: &str) -> bool {
        !self.disabled.contains(tool) && self.enabled.as_ref().is_none_or(|e| e.contains(tool))
    }

    pub fn is_empty(&self) -> bool {
        self.disabled.is_empty() && self.enabled.is_none() && self.scan.is_default()
    }
}

/// A named subset: every tool (and prompt and resource) of `servers`, plus
/// the tools named in `tools` by their public names (`server__tool`, or a
/// built-in such as `mcpool__status`). Neither given: nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Profile {
    pub servers: BTreeSet<String>,
    pub tools: BTreeSet<String>,
    /// The profile's own `toolListing`, `toolListingBudget`, `pinnedTools`
    /// and `pinMostUsed` (unset ones follow the top level's).
    pub listing: crate::search::ListingSettings,
}

impl Profile {
    /// Whether the tool `public` of `server` (`None` for a built-in) is in.
    pub fn includes_tool(&self, server: Option<&str>, public: &str) -> bool {
        self.tools.contains(public) || server.is_some_and(|s| self.servers.contains(s))
    }

    /// Whether the server's prompts and resources are in.
    pub fn includes_server(&self, server: &str) -> bool {
        self.servers.contains(server)
    }
}

/// `approveNewTools`: what happens to tools mcpool has never seen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ApproveMode {
    /// The first sight of a server (and a tool new to a known server) is
    /// approved as it is; only later changes are held back.
    #[default]
    Auto,
    /// Every tool waits for the user's approval before agents see it.
    Ask,
}

/// The tool settings of a whole config.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolPolicy {
    /// Per server; servers without a filter are absent.
    pub filters: BTreeMap<String, ToolFilter>,
    pub profiles: BTreeMap<String, Profile>,
    pub approve: ApproveMode,
    /// The top level's listing keys.
    pub listing: crate::search::ListingSettings,
}

impl ToolPolicy {
    /// Whether the config lets agents see `tool` of `server`.
    pub fn allows(&self, server: &str, tool: &str) -> bool {
        self.filters.get(server).is_none_or(|f| f.allows(tool))
    }
}

/// The policy in force and the approvals: what the pool, the sessions and
/// the snapshots ask about each tool.
#[derive(Debug, Default)]
pub struct ToolControl {
    policy: std::sync::RwLock<ToolPolicy>,
    pub approvals: Approvals,
    pub scans: Scans,
    /// Prompts' and resource templates' reports.
    pub more_scans: scan_more::MoreScans,
}

impl ToolControl {
    pub fn new(approvals: Approvals) -> Self {
        ToolControl {
            policy: Default::default(),
            approvals,
            scans: Scans::default(),
            more_scans: Default::default(),
        }
    }

    pub fn policy(&self) -> ToolPolicy {
        read(&self.policy).clone()
    }

    /// Answers whether the policy changed.
    pub fn set_policy(&self, policy: &ToolPolicy) -> bool {
        let mut current = write(&self.policy);
        let changed = *current != *policy;
        current.clone_from(policy);
        changed
    }

    pub fn mode(&self) -> ApproveMode {
        read(&self.policy).approve
    }

    pub fn enabled(&self, server: &str, tool: &str) -> bool {
        read(&self.policy).allows(server, tool)
    }

    pub fn profile(&self, name: &str) -> Option<Profile> {
        read(&self.policy).profiles.get(name).cloned()
    }

    /// The listing settings of `/mcp` (`None`) or of a profile.
    pub fn listing(&self, profile: Option<&str>) -> crate::search::Listing {
        let policy = read(&self.policy);
        let own = profile.and_then(|p| policy.profiles.get(p)).map(|p| &p.listing);
        own.cloned().unwrap_or_default().over(&policy.listing)
    }

    /// Whether agents see `tool` of `server`: enabled and approved as it is.
    pub fn visible(&self, server: &str, tool: &rmcp::model::Tool) -> bool {
        self.enabled(server, &tool.name) && self.verdict(server, tool) == Verdict::Approved
    }

    /// The approvals' verdict on `tool`, where under `auto` a tool never
    /// seen is approved: it is, the moment the pool reviews the list that
    /// holds it, and a server that just connected must not show its tools
    /// as held back (nor hide them from agents) until then.
    pub fn verdict(&self, server: &str, tool: &rmcp::model::Tool) -> Verdict {
        if self.quarantined(server, tool) {
            return Verdict::Quarantined;
        }
        match self.approvals.verdict(server, tool) {
            Verdict::Changed { approved: None } if self.mode() == ApproveMode::Auto => Verdict::Approved,
            verdict => verdict,
        }
    }

    /// Whether `tool` of `server` is held back by the scan: found
    /// dangerous, its server scanned, and not allowed by the user.
    pub fn quarantined(&self, server: &str, tool: &rmcp::model::Tool) -> bool {
        // Asked for every listed tool: the settings are read in place.
        let exempt = read(&self.policy)
            .filters
            .get(server)
            .is_some_and(|f| f.scan.off || f.scan.allow.contains(tool.name.as_ref()));
        !exempt && self.scans.dangerous(server, tool)
    }

    /// Whether `prompt` of `server` is held back by the scan: found
    /// dangerous and its server scanned.
    pub fn prompt_held(&self, server: &str, prompt: &rmcp::model::Prompt) -> bool {
        !self.scan_off(server) && self.more_scans.prompt_dangerous(server, prompt)
    }

    /// Whether `template` of `server` is held back by the scan.
    pub fn template_held(&self, server: &str, template: &rmcp::model::ResourceTemplate) -> bool {
        !self.scan_off(server) && self.more_scans.template_dangerous(server, template)
    }

    /// Whether `server`'s entry says `"scan": "off"` (read in place: it is
    /// asked for every listed prompt and template).
    pub fn scan_off(&self, server: &str) -> bool {
        read(&self.policy).filters.get(server).is_some_and(|f| f.scan.off)
    }

    /// Why a call to `name` of `server` is refused, if it is; `current` is
    /// the tool's definition as last listed (unknown: the server decides).
    pub fn refusal(&self, server: &str, name: &str, current: Option<&rmcp::model::Tool>) -> Option<String> {
        if !self.enabled(server, name) {
            return Some(format!(
                "Tool '{name}' of server '{server}' is disabled in mcpool; the user can enable it in the mcpool dashboard."
            ));
        }
        match self.verdict(server, current?) {
            Verdict::Approved => None,
            Verdict::Changed { approved: Some(_) } => Some(format!(
                "Tool '{name}' of server '{server}' is held back: its description or input schema changed since the user approved it. The user can review and approve it in the mcpool dashboard."
            )),
            Verdict::Changed { approved: None } => Some(format!(
                "Tool '{name}' of server '{server}' is waiting for the user's approval in the mcpool dashboard."
            )),
            Verdict::Quarantined => Some(format!(
                "Tool '{name}' of server '{server}' is held back: mcpool's scan of its definition found signs of an attack (hidden instructions, hidden text or a request for secrets). The user can review the findings and allow it in the mcpool dashboard."
            )),
        }
    }
}

/// One problem with a tool setting: the field (dotted, as the user wrote
/// it) and what is wrong. `warning`: the setting still applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingProblem {
    pub server: Option<String>,
    pub field: String,
    pub message: String,
    pub warning: bool,
}

/// A server entry's tool filter. An error leaves the whole entry out: the
/// user asked for tools to be hidden, so the server is not served without.
pub fn parse_filter(entry: &Value) -> Result<ToolFilter, (String, String)> {
    let Value::Object(obj) = entry else {
        return Ok(ToolFilter::default());
    };
    let off = match obj.get("scan") {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) if s == "on" => false,
        Some(Value::String(s)) if s == "off" => true,
        Some(_) => return Err(("scan".into(), "expected \"on\" or \"off\"".into())),
    };
    Ok(ToolFilter {
        disabled: names(obj, "disabledTools")?.unwrap_or_default(),
        enabled: names(obj, "enabledTools")?,
        scan: ScanSetting {
            off,
            allow: names(obj, "scanAllow")?.unwrap_or_default(),
        },
    })
}

fn names(obj: &Map<String, Value>, key: &str) -> Result<Option<BTreeSet<String>>, (String, String)> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| match v {
                Value::String(s) if !s.is_empty() => Ok(s.clone()),
                _ => Err((
                    format!("{key}[{i}]"),
                    "expected a tool name (a non-empty string)".into(),
                )),
            })
            .collect::<Result<BTreeSet<_>, _>>()
            .map(Some),
        Some(_) => Err((key.to_string(), "expected an array of tool names".into())),
    }
}

/// The top-level `profiles`, `approveNewTools` and listing keys; `servers`
/// are the names the config serves (a profile naming another is a warning).
pub fn parse_root(root: &Map<String, Value>, servers: &BTreeSet<String>) -> (ToolPolicy, Vec<SettingProblem>) {
    let mut problems = Vec::new();
    let mut problem = |field: String, message: String, warning: bool| {
        problems.push(SettingProblem {
            server: None,
            field,
            message,
            warning,
        })
    };
    let approve = match root.get("approveNewTools") {
        None | Some(Value::Null) => ApproveMode::Auto,
        Some(Value::String(s)) if s == "auto" => ApproveMode::Auto,
        Some(Value::String(s)) if s == "ask" => ApproveMode::Ask,
        Some(_) => {
            // Whoever set it wanted something stricter than the default.
            problem(
                "approveNewTools".into(),
                "expected \"auto\" or \"ask\"; using \"ask\" until it is fixed".into(),
                false,
            );
            ApproveMode::Ask
        }
    };
    let (listing, listing_problems) = crate::search::listing::parse_settings(root, "");
    for (field, message) in listing_problems {
        problem(field, message, false);
    }
    let mut profiles = BTreeMap::new();
    match root.get("profiles") {
        None | Some(Value::Null) => {}
        Some(Value::Object(entries)) => {
            for (name, value) in entries {
                match parse_profile(name, value) {
                    Ok((profile, listing_problems)) => {
                        for (field, message) in listing_problems {
                            problem(field, message, false);
                        }
                        for server in profile.servers.difference(servers) {
                            problem(
                                format!("profiles.{name}.servers"),
                                format!("names server '{server}', which is not in the config"),
                                true,
                            );
                        }
                        profiles.insert(name.clone(), profile);
                    }
                    Err((field, message)) => problem(field, message, false),
                }
            }
        }
        Some(_) => problem("profiles".into(), "expected an object of profiles".into(), false),
    }
    let policy = ToolPolicy {
        filters: BTreeMap::new(),
        profiles,
        approve,
        listing,
    };
    (policy, problems)
}

/// The keys a profile may have.
const PROFILE_KEYS: &[&str] = &[
    "servers",
    "tools",
    "toolListing",
    "toolListingBudget",
    "pinnedTools",
    "pinMostUsed",
];

/// A profile and the problems of its listing keys (which leave it in).
fn parse_profile(
    name: &str,
    value: &Value,
) -> Result<(Profile, Vec<crate::search::listing::Problem>), (String, String)> {
    let field = |k: &str| format!("profiles.{name}{k}");
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        return Err((
            field(""),
            "a profile name may hold only letters, digits, '-' and '_' (it is part of a URL)".into(),
        ));
    }
    let Value::Object(obj) = value else {
        return Err((field(""), "expected an object with \"servers\" and/or \"tools\"".into()));
    };
    if let Some(key) = obj.keys().find(|k| !PROFILE_KEYS.contains(&k.as_str())) {
        return Err((
            field(&format!(".{key}")),
            format!("unknown field (expected {})", PROFILE_KEYS.join(", ")),
        ));
    }
    let list = |key: &str| match obj.get(key) {
        None | Some(Value::Null) => Ok(BTreeSet::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| match v {
                Value::String(s) if !s.is_empty() => Ok(s.clone()),
                _ => Err((field(&format!(".{key}[{i}]")), "expected a non-empty string".into())),
            })
            .collect(),
        Some(_) => Err((field(&format!(".{key}")), "expected an array of names".into())),
    };
    let (listing, problems) = crate::search::listing::parse_settings(obj, &format!("profiles.{name}."));
    let profile = Profile {
        servers: list("servers")?,
        tools: list("tools")?,
        listing,
    };
    Ok((profile, problems))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn filters_block_and_allow() {
        let f = parse_filter(&json!({"disabledTools": ["crash"]})).unwrap();
        assert!(f.allows("echo") && !f.allows("crash"));
        let f = parse_filter(&json!({"enabledTools": ["echo", "add"], "disabledTools": ["add"]})).unwrap();
        assert!(f.allows("echo") && !f.allows("add") && !f.allows("crash"));
        let none = parse_filter(&json!({"command": "x"})).unwrap();
        assert!(none.is_empty() && none.allows("anything"));
        assert_eq!(
            parse_filter(&json!({"disabledTools": "crash"})).unwrap_err(),
            ("disabledTools".into(), "expected an array of tool names".into())
        );
        assert_eq!(
            parse_filter(&json!({"enabledTools": ["a", 3]})).unwrap_err().0,
            "enabledTools[1]"
        );
        let policy = ToolPolicy {
            filters: BTreeMap::from([("s".into(), parse_filter(&json!({"disabledTools": ["t"]})).unwrap())]),
            ..Default::default()
        };
        assert!(!policy.allows("s", "t") && policy.allows("s", "u") && policy.allows("other", "t"));
    }

    #[test]
    fn a_tool_never_seen_is_visible_under_auto_before_the_pool_reviews_it_and_waits_under_ask() {
        let tool: rmcp::model::Tool =
            serde_json::from_value(json!({"name": "echo", "inputSchema": {"type": "object"}})).expect("a tool");
        let control = ToolControl::new(Approvals::default());
        assert_eq!(control.verdict("s", &tool), Verdict::Approved);
        assert!(control.visible("s", &tool) && control.refusal("s", "echo", Some(&tool)).is_none());
        control.set_policy(&ToolPolicy {
            approve: ApproveMode::Ask,
            ..Default::default()
        });
        assert_eq!(control.verdict("s", &tool), Verdict::Changed { approved: None });
        assert!(!control.visible("s", &tool));
        // Seen and approved, then changed: held back under either mode.
        control.approvals.approve("s", &tool);
        let mut changed = tool.clone();
        changed.description = Some("now it reads your keys".into());
        control.set_policy(&ToolPolicy::default());
        assert!(matches!(
            control.verdict("s", &changed),
            Verdict::Changed { approved: Some(_) }
        ));
    }

    #[test]
    fn profiles_select_servers_and_public_tool_names() {
        let root = json!({
            "approveNewTools": "ask",
            "profiles": {
                "review": {"servers": ["gh"], "tools": ["fs__read", "mcpool__status"]},
                "empty": {},
                "bad name": {"servers": []},
                "typo": {"server": ["gh"]},
                "ghost": {"servers": ["nope"]}
            }
        });
        let servers = BTreeSet::from(["gh".to_string(), "fs".to_string()]);
        let (policy, problems) = parse_root(root.as_object().unwrap(), &servers);
        let profiles = policy.profiles;
        assert_eq!(policy.approve, ApproveMode::Ask);
        let review = &profiles["review"];
        assert!(review.includes_tool(Some("gh"), "gh__anything"));
        assert!(review.includes_tool(Some("fs"), "fs__read"));
        assert!(!review.includes_tool(Some("fs"), "fs__write"));
        assert!(review.includes_tool(None, "mcpool__status"));
        assert!(!review.includes_tool(None, "mcpool__reconnect"));
        assert!(review.includes_server("gh") && !review.includes_server("fs"));
        assert!(!profiles["empty"].includes_tool(Some("gh"), "gh__x"));
        let texts: Vec<(String, String, bool)> =
            problems.into_iter().map(|p| (p.field, p.message, p.warning)).collect();
        expect_test::expect![[r#"
            [
                (
                    "profiles.bad name",
                    "a profile name may hold only letters, digits, '-' and '_' (it is part of a URL)",
                    false,
                ),
                (
                    "profiles.typo.server",
                    "unknown field (expected servers, tools, toolListing, toolListingBudget, pinnedTools, pinMostUsed)",
                    false,
                ),
                (
                    "profiles.ghost.servers",
                    "names server 'nope', which is not in the config",
                    true,
                ),
            ]
        "#]]
        .assert_debug_eq(&texts);
        assert!(!profiles.contains_key("typo") && profiles.contains_key("ghost"));
    }

    #[test]
    fn approve_mode_defaults_to_auto_and_a_typo_is_stricter() {
        let parse = |v: Value| parse_root(v.as_object().unwrap(), &BTreeSet::new());
        assert_eq!(parse(json!({})).0.approve, ApproveMode::Auto);
        let (policy, problems) = parse(json!({"approveNewTools": "never"}));
        assert_eq!(policy.approve, ApproveMode::Ask);
        assert_eq!(problems[0].field, "approveNewTools");
    }

    #[test]
    fn listing_keys_parse_at_the_top_and_per_profile() {
        let root = json!({
            "toolListing": "search",
            "pinnedTools": ["gh__create_issue"],
            "profiles": {
                "review": {"servers": ["gh"], "toolListing": "all", "pinMostUsed": 5},
                "odd": {"servers": ["gh"], "toolListingBudget": "big"}
            }
        });
        let servers = BTreeSet::from(["gh".to_string()]);
        let (policy, problems) = parse_root(root.as_object().unwrap(), &servers);
        let control = ToolControl::default();
        control.set_policy(&policy);
        let top = control.listing(None);
        assert_eq!(top.mode, crate::search::ListingMode::Search);
        assert!(top.pinned.contains("gh__create_issue"));
        let review = control.listing(Some("review"));
        assert_eq!(
            (review.mode, review.pin_most_used),
            (crate::search::ListingMode::All, 5)
        );
        assert!(
            review.pinned.contains("gh__create_issue"),
            "unset keys follow the top level"
        );
        let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["profiles.odd.toolListingBudget"]);
        assert!(
            policy.profiles.contains_key("odd"),
            "a bad listing key leaves the profile in"
        );
    }
}
