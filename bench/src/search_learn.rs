//! `--learn-expansions`: mines term expansions (a request's word → a word
//! of the tools it needs) from the dev half of every set with
//! `expansions::mine`, and writes them to the core's `expansions.txt`. The
//! support, the cap and the weight are chosen on dev alone, by two-fold
//! cross-validation inside it (mined on one half of the dev queries,
//! scored on the other), so that the choice does not reward pairs that
//! only repeat the queries they came from. Test is not read.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use mcpool_core::search::expansions::{mine, Example, Pair};
use mcpool_core::search::{Expansions, Ranking, ToolIndex, Weights, Words};

use super::search_eval::{index_of, rank, tools_of, Scores, Set};
use super::Query;

const SUPPORTS: [usize; 3] = [2, 3, 4];
const CAPS: [usize; 3] = [100, 200, 300];
const WEIGHTS: [f32; 6] = [0.1, 0.2, 0.3, 0.45, 0.6, 0.8];

/// The dev queries of every set, each with its set's index.
fn dev(sets: &[Set]) -> Vec<(usize, &Query)> {
    sets.iter()
        .enumerate()
        .flat_map(|(i, s)| {
            s.queries
                .queries
                .iter()
                .filter(|q| q.split == "dev")
                .map(move |q| (i, q))
        })
        .collect()
}

/// A query's stems and the name and description stems of every tool it
/// needs (each alternative of a `a|b` group).
fn examples(sets: &[Set], queries: &[(usize, &Query)], words: &Words) -> Vec<Example> {
    let texts: Vec<BTreeMap<String, Vec<String>>> = sets
        .iter()
        .map(|set| {
            set.catalog
                .servers
                .iter()
                .flat_map(|s| {
                    tools_of(s).into_iter().map(move |t| {
                        let mut stems = words.stems(&t.name);
                        stems.extend(words.stems(t.title.as_deref().unwrap_or_default()));
                        stems.extend(words.stems(t.description.as_deref().unwrap_or_default()));
                        (format!("{}/{}", s.name, t.name), stems)
                    })
                })
                .collect()
        })
        .collect();
    queries
        .iter()
        .map(|(i, q)| Example {
            query: words.stems(&q.query),
            tools: q
                .relevant
                .iter()
                .flat_map(|g| g.split('|'))
                .filter_map(|key| texts[*i].get(key).cloned())
                .collect(),
        })
        .collect()
}

/// recall@5 + MRR@10 over `queries`, pooled.
fn score(indexes: &[ToolIndex], queries: &[(usize, &Query)], ranking: &Ranking) -> f64 {
    let mut s = Scores::default();
    for (i, q) in queries {
        s.add(&rank(&indexes[*i], &q.query, 10, ranking), &q.relevant);
    }
    let s = s.mean();
    s.r5 + s.mrr10
}

fn set_all(indexes: &mut [ToolIndex], expansions: &Expansions, weight: f32) {
    for index in indexes {
        index.set_expansions(expansions.clone());
        index.set_weights(Weights {
            expansion: weight,
            ..Weights::default()
        });
    }
}

fn to_expansions(pairs: &[Pair]) -> Expansions {
    let text: String = pairs.iter().map(|p| format!("{} {}\n", p.from, p.to)).collect();
    Expansions::parse(&text)
}

/// Chooses the support, cap and weight on dev, then mines every dev query
/// and returns the file's text.
pub fn learn(sets: &[Set]) -> String {
    let ranking = Ranking::default();
    let mut indexes: Vec<ToolIndex> = sets.iter().map(|s| index_of(&s.catalog, 1)).collect();
    let words = Words::default();
    let all = dev(sets);
    let folds: [Vec<(usize, &Query)>; 2] = [0, 1].map(|f| {
        all.iter()
            .enumerate()
            .filter(|(n, _)| n % 2 == f)
            .map(|(_, q)| *q)
            .collect()
    });
    set_all(&mut indexes, &Expansions::default(), 0.0);
    let none = folds.iter().map(|f| score(&indexes, f, &ranking)).sum::<f64>() / 2.0;
    println!("no expansions: cross-validated dev r5+mrr10 {none:.4}");
    let mut best = (none, 0, 0, 0.0f32);
    for support in SUPPORTS {
        for cap in CAPS {
            let mined: Vec<Expansions> = (0..2)
                .map(|f| to_expansions(&mine(&examples(sets, &folds[f], &words), support, cap)))
                .collect();
            for weight in WEIGHTS {
                let mut total = 0.0;
                for f in 0..2 {
                    set_all(&mut indexes, &mined[f], weight);
                    total += score(&indexes, &folds[1 - f], &ranking);
                }
                let s = total / 2.0;
                println!("support {support} cap {cap} weight {weight}: {s:.4}");
                if s > best.0 + 1e-6 {
                    best = (s, support, cap, weight);
                }
            }
        }
    }
    let (cv, support, cap, weight) = best;
    println!("best: support {support} cap {cap} weight {weight}: {cv:.4} (none {none:.4})");
    let pairs = if support == 0 {
        Vec::new()
    } else {
        mine(&examples(sets, &all, &words), support, cap)
    };
    set_all(&mut indexes, &to_expansions(&pairs), weight);
    println!(
        "{} pairs from {} dev queries; dev r5+mrr10 with them (in sample) {:.4}; set EXPANSION_WEIGHT = {weight}",
        pairs.len(),
        all.len(),
        score(&indexes, &all, &ranking)
    );
    let mut out = format!(
        "# Term expansions learned from the dev half of bench/search (both sets, {} queries) by\n\
         # `mcpool-bench-search --learn-expansions`; do not edit by hand. Each line: a request's stem,\n\
         # then a stem of the name or description of the tools it needed that the request did not use.\n\
         # Kept: at least {support} distinct dev queries, positive PMI, the best {cap} by PMI; chosen by\n\
         # two-fold cross-validation inside dev, with the weight {weight} (index.rs EXPANSION_WEIGHT).\n",
        all.len()
    );
    for p in &pairs {
        let _ = writeln!(out, "{} {}", p.from, p.to);
    }
    out
}
