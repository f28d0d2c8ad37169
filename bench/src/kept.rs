//! `mcpool-bench-kept`: what keeping the fields rmcp does not model costs
//! per message (crates/mcpool-core/src/kept/).
//!
//! Every message a server sends passes `kept::fold_text` where it comes in
//! (most pass on a substring search; a result is parsed to look for
//! unknown fields), and every reply an agent gets passes
//! `kept::unfold_body` (one substring search unless something was folded).
//! This times both, in process, on messages of the sizes servers send,
//! beside the one parse of the same bytes into `serde_json::Value` that
//! the pool does anyway, so the cost reads as a share of work already
//! done.
//!
//! Build with `cargo build --release -p mcpool-bench`, then run
//! `target/release/mcpool-bench-kept --write docs/benchmarks.md`.

#[allow(dead_code)]
mod stats;
#[allow(dead_code)]
mod sys;

use std::fmt::Write as _;
use std::time::Instant;

use clap::Parser;
use mcpool_core::kept;
use serde_json::{json, Value};

use stats::Summary;

const SECTION: &str = "## Kept fields: what they cost per message";

#[derive(Debug, Parser)]
#[command(about = "Times folding and unfolding the fields rmcp does not model, per message")]
struct Cli {
    #[command(flatten)]
    out: sys::Out,
    /// Timed passes per message (after as many warm-up ones).
    #[arg(long, default_value_t = 400)]
    runs: usize,
}

/// A tool as servers list them: a schema of a few typed properties.
fn tool(n: usize, execution: bool) -> Value {
    let mut tool = json!({
        "name": format!("tool_{n}"),
        "description": "Searches the issues of a repository by a query, newest first, with labels and state.",
        "inputSchema": {"type": "object", "properties": {
            "repo": {"type": "string", "description": "owner/name"},
            "query": {"type": "string"},
            "state": {"type": "string", "enum": ["open", "closed", "all"]},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100},
        }, "required": ["repo", "query"]},
        "annotations": {"readOnlyHint": true},
    });
    if execution {
        tool["execution"] = json!({"taskSupport": "optional"});
    }
    tool
}

/// The messages timed, each with what it stands for.
fn messages() -> anyhow::Result<Vec<(&'static str, Vec<u8>)>> {
    let list = |execution: bool| {
        let tools: Vec<Value> = (0..200).map(|n| tool(n, execution)).collect();
        json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": tools}})
    };
    let call = |text: String| json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": text}], "isError": false}});
    let cases = [
        (
            "a progress notification",
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": 3, "progress": 1, "total": 10}}),
        ),
        ("a call's result, 12 bytes of text", call("hello, world".into())),
        ("a call's result, 1 MiB of text", call("x".repeat(1 << 20))),
        ("`tools/list`, 200 tools, nothing unknown", list(false)),
        ("`tools/list`, 200 tools, each with `execution`", list(true)),
        (
            "a call's result with an embedded resource's vendor field",
            json!({"jsonrpc": "2.0", "id": 8, "result": {"content": [
                {"type": "text", "text": "done"},
                {"type": "resource", "resource": {"uri": "note://a", "text": "a note", "x-rev": 7},
                    "annotations": {"priority": 0.5}},
            ]}}),
        ),
    ];
    cases
        .into_iter()
        .map(|(what, message)| Ok((what, serde_json::to_vec(&message)?)))
        .collect()
}

/// µs per call of `f` on `bytes`, `runs` times after as many warm-up calls.
fn time(runs: usize, bytes: &[u8], f: impl Fn(&[u8]) -> usize) -> Vec<f64> {
    let mut sink = 0usize;
    for _ in 0..runs {
        sink = sink.wrapping_add(f(bytes));
    }
    let samples = (0..runs)
        .map(|_| {
            let started = Instant::now();
            sink = sink.wrapping_add(f(bytes));
            started.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    std::hint::black_box(sink);
    samples
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let load_before = sys::loadavg();
    let mut out = format!("{SECTION}\n\n");
    let _ = writeln!(out, "{}\n", sys::generated_by("mcpool-bench-kept", &load_before));
    let _ = writeln!(
        out,
        "In process, {} timed passes per message after as many warm-up ones; µs per message, median (p10–p90). \
         *fold* is `kept::fold_text` on the server's bytes as they come in, *unfold* is `kept::unfold_body` on \
         the reply as an agent gets it (after rmcp wrote it out again), *parse* is `serde_json::from_slice::<Value>` \
         of the same bytes, for scale: the pool parses every message at least once anyway.\n",
        cli.runs
    );
    let _ = writeln!(
        out,
        "| message | bytes | fold µs | unfold µs | parse µs | fold / parse |"
    );
    let _ = writeln!(out, "| --- | ---: | ---: | ---: | ---: | ---: |");
    for (what, bytes) in messages()? {
        let folded = kept::fold_text(&bytes).unwrap_or_else(|| bytes.clone());
        // The reply as the agent gets it: what rmcp writes out of the folded message.
        let typed: rmcp::model::ServerJsonRpcMessage = serde_json::from_slice(&folded)?;
        let reply = serde_json::to_vec(&typed)?;
        let fold = Summary::of(&time(cli.runs, &bytes, |b| kept::fold_text(b).map_or(0, |v| v.len())));
        let unfold = Summary::of(&time(cli.runs, &reply, |b| kept::unfold_body(b).map_or(0, |v| v.len())));
        let parse = Summary::of(&time(cli.runs, &bytes, |b| {
            serde_json::from_slice::<Value>(b).map_or(0, |v| v.is_object() as usize)
        }));
        let _ = writeln!(
            out,
            "| {what} | {} | {:.1} ({:.1}–{:.1}) | {:.1} ({:.1}–{:.1}) | {:.1} ({:.1}–{:.1}) | {:.2} |",
            bytes.len(),
            fold.median,
            fold.p10,
            fold.p90,
            unfold.median,
            unfold.p10,
            unfold.p90,
            parse.median,
            parse.p10,
            parse.p90,
            fold.median / parse.median,
        );
    }
    sys::publish(cli.out.write.as_deref(), SECTION, &out)
}
