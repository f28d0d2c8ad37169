//! The search benchmark's measures: recall@k and MRR@10 per query set, and
//! the plain BM25 baseline they are compared with.

use super::{tools_of, Catalog};

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
        let recall = |k: usize| {
            let hit = ranked.iter().take(k).filter(|r| relevant.contains(r)).count();
            hit as f64 / relevant.len().min(k).max(1) as f64
        };
        self.r1 += recall(1);
        self.r5 += recall(5);
        self.r10 += recall(10);
        self.mrr10 += ranked
            .iter()
            .take(10)
            .position(|r| relevant.contains(r))
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

    pub fn rank(&self, query: &str) -> Vec<String> {
        self.engine
            .search(query, 10)
            .into_iter()
            .map(|r| r.document.id)
            .collect()
    }
}
