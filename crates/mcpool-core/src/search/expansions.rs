//! Term expansions learned from the dev half of the search evaluation set
//! (`bench/search/`): a request's word that the tools it asked for do not
//! use, and a word those tools do use ("morning" → `time`). One-directional,
//! unlike `synonyms.rs`: the request's word adds the tool's word at a lower
//! weight, never the other way. `expansions.txt` holds them, written by
//! `mcpool-bench-search --learn-expansions` with [`mine`]; this module loads
//! it and holds the mining, a pure function the benchmark calls.

use std::collections::{BTreeMap, BTreeSet};

/// The learned pairs, one `request-stem tool-stem` a line.
const LEARNED: &str = include_str!("expansions.txt");

/// Each request stem's expansions.
#[derive(Debug, Default, Clone)]
pub struct Expansions {
    by_stem: BTreeMap<String, BTreeSet<String>>,
}

impl Expansions {
    /// The pairs shipped in `expansions.txt`.
    pub fn learned() -> Self {
        Self::parse(LEARNED)
    }

    /// Reads `q t` lines of stems; `#` starts a comment, a malformed line
    /// is skipped.
    pub fn parse(text: &str) -> Self {
        let mut by_stem: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or_default();
            let mut parts = line.split_whitespace();
            if let (Some(q), Some(t), None) = (parts.next(), parts.next(), parts.next()) {
                by_stem.entry(q.to_string()).or_default().insert(t.to_string());
            }
        }
        Expansions { by_stem }
    }

    /// The stems `stem` expands to.
    pub fn of(&self, stem: &str) -> impl Iterator<Item = &str> {
        self.by_stem.get(stem).into_iter().flatten().map(String::as_str)
    }

    /// The number of pairs.
    pub fn len(&self) -> usize {
        self.by_stem.values().map(BTreeSet::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.by_stem.is_empty()
    }
}

/// One labelled request to learn from: its stems, and the stems of each
/// tool it needs (name and description).
#[derive(Debug, Clone, Default)]
pub struct Example {
    pub query: Vec<String>,
    pub tools: Vec<Vec<String>>,
}

/// One learned pair and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    pub from: String,
    pub to: String,
    /// Distinct requests that support it.
    pub support: usize,
    /// Pointwise mutual information of the request having `from` and its
    /// tools having `to`, over the examples.
    pub pmi: f64,
}

/// Pairs (request stem q → tool stem t) where q is in a request, t is in
/// its tools' text and q is not, supported by at least `min_support`
/// distinct requests and with a positive PMI; the best `cap` by PMI, then
/// support.
pub fn mine(examples: &[Example], min_support: usize, cap: usize) -> Vec<Pair> {
    let n = examples.len() as f64;
    let mut with_q: BTreeMap<&str, usize> = BTreeMap::new();
    let mut with_t: BTreeMap<&str, usize> = BTreeMap::new();
    let mut joint: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for ex in examples {
        let query: BTreeSet<&str> = ex.query.iter().map(String::as_str).collect();
        let tools: BTreeSet<&str> = ex.tools.iter().flatten().map(String::as_str).collect();
        for q in &query {
            *with_q.entry(q).or_default() += 1;
        }
        for t in &tools {
            *with_t.entry(t).or_default() += 1;
        }
        for q in query.iter().filter(|q| !tools.contains(*q)) {
            for t in &tools {
                *joint.entry((q, t)).or_default() += 1;
            }
        }
    }
    let mut pairs: Vec<Pair> = joint
        .into_iter()
        .filter(|(_, c)| *c >= min_support.max(1))
        .map(|((q, t), c)| Pair {
            from: q.to_string(),
            to: t.to_string(),
            support: c,
            pmi: (c as f64 * n / (with_q[q] as f64 * with_t[t] as f64)).ln(),
        })
        .filter(|p| p.pmi > 0.0)
        .collect();
    pairs.sort_by(|a, b| {
        b.pmi
            .total_cmp(&a.pmi)
            .then(b.support.cmp(&a.support))
            .then_with(|| (&a.from, &a.to).cmp(&(&b.from, &b.to)))
    });
    pairs.truncate(cap);
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(query: &str, tools: &[&str]) -> Example {
        let stems = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        Example {
            query: stems(query),
            tools: tools.iter().map(|t| stems(t)).collect(),
        }
    }

    #[test]
    fn mining_keeps_supported_pairs_the_tools_do_not_already_say() {
        let examples = [
            ex("morn tokyo", &["current time zone"]),
            ex("morn sydney", &["current time zone"]),
            ex("time berlin", &["current time zone"]),
            ex("drive boston", &["direct rout"]),
            ex("drive home", &["direct rout"]),
            ex("morn news", &["web search"]),
        ];
        let pairs = mine(&examples, 2, 300);
        let has = |q: &str, t: &str| pairs.iter().any(|p| p.from == q && p.to == t);
        assert!(has("morn", "time"));
        assert!(has("drive", "rout"));
        // Once only: not enough support.
        assert!(!has("tokyo", "time"));
        // The tools already say it.
        assert!(!has("time", "time"));
        assert!(pairs.iter().all(|p| p.support >= 2 && p.pmi > 0.0));
        // "drive" always meets "rout"; "morn" does two times out of three.
        let pmi = |q: &str, t: &str| pairs.iter().find(|p| p.from == q && p.to == t).map(|p| p.pmi);
        assert!(pmi("drive", "rout") > pmi("morn", "time"));
        assert_eq!(mine(&examples, 2, 1).len(), 1);
    }

    #[test]
    fn the_file_reads_pairs_and_skips_comments() {
        let e = Expansions::parse("# learned\nmorn time\nmorn zone # two\nbad\ndrive rout\n");
        assert_eq!(e.of("morn").collect::<Vec<_>>(), ["time", "zone"]);
        assert_eq!(e.len(), 3);
        assert!(e.of("zebra").next().is_none());
        assert!(!Expansions::learned().is_empty());
    }
}
