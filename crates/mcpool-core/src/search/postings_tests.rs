use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use rmcp::model::Tool;
use serde_json::json;

use super::*;
use crate::search::ToolIndex;

const WORDS: &[&str] = &[
    "read",
    "write",
    "file",
    "directory",
    "issue",
    "page",
    "list",
    "create",
    "delete",
    "search",
    "repository",
    "branch",
    "commit",
    "screenshot",
    "browser",
    "click",
    "table",
    "query",
    "database",
    "user",
    "message",
    "channel",
    "upload",
    "bucket",
    "cloud",
    "image",
    "chart",
    "report",
    "email",
    "calendar",
    "event",
    "time",
    "zone",
    "map",
    "route",
    "price",
    "invoice",
    "customer",
    "log",
    "metric",
];

/// A small deterministic generator (64-bit LCG), so a failure replays.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }

    fn words(&mut self, at_most: usize) -> String {
        let n = 1 + self.below(at_most);
        (0..n)
            .map(|_| WORDS[self.below(WORDS.len())])
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn generated_tools(rng: &mut Lcg, n: usize) -> Vec<Tool> {
    (0..n)
        .map(|i| {
            let name = format!("{}_{i}", rng.words(2).replace(' ', "_"));
            // Few distinct descriptions, so that many scores tie.
            let description = if rng.below(3) == 0 {
                "Read a file.".to_string()
            } else {
                rng.words(12)
            };
            let schema =
                json!({"type": "object", "properties": {"arg": {"type": "string", "description": rng.words(6)}}});
            let serde_json::Value::Object(map) = schema else {
                unreachable!()
            };
            Tool::new(name, description, Arc::new(map))
        })
        .collect()
}

fn generated_index(rng: &mut Lcg, servers: usize, tools: usize) -> ToolIndex {
    let mut index = ToolIndex::default();
    for s in 0..servers {
        let about = rng.words(8);
        index.set_server(&format!("srv{s}"), &about, &generated_tools(rng, tools));
    }
    index
}

/// The straightforward reference: every match scored and sorted, then cut.
fn full_sort(
    index: &ToolIndex,
    query: &str,
    k: usize,
    accept: impl Fn(&str, &str) -> bool,
) -> Vec<(String, String, u32)> {
    let mut all = index.search(query, usize::MAX, accept);
    all.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.server.cmp(&b.server))
            .then_with(|| a.tool.cmp(&b.tool))
    });
    all.truncate(k);
    all.into_iter().map(|h| (h.server, h.tool, h.score.to_bits())).collect()
}

#[test]
fn the_first_k_are_those_of_a_full_sort() {
    let mut rng = Lcg(7);
    let index = generated_index(&mut rng, 40, 30);
    let odd = |s: &str, _: &str| s.len() % 2 == 1;
    for _ in 0..200 {
        let query = rng.words(5);
        for k in [0, 1, 2, 5, 10, 40] {
            let got: Vec<_> = index
                .search(&query, k, |_, _| true)
                .into_iter()
                .map(|h| (h.server, h.tool, h.score.to_bits()))
                .collect();
            assert_eq!(got, full_sort(&index, &query, k, |_, _| true), "{query:?}, k {k}");
            let got: Vec<_> = index
                .search(&query, k, odd)
                .into_iter()
                .map(|h| (h.server, h.tool, h.score.to_bits()))
                .collect();
            assert_eq!(got, full_sort(&index, &query, k, odd), "{query:?}, k {k}, filtered");
        }
    }
}

/// Each posting list holds exactly the documents whose terms name it.
fn check_lists(p: &Postings) {
    let mut count = 0;
    for (term, list) in p.lists.iter().enumerate() {
        let listed: BTreeSet<u32> = list.iter().map(|p| p.doc).collect();
        assert_eq!(listed.len(), list.len(), "a document twice in one list");
        let holding: BTreeSet<u32> = p
            .docs
            .iter()
            .enumerate()
            .filter_map(|(slot, d)| {
                d.as_ref()
                    .filter(|d| d.terms.iter().any(|t| t.0 as usize == term))
                    .map(|_| slot as u32)
            })
            .collect();
        assert_eq!(listed, holding);
        count += list.len();
    }
    let terms: usize = p.docs.iter().flatten().map(|d| d.terms.len()).sum();
    assert_eq!(count, terms);
    assert_eq!(p.count, p.docs.iter().flatten().count());
}

#[test]
fn updates_leave_the_lists_as_a_fresh_build_would() {
    let mut rng = Lcg(11);
    let mut index = ToolIndex::default();
    let mut now: BTreeMap<String, (String, Vec<Tool>)> = BTreeMap::new();
    // Servers added, replaced and removed, so that slots are freed and reused.
    for round in 0..60 {
        let server = format!("srv{}", rng.below(12));
        if round % 4 == 3 {
            index.remove_server(&server);
            now.remove(&server);
        } else {
            let about = rng.words(8);
            let n = 1 + rng.below(25);
            let tools = generated_tools(&mut rng, n);
            index.set_server(&server, &about, &tools);
            now.insert(server, (about, tools));
        }
        index.postings().for_each(check_lists);
    }
    let mut fresh = ToolIndex::default();
    for (server, (about, tools)) in &now {
        fresh.set_server(server, about, tools);
    }
    assert_eq!(index.len(), fresh.len());
    let keys = |i: &ToolIndex, q: &str| -> BTreeSet<(String, String)> {
        i.search(q, usize::MAX, |_, _| true)
            .into_iter()
            .map(|h| (h.server, h.tool))
            .collect()
    };
    for _ in 0..100 {
        let query = rng.words(4);
        assert_eq!(keys(&index, &query), keys(&fresh, &query), "{query:?}");
    }
}
