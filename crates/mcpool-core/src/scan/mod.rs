//! The scanner of definitions (tools, prompts, resource templates): pure,
//! offline and deterministic. It reads what a model will read — the name,
//! title and description, and in the input schema each parameter's name,
//! description, title, default, enum values and examples — and finds
//! hidden Unicode, encoded payloads, hidden instructions, parameters that
//! ask for secrets or the conversation, steering of another server's tools,
//! and, for a definition that changed since it was approved, what the
//! change brought in. Each finding names its check, its severity, the field
//! and the evidence as text a person can read; the verdict is the worst
//! severity (docs/behaviour.md rule 20).

mod deceit;
mod judge;
mod lexicon;
mod payload;
mod phrases;
mod shadow;
mod structure;
mod texts;
mod unicode;

#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use shadow::{Asked, Changes, Pool};

/// A definition to scan, as `mcpool scan FILE` takes it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Definition {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub server: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(rename = "inputSchema", default)]
    pub input_schema: Value,
    /// The last approved definition, when this one changed since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<Previous>,
}

/// An approved definition a changed one is compared with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Previous {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(rename = "inputSchema", default)]
    pub input_schema: Value,
}

/// What a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    HiddenUnicode,
    EncodedPayload,
    HiddenInstructions,
    Exfiltration,
    Shadowing,
    RugPull,
}

/// How bad a finding is: the verdict it calls for. `Weak` findings (a
/// directive alone, a secret's name in a tool about secrets) count only
/// when a change brought them in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Weak,
    Review,
    Dangerous,
}

impl Severity {
    fn raised(self) -> Self {
        match self {
            Severity::Weak => Severity::Review,
            _ => Severity::Dangerous,
        }
    }
}

/// One thing found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub check: Check,
    pub severity: Severity,
    /// Where: `description`, `inputSchema.properties.notes.description`.
    pub field: String,
    /// What was found, as a person reads it.
    pub evidence: String,
}

/// `clean`, `review` (listed and flagged) or `dangerous` (held back).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Clean,
    Review,
    Dangerous,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Clean => "clean",
            Verdict::Review => "review",
            Verdict::Dangerous => "dangerous",
        }
    }
}

/// A definition's verdict and findings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    #[serde(default)]
    pub id: Option<String>,
    pub server: String,
    pub name: String,
    pub verdict: Verdict,
    pub findings: Vec<Finding>,
}

/// The verdict `findings` call for.
pub fn verdict_of(findings: &[Finding]) -> Verdict {
    match findings.iter().map(|f| f.severity).max() {
        Some(Severity::Dangerous) => Verdict::Dangerous,
        Some(Severity::Review) => Verdict::Review,
        _ => Verdict::Clean,
    }
}

/// Scans `definitions` as one pool: shadowing is about the other servers'
/// tools among them.
pub fn scan_all(definitions: &[Definition]) -> Vec<Report> {
    let mut pool = Pool::default();
    for d in definitions {
        pool.add(&d.server, &d.name);
    }
    definitions.iter().map(|d| scan(d, &pool)).collect()
}

/// Scans one definition against `pool` (the names of every server's tools).
pub fn scan(definition: &Definition, pool: &Pool) -> Report {
    scan_reading(definition, &shadow::Reading::new(pool))
}

/// Scans one definition against `pool`, and tells what the scan asked of
/// the pool: it says the same in a later pool unless that pool answers
/// one of these otherwise ([`Asked::answered_otherwise`]).
pub fn scan_noting(definition: &Definition, pool: &Pool) -> (Report, Asked) {
    let reading = shadow::Reading::noting(pool);
    let report = scan_reading(definition, &reading);
    (report, reading.asked())
}

fn scan_reading(definition: &Definition, reading: &shadow::Reading<'_>) -> Report {
    // The findings in a text of this tool (as it is now, or as approved).
    let of = |title: Option<&str>, description: Option<&str>, schema: &Value| {
        judge::findings(
            &definition.server,
            &definition.name,
            title,
            description,
            schema,
            reading,
        )
    };
    let now = of(
        definition.title.as_deref(),
        definition.description.as_deref(),
        &definition.input_schema,
    );
    let mut findings = match &definition.previous {
        Some(previous) => {
            let before = of(
                previous.title.as_deref(),
                previous.description.as_deref(),
                &previous.input_schema,
            );
            changed(now, &before)
        }
        None => now,
    };
    findings.retain(|f| f.severity > Severity::Weak);
    findings.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.check.cmp(&b.check)));
    Report {
        id: definition.id.clone(),
        server: definition.server.clone(),
        name: definition.name.clone(),
        verdict: verdict_of(&findings),
        findings,
    }
}

/// A changed definition's findings: what the change brought in counts one
/// level worse (text added after approval is how a rug pull works), and is
/// summed up as a `rug_pull` finding; what was there when it was approved
/// stays as it was.
fn changed(now: Vec<Finding>, before: &[Finding]) -> Vec<Finding> {
    let mut out = Vec::with_capacity(now.len() + 1);
    let mut brought: Vec<String> = Vec::new();
    let mut worst = Severity::Weak;
    for mut finding in now {
        let old = before
            .iter()
            .any(|b| b.check == finding.check && b.field == finding.field && b.evidence == finding.evidence);
        if !old {
            finding.severity = finding.severity.raised();
            worst = worst.max(finding.severity);
            brought.push(format!("{} in {}", check_words(finding.check), finding.field));
        }
        out.push(finding);
    }
    if !brought.is_empty() {
        out.push(Finding {
            check: Check::RugPull,
            severity: worst,
            field: "definition".into(),
            evidence: format!(
                "changed since it was approved, and the change brings {}",
                brought.join("; ")
            ),
        });
    }
    out
}

fn check_words(check: Check) -> &'static str {
    match check {
        Check::HiddenUnicode => "hidden characters",
        Check::EncodedPayload => "an encoded payload",
        Check::HiddenInstructions => "instructions to the model",
        Check::Exfiltration => "a request for secrets or the conversation",
        Check::Shadowing => "steering of another server's tools",
        Check::RugPull => "a change",
    }
}
