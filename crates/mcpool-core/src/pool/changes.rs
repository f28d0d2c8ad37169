//! What the pool tells others when a server changes: status events for
//! `/api/events`, the tools held back for approval, and `list_changed` to
//! exactly the agent sessions whose visible lists changed.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use rmcp::model::Tool;
use serde::Serialize;

use super::views::Views;
use super::PoolInner;
use crate::hub::{ListKind, Scope};
use crate::lifecycle::Status;
use crate::names::NameTable;
use crate::supervisor::{Lists, Supervisor};
use crate::sync::{lock, read};
use crate::toolctl::Verdict;

/// One status change, as `/api/events` sends it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct StatusEvent {
    pub server: String,
    pub status: Status,
    pub error: Option<String>,
}

/// The tools of a server held back for the user's approval (all of them,
/// after every change of the set), as `/api/events` sends it (`tools`).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct HeldEvent {
    pub server: String,
    pub held: Vec<String>,
    /// Those of `held` the scan found dangerous (rule 20).
    pub quarantined: Vec<String>,
}

impl PoolInner {
    pub(super) fn status_changed(&self, server: &str) {
        let Some(sup) = read(&self.servers).get(server).cloned() else {
            return;
        };
        let snap = sup.snapshot();
        let current = (snap.status, snap.error.clone());
        let changed = lock(&self.last_status).insert(server.to_string(), current.clone()) != Some(current);
        if changed {
            self.ctx.activity.record(crate::activity::Entry::server_event(
                server,
                "status",
                snap.status.as_str(),
                snap.error.clone(),
            ));
            match &snap.error {
                Some(error) => tracing::info!(server = %server, "status {}: {error}", snap.status),
                None => tracing::info!(server = %server, "status {}", snap.status),
            }
            let _ = self.events.send(StatusEvent {
                server: server.to_string(),
                status: snap.status,
                error: snap.error,
            });
        }
    }

    /// Reviews the tools just seen (first sight approves, changes are held
    /// back), then sends `list_changed` to the sessions whose visible lists
    /// really changed. `None`: every server (the policy changed).
    pub(super) fn lists_changed(&self, server: Option<&str>) {
        {
            let mut v = lock(&self.views);
            *v = Views {
                generation: v.generation + 1,
                ..Views::default()
            };
        }
        let servers: Vec<Arc<Supervisor>> = read(&self.servers).values().cloned().collect();
        let lists: Vec<(String, Lists)> = servers.iter().map(|s| (s.name().to_string(), s.lists())).collect();
        let control = &self.ctx.tools;
        let mode = control.mode();
        let mut own: Vec<(&str, Option<&Lists>)> = lists
            .iter()
            .filter(|(n, _)| server.is_none_or(|s| s == n))
            .map(|(n, l)| (n.as_str(), Some(l)))
            .collect();
        if let Some(s) = server.filter(|s| !lists.iter().any(|(n, _)| n == s)) {
            // Removed: its sessions learn that its lists are gone.
            own.push((s, None));
        }
        // The scanner reads shadowing against every server's tool names.
        let names = crate::toolctl::scans::pool_of(lists.iter().map(|(n, l)| (n.as_str(), l.tools.as_slice())));
        let mut judged_otherwise = BTreeSet::new();
        for (name, l) in &own {
            let tools = l.map(|l| l.tools.as_slice()).unwrap_or_default();
            if control.scan_off(name) {
                judged_otherwise.extend(control.scans.observe(name, None, &names));
                control.more_scans.observe(name, None, &names);
            } else {
                judged_otherwise.extend(control.scans.observe(name, l.map(|l| l.tools.as_slice()), &names));
                let more = l.map(|l| (l.prompts.as_slice(), l.templates.as_slice()));
                control.more_scans.observe(name, more, &names);
            }
            control.approvals.observe(name, tools, mode);
            self.update_held(name, tools);
            self.reindex(name, l.map(|l| l.tools.as_slice()));
        }
        // Servers a tool of which the scan now judges otherwise (it names
        // a tool that just came or went): what they hold back, and what
        // their own endpoints list, changed with it.
        for (name, l) in &lists {
            if judged_otherwise.contains(name) && !own.iter().any(|(o, _)| o == name) {
                self.update_held(name, &l.tools);
                own.push((name.as_str(), Some(l)));
            }
        }
        let profiles = profiles_of(control);
        let signatures = self.tool_signatures(&lists, &own, &profiles);
        for kind in [ListKind::Tools, ListKind::Prompts, ListKind::Resources] {
            let all = match kind {
                ListKind::Tools => signatures.all,
                _ => signature(kind, lists.iter().map(|(n, l)| (n.as_str(), l))),
            };
            if self.update_signature(kind, SigScope::All, all) {
                self.hub.notify_list_changed(kind, |scope| *scope == Scope::All);
            }
            for (name, l) in &own {
                let empty = Lists::default();
                let l = l.unwrap_or(&empty);
                let sig = match kind {
                    ListKind::Tools => signatures.server(name),
                    _ => signature(kind, std::iter::once((*name, l))),
                };
                if self.update_signature(kind, SigScope::Server(name.to_string()), sig) {
                    let target = Scope::One(name.to_string());
                    self.hub.notify_list_changed(kind, |scope| *scope == target);
                }
            }
            for (i, (pname, profile)) in profiles.iter().enumerate() {
                let sig = match kind {
                    ListKind::Tools => signatures.profile[i],
                    _ => signature(
                        kind,
                        lists
                            .iter()
                            .filter(|(n, _)| profile.includes_server(n))
                            .map(|(n, l)| (n.as_str(), l)),
                    ),
                };
                if self.update_signature(kind, SigScope::Profile(pname.clone()), sig) {
                    let target = Scope::Profile(pname.clone());
                    self.hub.notify_list_changed(kind, |scope| *scope == target);
                }
            }
        }
    }

