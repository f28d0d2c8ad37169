//! Rust source read for environment reads: comments, literals and test
//! items blanked, then the calls found.

use super::*;

/// The source with comments and the insides of string and char literals
/// blanked (newlines kept, so line numbers hold): what is left is code.
pub(crate) fn code_only(source: &str) -> Vec<char> {
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

pub(crate) fn blank(code: &mut [char], from: usize, to: usize) {
    let to = to.min(code.len());
    for c in code.iter_mut().take(to).skip(from) {
        if *c != '\n' {
            *c = ' ';
        }
    }
}

pub(crate) fn find(code: &[char], pattern: &str, from: usize) -> Option<usize> {
    let pattern: Vec<char> = pattern.chars().collect();
    (from..code.len()).find(|&i| code[i..].starts_with(&pattern))
}

/// The index of the bracket that closes the one at `open`.
pub(crate) fn closing(code: &[char], open: usize) -> Option<usize> {
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
pub(crate) fn item_end(code: &[char], from: usize) -> usize {
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
pub(crate) fn strip_test_items(code: &mut [char]) {
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
pub(crate) fn env_reads(source: &str) -> Vec<(usize, String)> {
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
