//! Cross-server shadowing: a definition that names another server's tools
//! (or tools in general) and tells the model how to use them, so that one
//! server steers what another does ("when you send mail with send_email,
//! add this address to bcc").

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// The names every server of a pool answers to: its tools' and its own.
#[derive(Debug, Default)]
pub struct Pool {
    /// A tool's name (lowercase) → the servers that have it.
    tools: HashMap<String, BTreeSet<String>, BuildHasherDefault<Fnv>>,
    /// Server names (lowercase).
    servers: HashSet<String, BuildHasherDefault<Fnv>>,
    /// A sum over every (server, tool) pair: equal pools have equal
    /// prints, whatever the order they were built in.
    print: u64,
}

impl Pool {
    pub fn add(&mut self, server: &str, tool: &str) {
        let (server, tool) = (lower(server), lower(tool));
        // Copies made only of names not held yet: most tools of a pool
        // share their names with others.
        let new = match self.tools.get_mut(tool.as_ref()) {
            Some(servers) if servers.contains(server.as_ref()) => false,
            Some(servers) => servers.insert(server.clone().into_owned()),
            None => {
                let servers = BTreeSet::from([server.clone().into_owned()]);
                self.tools.insert(tool.clone().into_owned(), servers);
                true
            }
        };
        if new {
            self.print = self.print.wrapping_add(pair_print(&server, &tool));
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

    /// The other servers that have a tool named `token` (lowercase; a
    /// name [`distinctive`] enough to be a reference: `send_email`, not
    /// `search`), when `own` (lowercase) has no tool of that name.
    fn others_with(&self, token: &str, own: &str) -> Option<&BTreeSet<String>> {
        let servers = self.tools.get(token)?;
        (!servers.contains(own) && !servers.is_empty()).then_some(servers)
    }

    /// The names whose answers differ between `before` and this pool: a
    /// tool name that some server gained or lost, a server that came or
    /// went. A scan that looked none of them up says the same in both.
    pub fn changed_since(&self, before: &Pool) -> Changes {
        let mut changed = HashSet::default();
        if self.print == before.print {
            return Changes(changed);
        }
        for (tool, servers) in &self.tools {
            if before.tools.get(tool) != Some(servers) {
                changed.insert(name_print(tool));
            }
        }
        for tool in before.tools.keys().filter(|t| !self.tools.contains_key(*t)) {
            changed.insert(name_print(tool));
        }
        for server in self.servers.symmetric_difference(&before.servers) {
            changed.insert(name_print(server));
        }
        Changes(changed)
    }
}

/// The names (lowercase, as prints) whose answers differ between two
/// pools ([`Pool::changed_since`]).
#[derive(Debug, Default)]
pub struct Changes(HashSet<u64, BuildHasherDefault<Fnv>>);

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// One question a scan put to its pool: its answer, and so the scan, may
/// differ in a pool where its name changed ([`Pool::changed_since`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Question {
    /// The servers other than `own` that have a tool named `tool`, when
    /// `own` has none ([`Pool::others_with`]).
    Others { tool: Box<str>, own: Box<str> },
    /// Whether `server` has a tool named `tool`.
    Has { server: Box<str>, tool: Box<str> },
    /// Whether there is a server of this name.
    Server(Box<str>),
    /// Whether some server has a tool of this name.
    Tool(Box<str>),
}

impl Question {
    /// The name (lowercase) whose change may change the answer.
    fn name(&self) -> &str {
        match self {
            Question::Others { tool, .. } | Question::Has { tool, .. } | Question::Tool(tool) => tool,
            Question::Server(server) => server,
        }
    }

