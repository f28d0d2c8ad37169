//! ARCHITECTURE.md's code map, kept true to the tree.
//!
//! The document names its rooms in the headings of its `## Code map`
//! section, each as a path from the repository root in backticks (a heading
//! may name a few small rooms that go together). The test fails, with one
//! sentence per problem, when:
//!
//! - a code-map heading, or any backticked path elsewhere in the document,
//!   names something the tree does not have: a path from the repository
//!   root (`crates/…`, `ui/…`, `tests/…`, …), or a file (`*.rs`, `*.js`,
//!   `*.mjs`, `*.sh`, `*.md`, `*.py`) or folder (`name/`) written relative
//!   to the entry it appears in, to that entry's crate, to
//!   `crates/mcpool-core/src/` or to the root;
//! - a room has no heading: each crate folder `crates/*/`, each folder and
//!   each `.rs` file directly under `crates/*/src/` but `lib.rs` and
//!   `main.rs`, and the top-level folders `src-tauri/`, `ui/`, `tests/`,
//!   `bench/`, `scripts/`, `icons/`, `docs/`;
//! - a source file (`crates/*/src/`, `src-tauri/src/`, `tests/src/`,
//!   `bench/src/`) reads the environment outside test code
//!   (`std::env::var`, `var_os`, `vars`, `vars_os`, tracing's
//!   `EnvFilter::from_env`, clap's `env = "…"`) in no room that the list
//!   under `### Who reads the environment` names, or a room on that list
//!   reads nothing.
//!
//! The checks are functions of the document's text and of the tree as
//! given, so the tests at the end run them on small made-up trees as well.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The section whose headings are the rooms.
const CODE_MAP: &str = "Code map";
/// The heading of the list of rooms that read the environment.
const ENV_HEADING: &str = "Who reads the environment";
/// What a path from the repository root starts with.
const TOP_LEVEL: [&str; 9] = [
    "crates/",
    "src-tauri/",
    "ui/",
    "tests/",
    "bench/",
    "scripts/",
    "icons/",
    "docs/",
    ".ci/",
];
/// The top-level folders that are rooms of their own.
const ROOM_FOLDERS: [&str; 7] = ["src-tauri/", "ui/", "tests/", "bench/", "scripts/", "icons/", "docs/"];
/// How a file name written relative to its entry ends.
const FILE_ENDINGS: [&str; 6] = [".rs", ".js", ".mjs", ".sh", ".md", ".py"];
/// Characters that make a path a pattern (checked up to its folder).
const WILDCARDS: [char; 4] = ['*', '{', '<', '?'];
/// Calls that read the environment.
const ENV_READS: [&str; 6] = [
    "env::var(",
    "env::var_os(",
    "env::vars(",
    "env::vars_os(",
    "EnvFilter::from_env(",
    "EnvFilter::try_from_env(",
];
/// Where the test looks for environment reads.
const SOURCE_AREAS: [&str; 4] = ["crates", "src-tauri/src", "tests/src", "bench/src"];

// ---------------------------------------------------------------- the tree

/// What the checks ask of the tree.
trait Tree {
    fn is_file(&self, path: &str) -> bool;
    fn is_dir(&self, path: &str) -> bool;
}

/// The checkout on disk.
struct Disk(PathBuf);

impl Tree for Disk {
    fn is_file(&self, path: &str) -> bool {
        self.0.join(path).is_file()
    }
    fn is_dir(&self, path: &str) -> bool {
        path.is_empty() || self.0.join(path.trim_end_matches('/')).is_dir()
    }
}

/// A made-up tree: its files (folders are their prefixes).
struct Listed(BTreeSet<String>);

impl Tree for Listed {
    fn is_file(&self, path: &str) -> bool {
        self.0.contains(path)
    }
    fn is_dir(&self, path: &str) -> bool {
        let dir = format!("{}/", path.trim_end_matches('/'));
        path.is_empty() || self.0.iter().any(|f| f.starts_with(&dir))
    }
}

