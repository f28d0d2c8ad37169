//! The checks over one definition's texts, and how their signs combine:
//! a phrase alone is weak where workflows say it too ("before using this
//! tool, call list_x"), and dangerous beside what attacks pair it with (a
//! secret file, markup shouting at the model, a concealment).

use serde_json::Value;

use super::phrases::{self, Hit, Kind};
use super::texts::{Field, Text, Texts};
use super::{deceit, payload, shadow, structure, unicode, Check, Finding, Severity};

/// Evidence is cut to about this many characters.
const EVIDENCE: usize = 160;

/// Words of a tool about conversations (a memory, a chat, a summarizer).
const CONVERSING: &[&str] = &[
    "conversation",
    "chat",
    "message",
    "memory",
    "history",
    "transcript",
    "summar",
    "context",
];

/// Every finding in a definition's texts (weak ones too).
pub fn findings(
    server: &str,
    name: &str,
    title: Option<&str>,
    description: Option<&str>,
    schema: &Value,
    pool: &shadow::Reading<'_>,
) -> Vec<Finding> {
    let texts = Texts::of(name, title, description, schema);
    // Each text normalized and its words found once.
    let seen: Vec<Seen> = texts.texts.iter().map(|t| see(t.text)).collect();
    // What the tool says it is about (its name, title, description): a
    // parameter that asks for the conversation is in place only in a tool
    // about conversations, one that asks for a secret only in a tool
    // about secrets.
    let purpose = || texts.texts.iter().zip(&seen).filter(|(t, _)| !t.parameter);
    // Read only by a parameter that names the conversation: looked for
    // only then.
    let asked = texts
        .texts
        .iter()
        .zip(&seen)
        .any(|(t, s)| t.parameter && has(&s.hits, Kind::Conversation));
    let converses = asked && purpose().any(|(_, s)| CONVERSING.iter().any(|w| s.normalized.contains(w)));
    let secrets = purpose().any(|(_, s)| structure::about_secrets(&s.hits));
    let parameters = texts.parameters();
    let mut out = Vec::new();
    for (text, seen) in texts.texts.iter().zip(&seen) {
        let about = About { converses, secrets };
        let at = At { text, texts: &texts };
        judge(&at, seen, (server, name, &parameters), about, pool, &mut out);
    }
    out
}

/// What a tool says it is about.
#[derive(Clone, Copy)]
struct About {
    converses: bool,
    secrets: bool,
}

/// A text as the checks read it: its hidden characters, the text a
/// person would read, normalized, and the words found in it.
struct Seen {
    hidden: unicode::Hidden,
    normalized: String,
    hits: Vec<Hit>,
}

fn see(text: &str) -> Seen {
    let hidden = unicode::inspect(text);
    let normalized = phrases::normalize(if hidden.any() { hidden.readable.as_str() } else { text });
    let hits = phrases::find(&normalized);
    Seen {
        hidden,
        normalized,
        hits,
    }
}

/// A text being judged, and the definition's texts, which spell out its
/// place when a finding names it.
struct At<'t, 'a> {
    text: &'t Text<'a>,
    texts: &'t Texts<'a>,
}

impl At<'_, '_> {
    fn field(&self) -> String {
        self.texts.path(self.text.field)
    }
}

fn finding(check: Check, severity: Severity, field: String, evidence: String) -> Finding {
    Finding {
        check,
        severity,
        field,
        evidence,
    }
}

