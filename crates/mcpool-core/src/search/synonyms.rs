//! Words people use for the same thing in requests and in tool texts: a
//! request for "remove a folder" should find `delete_directory`. General
//! English of software tasks, not any one server's vocabulary; a group's
//! words are looked up by stem, and a request's word adds the other words
//! of its groups at a lower weight than its own.

use std::collections::{BTreeMap, BTreeSet};

use super::words::Words;

/// Each line is one group of words that can stand for each other.
const GROUPS: &[&str] = &[
    "create make add new insert generate build",
    "delete remove erase destroy drop trash purge forget",
    "update edit modify change alter patch set",
    "get fetch retrieve read obtain load",
    "show display view see inspect describe detail",
    "list enumerate all browse",
    "search find lookup locate query seek look",
    "run execute exec invoke launch trigger perform",
    "start begin open launch",
    "stop kill terminate cancel abort halt end",
    "close exit quit dismiss",
    "file document",
    "folder directory dir",
    "image picture screenshot photo snapshot capture",
    "page site website webpage web url link",
    "browser tab window",
    "navigate go visit open",
    "click press tap push",
    "type enter fill input",
    "write save store put record",
    "message email mail chat post",
    "issue ticket bug task",
    "repository repo",
    "pr pull",
    "database db",
    "table collection",
    "row record entry item document",
    "user member person account people",
    "comment reply note",
    "log logs history",
    "time clock date timezone zone hour",
    "convert translate transform",
    "download retrieve",
    "upload send",
    "commit checkin",
    "diff difference compare changes",
    "payment charge pay",
    "customer client buyer",
    "invoice bill billing",
    "refund reimburse",
    "subscription plan",
    "scroll swipe",
    "wait sleep pause delay",
    "memory remember knowledge fact",
    "relation relationship connection link",
    "think reason plan reflect",
    "deploy release publish ship",
    "schema structure definition",
    "error exception failure problem",
    "test check verify validate",
    "summary summarize overview",
    "tag label",
    "move rename relocate",
    "copy duplicate clone",
    "count number total",
    "size length",
    "environment env config configuration setting settings",
    "secret key token credential password",
    "request http api call",
    "console output",
    "performance speed trace profile",
    "organization org team workspace",
    "permission access role",
    "merge combine",
    "approve accept review",
    "function lambda",
    "project workspace",
    "branch ref",
    "text string content",
    "weather forecast",
    "sum calculate compute add",
    "product item",
    "price cost amount",
    "video movie clip",
    "audio sound",
    "map location place",
    "cluster node",
    "kubernetes k8s kubectl",
    "container pod",
    "server host instance machine",
];

/// The groups by stem: each stem's fellow stems.
#[derive(Debug, Default)]
pub struct Synonyms {
    by_stem: BTreeMap<String, BTreeSet<String>>,
}

impl Synonyms {
    pub fn new(words: &Words) -> Self {
        let mut by_stem: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for group in GROUPS {
            let stems: BTreeSet<String> = group.split_whitespace().map(|w| words.stem(w)).collect();
            for stem in &stems {
                let others = by_stem.entry(stem.clone()).or_default();
                others.extend(stems.iter().filter(|s| *s != stem).cloned());
            }
        }
        Synonyms { by_stem }
    }

    /// The stems that may stand for `stem` (not `stem` itself).
    pub fn of(&self, stem: &str) -> impl Iterator<Item = &str> {
        self.by_stem.get(stem).into_iter().flatten().map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_finds_its_fellows_by_stem() {
        let words = Words::default();
        let syn = Synonyms::new(&words);
        let of = |w: &str| syn.of(&words.stem(w)).map(str::to_string).collect::<BTreeSet<_>>();
        assert!(of("removing").contains(&words.stem("delete")));
        assert!(of("folders").contains(&words.stem("directory")));
        assert!(!of("delete").contains(&words.stem("delete")));
        assert!(of("zebra").is_empty());
    }
}