/// Every file under `rel` (relative to `root`), hidden folders and build
/// output left out.
fn walk(root: &Path, rel: &str) -> Vec<String> {
    let mut files = Vec::new();
    let mut stack = vec![rel.trim_end_matches('/').to_string()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(root.join(&dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || name == "target" || name == "node_modules" {
                continue;
            }
            let path = format!("{dir}/{name}");
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(path),
                Ok(t) if t.is_file() => files.push(path),
                _ => {}
            }
        }
    }
    files.sort();
    files
}

/// The rooms the code map must have an entry for, from the files under
/// `crates/` and the top-level folders that exist.
fn rooms(crate_files: &[String], tree: &dyn Tree) -> Vec<String> {
    let mut rooms = BTreeSet::new();
    for file in crate_files {
        let parts: Vec<&str> = file.split('/').collect();
        if parts.len() < 3 || parts[0] != "crates" {
            continue;
        }
        rooms.insert(format!("crates/{}/", parts[1]));
        if parts.len() < 4 || parts[2] != "src" || !file.ends_with(".rs") {
            continue;
        }
        if parts.len() > 4 {
            rooms.insert(format!("crates/{}/src/{}/", parts[1], parts[3]));
        } else if parts[3] != "lib.rs" && parts[3] != "main.rs" {
            rooms.insert(file.clone());
        }
    }
    rooms.extend(ROOM_FOLDERS.iter().filter(|f| tree.is_dir(f)).map(|f| f.to_string()));
    rooms.into_iter().collect()
}

/// A unit-test file or folder: not looked at for environment reads.
fn is_test_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name == "tests.rs" || name.ends_with("_tests.rs") || path.split('/').skip(1).any(|part| part == "tests")
}

// ------------------------------------------------------------ the document

#[derive(Debug)]
struct Heading {
    line: usize,
    level: usize,
    text: String,
    /// Its code spans.
    spans: Vec<String>,
}

#[derive(Debug)]
struct Span {
    line: usize,
    text: String,
    /// The heading it is under (its index), if any.
    under: Option<usize>,
    /// Part of that heading's own line.
    in_heading: bool,
}

#[derive(Debug, Default)]
struct Doc {
    headings: Vec<Heading>,
    spans: Vec<Span>,
}

impl Doc {
    fn flush(&mut self, paragraph: &mut Vec<(usize, &str)>) {
        let under = self.headings.len().checked_sub(1);
        for (line, text) in code_spans(paragraph) {
            self.spans.push(Span {
                line,
                text,
                under,
                in_heading: false,
            });
        }
        paragraph.clear();
    }

    /// The headings of the code map: (index of `## Code map`, end).
    fn code_map(&self) -> Option<(usize, usize)> {
        let start = self.headings.iter().position(|h| h.level == 2 && h.text == CODE_MAP)?;
        let end = (start + 1..self.headings.len())
            .find(|&i| self.headings[i].level <= 2)
            .unwrap_or(self.headings.len());
        Some((start, end))
    }
}

/// `#`-headings' level (1 to 6, then a space).
fn heading_level(line: &str) -> Option<usize> {
    let level = line.chars().take_while(|&c| c == '#').count();
    ((1..=6).contains(&level) && line[level..].starts_with(' ')).then_some(level)
}

/// The code spans of one paragraph (its lines with their numbers), as
/// CommonMark reads them: a run of backticks closed by a run as long; a
/// run never closed is text.
fn code_spans(lines: &[(usize, &str)]) -> Vec<(usize, String)> {
    let mut chars: Vec<(usize, char)> = Vec::new();
    for (k, (n, line)) in lines.iter().enumerate() {
        if k > 0 {
            chars.push((*n, '\n'));
        }
        chars.extend(line.chars().map(|c| (*n, c)));
    }
    let run_at = |at: usize| chars[at..].iter().take_while(|c| c.1 == '`').count();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].1 != '`' {
            i += 1;
            continue;
        }
        let run = run_at(i);
        let mut j = i + run;
        let mut close = None;
        while j < chars.len() {
            if chars[j].1 == '`' {
                let r = run_at(j);
                if r == run {
                    close = Some(j);
                    break;
                }
                j += r;
            } else {
                j += 1;
            }
        }
        match close {
            Some(j) => {
                let text: String = chars[i + run..j]
                    .iter()
                    .map(|c| if c.1 == '\n' { ' ' } else { c.1 })
                    .collect();
                spans.push((chars[i].0, text.trim().to_string()));
                i = j + run;
            }
            None => i += run,
        }
    }
    spans
}