/// The checks over one text.
fn judge(
    at: &At<'_, '_>,
    seen: &Seen,
    (server, name, parameters): (&str, &str, &[&str]),
    about: About,
    pool: &shadow::Reading<'_>,
    out: &mut Vec<Finding>,
) {
    let hidden = &seen.hidden;
    if !hidden.tags.is_empty() {
        let shown = unicode::shown(&hidden.tags, EVIDENCE);
        let evidence = format!("hidden text in Unicode TAG characters, invisible to a person: \"{shown}\"");
        out.push(finding(Check::HiddenUnicode, Severity::Dangerous, at.field(), evidence));
    }
    if !hidden.selectors.is_empty() {
        let shown = unicode::shown(&hidden.selectors, EVIDENCE);
        let evidence = format!("hidden text in Unicode variation selectors: \"{shown}\"");
        out.push(finding(Check::HiddenUnicode, Severity::Dangerous, at.field(), evidence));
    }
    for (count, what) in [
        (hidden.zero_width, "zero-width characters inside words"),
        (
            hidden.bidi,
            "bidirectional control characters, which reorder what a person sees",
        ),
        (
            hidden.private_use,
            "private use characters, which have no standard meaning",
        ),
    ] {
        if count > 0 {
            let shown = unicode::shown(at.text.text, EVIDENCE);
            let evidence = format!("{count} {what}: \"{shown}\"");
            out.push(finding(Check::HiddenUnicode, Severity::Review, at.field(), evidence));
        }
    }
    let readable = if hidden.any() {
        hidden.readable.as_str()
    } else {
        at.text.text
    };
    let (normalized, hits) = (seen.normalized.as_str(), seen.hits.as_slice());
    judge_structure(at, normalized, hits, (hidden.any(), about), out);
    judge_phrases(at, normalized, hits, (hidden.any(), about.converses), out);
    // A payload takes 24 characters at least (16 bytes in base64).
    let decoded = if readable.len() >= 24 {
        payload::decode_runs(readable)
    } else {
        Vec::new()
    };
    for decoded in decoded {
        let plain = phrases::normalize(&decoded.text);
        let signs = phrases::find(&plain);
        let bad = signs.iter().any(|h| {
            matches!(
                h.kind,
                Kind::Override
                    | Kind::Conceal
                    | Kind::Shell
                    | Kind::SecretFile
                    | Kind::Conversation
                    | Kind::Markup
                    | Kind::Directive
            )
        }) || plain.contains("http://")
            || plain.contains("https://");
        let severity = if bad { Severity::Dangerous } else { Severity::Review };
        let shown = unicode::shown(&decoded.text, EVIDENCE);
        let evidence = format!("{} that decodes to text: \"{shown}\"", decoded.encoding);
        out.push(finding(Check::EncodedPayload, severity, at.field(), evidence));
    }
    judge_shadowing(at, (server, name, parameters), pool, normalized, hits, out);
}

fn has(hits: &[Hit], kind: Kind) -> bool {
    hits.iter().any(|h| h.kind == kind)
}

fn first(hits: &[Hit], kind: Kind) -> Option<&Hit> {
    hits.iter().find(|h| h.kind == kind)
}

/// The structural rules (`structure.rs`, `deceit.rs`): a safeguard turned
/// off, a false answer ordered for when the user asks, a parameter that
/// asks for a sensitive object its tool's purpose does not need, and a
/// description that orders the model to take one.
fn judge_structure(
    at: &At<'_, '_>,
    normalized: &str,
    hits: &[Hit],
    (smuggled, about): (bool, About),
    out: &mut Vec<Finding>,
) {
    if hits.is_empty() {
        return;
    }
    let signs = structure::Signs::of(hits);
    let addressed = smuggled || signs.addressed();
    if let Some((start, end)) = signs.weakened() {
        let quote = phrases::around(normalized, start, end, EVIDENCE);
        let severity = match (addressed, at.text.parameter) {
            (true, _) => Severity::Dangerous,
            (false, false) => Severity::Review,
            (false, true) => Severity::Weak,
        };
        let evidence = format!("tells the model to turn a safeguard off: \"{quote}\"");
        out.push(finding(Check::HiddenInstructions, severity, at.field(), evidence));
    }
    if let Some((start, end)) = deceit::lie_when_asked(hits) {
        let quote = phrases::around(normalized, start, end, EVIDENCE);
        let severity = if addressed {
            Severity::Dangerous
        } else {
            Severity::Review
        };
        let evidence = format!("tells the model to answer the user falsely when asked: \"{quote}\"");
        out.push(finding(Check::HiddenInstructions, severity, at.field(), evidence));
    }
    let Some(found) = signs.request(normalized) else { return };
    let quote = phrases::around(normalized, found.start, found.end, EVIDENCE);
    let severity = if at.text.parameter {
        match (found.strong, about.secrets) {
            (true, false) => Severity::Dangerous,
            (true, true) | (false, false) => Severity::Review,
            (false, true) => Severity::Weak,
        }
    } else if (found.object || found.strong) && (addressed || signs.imperative(normalized)) {
        Severity::Dangerous
    } else {
        Severity::Weak
    };
    let evidence =
        format!("asks for a sensitive thing (a secret, a file of the user's, the conversation): \"{quote}\"");
    out.push(finding(Check::Exfiltration, severity, at.field(), evidence));
}