    /// The tool list signatures of the whole pool, of each profile, and of
    /// the servers in `own`, whose visible tools are hashed again; the
    /// others' hashes are kept from their last change. Each server's
    /// arrival in a start of hundreds costs the hashing of its own tools
    /// and a walk of every tool's name, not a copy and serialisation of
    /// the whole pool's listing per scope.
    fn tool_signatures(
        &self,
        lists: &[(String, Lists)],
        own: &[(&str, Option<&Lists>)],
        profiles: &[(String, crate::toolctl::Profile)],
    ) -> ToolSignatures {
        let control = &self.ctx.tools;
        let digests = {
            let mut digests = lock(&self.tool_digests);
            for (name, l) in own {
                match l {
                    Some(l) => digests.insert(
                        name.to_string(),
                        Arc::new(ToolDigest::of(&l.tools, |t| control.visible(name, t))),
                    ),
                    None => digests.remove(*name),
                };
            }
            digests.clone()
        };
        signatures_of(&self.builtin_tools, lists, &digests, own, profiles)
    }

    /// Announces the server's held-back tools when the set changed.
    fn update_held(&self, server: &str, tools: &[Tool]) {
        let held: BTreeSet<String> = tools
            .iter()
            .filter(|t| self.ctx.tools.verdict(server, t) != Verdict::Approved)
            .map(|t| t.name.to_string())
            .collect();
        let changed = {
            let mut all = lock(&self.held);
            let before = all.get(server).cloned().unwrap_or_default();
            if held.is_empty() {
                all.remove(server);
            } else {
                all.insert(server.to_string(), held.clone());
            }
            before != held
        };
        if changed {
            if !held.is_empty() {
                tracing::warn!(
                    server,
                    tools = ?held,
                    "tools held back: their definitions differ from what the user approved, or the scan found them dangerous"
                );
            }
            let quarantined = tools
                .iter()
                .filter(|t| held.contains(t.name.as_ref()) && self.ctx.tools.quarantined(server, t))
                .map(|t| t.name.to_string())
                .collect();
            let _ = self.held_events.send(HeldEvent {
                server: server.to_string(),
                held: held.into_iter().collect(),
                quarantined,
            });
        }
    }

    fn update_signature(&self, kind: ListKind, scope: SigScope, sig: u64) -> bool {
        lock(&self.signatures).insert((kind, scope), sig) != Some(sig)
    }
}

/// A server's visible tools by their own names, each with a hash of its
/// definition, and a hash of them all (the server's own endpoint's list).
pub(super) struct ToolDigest {
    tools: Vec<(String, u64)>,
    of_server: u64,
}

impl ToolDigest {
    fn of(tools: &[Tool], visible: impl Fn(&Tool) -> bool) -> Self {
        let mut of_server = DefaultHasher::new();
        let tools: Vec<(String, u64)> = tools
            .iter()
            .filter(|t| visible(t))
            .map(|t| (t.name.to_string(), hash_tools(std::slice::from_ref(t))))
            .inspect(|pair| pair.hash(&mut of_server))
            .collect();
        ToolDigest {
            tools,
            of_server: of_server.finish(),
        }
    }
}

