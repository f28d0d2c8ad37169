//! The search benchmark's data and measures: the evaluation sets of
//! `bench/search/`, recall@k and MRR@10 per set and split, the plain BM25
//! baseline, and the ranking steps measured one after the other.

use std::collections::BTreeMap;

use anyhow::Context;
use mcpool_core::search::{plan, Ranking, ToolIndex, Weights};
use rmcp::model::Tool;

use super::{Catalog, CatalogServer, Queries};

/// Requests no tool of the sets serves (`nothing.json`).
pub fn load_nothing(dir: &std::path::Path) -> anyhow::Result<Vec<String>> {
    #[derive(serde::Deserialize)]
    struct Nothing {
        queries: Vec<String>,
    }
    let file = dir.join("nothing.json");
    let raw = std::fs::read(&file).with_context(|| file.display().to_string())?;
    let n: Nothing = serde_json::from_slice(&raw).with_context(|| file.display().to_string())?;
    Ok(n.queries)
}

/// One evaluation set: a catalog and the queries judged against it.
pub struct Set {
    pub name: &'static str,
    pub catalog: Catalog,
    pub queries: Queries,
}

/// The sets under `dir` (`bench/search`): the hand-written one and the
/// LiveMCPBench one.
pub fn load_sets(dir: &std::path::Path) -> anyhow::Result<Vec<Set>> {
    let mut sets = Vec::new();
    for (name, sub) in [("hand-written", ""), ("LiveMCPBench", "livemcpbench")] {
        let d = dir.join(sub);
        let read = |file: &str| std::fs::read(d.join(file)).with_context(|| format!("{}/{file}", d.display()));
        sets.push(Set {
            name,
            catalog: serde_json::from_slice(&read("catalog.json")?).context("catalog.json")?,
            queries: serde_json::from_slice(&read("queries.json")?).context("queries.json")?,
        });
    }
    Ok(sets)
}

/// One server's tools as rmcp reads them (a tool it cannot read is left
/// out, as mcpool's check would).
pub fn tools_of(server: &CatalogServer) -> Vec<Tool> {
    server
        .tools
        .iter()
        .filter_map(|t| serde_json::from_value::<Tool>(t.clone()).ok())
        .collect()
}

pub fn index_of(catalog: &Catalog, copies: usize) -> ToolIndex {
    let mut index = ToolIndex::default();
    for copy in 0..copies {
        for s in &catalog.servers {
            let name = if copy == 0 {
                s.name.clone()
            } else {
                format!("{}-{copy}", s.name)
            };
            index.set_server(&name, s.instructions.as_deref().unwrap_or_default(), &tools_of(s));
        }
    }
    index
}

#[derive(Debug, Default, Clone, Copy)]
pub struct Scores {
    pub r1: f64,
    pub r5: f64,
    pub r10: f64,
    pub mrr10: f64,
    pub n: usize,
}

impl Scores {
    pub fn add(&mut self, ranked: &[String], relevant: &[String]) {
        let is = |r: &String, group: &String| group.split('|').any(|g| g == r);
        let recall = |k: usize| {
            let hit = relevant
                .iter()
                .filter(|g| ranked.iter().take(k).any(|r| is(r, g)))
                .count();
            hit as f64 / relevant.len().min(k).max(1) as f64
        };
        self.r1 += recall(1);
        self.r5 += recall(5);
        self.r10 += recall(10);
        self.mrr10 += ranked
            .iter()
            .take(10)
            .position(|r| relevant.iter().any(|g| is(r, g)))
            .map_or(0.0, |i| 1.0 / (i + 1) as f64);
        self.n += 1;
    }

    pub fn mean(self) -> Self {
        let n = self.n.max(1) as f64;
        Scores {
            r1: self.r1 / n,
            r5: self.r5 / n,
            r10: self.r10 / n,
            mrr10: self.mrr10 / n,
            n: self.n,
        }
    }
}

/// The plain baseline: the `bm25` crate's own search engine and default
/// English tokenizer over "name description".
pub struct Baseline {
    engine: bm25::SearchEngine<String>,
}

impl Baseline {
    pub fn new(catalog: &Catalog) -> Self {
        let docs: Vec<bm25::Document<String>> = catalog
            .servers
            .iter()
            .flat_map(|s| {
                tools_of(s).into_iter().map(move |t| {
                    bm25::Document::new(
                        format!("{}/{}", s.name, t.name),
                        format!("{} {}", t.name, t.description.as_deref().unwrap_or_default()),
                    )
                })
            })
            .collect();
        Baseline {
            engine: bm25::SearchEngineBuilder::<String>::with_documents(bm25::Language::English, docs).build(),
        }
    }

