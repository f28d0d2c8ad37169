use std::sync::Arc;

use rmcp::model::Tool;
use serde_json::json;

use super::*;

fn tool(name: &str, description: &str, schema: serde_json::Value) -> Tool {
    let serde_json::Value::Object(map) = schema else {
        panic!("schema must be an object")
    };
    Tool::new(name.to_string(), description.to_string(), Arc::new(map))
}

fn no_params() -> serde_json::Value {
    json!({"type": "object", "properties": {}})
}

fn catalog() -> ToolIndex {
    let mut index = ToolIndex::default();
    index.set_server(
        "fs",
        "Read and write files on this machine.",
        &[
            tool("read_file", "Read the complete contents of a file.", json!({"type": "object", "properties": {"path": {"type": "string", "description": "Where the file is"}}})),
            tool("delete_directory", "Delete a directory and everything in it.", no_params()),
            tool("list_directory", "List the entries of a directory.", no_params()),
        ],
    );
    index.set_server(
        "github",
        "",
        &[
            tool(
                "create_issue",
                "Open a new issue in a GitHub repository.",
                json!({"type": "object", "properties": {"title": {"type": "string"}, "body": {"type": "string"}}}),
            ),
            tool("search_repositories", "Search for GitHub repositories.", no_params()),
        ],
    );
    index.set_server(
        "browser",
        "",
        &[tool("browser_take_screenshot", "Take a screenshot of the current page.", json!({"type": "object", "properties": {"filename": {"type": "string", "description": "File name to save the screenshot to"}}}))],
    );
    index
}

fn top(index: &ToolIndex, query: &str) -> Vec<String> {
    index
        .search(query, 3, |_, _| true)
        .into_iter()
        .map(|h| format!("{}/{}", h.server, h.tool))
        .collect()
}

#[test]
fn words_of_a_name_find_the_tool() {
    let index = catalog();
    assert_eq!(top(&index, "create issue")[0], "github/create_issue");
    assert_eq!(top(&index, "screenshots")[0], "browser/browser_take_screenshot");
}

#[test]
fn a_paraphrase_finds_the_tool_through_synonyms() {
    let index = catalog();
    assert_eq!(top(&index, "remove a folder")[0], "fs/delete_directory");
    assert_eq!(
        top(&index, "capture a picture of the web page")[0],
        "browser/browser_take_screenshot"
    );
    assert_eq!(top(&index, "report a bug on github")[0], "github/create_issue");
}

#[test]
fn a_word_in_the_name_outranks_the_same_word_in_a_parameter() {
    let index = catalog();
    // "file" is read_file's name and the screenshot's parameter.
    assert_eq!(top(&index, "file")[0], "fs/read_file");
}

#[test]
fn results_are_ordered_bounded_and_filtered() {
    let index = catalog();
    let hits = index.search("directory file repositories", 10, |_, _| true);
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    assert_eq!(index.search("directory file repositories", 2, |_, _| true).len(), 2);
    let only_fs = index.search("directory file repositories", 10, |s, _| s == "fs");
    assert!(!only_fs.is_empty() && only_fs.iter().all(|h| h.server == "fs"));
    assert!(index.search("the of a", 10, |_, _| true).is_empty());
    assert!(index.search("", 10, |_, _| true).is_empty());
}

#[test]
fn a_server_update_replaces_its_tools_and_keeps_the_unchanged_ones() {
    let mut index = catalog();
    let id_of = |index: &ToolIndex, server: &str, name: &str| index.by_server[server][name];
    let before = id_of(&index, "fs", "read_file");
    let changed = id_of(&index, "fs", "list_directory");
    index.set_server(
        "fs",
        "Read and write files on this machine.",
        &[
            tool("read_file", "Read the complete contents of a file.", json!({"type": "object", "properties": {"path": {"type": "string", "description": "Where the file is"}}})),
            tool("list_directory", "Show what a folder holds.", no_params()),
        ],
    );
    assert_eq!(index.len(), 5);
    assert_eq!(
        id_of(&index, "fs", "read_file"),
        before,
        "an unchanged tool is not re-indexed"
    );
    assert_eq!(id_of(&index, "fs", "list_directory"), changed);
    assert!(top(&index, "delete directory")
        .iter()
        .all(|t| t != "fs/delete_directory"));
    assert_eq!(top(&index, "what does the folder hold")[0], "fs/list_directory");
    index.remove_server("github");
    assert_eq!(index.len(), 3);
    assert!(top(&index, "create issue").iter().all(|t| !t.starts_with("github/")));
}

