//! What the pool tells others when a server changes: status events for
//! `/api/events`, the tools held back for approval, and `list_changed` to
//! exactly the agent sessions whose visible lists changed.

use std::collections::BTreeSet;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use rmcp::model::Tool;
use serde::Serialize;

use super::views::{profile_filter, tool_view_of, Views};
use super::PoolInner;
use crate::hub::{ListKind, Scope};
use crate::lifecycle::Status;
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
        let view = tool_view_of(&self.builtin_tools, &lists, |s, t| control.visible(s, t));
        let profiles = control.policy().profiles;
        for kind in [ListKind::Tools, ListKind::Prompts, ListKind::Resources] {
            let all = match kind {
                ListKind::Tools => hash_tools(&view.tools),
                _ => signature(kind, lists.iter().map(|(n, l)| (n.as_str(), l))),
            };
            if self.update_signature(kind, SigScope::All, all) {
                self.hub.notify_list_changed(kind, |scope| *scope == Scope::All);
            }
            for (name, l) in &own {
                let empty = Lists::default();
                let l = l.unwrap_or(&empty);
                let sig = match kind {
                    ListKind::Tools => {
                        let visible: Vec<Tool> = l.tools.iter().filter(|t| control.visible(name, t)).cloned().collect();
                        hash_tools(&visible)
                    }
                    _ => signature(kind, std::iter::once((*name, l))),
                };
                if self.update_signature(kind, SigScope::Server(name.to_string()), sig) {
                    let target = Scope::One(name.to_string());
                    self.hub.notify_list_changed(kind, |scope| *scope == target);
                }
            }
            for (pname, profile) in &profiles {
                let sig = match kind {
                    ListKind::Tools => hash_tools(&profile_filter(&view, profile)),
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
