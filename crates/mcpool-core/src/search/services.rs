//! Named services: a request that names a product with a capital ("reply
//! in that Slack thread", "create a Jira ticket") asks for that service.
//! When no server in reach is that service and no tool mentions it, no tool
//! fits, however well another service's tools match the rest of its words
//! (`plan.rs`): a GitHub issue is not the Jira ticket asked for. The names
//! are in `services.txt`.

use std::collections::HashSet;
use std::sync::LazyLock;

use super::index::ToolIndex;
use super::words::Words;

static NAMES: LazyLock<HashSet<String>> = LazyLock::new(|| {
    let words = Words::default();
    include_str!("services.txt")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| words.stem(l))
        .collect()
});

/// The first service `query` names, as it wrote it, that nothing in
/// `index` mentions (no server's name, no tool's name, description,
/// parameters or server text).
pub fn unserved(index: &ToolIndex, query: &str) -> Option<String> {
    named(query).into_iter().find(|word| {
        let lower = word.to_lowercase();
        let stem = index.words().stem(&lower);
        NAMES.contains(&stem) && index.mentions(&stem) == 0 && !index.has_server_part(&lower)
    })
}

/// The words of `query` written as names: a capital inside the word
/// ("GitHub", "AWS"), or a capital first where no sentence starts. A word
/// inside a path, address or identifier ("youtube.com/…", "supabase-js")
/// is not one.
fn named(query: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut sentence_start = true;
    for token in query.split_whitespace() {
        let word = token.trim_matches(|c: char| !c.is_alphanumeric());
        let word = word
            .strip_suffix("'s")
            .or_else(|| word.strip_suffix("’s"))
            .unwrap_or(word);
        let ends_sentence = token.ends_with(['.', '!', '?', ':']);
        if !word.is_empty() && word.chars().all(char::is_alphanumeric) {
            let mut chars = word.chars();
            let first_upper = chars.next().is_some_and(char::is_uppercase);
            let inner_upper = chars.any(char::is_uppercase);
            if inner_upper || (first_upper && !sentence_start) {
                out.push(word.to_string());
            }
        }
        sentence_start = ends_sentence;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::Tool;
    use serde_json::json;

    fn tool(name: &str, description: &str) -> Tool {
        let schema = json!({"type": "object"}).as_object().cloned().unwrap_or_default();
        Tool::new(name.to_string(), description.to_string(), std::sync::Arc::new(schema))
    }

    fn index(servers: &[(&str, &[(&str, &str)])]) -> ToolIndex {
        let mut index = ToolIndex::default();
        for (server, tools) in servers {
            let tools: Vec<Tool> = tools.iter().map(|(n, d)| tool(n, d)).collect();
            index.set_server(server, "", &tools);
        }
        index
    }

    #[test]
    fn names_are_words_written_as_names() {
        assert_eq!(named("reply in that Slack thread"), ["Slack"]);
        assert_eq!(named("Slack me later. Then open GitHub"), ["GitHub"]);
        assert_eq!(named("what's on Dana's Notion page?"), ["Dana", "Notion"]);
        assert!(named("fetch https://www.youtube.com/watch?v=x").is_empty());
        assert!(named("the Context7 ID for supabase-js").iter().all(|w| w != "supabase"));
        assert!(named("create a jira ticket").is_empty());
    }

    #[test]
    fn a_service_nothing_in_reach_mentions_is_unserved() {
        let github = index(&[(
            "github",
            &[("create_issue", "Create a new issue in a GitHub repository")],
        )]);
        assert_eq!(
            unserved(&github, "create a Jira ticket for the login bug").as_deref(),
            Some("Jira")
        );
        // The service of a server in reach, or one a tool mentions, is served.
        assert_eq!(unserved(&github, "open an issue on GitHub"), None);
        let named_server = index(&[("jira-cloud", &[("create", "Create an item")])]);
        assert_eq!(unserved(&named_server, "create a Jira ticket"), None);
        let mentions = index(&[("tracker", &[("create", "Create a ticket in Jira")])]);
        assert_eq!(unserved(&mentions, "create a Jira ticket"), None);
        // A name that is not a service, or an interchangeable one, is not.
        assert_eq!(unserved(&github, "what's Dana's title?"), None);
        assert_eq!(unserved(&github, "search Google for rust"), None);
    }
}
