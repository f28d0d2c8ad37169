//! The search benchmark's quality part: the ranking steps on both
//! evaluation sets, the weak-match and nothing-fits tables, the answer
//! sizes and the dev misses, as the "Ranking steps of tool search" section.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use mcpool_core::search::meta::{self, Delivery, Found};
use mcpool_core::search::{plan, Ranking};
use rmcp::model::Tool;

use super::search_eval::{self, index_of, tools_of, Set};
use super::{sys, Catalog, Cli, QUALITY_SECTION};

pub struct Quality {
    steps: Vec<(String, search_eval::Table)>,
    thresholds: Vec<(f32, f64, f64)>,
    nothing: Vec<(f32, f64, f64)>,
    nothing_count: usize,
    pools: Vec<super::search_nothing::Row>,
    pub answer_tokens: Vec<f64>,
    misses: Vec<(String, String, Vec<String>)>,
}

pub fn quality(sets: &[Set], nothing: &[String]) -> Quality {
    let mut q = Quality {
        steps: search_eval::measure_steps(sets),
        thresholds: search_eval::thresholds(sets, &[0.2, 0.25, 0.3, 0.4, 0.5]),
        nothing: search_eval::nothing_fits(sets, nothing, &[1.0, 0.05, 0.02, 0.01, 0.0]),
        nothing_count: nothing.len(),
        pools: super::search_nothing::table(sets, nothing),
        answer_tokens: Vec::new(),
        misses: Vec::new(),
    };
    let ranking = Ranking::default();
    for set in sets {
        let index = index_of(&set.catalog, 1);
        let by_key: BTreeMap<String, Tool> = set
            .catalog
            .servers
            .iter()
            .flat_map(|s| {
                tools_of(s)
                    .into_iter()
                    .map(move |t| (format!("{}/{}", s.name, t.name), t))
            })
            .collect();
        for query in &set.queries.queries {
            let ours = search_eval::rank(&index, &query.query, 10, &ranking);
            let hit = |r: &String| query.relevant.iter().any(|g| g.split('|').any(|x| x == r));
            if query.split == "dev" && !ours.iter().take(5).any(hit) {
                q.misses.push((
                    query.query.clone(),
                    query.relevant.join(", "),
                    ours.iter().take(3).cloned().collect(),
                ));
            }
            let found: Vec<Found> = ours
                .iter()
                .take(5)
                .filter_map(|key| {
                    let (server, name) = key.split_once('/')?;
                    let tool = by_key.get(key)?;
                    Some(Found::new(
                        mcpool_core::names::qualified(server, name),
                        server.to_string(),
                        "connected".into(),
                        tool,
                    ))
                })
                .collect();
            let answer = meta::answer(&query.query, &found, 5, Delivery::Listed, None);
            let bytes = serde_json::to_vec(&answer).map(|v| v.len()).unwrap_or(0);
            q.answer_tokens
                .push(mcpool_core::search::compact::tokens_of_bytes(bytes) as f64);
        }
    }
    q
}