/// Instructions, concealment, markup, shell and what an exfiltration asks
/// for, combined.
fn judge_phrases(
    at: &At<'_, '_>,
    normalized: &str,
    hits: &[Hit],
    (smuggled, converses): (bool, bool),
    out: &mut Vec<Finding>,
) {
    if hits.is_empty() {
        return;
    }
    let quote = |hit: &Hit| phrases::around(normalized, hit.start, hit.end, EVIDENCE);
    let directive = has(hits, Kind::Directive);
    let markup = has(hits, Kind::Markup);
    let secret = has(hits, Kind::SecretFile);
    let conversation = has(hits, Kind::Conversation);
    let contents = has(hits, Kind::Contents);
    let shell = has(hits, Kind::Shell);
    for (kind, what) in [
        (Kind::Override, "tells the model to drop its instructions"),
        (Kind::Conceal, "tells the model to keep something from the user"),
    ] {
        if let Some(hit) = first(hits, kind) {
            let evidence = format!("{what}: \"{}\"", quote(hit));
            out.push(finding(
                Check::HiddenInstructions,
                Severity::Dangerous,
                at.field(),
                evidence,
            ));
        }
    }
    if let Some(hit) = first(hits, Kind::Markup) {
        let severity = if directive || secret || conversation || shell || smuggled {
            Severity::Dangerous
        } else {
            Severity::Review
        };
        let evidence = format!("markup addressed to the model: \"{}\"", quote(hit));
        out.push(finding(Check::HiddenInstructions, severity, at.field(), evidence));
    }
    if let Some(hit) = first(hits, Kind::Shell) {
        let severity = if directive || markup || smuggled {
            Severity::Dangerous
        } else {
            Severity::Review
        };
        let evidence = format!("a shell command that fetches or runs code: \"{}\"", quote(hit));
        out.push(finding(Check::HiddenInstructions, severity, at.field(), evidence));
    }
    for (kind, what) in [
        (
            Kind::SecretFile,
            "asks for a secret (keys, credentials, an agent's config)",
        ),
        (Kind::Conversation, "asks for the conversation or other tools' output"),
    ] {
        let Some(hit) = first(hits, kind) else { continue };
        let asked = contents || directive || markup || smuggled;
        // A parameter that names a secret or the conversation asks for
        // it; a description may only speak of it (an SSH tool, a memory).
        let severity = match (at.text.parameter, asked, kind) {
            (_, true, _) => Severity::Dangerous,
            (true, false, Kind::Conversation) if !converses => Severity::Dangerous,
            (true, false, _) | (false, false, Kind::SecretFile) => Severity::Review,
            (false, false, _) => Severity::Weak,
        };
        let evidence = format!("{what}: \"{}\"", quote(hit));
        out.push(finding(Check::Exfiltration, severity, at.field(), evidence));
    }
    if let Some(hit) = first(hits, Kind::Directive) {
        let severity = if smuggled { Severity::Dangerous } else { Severity::Weak };
        let evidence = format!("tells the model what to do: \"{}\"", quote(hit));
        out.push(finding(Check::HiddenInstructions, severity, at.field(), evidence));
    }
}

/// Another server's tools named with words that steer their use, or tools
/// in general steered.
fn judge_shadowing(
    at: &At<'_, '_>,
    (server, own_tool, parameters): (&str, &str, &[&str]),
    pool: &shadow::Reading<'_>,
    normalized: &str,
    hits: &[Hit],
    out: &mut Vec<Finding>,
) {
    let steer = has(hits, Kind::Steer);
    let pressing = has(hits, Kind::Directive) || has(hits, Kind::Conceal) || has(hits, Kind::Override);
    let references = shadow::references(at.text.text, server, pool);
    if let Some(reference) = references.first() {
        let severity = if steer || pressing {
            Severity::Dangerous
        } else {
            Severity::Review
        };
        let evidence = format!(
            "names {} of the server {} and {}: \"{}\"",
            reference.name,
            reference.servers.join(", "),
            if severity == Severity::Dangerous {
                "tells the model how to use it"
            } else {
                "may steer its use"
            },
            unicode::shown(at.text.text, EVIDENCE)
        );
        out.push(finding(Check::Shadowing, severity, at.field(), evidence));
        return;
    }
    // Tools of no server in the pool, named and steered: a snake_case
    // identifier the definition's own server does not have.
    let steered = steer || has(hits, Kind::OtherTools);
    if steered && at.text.field == Field::Description {
        let mut foreign = shadow::foreign_identifiers(at.text.text, server, own_tool, pool);
        // The tool's own parameters are named so too.
        foreign.retain(|name| !parameters.iter().any(|p| p.eq_ignore_ascii_case(name)));
        if let Some(name) = foreign.first() {
            let severity = if pressing {
                Severity::Dangerous
            } else {
                Severity::Review
            };
            let evidence = format!(
                "names {name}, a tool its server does not have, and steers its use: \"{}\"",
                unicode::shown(at.text.text, EVIDENCE)
            );
            out.push(finding(Check::Shadowing, severity, at.field(), evidence));
            return;
        }
    }
    if let Some(hit) = first(hits, Kind::OtherTools) {
        if steer && pressing {
            let evidence = format!(
                "tells the model how to use other tools: \"{}\"",
                phrases::around(normalized, hit.start, hit.end, EVIDENCE)
            );
            out.push(finding(Check::Shadowing, Severity::Dangerous, at.field(), evidence));
        } else if steer || pressing {
            let evidence = format!(
                "speaks of other tools: \"{}\"",
                phrases::around(normalized, hit.start, hit.end, EVIDENCE)
            );
            out.push(finding(Check::Shadowing, Severity::Weak, at.field(), evidence));
        }
    }
}
