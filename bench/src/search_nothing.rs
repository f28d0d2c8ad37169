//! "Nothing fits" over whole catalogs and small pools: each pool is a set's
//! whole catalog or a few of its servers drawn by a fixed generator. Asked
//! of each: the dev and test queries whose needed tools the pool has (an
//! answer of nothing loses them), the requests of `nothing.json`, and, in
//! small pools, the queries for servers the pool lacks (a task for Slack in
//! a pool without it). [`table`] measures the rules; [`dump`] writes what
//! the index and the embedding model see of each request, as JSON lines
//! (`mcpool-bench-search --nothing-dump FILE`), for trying rules outside
//! Rust.

use mcpool_core::search::{plan, Ranking, ToolIndex};
use serde_json::json;

use super::search_eval::{tools_of, Set};

/// The pools of a set: the whole catalog, then `draws` pools of each size
/// in `sizes`, servers drawn by a fixed generator.
fn pools(set: &Set, sizes: &[usize], draws: usize) -> Vec<Vec<usize>> {
    let n = set.catalog.servers.len();
    let mut out = vec![(0..n).collect::<Vec<_>>()];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for &k in sizes {
        for _ in 0..draws {
            let mut all: Vec<usize> = (0..n).collect();
            for i in 0..k.min(n) {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let j = i + (seed >> 33) as usize % (n - i);
                all.swap(i, j);
            }
            all.truncate(k);
            all.sort();
            out.push(all);
        }
    }
    out
}

/// The index of a pool of `set`'s `servers` (by position), and their names.
fn pool_index<'a>(set: &'a Set, servers: &[usize]) -> (ToolIndex, std::collections::HashSet<&'a str>) {
    let mut index = ToolIndex::default();
    let mut names = std::collections::HashSet::new();
    for &i in servers {
        let s = &set.catalog.servers[i];
        names.insert(s.name.as_str());
        index.set_server(&s.name, s.instructions.as_deref().unwrap_or_default(), &tools_of(s));
    }
    (index, names)
}

pub fn dump(sets: &[Set], nothing: &[String]) -> String {
    let mut out = String::new();
    let open = Ranking {
        common: 1.0,
        ..Ranking::default()
    };
    for set in sets {
        for (p, servers) in pools(set, &[3, 6, 12], 8).iter().enumerate() {
            let (index, names) = pool_index(set, servers);
            let mut row = |query: &str, kind: &str, split: &str, relevant: &[String]| {
                let hits = plan::search(&index, query, 5, &open, |_, _| true);
                let raw = index.search(query, 5, |_, _| true);
                let near = index.similar(query, 1, |_, _| true);
                let asked = index.asked(query);
                let dfs: Vec<usize> = asked.iter().map(|s| index.tools_with(s)).collect();
                let found = hits.iter().any(|h| {
                    let r = format!("{}/{}", h.server, h.tool);
                    relevant.iter().any(|g| g.split('|').any(|x| x == r))
                });
                out.push_str(
                    &json!({
                        "set": set.name, "pool": p, "size": index.len(), "servers": servers.len(),
                        "kind": kind, "split": split, "query": query,
                        "asked": asked, "df": dfs,
                        "hits": raw.iter().map(|h| json!([format!("{}/{}", h.server, h.tool), h.score, h.words])).collect::<Vec<_>>(),
                        "planned": hits.len(), "found": found,
                        "cos": near.first().map(|h| h.score),
                    })
                    .to_string(),
                );
                out.push('\n');
            };
            for q in &set.queries.queries {
                let inside = q.relevant.iter().all(|g| {
                    g.split('|')
                        .any(|x| x.split('/').next().is_some_and(|s| names.contains(s)))
                });
                let kind = if inside { "feasible" } else { "elsewhere" };
                row(&q.query, kind, &q.split, &q.relevant);
            }
            for q in nothing {
                row(q, "nothing", "-", &[]);
            }
        }
    }
    out
}

/// The rules measured, each with the share of the tools above which a word
/// is common and whether named services count.
pub const RULES: &[(&str, f32, bool)] = &[
    ("none (every request gets tools)", 1.0, false),
    ("common words only", plan::COMMON, false),
    ("common words and named services (shipped)", plan::COMMON, true),
];

/// One rule's row: feasible queries answered with nothing (whole catalogs,
/// small pools), `nothing.json` requests answered with nothing (whole,
/// small), queries for servers the pool lacks answered with nothing
/// (small pools). Each as (answered with nothing, asked).
pub type Row = (&'static str, [(usize, usize); 5]);

pub fn table(sets: &[Set], nothing: &[String]) -> Vec<Row> {
    let mut rows: Vec<Row> = RULES.iter().map(|r| (r.0, [(0, 0); 5])).collect();
    let open = Ranking {
        common: 1.0,
        services: false,
        ..Ranking::default()
    };
    for set in sets {
        for (p, servers) in pools(set, &[3, 6, 12], 8).iter().enumerate() {
            let small = usize::from(p > 0);
            let (index, names) = pool_index(set, servers);
            let empty = |q: &str, rule: &(&str, f32, bool)| {
                let ranking = Ranking {
                    common: rule.1,
                    services: rule.2,
                    ..Ranking::default()
                };
                plan::search(&index, q, 5, &ranking, |_, _| true).is_empty()
            };
            for q in &set.queries.queries {
                let inside = q.relevant.iter().all(|g| {
                    g.split('|')
                        .any(|x| x.split('/').next().is_some_and(|s| names.contains(s)))
                });
                let column = if inside {
                    let found = plan::search(&index, &q.query, 5, &open, |_, _| true).iter().any(|h| {
                        let r = format!("{}/{}", h.server, h.tool);
                        q.relevant.iter().any(|g| g.split('|').any(|x| x == r))
                    });
                    if !found {
                        continue;
                    }
                    small
                } else {
                    4
                };
                for (row, rule) in rows.iter_mut().zip(RULES) {
                    row.1[column].1 += 1;
                    row.1[column].0 += usize::from(empty(&q.query, rule));
                }
            }
            for q in nothing {
                for (row, rule) in rows.iter_mut().zip(RULES) {
                    row.1[2 + small].1 += 1;
                    row.1[2 + small].0 += usize::from(empty(q, rule));
                }
            }
        }
    }
    rows
}
