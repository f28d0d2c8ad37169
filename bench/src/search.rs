//! `mcpool-bench-search`: how well and how fast tool search finds tools.
//!
//! * Quality on the evaluation set in `bench/search/` (real servers' tool
//!   definitions, hand-written queries split into dev and test):
//!   recall@1, @5, @10 and MRR@10 of mcpool's ranking beside a plain BM25
//!   baseline (the `bm25` crate's default English tokenizer over each
//!   tool's name and description, one field).
//! * The size of a 5-result `mcpool__search_tools` answer, and of the
//!   listing in each mode, in estimated tokens.
//! * Search latency in the process (the index alone) at the real catalog
//!   and at about 5,000 tools (the catalog nine times over).
//! * Through the endpoint: `mcpool serve` with one mcpool-faulty server per
//!   catalog server serving its recorded tools (`--raw-tools`), then
//!   `mcpool__search_tools` calls and full `tools/list` by an rmcp agent,
//!   at the catalog and at about 5,000 tools.
//!
//! `recall@k` of a query is the share of its relevant tools in the first k
//! results, out of at most k (so recall@1 is 1 when the first result is
//! relevant); `MRR@10` is 1/rank of the first relevant result (0 past 10).
//!
//! Build with `cargo build --release --workspace --bins`, then run
//! `target/release/mcpool-bench-search --write docs/benchmarks.md`.

mod heap;
mod search_eval;
mod search_learn;
mod search_nothing;
mod search_quality;
mod search_tune;
mod serve;
#[allow(dead_code)]
mod stats;
#[allow(dead_code)]
mod sys;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Parser;
use mcpool_core::search::compact::listing_tokens;
use mcpool_core::search::meta::{self, ServerSummary};
use mcpool_core::search::{plan, Ranking};
use mcpool_tests::repo_root;
use rmcp::model::CallToolRequestParams;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use search_eval::{index_of, tools_of};
use search_quality::{publish_quality, quality};
use stats::Summary;

#[global_allocator]
static HEAP: heap::Counting = heap::Counting;

const SECTION: &str = "## Tool search";
/// `--quality` alone writes its own section: the evaluation sets and the
/// ranking steps.
const QUALITY_SECTION: &str = "## Ranking steps of tool search";
const STEP_LIMIT: Duration = Duration::from_secs(120);
/// Copies of the catalog for the large case (570 tools × 9 ≈ 5,000).
const COPIES: usize = 9;

#[derive(Debug, Parser)]
#[command(about = "Benchmarks tool search: recall and MRR on the evaluation set, answer and listing sizes, latency")]
struct Cli {
    /// Timed searches per query in the process.
    #[arg(long, default_value_t = 20)]
    repeats: usize,
    /// Timed `tools/list` calls through the endpoint per case.
    #[arg(long, default_value_t = 30)]
    lists: usize,
    /// Skip the cases through `mcpool serve`.
    #[arg(long)]
    no_endpoint: bool,
    /// Only the quality table (no latency, no endpoint): for tuning.
    #[arg(long)]
    quality: bool,
    /// Search the weights for the best dev score (dev half only) and print them.
    #[arg(long)]
    tune: bool,
    /// Learn term expansions from the dev half and write them to the
    /// core's `search/expansions.txt`.
    #[arg(long)]
    learn_expansions: bool,
    /// Write every query's first 60 results of the index (the embedding
    /// model left out) with their scores, as JSON lines: for trying other
    /// rankings outside Rust.
    #[arg(long)]
    dump: Option<std::path::PathBuf>,
    /// Write what the index and the embedding model see of each request
    /// in whole and small pools, as JSON lines: for trying "nothing fits"
    /// rules outside Rust.
    #[arg(long)]
    nothing_dump: Option<std::path::PathBuf>,
    #[command(flatten)]
    out: sys::Out,
}

#[derive(Debug, Deserialize)]
struct Catalog {
    servers: Vec<CatalogServer>,
}

#[derive(Debug, Deserialize)]
struct CatalogServer {
    name: String,
    package: String,
    version: String,
    instructions: Option<String>,
    tools: Vec<Value>,
}

#[derive(Debug, Deserialize)]
struct Queries {
    queries: Vec<Query>,
}

#[derive(Debug, Deserialize)]
struct Query {
    query: String,
    /// The tools the task needs; `a/x|b/y` is one needed tool that either
    /// of them is.
    relevant: Vec<String>,
    split: String,
}

