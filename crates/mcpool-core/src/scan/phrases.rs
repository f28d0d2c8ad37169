//! The words of an attack, found in one pass over a text: instructions
//! that override or hide (`ignore previous instructions`, `do not tell the
//! user`), markup that shouts at a model (`<IMPORTANT>`), directives to it,
//! the secrets and conversation an exfiltration asks for, shell payloads,
//! and words that steer other tools. One Aho-Corasick automaton over the
//! text normalized (lowercase, one space for any run of blanks, straight
//! quotes), built once.

use std::sync::OnceLock;

use aho_corasick::automaton::{Automaton, OverlappingState};
use aho_corasick::dfa::DFA;
use aho_corasick::Input;

use super::lexicon::PHRASES;

/// What a phrase is a sign of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// Replaces the model's instructions: always an attack.
    Override,
    /// Keeps something from the user: always an attack.
    Conceal,
    /// Markup addressed to a model (`<IMPORTANT>`, `<system>`).
    Markup,
    /// An order to the model about how to use tools; workflows say this
    /// too, so alone it proves nothing.
    Directive,
    /// A secret file or store: keys, credentials, an agent's config.
    SecretFile,
    /// What the user said or other tools returned.
    Conversation,
    /// A command that fetches or runs code, or opens a shell.
    Shell,
    /// Words that redirect another tool's use (`instead of`, `bcc`).
    Steer,
    /// Other tools or servers in general (`all other tools`).
    OtherTools,
    /// Asks for a thing's contents rather than its path.
    Contents,
    /// A verb of taking: read, send, paste, include (`structure.rs`).
    Take,
    /// A secret by its kind: a password, a token, cookies, the clipboard.
    Secret,
    /// A path into the user's machine: `~/`, `/etc/`, a key file.
    Path,
    /// Whose: the user's, yours, the client's.
    Owner,
    /// The session's scope: so far, most recent, every other tool.
    Session,
    /// The model addressed: you, the assistant, the model.
    Model,
    /// A word of obligation: must, always, never, first.
    Order,
    /// Turns a safeguard off: ignore, disable, bypass, no longer apply.
    Weaken,
    /// A safeguard: instructions, safety, confirmation, two-factor.
    Safeguard,
    /// Somewhere outside: an external endpoint, a remote server, a URL.
    External,
    /// Personal data: e-mail addresses, phone numbers, card numbers.
    Personal,
    /// A question the user may put: if asked, if the user asks (`deceit.rs`).
    Asked,
    /// An answer that denies or misstates: say no, nothing changed.
    Untrue,
}

struct Lexicon {
    automaton: DFA,
    kinds: Vec<Kind>,
}

/// The automaton, built on first use (`None` only if the lists above
/// could not build one: a unit test says they do).
fn lexicon() -> Option<&'static Lexicon> {
    static LEXICON: OnceLock<Option<Lexicon>> = OnceLock::new();
    let built = LEXICON.get_or_init(|| {
        let mut patterns = Vec::new();
        let mut kinds = Vec::new();
        for (kind, phrases) in PHRASES
            .iter()
            .chain(super::structure::PHRASES)
            .chain(super::deceit::PHRASES)
        {
            for phrase in *phrases {
                patterns.push(*phrase);
                kinds.push(*kind);
            }
        }
        // A DFA: more memory once (about 7 MB), the fastest search for
        // every text. A contiguous NFA, a thirtieth of the memory, searched
        // the benchmark's pool 15 % slower; a second DFA of the ASCII
        // phrases alone for ASCII texts (half the alphabet) no faster. Its
        // own type rather than `AhoCorasick`, whose searches step the
        // automaton through a trait object, a call per byte.
        let automaton = aho_corasick::dfa::Builder::new().build(patterns).ok()?;
        Some(Lexicon { automaton, kinds })
    });
    built.as_ref()
}

/// One phrase found: its kind, and where in the normalized text.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
}