/// The document's headings and code spans, fenced blocks left out.
fn parse(doc: &str) -> Doc {
    let mut out = Doc::default();
    let mut paragraph: Vec<(usize, &str)> = Vec::new();
    let mut fence = false;
    for (i, line) in doc.lines().enumerate() {
        let n = i + 1;
        let fence_line = line.trim_start().starts_with("```");
        let heading = if fence || fence_line { None } else { heading_level(line) };
        if fence || fence_line || line.trim().is_empty() || heading.is_some() {
            out.flush(&mut paragraph);
        }
        if fence_line {
            fence = !fence;
            continue;
        }
        if fence || line.trim().is_empty() {
            continue;
        }
        match heading {
            Some(level) => {
                let spans: Vec<String> = code_spans(&[(n, line)]).into_iter().map(|(_, t)| t).collect();
                for text in &spans {
                    out.spans.push(Span {
                        line: n,
                        text: text.clone(),
                        under: Some(out.headings.len()),
                        in_heading: true,
                    });
                }
                out.headings.push(Heading {
                    line: n,
                    level,
                    text: line[level..].trim().to_string(),
                    spans,
                });
            }
            None => paragraph.push((n, line)),
        }
    }
    out.flush(&mut paragraph);
    out
}

fn is_from_root(path: &str) -> bool {
    TOP_LEVEL.iter().any(|top| path.starts_with(top))
}

/// A path in the tree: a folder when written with a trailing `/`, else a
/// file or a folder.
fn exists(tree: &dyn Tree, path: &str) -> bool {
    if path.ends_with('/') {
        tree.is_dir(path)
    } else {
        tree.is_file(path) || tree.is_dir(path)
    }
}

/// A path from the root with a pattern in it: its folder up to the pattern.
fn exists_pattern(tree: &dyn Tree, path: &str) -> bool {
    let cut = path.find(WILDCARDS).unwrap_or(path.len());
    let dir = &path[..path[..cut].rfind('/').map_or(0, |i| i + 1)];
    tree.is_dir(dir)
}

/// A file or folder written relative to where it is mentioned.
fn is_relative_path(text: &str) -> bool {
    let plain = text.chars().all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c));
    let named = FILE_ENDINGS.iter().any(|e| text.len() > e.len() && text.ends_with(e))
        || (text.len() > 1 && text.ends_with('/'));
    plain && named && !text.starts_with('/') && !text.starts_with('.') && !text.contains("..")
}

/// Where a relative path in the entry under heading `under` is looked for:
/// the entry's rooms (and those of the entries it sits in), their crates,
/// mcpool-core's `src/`, and the root.
fn bases(doc: &Doc, map: Option<(usize, usize)>, under: Option<usize>, tree: &dyn Tree) -> Vec<String> {
    let mut bases = Vec::new();
    if let (Some((start, end)), Some(mut h)) = (map, under) {
        if h > start && h < end {
            let mut level = doc.headings[h].level + 1;
            loop {
                let heading = &doc.headings[h];
                if heading.level < level {
                    level = heading.level;
                    for path in heading.spans.iter().filter(|p| is_from_root(p)) {
                        let dir = if path.ends_with('/') {
                            path.clone()
                        } else if tree.is_dir(path) {
                            format!("{path}/")
                        } else {
                            path[..path.rfind('/').map_or(0, |i| i + 1)].to_string()
                        };
                        let parts: Vec<&str> = path.split('/').collect();
                        bases.push(dir);
                        if parts[0] == "crates" && parts.len() > 1 {
                            bases.push(format!("crates/{}/src/", parts[1]));
                            bases.push(format!("crates/{}/", parts[1]));
                        } else {
                            bases.push(format!("{}/", parts[0]));
                        }
                    }
                }
                if h <= start + 1 || level <= 3 {
                    break;
                }
                h -= 1;
            }
        }
    }
    bases.push("crates/mcpool-core/src/".to_string());
    bases.push(String::new());
    let mut seen = BTreeSet::new();
    bases.retain(|b| seen.insert(b.clone()));
    bases
}