/// Estimated tokens of the `all` and `search` listings of `catalog` (no pins).
fn listing_sizes(catalog: &Catalog) -> (usize, usize, usize) {
    let summaries: Vec<ServerSummary> = catalog
        .servers
        .iter()
        .map(|s| {
            let tools = tools_of(s);
            let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
            ServerSummary {
                name: s.name.clone(),
                summary: meta::summarize(s.instructions.as_deref(), &names),
                tools: tools.len(),
            }
        })
        .collect();
    let meta_tools = vec![meta::search_tool(&summaries), meta::call_tool()];
    let mut all = meta_tools.clone();
    for s in &catalog.servers {
        for mut t in tools_of(s) {
            t.name = mcpool_core::names::qualified(&s.name, &t.name).into();
            all.push(t);
        }
    }
    (all.len(), listing_tokens(&all), listing_tokens(&meta_tools))
}

/// The index of `copies` of the catalog, its bytes on the heap, and search
/// latencies in µs.
/// What searching in the process measured: tools, the index's heap bytes,
/// the milliseconds building it took, and each search's microseconds.
struct InProcess {
    tools: usize,
    bytes: usize,
    build_ms: f64,
    us: Vec<f64>,
}

fn in_process_latency(catalog: &Catalog, queries: &Queries, copies: usize, repeats: usize) -> InProcess {
    let before = heap::live();
    let t = Instant::now();
    let index = index_of(catalog, copies);
    let build_ms = t.elapsed().as_secs_f64() * 1000.0;
    let bytes = heap::live().saturating_sub(before);
    let mut us = Vec::new();
    for _ in 0..repeats {
        for q in &queries.queries {
            let t = Instant::now();
            std::hint::black_box(plan::search(&index, &q.query, 5, &Ranking::default(), |_, _| true));
            us.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    InProcess {
        tools: index.len(),
        bytes,
        build_ms,
        us,
    }
}

/// What the endpoint cases measured.
#[derive(Default)]
struct Endpoint {
    tools: usize,
    search_ms: Vec<f64>,
    list_all_ms: Vec<f64>,
    list_search_ms: Vec<f64>,
}

async fn through_endpoint(
    cli: &Cli,
    mcpool: &Path,
    faulty: &Path,
    catalog: &Catalog,
    queries: &Queries,
    copies: usize,
    dir: &Path,
) -> anyhow::Result<Endpoint> {
    std::fs::create_dir_all(dir)?;
    let mut servers = Map::new();
    let mut expected = 0;
    let mut add = |name: String, file: PathBuf, tools: Vec<Value>| -> anyhow::Result<()> {
        let names: Vec<Value> = tools.iter().filter_map(|t| t.get("name").cloned()).collect();
        expected += names.len();
        std::fs::write(&file, serde_json::to_vec(&tools)?)?;
        servers.insert(
            name,
            json!({"command": faulty, "args": ["stdio", "--raw-tools", file], "enabledTools": names}),
        );
        Ok(())
    };
    if copies == 1 {
        // One server per catalog server, as a user would have them.
        for (i, s) in catalog.servers.iter().enumerate() {
            add(s.name.clone(), dir.join(format!("tools-{i}.json")), s.tools.clone())?;
        }
    } else {
        // Many tools on few processes: each copy of the catalog is one
        // server whose tool names carry the catalog server's.
        let all: Vec<Value> = catalog
            .servers
            .iter()
            .flat_map(|s| {
                s.tools.iter().map(move |t| {
                    let mut t = t.clone();
                    let name = t.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
                    t["name"] = Value::String(format!("{}_{name}", s.name));
                    t
                })
            })
            .collect();
        for copy in 0..copies {
            add(
                format!("catalog{copy}"),
                dir.join(format!("tools-{copy}.json")),
                all.clone(),
            )?;
        }
    }
    let config = dir.join("config.json");
    std::fs::write(&config, serde_json::to_vec(&json!({ "mcpServers": servers }))?)?;
    let token = format!("bench-search-{}", std::process::id());
    let mut child = serve::spawn_serve(mcpool, &config, dir, &token, &[])?;
    let pid = child.id().context("mcpool has no pid")?;
    let result = async {
        let line = mcpool_tests::first_line(&mut child, STEP_LIMIT).await?;
        let port = mcpool_tests::listening_port(&line)?;
        let url = |path: &str| format!("http://127.0.0.1:{port}{path}");
        serve::wait_connected(port, &token, servers.len(), STEP_LIMIT).await?;
        let mut out = Endpoint::default();
        let all = mcpool_tests::keep_alive_agent(&url("/mcp?toolListing=all"), Some(&token), STEP_LIMIT).await?;
        let search = mcpool_tests::keep_alive_agent(&url("/mcp?toolListing=search"), Some(&token), STEP_LIMIT).await?;
        for i in 0..cli.lists + 3 {
            let t = Instant::now();
            let n = serve::list_all(all.peer(), STEP_LIMIT).await?;
            let all_ms = t.elapsed().as_secs_f64() * 1000.0;
            let t = Instant::now();
            serve::list_all(search.peer(), STEP_LIMIT).await?;
            let search_ms = t.elapsed().as_secs_f64() * 1000.0;
            if i >= 3 {
                out.list_all_ms.push(all_ms);
                out.list_search_ms.push(search_ms);
            }
            out.tools = n;
        }
        if out.tools < expected {
            bail!("tools/list held {} tools, not {expected}", out.tools);
        }
        for q in &queries.queries {
            let mut args = Map::new();
            args.insert("query".into(), Value::String(q.query.clone()));
            let t = Instant::now();
            let call = search
                .peer()
                .call_tool(CallToolRequestParams::new("mcpool__search_tools").with_arguments(args));
            let r = tokio::time::timeout(STEP_LIMIT, call).await??;
            out.search_ms.push(t.elapsed().as_secs_f64() * 1000.0);
            if r.is_error == Some(true) {
                bail!("search failed: {:?}", r.content);
            }
        }
        for a in [all, search] {
            let _ = tokio::time::timeout(Duration::from_secs(5), a.cancel()).await;
        }
        Ok(out)
    }
    .await;
    serve::stop(&mut child, pid, Duration::from_secs(20)).await;
    result
}

fn row(out: &mut String, what: &str, s: &Summary, unit: &str) {
    let _ = writeln!(
        out,
        "| {what} | {:.3} {unit} | {:.3}–{:.3} | {:.3} | {:.3}–{:.3} |",
        s.median, s.p10, s.p90, s.p99, s.min, s.max
    );
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let dir = repo_root().join("bench/search");
    let sets = search_eval::load_sets(&dir)?;
    if cli.tune {
        search_tune::tune(&sets, mcpool_core::search::Weights::default(), Ranking::default());
        return Ok(());
    }
    if cli.learn_expansions {
        let file = repo_root().join("crates/mcpool-core/src/search/expansions.txt");
        std::fs::write(&file, search_learn::learn(&sets)).with_context(|| file.display().to_string())?;
        return Ok(());
    }
    if let Some(file) = &cli.nothing_dump {
        std::fs::write(file, search_nothing::dump(&sets, &search_eval::load_nothing(&dir)?))?;
        return Ok(());
    }
    if let Some(file) = &cli.dump {
        let mut out = String::new();
        let ranking = Ranking {
            min_share: 0.0,
            semantic: 0.0,
            ..Ranking::default()
        };
        for set in &sets {
            let index = index_of(&set.catalog, 1);
            for query in &set.queries.queries {
                let hits = mcpool_core::search::plan::search(&index, &query.query, 60, &ranking, |_, _| true);
                let ranked: Vec<_> = hits
                    .iter()
                    .map(|h| json!([format!("{}/{}", h.server, h.tool), h.score]))
                    .collect();
                out.push_str(&json!({"set": set.name, "query": query.query, "split": query.split, "relevant": query.relevant, "ranked": ranked}).to_string());
                out.push('\n');
            }
        }
        std::fs::write(file, out)?;
        return Ok(());
    }
    let load_before = sys::loadavg();
    // The embedding model's tables, read once per process (before any
    // index is built, so that the index's own figures leave them out).
    let before = heap::live();
    std::hint::black_box(mcpool_core::search::embedding::embed("load"));
    let model_bytes = heap::live().saturating_sub(before);
    let q = quality(&sets, &search_eval::load_nothing(&dir)?);
    if cli.quality {
        return publish_quality(&cli, &sets, &q, &load_before);
    }
    let (catalog, queries) = (&sets[0].catalog, &sets[0].queries);
    let (all_count, all_tokens, search_tokens) = listing_sizes(catalog);
    let small = in_process_latency(catalog, queries, 1, cli.repeats);
    let large = in_process_latency(catalog, queries, COPIES, cli.repeats.div_ceil(4));
    let (small_n, small_bytes, small_us) = (small.tools, small.bytes, &small.us);
    let (large_n, large_bytes, large_us) = (large.tools, large.bytes, &large.us);
    let mut endpoints = Vec::new();
    if !cli.no_endpoint {
        let (bin_dir, [mcpool, faulty]) = sys::bench_bins(cli.out.bin_dir.as_deref(), ["mcpool", "mcpool-faulty"])?;
        let tmp = bin_dir.join("bench-tmp").join(format!("search-{}", std::process::id()));
        for copies in [1, COPIES] {
            let e = through_endpoint(
                &cli,
                &mcpool,
                &faulty,
                catalog,
                queries,
                copies,
                &tmp.join(format!("c{copies}")),
            )
            .await;
            endpoints.push(e?);
        }
        let _ = std::fs::remove_dir_all(&tmp);
    }

    let mut out = String::new();
    let _ = writeln!(out, "{SECTION}\n");
    let _ = writeln!(out, "{}\n", sys::generated_by("mcpool-bench-search", &load_before));
    let _ = writeln!(
        out,
        "The quality of the ranking (recall and MRR on the evaluation sets, step by step) is in \"{}\" below, \
         which `--quality` writes alone. The latency rows search the hand-written set's catalog with its queries.\n",
        &QUALITY_SECTION[3..]
    );
    let answer = Summary::of(&q.answer_tokens);
    let _ = writeln!(
        out,
        "\n| size (estimated tokens: JSON bytes / 4) | value |\n| --- | ---: |"
    );
    let _ = writeln!(
        out,
        "| a 5-result `mcpool__search_tools` answer (text + `structuredContent`), median | {:.0} |",
        answer.median
    );
    let _ = writeln!(out, "| the same, p90 / max | {:.0} / {:.0} |", answer.p90, answer.max);
    let _ = writeln!(out, "| `tools/list` in `all` mode ({all_count} tools) | {all_tokens} |");
    let _ = writeln!(
        out,
        "| `tools/list` in `search` mode (the 2 meta-tools, no pins) | {search_tokens} |"
    );
    let _ = writeln!(
        out,
        "\nThe index's memory (bytes live on the heap after building it, its word lists, synonyms and each tool's \
         vector included): {:.1} MiB at {small_n} tools, {:.1} MiB at {large_n}. Building it from nothing took \
         {:.0} ms and {:.0} ms (each tool's words and vector; later changes redo only the tools that changed). \
         The embedding model's tokenizer tables, read once per process: {:.1} MiB on the heap; its token vectors \
         stay in the binary's read-only data ({:.1} MB).",
        small_bytes as f64 / 1048576.0,
        large_bytes as f64 / 1048576.0,
        small.build_ms,
        large.build_ms,
        model_bytes as f64 / 1048576.0,
        mcpool_core::search::embedding::vector_bytes() as f64 / 1e6,
    );
    let _ = writeln!(
        out,
        "\n| latency | median | p10–p90 | p99 | min–max |\n| --- | ---: | ---: | ---: | ---: |"
    );
    row(
        &mut out,
        &format!("search in the process, {small_n} tools"),
        &Summary::of(small_us),
        "µs",
    );
    row(
        &mut out,
        &format!("search in the process, {large_n} tools"),
        &Summary::of(large_us),
        "µs",
    );
    for e in &endpoints {
        row(
            &mut out,
            &format!("`mcpool__search_tools` through `/mcp`, {} tools", e.tools),
            &Summary::of(&e.search_ms),
            "ms",
        );
        row(
            &mut out,
            &format!("`tools/list`, `all`, {} tools", e.tools),
            &Summary::of(&e.list_all_ms),
            "ms",
        );
        row(
            &mut out,
            &format!("`tools/list`, `search`, {} tools behind it", e.tools),
            &Summary::of(&e.list_search_ms),
            "ms",
        );
    }
    sys::publish(cli.out.write.as_deref(), SECTION, &out)?;
    publish_quality(&cli, &sets, &q, &load_before)
}
