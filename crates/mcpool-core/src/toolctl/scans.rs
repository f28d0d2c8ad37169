//! The scanner's reports on the tools the pool holds (scan/): each tool is
//! scanned when a list that holds it is seen with a definition not scanned
//! yet, within the pool of every server's tool names, and the report is
//! kept with the definition it is of. A `dangerous` tool is quarantined —
//! held back from agents — unless its server is not scanned (`"scan":
//! "off"`) or the user allowed it (`scanAllow`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;

use rmcp::model::Tool;
use serde::Serialize;

use super::approvals::Definition;
use crate::scan::{self, Finding, Pool, Verdict};

/// A server entry's scan settings: `"scan": "off"` and `scanAllow`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanSetting {
    pub off: bool,
    /// Tools the user allowed though the scan found them dangerous.
    pub allow: BTreeSet<String>,
}

impl ScanSetting {
    pub fn is_default(&self) -> bool {
        !self.off && self.allow.is_empty()
    }
}

/// A tool's report, with the definition it is of.
#[derive(Debug, Clone)]
struct Scanned {
    definition: Definition,
    title: Option<String>,
    verdict: Verdict,
    findings: Vec<Finding>,
}

/// What the scan says of one tool, for snapshots and the API.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScanReport {
    pub verdict: Verdict,
    pub findings: Vec<Finding>,
}

/// The reports, per server and tool name.
#[derive(Debug, Default)]
pub struct Scans {
    servers: Mutex<HashMap<String, BTreeMap<String, Scanned>>>,
}

/// A tool as the scanner takes it.
fn definition_of(server: &str, tool: &Tool) -> scan::Definition {
    scan::Definition {
        id: None,
        server: server.to_string(),
        name: tool.name.to_string(),
        title: tool.title.clone(),
        description: tool.description.as_ref().map(|d| d.to_string()),
        input_schema: serde_json::Value::Object((*tool.input_schema).clone()),
        previous: None,
    }
}

impl Scans {
    /// Scans the tools of `server` not scanned as they are now, within
    /// `pool`; forgets the tools it no longer lists. `None` tools: the
    /// server is gone (or not scanned).
    pub fn observe(&self, server: &str, tools: Option<&[Tool]>, pool: &Pool) {
        let mut servers = crate::sync::lock(&self.servers);
        let Some(tools) = tools else {
            servers.remove(server);
            return;
        };
        let known = servers.entry(server.to_string()).or_default();
        let listed: BTreeSet<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        known.retain(|name, _| listed.contains(name.as_str()));
        for tool in tools {
            let current = known
                .get(tool.name.as_ref())
                .is_some_and(|s| s.definition.matches(tool) && s.title == tool.title);
            if current {
                continue;
            }
            let report = scan::scan(&definition_of(server, tool), pool);
            known.insert(
                tool.name.to_string(),
                Scanned {
                    definition: Definition::of(tool),
                    title: tool.title.clone(),
                    verdict: report.verdict,
                    findings: report.findings,
                },
            );
        }
    }

    /// The report on `tool` of `server` as it is now, if it was scanned so.
    pub fn report(&self, server: &str, tool: &Tool) -> Option<ScanReport> {
        let servers = crate::sync::lock(&self.servers);
        let scanned = servers.get(server)?.get(tool.name.as_ref())?;
        scanned.definition.matches(tool).then(|| ScanReport {
            verdict: scanned.verdict,
            findings: scanned.findings.clone(),
        })
    }

    /// Whether `tool` of `server`, as it is now, was found dangerous.
    pub fn dangerous(&self, server: &str, tool: &Tool) -> bool {
        let servers = crate::sync::lock(&self.servers);
        servers
            .get(server)
            .and_then(|s| s.get(tool.name.as_ref()))
            .is_some_and(|s| s.verdict == Verdict::Dangerous && s.definition.matches(tool))
    }
}

/// The pool the scanner reads shadowing against: every server's tool names.
pub fn pool_of<'a>(lists: impl Iterator<Item = (&'a str, &'a [Tool])>) -> Pool {
    let mut pool = Pool::default();
    for (server, tools) in lists {
        for tool in tools {
            pool.add(server, &tool.name);
        }
    }
    pool
}
