//! A request's search plan above the index: tools of the servers that fit
//! the request best as a whole come first, weak matches are left out, the
//! embedding model's nearest tools are fused in (they find what a request
//! says in words no tool uses), and
//! (when asked: the dev half did not gain from it, so it is off by
//! default) a task of several steps ("find X, chart it, save it as a
//! PDF") is searched one step at a time, the steps' results merged in
//! turns. The search tool asks agents to search once per step instead.

use std::collections::HashMap;

use super::index::{Hit, ToolIndex};
use super::words::Words;

/// Which parts of the plan a search uses (the benchmark measures each).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ranking {
    /// Search each step of a multi-step task and merge.
    pub split_steps: bool,
    /// Merge the steps' lists by reciprocal rank fusion instead of in
    /// turns.
    pub fuse: bool,
    /// How much a tool's score follows its server's (0: not at all).
    pub server_weight: f32,
    /// A tool scoring below this share of the best tool's score is a weak
    /// match and left out (0: every match is kept).
    pub min_share: f32,
    /// The weight of the embedding model's ranking fused with the index's
    /// (0: not used).
    pub semantic: f32,
    /// A word in more than this share of the tools is common: a request of
    /// three words or more that no tool meets but one common word of, and
    /// that no tool is near in meaning ([`SEMANTIC_ALONE`]), is one that
    /// nothing fits (1: every request some tool meets fits).
    pub common: f32,
    /// A request naming a service nothing in reach mentions
    /// (`services.rs`) is one nothing fits, unless a tool is within
    /// [`SERVICE_NEAR`] of it in meaning.
    pub services: bool,
}

impl Default for Ranking {
    fn default() -> Self {
        Ranking {
            split_steps: false,
            fuse: false,
            server_weight: SERVER_WEIGHT,
            min_share: MIN_SHARE,
            semantic: SEMANTIC_WEIGHT,
            common: COMMON,
            services: true,
        }
    }
}

/// The share of the best score below which a match is weak: measured on
/// the benchmark's dev half, it leaves out none of the needed tools that
/// the first five results held, and 0.15 of five results (see
/// `docs/benchmarks.md`). 0.3 left out 0.5 % there, and an equally good
/// tool of another server (`add` beside server-everything's `get-sum`) in
/// an end-to-end test: scores of different servers' tools are not
/// comparable enough for a tighter cut.
pub const MIN_SHARE: f32 = 0.2;
/// The weight of the embedding model's ranking against the index's in
/// their reciprocal rank fusion, and how many of its nearest tools it
/// brings: chosen on the dev half (`docs/benchmarks.md`).
const SEMANTIC_WEIGHT: f32 = 0.75;
const SEMANTIC_POOL: usize = 20;
/// The embedding model's weak matches: under this share of its best
/// cosine.
const SEMANTIC_SHARE: f32 = 0.6;
/// When no tool shares a word with the request, the model's nearest tools
/// are an answer only from this cosine up: 97 % of the requests no tool
/// serves (`bench/search/nothing.json`) stay below it.
pub const SEMANTIC_ALONE: f32 = 0.5;
/// A request naming a service no server in reach is, and no tool mentions,
/// still fits a tool this near it in meaning (a tool that does the thing
/// under another name). Measured on tasks for servers not in a pool
/// (`docs/benchmarks.md`).
pub const SERVICE_NEAR: f32 = 0.6;
/// See [`Ranking::common`]: measured on the dev half and on requests no
/// tool serves (`docs/benchmarks.md`).
pub const COMMON: f32 = 0.01;
/// A word in this many tools or fewer is never common.
const COMMON_TOOLS: usize = 5;
/// The exponent of a server's relative score in its tools' scores.
const SERVER_WEIGHT: f32 = 0.25;
/// How many tools of a server make its score, best first, and what each
/// next one counts for.
const SERVER_TOOLS: usize = 3;
const SERVER_DECAY: f32 = 0.5;
/// How many candidates each search takes from the index before reranking.
const POOL: usize = 60;
/// A step needs this many words of meaning to be searched on its own; a
/// shorter one stays with the step before it.
const STEP_WORDS: usize = 2;
/// The most steps a request is split into.
const MAX_STEPS: usize = 6;