// -------------------------------------------------------------- the source

/// The source with comments and the insides of string and char literals
/// blanked (newlines kept, so line numbers hold): what is left is code.
fn code_only(source: &str) -> Vec<char> {
    let src: Vec<char> = source.chars().collect();
    let mut out = src.clone();
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut i = 0;
    while i < src.len() {
        let c = src[i];
        let next = src.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            let end = src[i..].iter().position(|&c| c == '\n').map_or(src.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            let mut j = i;
            while j < src.len() {
                if src[j] == '/' && src.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if src[j] == '*' && src.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if c == '"' {
            let mut j = i + 1;
            while j < src.len() && src[j] != '"' {
                if src[j] == '\\' {
                    j += 1;
                }
                j += 1;
            }
            blank(&mut out, i + 1, j);
            i = j + 1;
        } else if c == 'r'
            && matches!(next, Some('"') | Some('#'))
            && (i == 0 || !ident(src[i - 1]) || (src[i - 1] == 'b' && (i < 2 || !ident(src[i - 2]))))
        {
            let hashes = src[i + 1..].iter().take_while(|&&c| c == '#').count();
            let open = i + 1 + hashes;
            if src.get(open) == Some(&'"') {
                let closes = |j: usize| {
                    src[j] == '"'
                        && src
                            .get(j + 1..j + 1 + hashes)
                            .is_some_and(|h| h.iter().all(|&c| c == '#'))
                };
                let mut j = open + 1;
                while j < src.len() && !closes(j) {
                    j += 1;
                }
                blank(&mut out, open + 1, j);
                i = j + 1 + hashes;
            } else {
                i += 1;
            }
        } else if c == '\'' {
            if next == Some('\\') {
                let end = src
                    .get(i + 3..)
                    .and_then(|rest| rest.iter().position(|&c| c == '\''))
                    .map_or(src.len(), |p| i + 3 + p);
                blank(&mut out, i + 1, end);
                i = end + 1;
            } else if src.get(i + 2) == Some(&'\'') {
                blank(&mut out, i + 1, i + 2);
                i += 3;
            } else {
                i += 1; // a lifetime or a label
            }
        } else {
            i += 1;
        }
    }
    out
}

fn blank(code: &mut [char], from: usize, to: usize) {
    let to = to.min(code.len());
    for c in code.iter_mut().take(to).skip(from) {
        if *c != '\n' {
            *c = ' ';
        }
    }
}

fn find(code: &[char], pattern: &str, from: usize) -> Option<usize> {
    let pattern: Vec<char> = pattern.chars().collect();
    (from..code.len()).find(|&i| code[i..].starts_with(&pattern))
}

/// The index of the bracket that closes the one at `open`.
fn closing(code: &[char], open: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (i, &c) in code.iter().enumerate().skip(open) {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Where the item that starts at `from` (after an attribute) ends: its `;`
/// or its closing brace.
fn item_end(code: &[char], from: usize) -> usize {
    let mut j = from;
    loop {
        while j < code.len() && code[j].is_whitespace() {
            j += 1;
        }
        if code[j..].starts_with(&['#', '[']) {
            match closing(code, j + 1) {
                Some(close) => j = close + 1,
                None => return code.len(),
            }
        } else {
            break;
        }
    }
    let mut depth = 0i32;
    for (k, &c) in code.iter().enumerate().skip(j) {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' => depth -= 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return k + 1;
                }
            }
            ';' if depth == 0 => return k + 1,
            _ => {}
        }
    }
    code.len()
}

/// Blanks every item under `#[cfg(test)]` (or `#[cfg(all(test, …))]`).
fn strip_test_items(code: &mut [char]) {
    let mut from = 0;
    while let Some(at) = find(code, "#[cfg(", from) {
        let Some(close) = closing(code, at + 1) else {
            return;
        };
        let attr: String = code[at + 2..close].iter().filter(|c| !c.is_whitespace()).collect();
        if attr == "cfg(test)" || attr.starts_with("cfg(all(test,") {
            let end = item_end(code, close + 1);
            blank(code, at, end);
            from = end;
        } else {
            from = close + 1;
        }
    }
}

/// Where a source reads the environment outside test code: (line, how).
fn env_reads(source: &str) -> Vec<(usize, String)> {
    let mut code = code_only(source);
    if find(&code, "#![cfg(test)]", 0).is_some() {
        return Vec::new();
    }
    strip_test_items(&mut code);
    let line_of = |at: usize| 1 + code[..at].iter().filter(|&&c| c == '\n').count();
    let mut reads = Vec::new();
    for pattern in ENV_READS {
        let mut from = 0;
        while let Some(at) = find(&code, pattern, from) {
            reads.push((line_of(at), pattern.trim_end_matches('(').to_string()));
            from = at + 1;
        }
    }
    // clap's `#[arg(env = "NAME")]`: the flag's variable.
    for pattern in ["env = \"", "env=\""] {
        let mut from = 0;
        while let Some(at) = find(&code, pattern, from) {
            if at == 0 || !(code[at - 1].is_alphanumeric() || code[at - 1] == '_') {
                reads.push((line_of(at), "clap's env = \"…\"".to_string()));
            }
            from = at + 1;
        }
    }
    reads.sort();
    reads
}

// -------------------------------------------------------------- the checks

/// Every way `doc` is untrue to the tree, one sentence each.
fn check(doc: &str, tree: &dyn Tree, rooms: &[String], sources: &[(String, String)]) -> Vec<String> {
    let parsed = parse(doc);
    let map = parsed.code_map();
    let mut problems = Vec::new();

    // The code map's headings: paths from the root, in the tree, and one
    // for every room.
    match map {
        None => problems.push(format!(
            "ARCHITECTURE.md has no `## {CODE_MAP}` section, whose headings name the rooms"
        )),
        Some((start, end)) => {
            let mut named = BTreeSet::new();
            for heading in &parsed.headings[start + 1..end] {
                for path in &heading.spans {
                    if !is_from_root(path) {
                        problems.push(format!(
                            "line {}: the code-map heading names `{path}`, but a heading names its rooms by their \
                             path from the repository root (such as `crates/mcpool-core/src/control/`)",
                            heading.line
                        ));
                    } else if !exists(tree, path) {
                        problems.push(format!(
                            "line {}: the code map has an entry for `{path}`, which is not in the tree (moved, \
                             renamed or removed?)",
                            heading.line
                        ));
                    }
                    named.insert(path.trim_end_matches('/').to_string());
                }
            }
            for room in rooms {
                if !named.contains(room.trim_end_matches('/')) {
                    problems.push(format!(
                        "`{room}` has no entry in the code map: add a heading naming `{room}` that says what it \
                         owns, what it may call and what holds there"
                    ));
                }
            }
        }
    }

    // Every other backticked path.
    for span in &parsed.spans {
        let in_map_heading =
            span.in_heading && matches!((map, span.under), (Some((start, end)), Some(h)) if h > start && h < end);
        if in_map_heading {
            continue;
        }
        let text = span.text.split("::").next().unwrap_or("");
        if text.is_empty() || text.contains(char::is_whitespace) {
            continue;
        }
        if is_from_root(text) {
            let found = if text.contains(WILDCARDS) {
                exists_pattern(tree, text)
            } else {
                exists(tree, text)
            };
            if !found {
                problems.push(format!("line {}: `{text}` is not in the tree", span.line));
            }
        } else if is_relative_path(text) {
            let bases = bases(&parsed, map, span.under, tree);
            if !bases.iter().any(|base| exists(tree, &format!("{base}{text}"))) {
                let looked: Vec<String> = bases
                    .iter()
                    .map(|b| {
                        if b.is_empty() {
                            "the repository root".to_string()
                        } else {
                            format!("`{b}`")
                        }
                    })
                    .collect();
                problems.push(format!(
                    "line {}: `{text}` is not in the tree (looked under {})",
                    span.line,
                    looked.join(", ")
                ));
            }
        }
    }

    // Who reads the environment.
    let Some(env) = parsed.headings.iter().position(|h| h.text == ENV_HEADING) else {
        problems.push(format!(
            "ARCHITECTURE.md has no `### {ENV_HEADING}` list (one `- `path`` bullet per room that reads the \
             environment)"
        ));
        return problems;
    };
    let first = parsed.headings[env].line;
    let last = parsed.headings.get(env + 1).map_or(usize::MAX, |h| h.line);
    let mut readers = Vec::new();
    for (i, line) in doc.lines().enumerate() {
        let n = i + 1;
        if n <= first || n >= last || !line.trim_start().starts_with("- `") {
            continue;
        }
        if let Some((_, path)) = code_spans(&[(n, line)]).into_iter().next() {
            if is_from_root(&path) {
                readers.push(path);
            } else {
                problems.push(format!(
                    "line {n}: the environment list names `{path}`; name the room by its path from the repository \
                     root"
                ));
            }
        }
    }
    let covers = |reader: &str, file: &str| {
        if reader.ends_with('/') {
            file.starts_with(reader)
        } else {
            file == reader
        }
    };
    let mut reading = Vec::new();
    for (path, source) in sources {
        if is_test_file(path) {
            continue;
        }
        if let Some((line, how)) = env_reads(source).into_iter().next() {
            reading.push(path.clone());
            if !readers.iter().any(|r| covers(r, path)) {
                problems.push(format!(
                    "`{path}` reads the environment (line {line}: `{how}`), but the list under `### {ENV_HEADING}` \
                     names neither it nor a room that holds it"
                ));
            }
        }
    }
    for reader in &readers {
        if !reading.iter().any(|file| covers(reader, file)) {
            problems.push(format!(
                "the list under `### {ENV_HEADING}` names `{reader}`, but no source there reads the environment \
                 (outside tests)"
            ));
        }
    }
    problems
}

// --------------------------------------------------------------- the tests

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The real document, tree, rooms and sources.
fn real() -> (String, Disk, Vec<String>, Vec<(String, String)>) {
    let root = repository();
    let doc = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap_or_else(|e| {
        panic!("ARCHITECTURE.md cannot be read at {}: {e}", root.display());
    });
    let disk = Disk(root.clone());
    let rooms = rooms(&walk(&root, "crates"), &disk);
    let mut sources = Vec::new();
    for area in SOURCE_AREAS {
        for file in walk(&root, area).into_iter().filter(|f| f.ends_with(".rs")) {
            let text = std::fs::read_to_string(root.join(&file)).unwrap_or_default();
            sources.push((file, text));
        }
    }
    (doc, disk, rooms, sources)
}

#[test]
fn the_code_map_is_true_to_the_tree() {
    let (doc, disk, rooms, sources) = real();
    assert!(rooms.len() > 20, "too few rooms found: {rooms:?}");
    let problems = check(&doc, &disk, &rooms, &sources);
    assert!(
        problems.is_empty(),
        "ARCHITECTURE.md is out of step with the tree ({} problems):\n- {}",
        problems.len(),
        problems.join("\n- ")
    );
}

/// The real document fails as soon as one room loses its heading or a
/// path it names goes.
#[test]
fn the_real_document_fails_without_a_room_or_with_a_stale_path() {
    let (doc, disk, rooms, sources) = real();
    let room = rooms
        .iter()
        .find(|r| r.contains("/src/") && r.ends_with('/'))
        .expect("a room that is a folder under crates/*/src/");
    let quoted = format!("`{room}`");
    let without: String = doc
        .lines()
        .filter(|l| !(heading_level(l).is_some() && l.contains(&quoted)))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(without, doc, "no heading names {room}");
    let problems = check(&without, &disk, &rooms, &sources);
    assert!(
        problems
            .iter()
            .any(|p| p.contains(&quoted) && p.contains("has no entry")),
        "{problems:#?}"
    );

    let stale = format!("{doc}\nSee `crates/mcpool-core/src/no_such_room.rs`.\n");
    let problems = check(&stale, &disk, &rooms, &sources);
    assert!(
        problems
            .iter()
            .any(|p| p.contains("`crates/mcpool-core/src/no_such_room.rs` is not in the tree")),
        "{problems:#?}"
    );
}

fn listed(files: &[&str]) -> Listed {
    Listed(files.iter().map(|f| f.to_string()).collect())
}

const FILES: [&str; 8] = [
    "crates/a/Cargo.toml",
    "crates/a/src/lib.rs",
    "crates/a/src/names.rs",
    "crates/a/src/pool/mod.rs",
    "crates/a/src/pool/views.rs",
    "crates/a/src/service/mod.rs",
    "docs/behaviour.md",
    "scripts/test.sh",
];

const DOC: &str = "# Architecture

A pool (`crates/a/src/pool/`), and `docs/behaviour.md`.

```
`not/a/path.rs` inside a fence is not read
```

## Code map

### `crates/a/`

The crate.

#### `crates/a/src/pool/`

Keeps `views.rs`, called by `service/` and told by
`names.rs`.

#### `crates/a/src/names.rs`, `crates/a/src/service/`

Names, and the service.

### `docs/`

What it does.

### `scripts/`

`test.sh`, run as `scripts/*.sh`.

## Cross-cutting

### Who reads the environment

- `crates/a/src/service/`: the flags.
";

fn sources(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(p, s)| (p.to_string(), s.to_string())).collect()
}