#[test]
fn ties_are_broken_by_server_then_name() {
    let mut index = ToolIndex::default();
    for server in ["b", "a"] {
        index.set_server(server, "", &[tool("echo", "Echo the input.", no_params())]);
    }
    let hits = index.search("echo", 5, |_, _| true);
    assert_eq!(hits.iter().map(|h| h.server.as_str()).collect::<Vec<_>>(), ["a", "b"]);
}

#[test]
fn a_request_naming_a_server_prefers_its_tools() {
    let mut index = ToolIndex::default();
    index.set_server(
        "mongodb",
        "",
        &[tool("count", "Count the entries of a collection.", no_params())],
    );
    index.set_server(
        "postgres",
        "",
        &[tool("count", "Count the entries of a table.", no_params())],
    );
    assert_eq!(top(&index, "count the entries in postgres")[0], "postgres/count");
    assert_eq!(
        top(&index, "count the entries in mongo")[0],
        "mongodb/count",
        "a word may name a server by its start"
    );
}

#[test]
fn a_tool_meeting_more_of_the_request_ranks_higher() {
    let mut index = ToolIndex::default();
    index.set_server(
        "s",
        "",
        &[
            tool("alpha", "Upload a file.", no_params()),
            tool("beta", "Upload a file to a bucket in the cloud storage.", no_params()),
        ],
    );
    assert_eq!(top(&index, "upload file bucket")[0], "s/beta");
}

#[test]
fn a_request_word_reaches_a_tool_only_through_a_learned_expansion() {
    let mut index = catalog();
    index.set_expansions(crate::search::Expansions::parse(""));
    assert!(top(&index, "grab the backlog").is_empty());
    // One way: "backlog" stands for "issue", not "issue" for "backlog".
    index.set_expansions(crate::search::Expansions::parse("backlog issu\n"));
    assert_eq!(top(&index, "grab the backlog"), ["github/create_issue"]);
    index.set_server("notes", "", &[tool("backlog", "Keep a list of ideas.", no_params())]);
    assert!(!top(&index, "issue").contains(&"notes/backlog".to_string()));
    index.set_weights(Weights {
        expansion: 0.0,
        ..Weights::default()
    });
    assert_eq!(top(&index, "grab the backlog"), ["notes/backlog"]);
}

#[test]
fn the_nearest_tools_in_meaning_are_those_accept_lets_through() {
    let mut index = catalog();
    let many: Vec<Tool> = (0..40)
        .map(|i| {
            tool(
                &format!("read_note_{i}"),
                "Read the complete contents of a note.",
                no_params(),
            )
        })
        .collect();
    index.set_server("notes", "", &many);
    let query = "show me what the file says";
    let near = index.similar(query, 3, |_, _| true);
    assert_eq!(near.len(), 3);
    assert!(near.windows(2).all(|w| w[0].score >= w[1].score), "{near:?}");
    // The nearest dozens are notes; only the file server's pass.
    let fs = index.similar(query, 2, |server, _| server == "fs");
    assert_eq!(fs.len(), 2, "{fs:?}");
    assert!(fs.iter().all(|h| h.server == "fs"), "{fs:?}");
    assert_eq!(fs[0].tool, "read_file");
    assert!(index.similar(query, 2, |_, _| false).is_empty());
    // Removed tools are gone from it too.
    index.remove_server("fs");
    assert!(index.similar(query, 50, |_, _| true).iter().all(|h| h.server != "fs"));
}