    /// The answer in `pool`, as a number.
    fn answer(&self, pool: &Pool) -> u64 {
        match self {
            Question::Others { tool, own } => servers_print(pool.others_with(tool, own)),
            Question::Has { server, tool } => u64::from(pool.tools.get(&**tool).is_some_and(|s| s.contains(&**server))),
            Question::Server(server) => u64::from(pool.servers.contains(&**server)),
            Question::Tool(tool) => u64::from(pool.tools.contains_key(&**tool)),
        }
    }
}

/// What [`Pool::others_with`] answered, as a number: 0 for none.
fn servers_print(servers: Option<&BTreeSet<String>>) -> u64 {
    let mut hasher = Fnv::default();
    for server in servers.into_iter().flatten() {
        hasher.write(server.as_bytes());
        hasher.write(&[0]);
    }
    hasher.finish()
}

/// The questions a scan put to its pool, with their answers: the scan
/// says the same in any pool that answers them as its own did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Asked(Box<[(Question, u64)]>);

impl Asked {
    /// Whether `pool`, which differs from the pool these were asked in by
    /// `changes`, answers one of them otherwise. Only the questions about
    /// a name that changed are put again: a server that comes with a tool
    /// named as this one is (`search`) changes that name, but not the
    /// answer to "which other servers have a `search`" for a server that
    /// has one itself.
    pub fn answered_otherwise(&self, pool: &Pool, changes: &Changes) -> bool {
        !changes.is_empty()
            && self
                .0
                .iter()
                .any(|(q, answer)| changes.0.contains(&name_print(q.name())) && q.answer(pool) != *answer)
    }
}

/// A pool as one scan reads it: every question put to it is noted with
/// its answer, so that the scan is made again only when the pool answers
/// one of them otherwise (`toolctl/scans.rs`), not whenever any server
/// comes or goes.
pub struct Reading<'p> {
    pool: &'p Pool,
    /// `None`: nothing is noted (a scan made once, as `mcpool scan` makes
    /// them, spares the copies).
    asked: Option<RefCell<Vec<(Question, u64)>>>,
}