/// The best tools for `query`, best first, at most `limit`, among those
/// `accept` lets through.
pub fn search(
    index: &ToolIndex,
    query: &str,
    limit: usize,
    ranking: &Ranking,
    accept: impl Fn(&str, &str) -> bool,
) -> Vec<Hit> {
    let one = |q: &str| {
        let hits = by_server(index.search(q, POOL.max(limit), &accept), ranking.server_weight);
        strong(hits, ranking.min_share)
    };
    let steps = if ranking.split_steps {
        steps(query, index.words())
    } else {
        Vec::new()
    };
    let mut hits = if steps.len() < 2 {
        one(query)
    } else {
        let mut lists = vec![one(query)];
        lists.extend(steps.iter().map(|s| one(s)));
        if ranking.fuse {
            fuse(&lists.iter().map(|l| (l.as_slice(), 1.0)).collect::<Vec<_>>())
        } else {
            interleave(&lists)
        }
    };
    let mut near = Vec::new();
    if ranking.semantic > 0.0 {
        near = strong(index.similar(query, SEMANTIC_POOL, &accept), SEMANTIC_SHARE);
        near.retain(|h| h.score > 0.0);
    }
    let nearest = near.first().map_or(0.0, |h| h.score);
    if ranking.services && nearest < SERVICE_NEAR && super::services::unserved(index, query).is_some() {
        return Vec::new();
    }
    let alone = nearest >= SEMANTIC_ALONE;
    if !alone && only_common_words(index, query, &hits, ranking.common) {
        return Vec::new();
    }
    if !near.is_empty() && (!hits.is_empty() || alone) {
        hits = fuse(&[(&hits, 1.0), (&near, ranking.semantic)]);
    }
    hits.truncate(limit);
    hits
}

/// Whether `hits` meet `query` by chance: it has three words or more, no
/// hit meets two of them, and each word met is in more than `common` of
/// the tools and more than [`COMMON_TOOLS`] ("*start* the dishwasher",
/// "*set* an alarm for 6:30"): among a few tools, every word is rare.
fn only_common_words(index: &ToolIndex, query: &str, hits: &[Hit], common: f32) -> bool {
    let asked = index.asked(query);
    if asked.len() < 3 || hits.iter().any(|h| h.words.count_ones() >= 2) {
        return false;
    }
    let met = hits.iter().fold(0u64, |all, h| all | h.words);
    asked
        .iter()
        .enumerate()
        .filter(|(i, _)| met & (1 << i) != 0)
        .all(|(_, stem)| {
            let with = index.tools_with(stem);
            with > COMMON_TOOLS && with as f32 > common * index.len() as f32
        })
}

/// The hits (best first) that score at least `share` of the best one.
fn strong(mut hits: Vec<Hit>, share: f32) -> Vec<Hit> {
    if let Some(best) = hits.first().map(|h| h.score) {
        hits.retain(|h| h.score >= share * best);
    }
    hits
}

/// Reranks `hits` (best first) by their server's score: the decayed sum
/// of its best tools' scores, relative to the best server's, to the power
/// `weight`.
fn by_server(mut hits: Vec<Hit>, weight: f32) -> Vec<Hit> {
    if weight <= 0.0 || hits.is_empty() {
        return hits;
    }
    let mut servers: HashMap<&str, (f32, usize)> = HashMap::new();
    for h in &hits {
        let (sum, n) = servers.entry(h.server.as_str()).or_default();
        if *n < SERVER_TOOLS {
            *sum += h.score * SERVER_DECAY.powi(*n as i32);
            *n += 1;
        }
    }
    let best = servers.values().map(|(s, _)| *s).fold(f32::MIN_POSITIVE, f32::max);
    let factor: HashMap<String, f32> = servers
        .into_iter()
        .map(|(s, (sum, _))| (s.to_string(), (sum / best).powf(weight)))
        .collect();
    for h in &mut hits {
        h.score *= factor.get(&h.server).copied().unwrap_or(1.0);
    }
    sort(&mut hits);
    hits
}

