//! The checks: every problem of the document against the tree, one sentence
//! each.

use super::*;

/// Every way `doc` is untrue to the tree, one sentence each.
pub(crate) fn check(doc: &str, tree: &dyn Tree, rooms: &[String], sources: &[(String, String)]) -> Vec<String> {
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
