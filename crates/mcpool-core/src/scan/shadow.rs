//! Cross-server shadowing: a definition that names another server's tools
//! (or tools in general) and tells the model how to use them, so that one
//! server steers what another does ("when you send mail with send_email,
//! add this address to bcc").

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

/// The names every server of a pool answers to: its tools' and its own.
#[derive(Debug, Default)]
pub struct Pool {
    /// A tool's name (lowercase) → the servers that have it.
    tools: HashMap<String, BTreeSet<String>, BuildHasherDefault<Fnv>>,
    /// Server names (lowercase).
    servers: BTreeSet<String>,
    /// A sum over every (server, tool) pair: equal pools have equal
    /// prints, whatever the order they were built in.
    print: u64,
}

impl Pool {
    pub fn add(&mut self, server: &str, tool: &str) {
        let (server, tool) = (lower(server), lower(tool));
        // Copies made only of names not held yet: most tools of a pool
        // share their names with others.
        if !self.tools.contains_key(tool.as_ref()) {
            self.tools.insert(tool.clone().into_owned(), BTreeSet::new());
        }
        if let Some(servers) = self.tools.get_mut(tool.as_ref()) {
            if !servers.contains(server.as_ref()) {
                servers.insert(server.clone().into_owned());
                self.print = self.print.wrapping_add(pair_print(&server, &tool));
            }
        }
        if !self.servers.contains(server.as_ref()) {
            self.servers.insert(server.into_owned());
        }
    }

    /// What names the pool holds, as one number: it changes when a server
    /// or tool comes or goes, so that reports that name other servers'
    /// tools are made again (`toolctl/scans.rs`).
    pub fn print(&self) -> u64 {
        self.print
    }

    /// The other servers that have a tool named `token` (a name
    /// [`distinctive`] enough to be a reference: `send_email`, not
    /// `search`), when `own` has no tool of that name.
    fn others_with(&self, token: &str, own: &str) -> Option<&BTreeSet<String>> {
        let servers = self.tools.get(lower(token).as_ref())?;
        (!servers.contains(own) && !servers.is_empty()).then_some(servers)
    }
}

impl Pool {
    /// Whether `server` has a tool named `tool`.
    pub fn has(&self, server: &str, tool: &str) -> bool {
        self.tools
            .get(lower(tool).as_ref())
            .is_some_and(|s| s.contains(lower(server).as_ref()))
    }
}

/// The identifiers of tools `text` names that are not `server`'s own (nor
/// `own_tool` itself), whatever server they belong to: a definition that
/// steers them steers tools it does not own.
pub fn foreign_identifiers<'t>(text: &'t str, server: &str, own_tool: &str, pool: &Pool) -> Vec<&'t str> {
    let mut found: Vec<&str> = Vec::new();
    for token in identifiers(text, false) {
        let token = token.trim_matches(|c: char| c == '-' || c == '_');
        let snake = token.contains('_')
            && token
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if token.len() >= 5 && snake && token != own_tool && !pool.has(server, token) && !found.contains(&token) {
            found.push(token);
        }
    }
    found
}

/// A (server, tool) pair's share of [`Pool::print`]: FNV-1a, stable
/// across runs.
fn pair_print(server: &str, tool: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in server.bytes().chain([0]).chain(tool.bytes()) {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// FNV-1a: the pool is looked up for every identifier of every text, and
/// its keys are short tool names, where SipHash costs more than it guards
/// (the names come from the servers the user configured).
#[derive(Default)]
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut hash = if self.0 == 0 { 0xcbf2_9ce4_8422_2325 } else { self.0 };
        for &b in bytes {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = hash;
    }
}

/// `text` in lowercase, borrowed when it is already.
fn lower(text: &str) -> Cow<'_, str> {
    if text.bytes().any(|b| b.is_ascii_uppercase()) || !text.is_ascii() {
        Cow::Owned(text.to_lowercase())
    } else {
        Cow::Borrowed(text)
    }
}