/// The evaluation sets and the measured ranking steps.
fn quality_text(out: &mut String, sets: &[Set], q: &Quality) {
    let (hand, live) = (&sets[0], &sets[1]);
    let tools = |c: &Catalog| c.servers.iter().map(|s| tools_of(s).len()).sum::<usize>();
    let _ = writeln!(
        out,
        "The evaluation sets are in `bench/search/` (see its README). The hand-written set: the `tools/list` of {} \
         real servers from npm and PyPI at pinned versions ({} tools) and {} hand-written task queries. The \
         LiveMCPBench set: the tool definitions of its {} servers ({} tools) and its {} annotated tasks, most of \
         several steps (Apache-2.0, github.com/icip-cas/LiveMCPBench). Each query lists the tools that do it; \
         each is in `dev` (used to tune the ranking) or `test` (only reported). recall@k is the share of a \
         query's needed tools among the first k results (out of at most k), MRR@10 the mean of 1/rank of the \
         first relevant one. The baseline is plain BM25: the `bm25` crate's search engine with its default \
         English tokenizer (stems, stop words) over each tool's name and description. Each set is searched \
         over its own catalog; `both` pools their queries.\n",
        hand.catalog.servers.len(),
        tools(&hand.catalog),
        hand.queries.queries.len(),
        live.catalog.servers.len(),
        tools(&live.catalog),
        live.queries.queries.len(),
    );
    let packages: Vec<String> = hand
        .catalog
        .servers
        .iter()
        .map(|s| format!("`{}@{}`", s.package, s.version))
        .collect();
    let _ = writeln!(out, "Servers of the hand-written set: {}.\n", packages.join(", "));
    let _ = writeln!(out, "```sh\ncargo build --release --workspace --bins\ntarget/release/mcpool-bench-search --write docs/benchmarks.md\n```\n");
    let _ = writeln!(
        out,
        "recall@5 / MRR@10. Each row not marked (tried) adds one thing to the kept row above it; a (tried) row \
         is a variant measured and not kept, because the dev half did not gain from it. The learned expansions \
         were mined from the dev queries themselves, so their dev numbers are in sample; their support, cap and \
         weight were chosen by two-fold cross-validation inside dev (`--learn-expansions`), test is the fair \
         measure:\n\n\
         | ranking | hand-written dev | hand-written test | LiveMCPBench dev | LiveMCPBench test | both dev | both test |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for (label, table) in &q.steps {
        let cell = |set: &str, split: &str| {
            table
                .get(&(set.to_string(), split.to_string()))
                .map_or("–".to_string(), |s| format!("{:.3} / {:.3}", s.r5, s.mrr10))
        };
        let _ = writeln!(
            out,
            "| {label} | {} | {} | {} | {} | {} | {} |",
            cell(hand.name, "dev"),
            cell(hand.name, "test"),
            cell(live.name, "dev"),
            cell(live.name, "test"),
            cell("all", "dev"),
            cell("all", "test"),
        );
    }
    if let Some((_, shipped)) = q.steps.last() {
        let _ = writeln!(
            out,
            "\nThe shipped ranking in full:\n\n| set, split | queries | recall@1 | recall@5 | recall@10 | MRR@10 |\n| --- | ---: | ---: | ---: | ---: | ---: |"
        );
        let rows: Vec<String> = shipped
            .iter()
            .map(|((set, split), s)| {
                let set = if set == "all" { "both" } else { set };
                format!(
                    "| {set}, {split} | {} | {:.3} | {:.3} | {:.3} | {:.3} |",
                    s.n, s.r1, s.r5, s.r10, s.mrr10
                )
            })
            .collect();
        let _ = writeln!(out, "{}", rows.join("\n"));
    }
    let _ = writeln!(
        out,
        "\nWeak matches left out (a tool under a share of the best tool's score), on the dev half, 5 results \
         asked; shipped: {}:\n\n| share of the best score | needed tools in the first 5 left out | results kept per search |\n| ---: | ---: | ---: |",
        plan::MIN_SHARE
    );
    for (share, dropped, kept) in &q.thresholds {
        let _ = writeln!(out, "| {share} | {:.1} % | {kept:.2} |", dropped * 100.0);
    }
    let _ = writeln!(
        out,
        "\nNothing fits (the answer says so) a request of three words or more that no tool meets two words of, \
         when each word met is common (in more than a share of the tools, and more than 5 of them) and no tool is within cosine {} of it \
         in meaning (with no word met at all, the cosine alone decides). Measured on the dev half and on the {} \
         requests of `bench/search/nothing.json` that no tool serves (each searched over both catalogs); \
         shipped: {}:\n\n\
         | a word is common above this share of the tools | dev queries answered with nothing (of those with a needed tool in the first 5) | requests no tool serves answered with nothing |\n\
         | ---: | ---: | ---: |",
        plan::SEMANTIC_ALONE,
        q.nothing_count,
        plan::COMMON
    );
    for (t, lost, caught) in &q.nothing {
        let _ = writeln!(out, "| {t} | {:.1} % | {:.1} % |", lost * 100.0, caught * 100.0);
    }
    let _ = writeln!(
        out,
        "\nThe rules over whole catalogs and small pools (3, 6 and 12 servers of a set, 8 draws each, by a fixed \
         generator): dev and test queries whose needed tools the pool has and that the first 5 results find (answered \
         with nothing: lost), the {} requests of `nothing.json`, and, in small pools, the queries for servers the pool \
         lacks (\"reply in that Slack thread\" in a pool without Slack; some of these another server serves in other \
         words, so not all should be answered with nothing). A named service is a product of \
         `crates/mcpool-core/src/search/services.txt` written with a capital that no server in reach is and no tool \
         mentions, with no tool within cosine {} of the request:\n\n\
         | rule | feasible lost, whole | feasible lost, small | `nothing.json` caught, whole | `nothing.json` caught, small | for servers the pool lacks, caught |\n\
         | --- | ---: | ---: | ---: | ---: | ---: |",
        q.nothing_count,
        plan::SERVICE_NEAR
    );
    for (rule, cells) in &q.pools {
        let cell = |(n, of): (usize, usize)| format!("{n} of {of} ({:.1} %)", n as f64 * 100.0 / of.max(1) as f64);
        let _ = writeln!(
            out,
            "| {rule} | {} | {} | {} | {} | {} |",
            cell(cells[0]),
            cell(cells[1]),
            cell(cells[2]),
            cell(cells[3]),
            cell(cells[4])
        );
    }
    let _ = writeln!(out);
}

/// Prints the ranking-steps section (and writes it with `--write`).
pub fn publish_quality(cli: &Cli, sets: &[Set], q: &Quality, load_before: &str) -> anyhow::Result<()> {
    let mut out = format!(
        "{QUALITY_SECTION}\n\n{}\n\n",
        sys::generated_by("mcpool-bench-search --quality", load_before)
    );
    quality_text(&mut out, sets, q);
    misses_text(&mut out, q);
    sys::publish(cli.out.write.as_deref(), QUALITY_SECTION, &out)
}

fn misses_text(out: &mut String, q: &Quality) {
    if !q.misses.is_empty() {
        let _ = writeln!(
            out,
            "\nDev queries with no needed tool in the first 5 ({}), the first 12:\n",
            q.misses.len()
        );
        for (query, relevant, got) in q.misses.iter().take(12) {
            let _ = writeln!(out, "- \"{query}\": wanted {relevant}; got {}", got.join(", "));
        }
    }
}
