//! ARCHITECTURE.md read as the checks need it: its headings, the paths in
//! backticks, and where a relative path is looked for.

use super::*;

#[derive(Debug)]
pub(crate) struct Heading {
    pub(crate) line: usize,
    pub(crate) level: usize,
    pub(crate) text: String,
    /// Its code spans.
    pub(crate) spans: Vec<String>,
}

#[derive(Debug)]
pub(crate) struct Span {
    pub(crate) line: usize,
    pub(crate) text: String,
    /// The heading it is under (its index), if any.
    pub(crate) under: Option<usize>,
    /// Part of that heading's own line.
    pub(crate) in_heading: bool,
}

#[derive(Debug, Default)]
pub(crate) struct Doc {
    pub(crate) headings: Vec<Heading>,
    pub(crate) spans: Vec<Span>,
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
    pub(crate) fn code_map(&self) -> Option<(usize, usize)> {
        let start = self.headings.iter().position(|h| h.level == 2 && h.text == CODE_MAP)?;
        let end = (start + 1..self.headings.len())
            .find(|&i| self.headings[i].level <= 2)
            .unwrap_or(self.headings.len());
        Some((start, end))
    }
}

/// `#`-headings' level (1 to 6, then a space).
pub(crate) fn heading_level(line: &str) -> Option<usize> {
    let level = line.chars().take_while(|&c| c == '#').count();
    ((1..=6).contains(&level) && line[level..].starts_with(' ')).then_some(level)
}

/// The code spans of one paragraph (its lines with their numbers), as
/// CommonMark reads them: a run of backticks closed by a run as long; a
/// run never closed is text.
pub(crate) fn code_spans(lines: &[(usize, &str)]) -> Vec<(usize, String)> {
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
pub(crate) fn parse(doc: &str) -> Doc {
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

pub(crate) fn is_from_root(path: &str) -> bool {
    TOP_LEVEL.iter().any(|top| path.starts_with(top))
}

/// A path in the tree: a folder when written with a trailing `/`, else a
/// file or a folder.
pub(crate) fn exists(tree: &dyn Tree, path: &str) -> bool {
    if path.ends_with('/') {
        tree.is_dir(path)
    } else {
        tree.is_file(path) || tree.is_dir(path)
    }
}

/// A path from the root with a pattern in it: its folder up to the pattern.
pub(crate) fn exists_pattern(tree: &dyn Tree, path: &str) -> bool {
    let cut = path.find(WILDCARDS).unwrap_or(path.len());
    let dir = &path[..path[..cut].rfind('/').map_or(0, |i| i + 1)];
    tree.is_dir(dir)
}

/// A file or folder written relative to where it is mentioned.
pub(crate) fn is_relative_path(text: &str) -> bool {
    let plain = text.chars().all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c));
    let named = FILE_ENDINGS.iter().any(|e| text.len() > e.len() && text.ends_with(e))
        || (text.len() > 1 && text.ends_with('/'));
    plain && named && !text.starts_with('/') && !text.starts_with('.') && !text.contains("..")
}

/// Where a relative path in the entry under heading `under` is looked for:
/// the entry's rooms (and those of the entries it sits in), their crates,
/// mcpool-core's `src/`, and the root.
pub(crate) fn bases(doc: &Doc, map: Option<(usize, usize)>, under: Option<usize>, tree: &dyn Tree) -> Vec<String> {
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