const SERVICE: &str = "pub fn port() -> Option<String> { std::env::var(\"PORT\").ok() }\n";

#[test]
fn a_true_map_passes() {
    let tree = listed(&FILES);
    let files: Vec<String> = FILES.iter().map(|f| f.to_string()).collect();
    let rooms = rooms(&files, &tree);
    assert_eq!(
        rooms,
        [
            "crates/a/",
            "crates/a/src/names.rs",
            "crates/a/src/pool/",
            "crates/a/src/service/",
            "docs/",
            "scripts/"
        ]
    );
    let problems = check(
        DOC,
        &tree,
        &rooms,
        &sources(&[("crates/a/src/service/mod.rs", SERVICE)]),
    );
    assert_eq!(problems, Vec::<String>::new());
}

#[test]
fn a_room_without_an_entry_is_reported() {
    let mut files: Vec<&str> = FILES.to_vec();
    files.extend([
        "crates/a/src/control/mod.rs",
        "crates/a/src/token.rs",
        "crates/b/src/main.rs",
        "ui/app.js",
    ]);
    let tree = listed(&files);
    let owned: Vec<String> = files.iter().map(|f| f.to_string()).collect();
    let problems = check(
        DOC,
        &tree,
        &rooms(&owned, &tree),
        &sources(&[("crates/a/src/service/mod.rs", SERVICE)]),
    );
    let missing = [
        "`crates/a/src/control/`",
        "`crates/a/src/token.rs`",
        "`crates/b/`",
        "`ui/`",
    ];
    assert_eq!(problems.len(), missing.len(), "{problems:#?}");
    for room in missing {
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with(room) && p.contains("has no entry in the code map")),
            "{room}: {problems:#?}"
        );
    }
}