/// Merges ranked lists fairly: the whole request's first result, then
/// each step's first not yet taken, then the whole request's second, each
/// step's second, and so on. A hit keeps the score of the list it came
/// from.
fn interleave(lists: &[Vec<Hit>]) -> Vec<Hit> {
    let mut out: Vec<Hit> = Vec::new();
    let longest = lists.iter().map(Vec::len).max().unwrap_or(0);
    for rank in 0..longest {
        for list in lists {
            if let Some(h) = list.get(rank) {
                if !out.iter().any(|o| o.server == h.server && o.tool == h.tool) {
                    out.push(h.clone());
                }
            }
        }
    }
    out
}

/// Reciprocal rank fusion: a hit scores the sum of `weight / (RRF_K +
/// rank)` over the lists it is in (ranks from 1).
fn fuse(lists: &[(&[Hit], f32)]) -> Vec<Hit> {
    let mut by_tool: HashMap<(String, String), (f32, u64)> = HashMap::new();
    for (list, weight) in lists {
        for (rank, h) in list.iter().enumerate() {
            let (score, words) = by_tool.entry((h.server.clone(), h.tool.clone())).or_default();
            *score += weight / (RRF_K + rank as f32 + 1.0);
            *words |= h.words;
        }
    }
    let mut hits: Vec<Hit> = by_tool
        .into_iter()
        .map(|((server, tool), (score, words))| Hit {
            server,
            tool,
            score,
            words,
        })
        .collect();
    sort(&mut hits);
    hits
}

/// Reciprocal rank fusion's damping of the first ranks.
const RRF_K: f32 = 10.0;

fn sort(hits: &mut [Hit]) {
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.server.cmp(&b.server))
            .then_with(|| a.tool.cmp(&b.tool))
    });
}

/// The steps of a multi-step task: its sentences, and within them the
/// clauses after a comma, a semicolon or "then"; a clause of fewer than
/// [`STEP_WORDS`] meaningful words joins its neighbour. One step (or
/// none) means the request is searched whole.
pub fn steps(query: &str, words: &Words) -> Vec<String> {
    let mut clauses: Vec<Vec<&str>> = vec![Vec::new()];
    for word in query.split_whitespace() {
        let bare = word.trim_end_matches([',', ';', '.', '!', '?', ':']);
        let lower = bare.to_lowercase();
        if SPLIT_BEFORE.contains(&lower.as_str()) {
            // "…, and then save it": "and" belongs to neither step.
            if let Some(last) = clauses.last_mut() {
                if last.last().is_some_and(|w| w.eq_ignore_ascii_case("and")) {
                    last.pop();
                }
            }
            clauses.push(Vec::new());
            if bare.len() < word.len() {
                clauses.push(Vec::new());
            }
            continue;
        }
        if let Some(last) = clauses.last_mut() {
            if !bare.is_empty() {
                last.push(bare);
            }
        }
        if bare.len() < word.len() {
            clauses.push(Vec::new());
        }
    }
    let mut steps: Vec<String> = Vec::new();
    let mut short = String::new();
    for clause in clauses.into_iter().filter(|c| !c.is_empty()) {
        let text = format!("{short}{}", clause.join(" "));
        if words.stems(&text).len() < STEP_WORDS {
            short = format!("{text} ");
            continue;
        }
        short.clear();
        steps.push(text);
    }
    if !short.is_empty() {
        match steps.last_mut() {
            Some(last) => last.push_str(&format!(" {}", short.trim_end())),
            None => steps.push(short.trim_end().to_string()),
        }
    }
    steps.truncate(MAX_STEPS);
    steps
}

/// Words that start a new step.
const SPLIT_BEFORE: &[&str] = &["then", "afterwards", "finally"];

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