/// The tool list signatures of one change.
struct ToolSignatures {
    all: u64,
    /// In the order of `profiles`.
    profile: Vec<u64>,
    servers: BTreeMap<String, u64>,
}

impl ToolSignatures {
    fn server(&self, name: &str) -> u64 {
        self.servers.get(name).copied().unwrap_or(0)
    }
}

fn profiles_of(control: &crate::toolctl::ToolControl) -> Vec<(String, crate::toolctl::Profile)> {
    control.policy().profiles.into_iter().collect()
}

/// The signatures of the tool lists from each server's [`ToolDigest`]:
/// what agents see is each visible tool under its public name, and public
/// names are made from every server's tool names.
fn signatures_of(
    builtin: &[Tool],
    lists: &[(String, Lists)],
    digests: &BTreeMap<String, Arc<ToolDigest>>,
    own: &[(&str, Option<&Lists>)],
    profiles: &[(String, crate::toolctl::Profile)],
) -> ToolSignatures {
    let reserved: Vec<&str> = builtin.iter().map(|t| t.name.as_ref()).collect();
    let names = NameTable::build_reserving(
        &reserved,
        lists
            .iter()
            .flat_map(|(server, l)| l.tools.iter().map(move |t| (server.as_str(), t.name.as_ref()))),
    );
    let mut all = DefaultHasher::new();
    let mut of_profiles: Vec<DefaultHasher> = profiles.iter().map(|_| DefaultHasher::new()).collect();
    let mut take = |server: Option<&str>, public: &str, hash: u64| {
        (public, hash).hash(&mut all);
        for ((_, profile), h) in profiles.iter().zip(&mut of_profiles) {
            if profile.includes_tool(server, public) {
                (public, hash).hash(h);
            }
        }
    };
    for tool in builtin {
        take(None, &tool.name, hash_tools(std::slice::from_ref(tool)));
    }
    for (server, _) in lists {
        for (name, hash) in digests.get(server).iter().flat_map(|d| d.tools.iter()) {
            if let Some(public) = names.public_name(server, name) {
                take(Some(server), public, *hash);
            }
        }
    }
    ToolSignatures {
        all: all.finish(),
        profile: of_profiles.iter().map(Hasher::finish).collect(),
        servers: own
            .iter()
            .map(|(name, _)| {
                // A server gone lists what one with no visible tools does.
                let of_server = digests
                    .get(*name)
                    .map_or_else(|| DefaultHasher::new().finish(), |d| d.of_server);
                (name.to_string(), of_server)
            })
            .collect(),
    }
}

/// Whose view a signature is of.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum SigScope {
    All,
    Server(String),
    Profile(String),
}

fn hash_tools(tools: &[Tool]) -> u64 {
    let mut h = Hashing(DefaultHasher::new());
    let _ = serde_json::to_writer(&mut h, tools);
    h.0.finish()
}

fn signature<'a>(kind: ListKind, lists: impl Iterator<Item = (&'a str, &'a Lists)>) -> u64 {
    let mut h = Hashing(DefaultHasher::new());
    for (name, l) in lists {
        name.hash(&mut h.0);
        let _ = match kind {
            ListKind::Tools => serde_json::to_writer(&mut h, &l.tools),
            ListKind::Prompts => serde_json::to_writer(&mut h, &l.prompts),
            ListKind::Resources => serde_json::to_writer(&mut h, &(&l.resources, &l.templates)),
        };
    }
    h.0.finish()
}

/// JSON written straight into a hasher: a pool of thousands of tools is
/// hashed at every list change, and its text would be megabytes.
struct Hashing(DefaultHasher);