#[test]
fn paths_that_are_not_in_the_tree_are_reported() {
    // views.rs moved away, the scripts folder is gone: its heading, the
    // pattern and the relative name go stale.
    let files: Vec<&str> = FILES
        .iter()
        .copied()
        .filter(|f| !f.ends_with("views.rs") && !f.starts_with("scripts/"))
        .collect();
    let tree = listed(&files);
    let owned: Vec<String> = files.iter().map(|f| f.to_string()).collect();
    let doc = DOC.replace("and `docs/behaviour.md`", "and `docs/behavior.md`");
    let problems = check(
        &doc,
        &tree,
        &rooms(&owned, &tree),
        &sources(&[("crates/a/src/service/mod.rs", SERVICE)]),
    );
    let expected = [
        "line 3: `docs/behavior.md` is not in the tree",
        "line 17: `views.rs` is not in the tree (looked under `crates/a/src/pool/`, `crates/a/src/`, `crates/a/`, \
         `crates/mcpool-core/src/`, the repository root)",
        "line 28: the code map has an entry for `scripts/`, which is not in the tree (moved, renamed or removed?)",
        "line 30: `test.sh` is not in the tree (looked under `scripts/`, `crates/mcpool-core/src/`, the repository \
         root)",
        "line 30: `scripts/*.sh` is not in the tree",
    ];
    for sentence in expected {
        assert!(problems.iter().any(|p| p == sentence), "{sentence}\n{problems:#?}");
    }
    assert_eq!(problems.len(), expected.len(), "{problems:#?}");
}