    /// The first ten, ties in the order of their ids (the crate breaks
    /// them in hash order, which moved the row by ±0.01 from run to run).
    pub fn rank(&self, query: &str) -> Vec<String> {
        let mut all = self.engine.search(query, usize::MAX);
        all.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.document.id.cmp(&b.document.id))
        });
        all.into_iter().take(10).map(|r| r.document.id).collect()
    }
}

/// One ranking measured: the weights of the index and the plan above it.
#[derive(Debug, Clone, Copy)]
pub struct Step {
    pub label: &'static str,
    pub weights: Weights,
    pub ranking: Ranking,
}

/// The steps of issue 31, each adding one thing to the one before; the
/// last is what ships.
pub fn steps() -> Vec<Step> {
    let flat = Ranking {
        split_steps: false,
        fuse: false,
        server_weight: 0.0,
        min_share: 0.0,
        semantic: 0.0,
        common: 1.0,
        services: false,
    };
    let split = Ranking {
        split_steps: true,
        ..flat
    };
    // Tuned weights without the learned expansions (the step after them).
    let tuned = Weights {
        expansion: 0.0,
        ..Weights::default()
    };
    // The shipped plan without the embedding model (the last step).
    let lexical = Ranking {
        semantic: 0.0,
        ..Ranking::default()
    };
    vec![
        Step {
            label: "mcpool index alone (hand-set weights)",
            weights: HAND_SET,
            ranking: flat,
        },
        Step {
            label: "+ each step of a task searched, merged in turns",
            weights: HAND_SET,
            ranking: split,
        },
        Step {
            label: "(tried) steps merged by reciprocal rank fusion instead",
            weights: HAND_SET,
            ranking: Ranking { fuse: true, ..split },
        },
        Step {
            label: "+ servers first",
            weights: HAND_SET,
            ranking: Ranking {
                server_weight: 0.5,
                ..split
            },
        },
        Step {
            label: "(tried) tuned weights, servers first, steps searched",
            weights: tuned,
            ranking: Ranking {
                split_steps: true,
                ..lexical
            },
        },
        Step {
            label: "(tried) tuned weights, flat (no steps, no servers first)",
            weights: tuned,
            ranking: flat,
        },
        Step {
            label: "+ weights tuned on dev, steps not split",
            weights: tuned,
            ranking: lexical,
        },
        Step {
            label: "+ expansions learned from dev",
            weights: Weights::default(),
            ranking: lexical,
        },
        Step {
            label: "+ the embedding model's nearest tools fused in (shipped)",
            weights: Weights::default(),
            ranking: Ranking::default(),
        },
    ]
}

/// The weights as they were set by hand before tuning.
pub const HAND_SET: Weights = Weights {
    fields: [2.5, 1.0, 0.4, 1.5, 0.25],
    synonym: 0.35,
    expansion: 0.0,
};

pub fn rank(index: &ToolIndex, query: &str, k: usize, ranking: &Ranking) -> Vec<String> {
    plan::search(index, query, k, ranking, |_, _| true)
        .into_iter()
        .map(|h| format!("{}/{}", h.server, h.tool))
        .collect()
}

/// Scores by set name ("all" for every set) and split ("all" for both).
pub type Table = BTreeMap<(String, String), Scores>;

/// Scores `rank` over every set's queries (of `split` only, when given).
pub fn measure(
    sets: &[(&Set, &ToolIndex)],
    split: Option<&str>,
    rank: impl Fn(&ToolIndex, &str) -> Vec<String>,
) -> Table {
    let mut table = Table::new();
    for (set, index) in sets {
        for q in set
            .queries
            .queries
            .iter()
            .filter(|q| split.is_none_or(|s| s == q.split))
        {
            let ranked = rank(index, &q.query);
            for name in [set.name, "all"] {
                for sp in [q.split.as_str(), "all"] {
                    table
                        .entry((name.to_string(), sp.to_string()))
                        .or_default()
                        .add(&ranked, &q.relevant);
                }
            }
        }
    }
    for s in table.values_mut() {
        *s = s.mean();
    }
    table
}