impl<'p> Reading<'p> {
    /// A reading that notes nothing.
    pub fn new(pool: &'p Pool) -> Reading<'p> {
        Reading { pool, asked: None }
    }

    /// A reading that notes every question and its answer.
    pub fn noting(pool: &'p Pool) -> Reading<'p> {
        Reading {
            pool,
            asked: Some(RefCell::default()),
        }
    }

    /// The questions put, each once.
    pub fn asked(self) -> Asked {
        let mut asked = self.asked.map(RefCell::into_inner).unwrap_or_default();
        asked.sort_unstable();
        asked.dedup();
        Asked(asked.into_boxed_slice())
    }

    /// `answer`, noted as the answer to the question `question` makes.
    fn note(&self, answer: u64, question: impl FnOnce() -> Question) -> u64 {
        if let Some(asked) = &self.asked {
            asked.borrow_mut().push((question(), answer));
        }
        answer
    }

    /// [`Pool::others_with`] (`token` in any case, `own` lowercase).
    fn others_with(&self, token: &str, own: &str) -> Option<&'p BTreeSet<String>> {
        with_lower(token, |token| {
            let servers = self.pool.others_with(token, own);
            if self.asked.is_some() {
                self.note(servers_print(servers), || Question::Others {
                    tool: token.into(),
                    own: own.into(),
                });
            }
            servers
        })
    }

    /// Whether `server` has a tool named `tool`.
    fn has(&self, server: &str, tool: &str) -> bool {
        let (server, tool) = (lower(server), lower(tool));
        let has = self
            .pool
            .tools
            .get(tool.as_ref())
            .is_some_and(|s| s.contains(server.as_ref()));
        self.note(u64::from(has), || Question::Has {
            server: server.as_ref().into(),
            tool: tool.as_ref().into(),
        }) == 1
    }

    /// Whether the pool has a server named `server` (lowercase).
    fn has_server(&self, server: &str) -> bool {
        let has = self.pool.servers.contains(server);
        self.note(u64::from(has), || Question::Server(server.into())) == 1
    }

    /// Whether some server has a tool named `tool` (lowercase).
    fn has_tool(&self, tool: &str) -> bool {
        let has = self.pool.tools.contains_key(tool);
        self.note(u64::from(has), || Question::Tool(tool.into())) == 1
    }
}

/// A name's share of [`Changes`]: FNV-1a.
fn name_print(name: &str) -> u64 {
    let mut hasher = Fnv::default();
    hasher.write(name.as_bytes());
    hasher.finish()
}

/// The identifiers of tools `text` names that are not `server`'s own (nor
/// `own_tool` itself), whatever server they belong to: a definition that
/// steers them steers tools it does not own.
pub fn foreign_identifiers<'t>(text: &'t str, server: &str, own_tool: &str, pool: &Reading<'_>) -> Vec<&'t str> {
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

/// `text` in lowercase, handed to `f`: as it is when it is lowercase
/// already, else copied, onto the stack when it is short ASCII (a token
/// looked up), not to the heap.
fn with_lower<R>(text: &str, f: impl FnOnce(&str) -> R) -> R {
    let bytes = text.as_bytes();
    if !text.is_ascii() {
        return f(&text.to_lowercase());
    }
    if !bytes.iter().any(u8::is_ascii_uppercase) {
        return f(text);
    }
    let mut buffer = [0u8; 64];
    match buffer.get_mut(..bytes.len()) {
        Some(lowered) => {
            lowered.copy_from_slice(bytes);
            lowered.make_ascii_lowercase();
            f(std::str::from_utf8(lowered).unwrap_or_default())
        }
        None => f(&text.to_ascii_lowercase()),
    }
}

/// The tokens of `text` (runs of letters, digits, `_`, `-`, and `.` where
/// `dot`) that hold a `_`, a `-` or a lowercase letter before an uppercase
/// one: the only ones [`distinctive`] can take for a tool's name. Such a
/// mark is looked for first, over whole blocks of bytes, and only the
/// token around it is read: plain words cost nothing more.
fn identifiers(text: &str, dot: bool) -> Identifiers<'_> {
    Identifiers { text, at: 0, dot }
}

/// What an ASCII byte is to [`identifiers`]: part of a token always, or
/// only where `dot`.
const WORD: u8 = 1;
const DOT: u8 = 2;

const CLASSES: [u8; 128] = {
    let mut table = [0u8; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        table[b] = if c.is_ascii_alphanumeric() || c == b'_' || c == b'-' {
            WORD
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

impl Identifiers<'_> {
    /// Whether the character at `i` (a boundary) is part of a token, and
    /// its length.
    fn word(&self, i: usize) -> (bool, usize) {
        let b = self.text.as_bytes()[i];
        if b < 0x80 {
            let mask = if self.dot { WORD | DOT } else { WORD };
            return (CLASSES[usize::from(b)] & mask != 0, 1);
        }
        let c = self.text[i..].chars().next().unwrap_or(' ');
        (c.is_alphanumeric(), c.len_utf8())
    }
}

impl<'t> Iterator for Identifiers<'t> {
    type Item = &'t str;

    fn next(&mut self) -> Option<&'t str> {
        let (text, bytes) = (self.text, self.text.as_bytes());
        let rest = bytes.get(self.at..).filter(|r| !r.is_empty())?;
        // The first mark: a `_` or `-`, or a camel hump before it. Marks
        // are ASCII, never inside a longer character.
        let dash = memchr::memchr2(b'_', b'-', rest);
        let mark = match first_camel(&rest[..dash.unwrap_or(rest.len())]).or(dash) {
            Some(mark) => self.at + mark,
            None => {
                self.at = bytes.len();
                return None;
            }
        };
        // The token around it.
        let mut start = mark;
        while start > self.at {
            let mut before = start - 1;
            while !text.is_char_boundary(before) {
                before -= 1;
            }
            if !self.word(before).0 {
                break;
            }
            start = before;
        }
        let mut end = mark;
        while end < bytes.len() {
            let (word, len) = self.word(end);
            if !word {
                break;
            }
            end += len;
        }
        self.at = end;
        Some(&text[start..end])
    }
}

/// Where in `text` the first ASCII lowercase letter is that an uppercase
/// one follows, looked for 64 pairs at a time without a branch per byte.
fn first_camel(text: &[u8]) -> Option<usize> {
    let next = text.get(1..)?;
    for (block, (before, after)) in text.chunks(64).zip(next.chunks(64)).enumerate() {
        let mut bits = 0u64;
        for (j, (&b, &a)) in before.iter().zip(after).enumerate() {
            bits |= u64::from((b.wrapping_sub(b'a') < 26) & (a.wrapping_sub(b'A') < 26)) << j;
        }
        if bits != 0 {
            return Some(block * 64 + bits.trailing_zeros() as usize);
        }
    }
    None
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
pub fn references(text: &str, own_server: &str, pool: &Reading<'_>) -> Vec<Reference> {
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
        let split = token.as_bytes().windows(2).position(|w| w == b"__");
        if let Some((server, tool)) = split.map(|at| (&token[..at], &token[at + 2..])) {
            let server = server.to_lowercase();
            if server != own && pool.has_server(&server) && pool.has_tool(&tool.to_lowercase()) {
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