#[test]
fn a_heading_must_name_its_room_from_the_root() {
    let tree = listed(&FILES);
    let files: Vec<String> = FILES.iter().map(|f| f.to_string()).collect();
    let doc = DOC.replace("### `docs/`", "### `behaviour.md`");
    let problems = check(
        &doc,
        &tree,
        &rooms(&files, &tree),
        &sources(&[("crates/a/src/service/mod.rs", SERVICE)]),
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("names `behaviour.md`, but a heading names its rooms by their path")),
        "{problems:#?}"
    );
    assert!(
        problems.iter().any(|p| p.starts_with("`docs/` has no entry")),
        "{problems:#?}"
    );
}

#[test]
fn environment_reads_outside_the_named_rooms_are_reported_and_tests_are_not() {
    let tree = listed(&FILES);
    let files: Vec<String> = FILES.iter().map(|f| f.to_string()).collect();
    let rooms = rooms(&files, &tree);
    let names = r##"
//! Reads nothing: `std::env::var("X")` in a doc comment does not count.
const QUOTED: &str = "std::env::var(\"X\")";
const RAW: &str = r#"std::env::var_os("X") }"#;
fn brace<'a>(s: &'a str) -> char { let _ = s; '}' }

#[cfg(test)]
fn helper() -> char { let _ = std::env::var("IN_A_TEST_HELPER"); '{' }