/// Measures the baseline and every step on every set and split.
pub fn measure_steps(sets: &[Set]) -> Vec<(String, Table)> {
    let mut out = Vec::new();
    let baselines: Vec<(&Set, Baseline)> = sets.iter().map(|s| (s, Baseline::new(&s.catalog))).collect();
    let empty = ToolIndex::default();
    let plain: Vec<(&Set, &ToolIndex)> = sets.iter().map(|s| (s, &empty)).collect();
    let table = measure(&plain, None, |_, q| {
        // The baseline is per set: find it by the query's set.
        baselines
            .iter()
            .find(|(s, _)| s.queries.queries.iter().any(|x| x.query == q))
            .map(|(_, b)| b.rank(q))
            .unwrap_or_default()
    });
    out.push(("plain BM25 (name + description)".to_string(), table));
    let mut indexes: Vec<ToolIndex> = sets.iter().map(|s| index_of(&s.catalog, 1)).collect();
    let pairs: Vec<(&Set, &ToolIndex)> = sets.iter().zip(&indexes).collect();
    let table = measure(&pairs, None, |index, q| {
        index
            .similar(q, 10, |_, _| true)
            .into_iter()
            .map(|h| format!("{}/{}", h.server, h.tool))
            .collect()
    });
    out.push((
        "the embedding model alone (WordLlama, 128 dimensions, int8)".to_string(),
        table,
    ));
    for step in steps() {
        for index in &mut indexes {
            index.set_weights(step.weights);
        }
        let pairs: Vec<(&Set, &ToolIndex)> = sets.iter().zip(&indexes).collect();
        let table = measure(&pairs, None, |index, q| rank(index, q, 10, &step.ranking));
        out.push((step.label.to_string(), table));
    }
    out
}

/// What leaving out weak matches costs on the dev half: for each share of
/// the best score, the share of the needed tools in the first five results
/// (with every match kept) that it would leave out, and the results kept.
pub fn thresholds(sets: &[Set], shares: &[f32]) -> Vec<(f32, f64, f64)> {
    // The index's scores (a fused list's are ranks).
    let all = Ranking {
        min_share: 0.0,
        semantic: 0.0,
        ..Ranking::default()
    };
    let mut found = 0usize;
    let mut dropped = vec![0usize; shares.len()];
    let mut kept = vec![0usize; shares.len()];
    let mut queries = 0usize;
    for set in sets {
        let index = index_of(&set.catalog, 1);
        for q in set.queries.queries.iter().filter(|q| q.split == "dev") {
            queries += 1;
            let hits = plan::search(&index, &q.query, 5, &all, |_, _| true);
            let best = hits.first().map_or(0.0, |h| h.score);
            for h in &hits {
                let key = format!("{}/{}", h.server, h.tool);
                let needed = q.relevant.iter().any(|g| g.split('|').any(|x| x == key));
                found += usize::from(needed);
                for (i, share) in shares.iter().enumerate() {
                    let weak = h.score < share * best;
                    dropped[i] += usize::from(weak && needed);
                    kept[i] += usize::from(!weak);
                }
            }
        }
    }
    shares
        .iter()
        .enumerate()
        .map(|(i, s)| {
            (
                *s,
                dropped[i] as f64 / found.max(1) as f64,
                kept[i] as f64 / queries.max(1) as f64,
            )
        })
        .collect()
}

/// What saying "nothing fits" costs and catches, for each share of the
/// tools above which a word is common (`Ranking::common`): the share of dev queries with a needed tool in the first five
/// that it would answer with nothing, and the share of requests no tool
/// serves (`nothing.json`, over each set's catalog) that it would.
pub fn nothing_fits(sets: &[Set], nothing: &[String], mets: &[f32]) -> Vec<(f32, f64, f64)> {
    let at = |common: f32| Ranking {
        common,
        services: false,
        ..Ranking::default()
    };
    let mut out = Vec::new();
    let indexes: Vec<ToolIndex> = sets.iter().map(|s| index_of(&s.catalog, 1)).collect();
    for &t in mets {
        let (mut found, mut lost, mut asked, mut caught) = (0usize, 0usize, 0usize, 0usize);
        for (set, index) in sets.iter().zip(&indexes) {
            for q in set.queries.queries.iter().filter(|q| q.split == "dev") {
                let all = rank(index, &q.query, 5, &at(1.0));
                if all
                    .iter()
                    .any(|r| q.relevant.iter().any(|g| g.split('|').any(|x| x == r)))
                {
                    found += 1;
                    lost += usize::from(rank(index, &q.query, 5, &at(t)).is_empty());
                }
            }
            for q in nothing {
                asked += 1;
                caught += usize::from(rank(index, q, 5, &at(t)).is_empty());
            }
        }
        out.push((
            t,
            lost as f64 / found.max(1) as f64,
            caught as f64 / asked.max(1) as f64,
        ));
    }
    out
}
