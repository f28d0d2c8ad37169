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

mod checks;
mod document;
mod source;
mod tree;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use checks::*;
use document::*;
use source::*;
use tree::*;

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

/// `doc` checked against a tree of `files`, their rooms, and the one
/// source that reads the environment (the service's).
fn check_against(doc: &str, files: &[&str]) -> Vec<String> {
    let tree = listed(files);
    let owned: Vec<String> = files.iter().map(|f| f.to_string()).collect();
    check(
        doc,
        &tree,
        &rooms(&owned, &tree),
        &sources(&[("crates/a/src/service/mod.rs", SERVICE)]),
    )
}

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
    let problems = check_against(DOC, &files);
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
    let doc = DOC.replace("and `docs/behaviour.md`", "and `docs/behavior.md`");
    let problems = check_against(&doc, &files);
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
    let doc = DOC.replace("### `docs/`", "### `behaviour.md`");
    let problems = check_against(&doc, &FILES);
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