/// The tokens of `text` (runs of letters, digits, `_`, `-`, and `.` where
/// `dot`) that hold a `_`, a `-` or a lowercase letter before an uppercase
/// one: the only ones [`distinctive`] can take for a tool's name. One pass
/// over the bytes (a character decoded only past ASCII), yielding as it
/// goes, so that plain words cost no lookups, no trims and no allocation.
fn identifiers(text: &str, dot: bool) -> Identifiers<'_> {
    Identifiers { text, at: 0, dot }
}

/// What an ASCII byte is to [`identifiers`].
const WORD: u8 = 1;
const MARK: u8 = 2;
const UPPER: u8 = 4;
const LOWER: u8 = 8;
const DOT: u8 = 16;

const CLASSES: [u8; 128] = {
    let mut table = [0u8; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        table[b] = if c.is_ascii_uppercase() {
            WORD | UPPER
        } else if c.is_ascii_lowercase() {
            WORD | LOWER
        } else if c.is_ascii_digit() {
            WORD
        } else if c == b'_' || c == b'-' {
            WORD | MARK
        } else if c == b'.' {
            DOT
        } else {
            0
        };
        b += 1;
    }
    table
};

struct Identifiers<'t> {
    text: &'t str,
    at: usize,
    dot: bool,
}

impl<'t> Iterator for Identifiers<'t> {
    type Item = &'t str;

    fn next(&mut self) -> Option<&'t str> {
        let (text, bytes) = (self.text, self.text.as_bytes());
        let word_mask = if self.dot { WORD | DOT } else { WORD };
        let (mut start, mut marked, mut after_lower) = (None, false, false);
        let mut i = self.at;
        while i < bytes.len() {
            let b = bytes[i];
            let (class, len) = if b < 0x80 {
                (CLASSES[usize::from(b)], 1)
            } else {
                let c = text[i..].chars().next().unwrap_or(' ');
                (if c.is_alphanumeric() { WORD } else { 0 }, c.len_utf8())
            };
            if class & word_mask != 0 {
                if start.is_none() {
                    (start, marked, after_lower) = (Some(i), false, false);
                }
                marked |= class & MARK != 0 || (after_lower && class & UPPER != 0);
                after_lower = class & LOWER != 0;
            } else if let Some(from) = start.take() {
                if marked {
                    self.at = i + len;
                    return Some(&text[from..i]);
                }
            }
            i += len;
        }
        self.at = bytes.len();
        start.filter(|_| marked).map(|from| &text[from..])
    }
}

/// Whether `token` reads as a tool's identifier rather than a word.
fn distinctive(token: &str) -> bool {
    let inner = token.trim_matches(|c: char| !c.is_alphanumeric());
    let joined = inner.contains('_') || inner.contains('-');
    let camel = inner
        .as_bytes()
        .windows(2)
        .any(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase());
    inner.len() >= 5 && (joined || camel)
}

/// A reference in a text to another server's tool.
#[derive(Debug, PartialEq)]
pub struct Reference {
    /// The name as written.
    pub name: String,
    /// The servers whose tool it is.
    pub servers: Vec<String>,
}

/// The other servers' tools `text` names (`send_email`, `gmail__send_email`).
pub fn references(text: &str, own_server: &str, pool: &Pool) -> Vec<Reference> {
    let mut found: Vec<Reference> = Vec::new();
    let own = lower(own_server);
    let own = own.as_ref();
    for token in identifiers(text, true) {
        let token = token.trim_matches(|c: char| c == '.' || c == '-' || c == '_');
        // Only an identifier can name a tool (`send_email`, `sendEmail`,
        // `gmail__send`): a plain word is skipped before any lookup.
        if token.len() < 5 || !distinctive(token) {
            continue;
        }
        // A public name: `<server>__<tool>`.
        if let Some((server, tool)) = token.split_once("__") {
            let server = server.to_lowercase();
            if server != own && pool.servers.contains(&server) && pool.tools.contains_key(&tool.to_lowercase()) {
                push(&mut found, token, vec![server]);
                continue;
            }
        }
        if let Some(servers) = pool.others_with(token, own) {
            push(&mut found, token, servers.iter().cloned().collect());
        }
    }
    found
}

fn push(found: &mut Vec<Reference>, name: &str, servers: Vec<String>) {
    if !found.iter().any(|r| r.name == name) {
        found.push(Reference {
            name: name.to_string(),
            servers,
        });
    }
}