#[cfg(test)]
mod tests {
    #[test]
    fn t() { let _ = std::env::var_os("IN_A_TEST"); }
}
"##;
    let pool = "pub struct Args {\n    #[arg(long, env = \"POOL_SIZE\")]\n    size: u32,\n}\n\
                #[cfg(all(target_os = \"linux\", target_env = \"gnu\"))]\nfn trim() {}\n";
    assert_eq!(env_reads(names), Vec::new());
    assert_eq!(env_reads(pool), vec![(2, "clap's env = \"…\"".to_string())]);
    assert_eq!(env_reads(SERVICE), vec![(1, "env::var".to_string())]);

    // Named and reading: fine. Reading outside the list: reported. On
    // the list but reading nothing: reported.
    let problems = check(
        DOC,
        &tree,
        &rooms,
        &sources(&[
            ("crates/a/src/service/mod.rs", SERVICE),
            ("crates/a/src/names.rs", names),
            ("crates/a/src/pool/mod.rs", pool),
            ("crates/a/src/pool/tests.rs", SERVICE),
        ]),
    );
    assert_eq!(
        problems,
        ["`crates/a/src/pool/mod.rs` reads the environment (line 2: `clap's env = \"…\"`), but the list under `### Who \
          reads the environment` names neither it nor a room that holds it"]
    );
    let problems = check(DOC, &tree, &rooms, &[]);
    assert_eq!(
        problems,
        ["the list under `### Who reads the environment` names `crates/a/src/service/`, but no source there reads the \
          environment (outside tests)"]
    );
}