impl std::io::Write for Hashing {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.write(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::views::{profile_filter, tool_view_of};
    use crate::toolctl::Profile;
    use serde_json::json;

    fn tool(name: &str, description: &str) -> Tool {
        serde_json::from_value(json!({"name": name, "description": description, "inputSchema": {"type": "object"}}))
            .unwrap()
    }

    fn lists(tools: &[(&str, &str)]) -> Lists {
        Lists {
            tools: tools.iter().map(|(n, d)| tool(n, d)).collect(),
            ..Lists::default()
        }
    }

    /// The pool at one moment: each server's lists, and the tools hidden.
    struct State {
        lists: Vec<(String, Lists)>,
        hidden: Vec<(&'static str, &'static str)>,
    }

    impl State {
        fn visible(&self, server: &str, tool: &Tool) -> bool {
            !self.hidden.contains(&(server, tool.name.as_ref()))
        }
    }

    /// Each signature of `state`, as made from per-server digests and as
    /// made from the whole aggregated view (what agents are sent).
    fn both(builtin: &[Tool], state: &State, profiles: &[(String, Profile)]) -> (Vec<u64>, Vec<u64>) {
        let own: Vec<(&str, Option<&Lists>)> = state.lists.iter().map(|(n, l)| (n.as_str(), Some(l))).collect();
        let digests = state
            .lists
            .iter()
            .map(|(n, l)| (n.clone(), Arc::new(ToolDigest::of(&l.tools, |t| state.visible(n, t)))))
            .collect();
        let made = signatures_of(builtin, &state.lists, &digests, &own, profiles);
        let mut fast = vec![made.all];
        fast.extend(&made.profile);
        fast.extend(["a", "b", "c"].map(|s| made.server(s)));
        let view = tool_view_of(builtin, &state.lists, |s, t| state.visible(s, t));
        let mut whole = vec![hash_tools(&view.tools)];
        whole.extend(profiles.iter().map(|(_, p)| hash_tools(&profile_filter(&view, p))));
        whole.extend(["a", "b", "c"].map(|s| {
            let visible: Vec<Tool> = state
                .lists
                .iter()
                .filter(|(n, _)| n == s)
                .flat_map(|(_, l)| l.tools.iter().filter(|t| state.visible(s, t)).cloned())
                .collect();
            hash_tools(&visible)
        }));
        (fast, whole)
    }

    #[test]
    fn signatures_from_per_server_digests_change_exactly_when_the_listed_tools_do() {
        let builtin = vec![tool("mcpool__status", "Status")];
        let profiles = vec![
            (
                "only-a".to_string(),
                Profile {
                    servers: ["a".to_string()].into(),
                    ..Profile::default()
                },
            ),
            (
                "builtin-and-b-echo".to_string(),
                Profile {
                    tools: ["mcpool__status".to_string(), "b__echo".to_string()].into(),
                    ..Profile::default()
                },
            ),
        ];
        let ab = |a_echo: &str| {
            vec![
                ("a".to_string(), lists(&[("echo", a_echo), ("add", "Adds")])),
                ("b".to_string(), lists(&[("echo", "Echoes")])),
            ]
        };
        let with_c = |mut l: Vec<(String, Lists)>, c: &[(&str, &str)]| {
            l.push(("c".to_string(), lists(c)));
            l
        };
        let states = [
            State {
                lists: ab("Echoes"),
                hidden: vec![],
            },
            // Nothing changed.
            State {
                lists: ab("Echoes"),
                hidden: vec![],
            },
            // A server arrives with a tool of a name others have.
            State {
                lists: with_c(ab("Echoes"), &[("echo", "Echoes")]),
                hidden: vec![],
            },
            // A definition changes.
            State {
                lists: with_c(ab("Echoes!"), &[("echo", "Echoes")]),
                hidden: vec![],
            },
            // A tool is hidden (switched off, or held back).
            State {
                lists: with_c(ab("Echoes!"), &[("echo", "Echoes")]),
                hidden: vec![("b", "echo")],
            },
            // A hidden tool comes: nobody's list changes.
            State {
                lists: with_c(ab("Echoes!"), &[("echo", "Echoes"), ("secret", "S")]),
                hidden: vec![("b", "echo"), ("c", "secret")],
            },
            // A tool is shown again.
            State {
                lists: with_c(ab("Echoes!"), &[("echo", "Echoes"), ("secret", "S")]),
                hidden: vec![("c", "secret")],
            },
            // A server goes.
            State {
                lists: ab("Echoes!"),
                hidden: vec![],
            },
        ];
        let signed: Vec<(Vec<u64>, Vec<u64>)> = states.iter().map(|s| both(&builtin, s, &profiles)).collect();
        let mut changes = 0;
        for (i, pair) in signed.windows(2).enumerate() {
            let ((fast_before, whole_before), (fast_after, whole_after)) = (&pair[0], &pair[1]);
            for scope in 0..fast_before.len() {
                let whole_changed = whole_before[scope] != whole_after[scope];
                let fast_changed = fast_before[scope] != fast_after[scope];
                assert_eq!(fast_changed, whole_changed, "step {} → {}, signature {scope}", i, i + 1);
                changes += usize::from(whole_changed);
            }
        }
        // The steps change some scopes and leave others: the check above
        // compared both outcomes.
        assert!(changes > 5 && changes < 5 * 7, "{changes} changes");
    }
}