/// `text` as phrases are matched against: lowercase, blanks as one space,
/// typographic quotes straight.
pub fn normalize(text: &str) -> String {
    if text.is_ascii() {
        return normalize_ascii(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut blank = false;
    for c in text.chars() {
        if c.is_whitespace() {
            blank = true;
            continue;
        }
        if blank && !out.is_empty() {
            out.push(' ');
        }
        blank = false;
        match c {
            '\u{2018}' | '\u{2019}' | '\u{02BC}' => out.push('\''),
            '\u{201C}' | '\u{201D}' => out.push('"'),
            c if c.is_ascii() => out.push(c.to_ascii_lowercase()),
            c => out.extend(c.to_lowercase()),
        }
    }
    out
}

/// [`normalize`] of ASCII text: most texts are single-spaced already and
/// need only lowercasing, done on the whole copy at once; the others byte
/// by byte.
fn normalize_ascii(text: &str) -> String {
    if single_spaced(text.as_bytes()) {
        return text.to_ascii_lowercase();
    }
    let mut out = String::with_capacity(text.len());
    let mut blank = false;
    for &b in text.as_bytes() {
        if b.is_ascii_whitespace() {
            blank = true;
            continue;
        }
        if blank && !out.is_empty() {
            out.push(' ');
        }
        blank = false;
        out.push(char::from(b.to_ascii_lowercase()));
    }
    out
}

/// Whether the blanks of `text` are single spaces between other bytes:
/// none first or last, none other than a space, no two in a row. Every
/// byte looked at, without a branch, so that the loop runs on whole blocks.
fn single_spaced(text: &[u8]) -> bool {
    let (Some(first), Some(last)) = (text.first(), text.last()) else {
        return true;
    };
    if first.is_ascii_whitespace() || last.is_ascii_whitespace() {
        return false;
    }
    let bad = text.iter().zip(&text[1..]).fold(false, |bad, (&a, &b)| {
        bad | matches!(a, b'\t' | b'\n' | b'\x0C' | b'\r') | ((a == b' ') & (b == b' '))
    });
    !bad
}

/// Every phrase in `normalized` (overlapping ones too).
pub fn find(normalized: &str) -> Vec<Hit> {
    let Some(lexicon) = lexicon() else {
        return Vec::new();
    };
    let (automaton, kinds) = (&lexicon.automaton, &lexicon.kinds);
    let bytes = normalized.as_bytes();
    let input = Input::new(normalized);
    let mut state = OverlappingState::start();
    let mut hits = Vec::new();
    // A standard-semantics DFA over an unanchored input cannot fail.
    while automaton.try_find_overlapping(&input, &mut state).is_ok() {
        let Some(m) = state.get_match() else { break };
        let kind = kinds[m.pattern().as_usize()];
        if super::structure::starts_word(kind, bytes, m.start()) {
            hits.push(Hit {
                kind,
                start: m.start(),
                end: m.end(),
            });
        }
    }
    hits
}

/// The sentence of `normalized` around `at`, cut to about `limit` bytes on
/// character boundaries: evidence to show.
pub fn around(normalized: &str, start: usize, end: usize, limit: usize) -> String {
    let half = limit / 2;
    let mut from = start.saturating_sub(half);
    let mut to = (end + half).min(normalized.len());
    while !normalized.is_char_boundary(from) {
        from -= 1;
    }
    while !normalized.is_char_boundary(to) {
        to += 1;
    }
    let mut out = String::new();
    if from > 0 {
        out.push('…');
    }
    out.push_str(normalized[from..to].trim());
    if to < normalized.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_phrase_lists_build_an_automaton_and_find_through_case_and_blanks() {
        assert!(super::lexicon().is_some());
        let found = super::find(&super::normalize("Please  IGNORE\nprevious   Instructions"));
        // The override, and the structural words inside it (`ignore`,
        // `instructions`).
        let overrides: Vec<_> = found.iter().filter(|h| h.kind == super::Kind::Override).collect();
        assert_eq!(overrides.len(), 1, "{found:?}");
        assert!(found.iter().any(|h| h.kind == super::Kind::Weaken), "{found:?}");
    }
}
