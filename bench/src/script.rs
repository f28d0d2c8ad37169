//! `mcpool-bench-script`: what code mode (`mcpool__run_script`) costs and
//! saves.
//!
//! * the engine's start per run (a QuickJS runtime made, `return 1` run,
//!   the runtime dropped), in process, and its heap at the end of a run;
//! * a tool call made inside a script against a direct `tools/call`,
//!   through a release `mcpool serve` with the fault server;
//! * the bytes an agent sends and receives for three multi-step tasks over
//!   real servers (the official server-filesystem and the fault server):
//!   every tool listed and called one by one, a search listing with a
//!   search per step and the calls, and a search listing with one script.
//!
//! Build with `cargo build --release --workspace --bins`, then run
//! `target/release/mcpool-bench-script --write docs/benchmarks.md`, which
//! replaces the section of its own in that file.

#[allow(dead_code)]
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
use mcpool_core::script::{self, Answer, Limits};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{Peer, RoleClient, RunningService};
use serde_json::{json, Map, Value};
use stats::Summary;

const SECTION: &str = "## Code mode: what a script costs and saves";
const STEP_LIMIT: Duration = Duration::from_secs(60);

#[derive(Debug, Parser)]
#[command(about = "Benchmarks code mode: engine start, a call inside a script, an agent's bytes per task")]
struct Cli {
    /// Engine starts measured (in process).
    #[arg(long, default_value_t = 300)]
    starts: usize,
    /// Direct calls measured, and script runs of `--per-run` calls each.
    #[arg(long, default_value_t = 500)]
    calls: usize,
    #[arg(long, default_value_t = 20)]
    runs: usize,
    #[arg(long, default_value_t = 50)]
    per_run: usize,
    #[command(flatten)]
    out: sys::Out,
}

type Client = RunningService<RoleClient, ()>;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let (bin_dir, [mcpool, faulty]) = sys::bench_bins(cli.out.bin_dir.as_deref(), ["mcpool", "mcpool-faulty"])?;
    let tmp = sys::scratch_dir(&bin_dir, "script")?;
    let load_before = sys::loadavg();
    let engine = engine_starts(cli.starts).await?;
    let result = through_mcpool(&cli, &mcpool, &faulty, &tmp).await;
    let _ = std::fs::remove_dir_all(&tmp);
    let (calls, tasks) = result?;
    let section = report(&cli, &engine, &calls, &tasks, &load_before);
    sys::publish(cli.out.write.as_deref(), SECTION, &section)
}

struct Engine {
    start_ms: Vec<f64>,
    empty_bytes: u64,
    array_bytes: u64,
}

/// Runs of `return 1` with 60 tool names, each a runtime of its own.
async fn engine_starts(n: usize) -> anyhow::Result<Engine> {
    let names: Vec<String> = (0..60).map(|i| format!("server{}__tool_{i}", i % 6)).collect();
    let never = |_: String, _: Map<String, Value>| async { Answer::Value(Value::Null) };
    let mut start_ms = Vec::with_capacity(n);
    let mut empty_bytes = 0;
    for _ in 0..n {
        let t = Instant::now();
        let report = script::run("return 1;".into(), names.clone(), Limits::default(), never).await;
        start_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        if report.outcome != Ok(json!(1)) {
            bail!("an empty run failed: {:?}", report.outcome);
        }
        empty_bytes = report.memory;
    }
    // Kept reachable, so the heap at the run's end still holds it.
    let code = "const a = []; for (let i = 0; i < 10000; i++) a.push({i, s: 'item ' + i}); globalThis.kept = a; return a.length;";
    let report = script::run(code.into(), names, Limits::default(), never).await;
    if report.outcome != Ok(json!(10000)) {
        bail!("the array run failed: {:?}", report.outcome);
    }
    Ok(Engine {
        start_ms,
        empty_bytes,
        array_bytes: report.memory,
    })
}

struct Calls {
    direct_ms: Vec<f64>,
    /// Per call inside a script: (run − empty run) / calls.
    inner_ms: Vec<f64>,
    empty_run_ms: Vec<f64>,
}

struct Task {
    name: &'static str,
    steps: usize,
    /// (sent, received) bytes: plain, search + calls, one script.
    plain: (usize, usize),
    search: (usize, usize),
    script: (usize, usize),
}

async fn through_mcpool(cli: &Cli, mcpool: &Path, faulty: &Path, tmp: &Path) -> anyhow::Result<(Calls, Vec<Task>)> {
    let notes = tmp.join("notes");
    std::fs::create_dir_all(&notes)?;
    for i in 0..8 {
        let body = format!("Note {i}\n{}", "word ".repeat(40 + i * 25));
        std::fs::write(notes.join(format!("note-{i}.md")), body)?;
    }
    let config = tmp.join("config.json");
    let filesystem = mcpool_tests::node_modules().join("@modelcontextprotocol/server-filesystem/dist/index.js");
    std::fs::write(
        &config,
        serde_json::to_vec(&json!({"mcpServers": {
            "f": {"command": faulty, "args": ["stdio"]},
            "fs": {"command": "node", "args": [filesystem, &notes]},
            "everything": {"command": "node", "args": [mcpool_tests::everything_js(), "stdio"]},
        }}))?,
    )?;
    let token = format!("bench-script-{}", std::process::id());
    let mut child = serve::spawn_serve(mcpool, &config, tmp, &token, &[])?;
    let pid = child.id().context("mcpool has no pid")?;
    let result = async {
        let line = mcpool_tests::first_line(&mut child, STEP_LIMIT).await?;
        let port = mcpool_tests::listening_port(&line)?;
        serve::wait_connected(port, &token, 3, STEP_LIMIT).await?;
        let url = |mode: &str| format!("http://127.0.0.1:{port}/mcp?toolListing={mode}");
        let agent = mcpool_tests::keep_alive_agent(&url("all"), Some(&token), STEP_LIMIT).await?;
        let calls = inner_calls(cli, agent.peer()).await?;
        let _ = agent.cancel().await;
        let tasks = tasks(&url, &token, &notes).await?;
        anyhow::Ok((calls, tasks))
    }
    .await;
    serve::stop(&mut child, pid, Duration::from_secs(20)).await;
    result
}

async fn call(peer: &Peer<RoleClient>, name: &str, args: Value) -> anyhow::Result<CallToolResult> {
    let Value::Object(args) = args else {
        bail!("arguments must be an object")
    };
    let request = CallToolRequestParams::new(name.to_string()).with_arguments(args);
    let result = tokio::time::timeout(STEP_LIMIT, peer.call_tool(request)).await??;
    if result.is_error == Some(true) {
        bail!("{name} failed: {:?}", result.content);
    }
    Ok(result)
}

async fn run_script(peer: &Peer<RoleClient>, code: &str) -> anyhow::Result<CallToolResult> {
    let r = call(peer, "mcpool__run_script", json!({"code": code})).await?;
    if r.structured_content.as_ref().map(|s| s["ok"] == true) != Some(true) {
        bail!("the script failed: {:?}", r.structured_content);
    }
    Ok(r)
}

/// Direct echo calls against echo calls inside scripts, alternating.
async fn inner_calls(cli: &Cli, peer: &Peer<RoleClient>) -> anyhow::Result<Calls> {
    let loop_code = format!(
        "for (let i = 0; i < {}; i++) await tools.f__echo({{text: 'hello ' + i}});\nreturn 1;",
        cli.per_run
    );
    for i in 0..50 {
        call(peer, "f__echo", json!({"text": format!("warm {i}")})).await?;
    }
    run_script(peer, &loop_code).await?;
    let mut out = Calls {
        direct_ms: Vec::new(),
        inner_ms: Vec::new(),
        empty_run_ms: Vec::new(),
    };
    let per_block = cli.calls.div_ceil(cli.runs.max(1));
    for _ in 0..cli.runs {
        for i in 0..per_block {
            let t = Instant::now();
            call(peer, "f__echo", json!({"text": format!("hello {i}")})).await?;
            out.direct_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        let t = Instant::now();
        run_script(peer, "return 1;").await?;
        let empty = t.elapsed().as_secs_f64() * 1000.0;
        let t = Instant::now();
        run_script(peer, &loop_code).await?;
        let full = t.elapsed().as_secs_f64() * 1000.0;
        out.empty_run_ms.push(empty);
        out.inner_ms.push((full - empty) / cli.per_run as f64);
    }
    Ok(out)
}

/// Counts what an agent sends and receives.
#[derive(Default)]
struct Meter {
    sent: usize,
    received: usize,
}

impl Meter {
    async fn list(&mut self, peer: &Peer<RoleClient>) -> anyhow::Result<()> {
        let r = tokio::time::timeout(STEP_LIMIT, peer.list_tools(None)).await??;
        self.received += serde_json::to_vec(&r)?.len();
        Ok(())
    }

    async fn call(&mut self, peer: &Peer<RoleClient>, name: &str, args: Value) -> anyhow::Result<CallToolResult> {
        self.sent += serde_json::to_vec(&json!({"name": name, "arguments": args}))?.len();
        let r = call(peer, name, args).await?;
        self.received += serde_json::to_vec(&r)?.len();
        Ok(r)
    }
}

fn text_of(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

const WORDS_SCRIPT: &str = "const list = await tools.fs__list_directory({path: DIR});
const text = (r) => typeof r === 'string' ? r : r.content;
const files = text(list).split('\\n').filter(l => l.startsWith('[FILE]')).map(l => l.slice(7));
const bodies = await Promise.all(files.map(f => tools.fs__read_text_file({path: DIR + '/' + f})));
return bodies.map(text).reduce((n, b) => n + b.split(/\\s+/).filter(Boolean).length, 0);";

const LARGEST_SCRIPT: &str = "const list = await tools.fs__list_directory({path: DIR});
const text = (r) => typeof r === 'string' ? r : r.content;
const files = text(list).split('\\n').filter(l => l.startsWith('[FILE]')).map(l => l.slice(7));
const infos = await Promise.all(files.map(f => tools.fs__get_file_info({path: DIR + '/' + f})));
const size = (i) => Number(/size: (\\d+)/.exec(text(i))[1]);
let best = 0; infos.forEach((i, k) => { if (size(i) > size(infos[best])) best = k; });
return files[best];";

const SUM_SCRIPT: &str = "let total = 0;
for (const n of [3, 14, 15, 92, 65, 35, 89, 79, 32, 38]) total = Number(await tools.f__add({a: total, b: n}));
return total;";

/// The three tasks, each done the three ways; every way must agree.
async fn tasks(url: &dyn Fn(&str) -> String, token: &str, notes: &Path) -> anyhow::Result<Vec<Task>> {
    let dir = notes.display().to_string();
    let files: Vec<String> = (0..8).map(|i| format!("{dir}/note-{i}.md")).collect();
    let mut out = Vec::new();
    for (name, steps, script, queries) in [
        (
            "words in 8 files (list, 8 reads)",
            9,
            WORDS_SCRIPT,
            vec!["list the files in a directory", "read a text file"],
        ),
        (
            "largest of 8 files (list, 8 infos)",
            9,
            LARGEST_SCRIPT,
            vec!["list the files in a directory", "get a file's size and details"],
        ),
        ("sum of 10 numbers (10 adds)", 10, SUM_SCRIPT, vec!["add two numbers"]),
    ] {
        let mut ways = Vec::new();
        for way in ["plain", "search", "script"] {
            let mode = if way == "plain" { "all" } else { "search" };
            let agent: Client = mcpool_tests::keep_alive_agent(&url(mode), Some(token), STEP_LIMIT).await?;
            let peer = agent.peer();
            let mut m = Meter::default();
            m.list(peer).await?;
            if way != "plain" {
                for q in &queries {
                    m.call(peer, "mcpool__search_tools", json!({"query": q})).await?;
                }
            }
            let answer = if way == "script" {
                let r = m
                    .call(
                        peer,
                        "mcpool__run_script",
                        json!({"code": script.replace("DIR", &format!("{dir:?}"))}),
                    )
                    .await?;
                r.structured_content.map(|s| s["value"].clone()).unwrap_or_default()
            } else {
                by_hand(&mut m, peer, name, &dir, &files).await?
            };
            eprintln!(
                "{name}, {way}: sent {} B, received {} B, answer {answer}",
                m.sent, m.received
            );
            ways.push(((m.sent, m.received), answer));
            let _ = agent.cancel().await;
        }
        if ways.iter().any(|(_, a)| a != &ways[0].1) {
            bail!(
                "{name}: the ways disagree: {:?}",
                ways.iter().map(|w| &w.1).collect::<Vec<_>>()
            );
        }
        out.push(Task {
            name,
            steps,
            plain: ways[0].0,
            search: ways[1].0,
            script: ways[2].0,
        });
    }
    Ok(out)
}

/// The task as an agent does it one call at a time.
async fn by_hand(
    m: &mut Meter,
    peer: &Peer<RoleClient>,
    task: &str,
    dir: &str,
    files: &[String],
) -> anyhow::Result<Value> {
    if task.starts_with("sum") {
        let mut total = 0.0;
        for n in [3, 14, 15, 92, 65, 35, 89, 79, 32, 38] {
            let r = m.call(peer, "f__add", json!({"a": total, "b": n})).await?;
            total = text_of(&r).trim().parse()?;
        }
        return Ok(json!(total as i64));
    }
    m.call(peer, "fs__list_directory", json!({"path": dir})).await?;
    if task.starts_with("words") {
        let mut words = 0;
        for f in files {
            let r = m.call(peer, "fs__read_text_file", json!({"path": f})).await?;
            words += text_of(&r).split_whitespace().count();
        }
        return Ok(json!(words));
    }
    let mut best = (0u64, String::new());
    for f in files {
        let r = m.call(peer, "fs__get_file_info", json!({"path": f})).await?;
        let text = text_of(&r);
        let size: u64 = text
            .lines()
            .find_map(|l| l.strip_prefix("size: "))
            .context("no size in get_file_info")?
            .trim()
            .parse()?;
        if size > best.0 {
            best = (
                size,
                PathBuf::from(f)
                    .file_name()
                    .map(|n| n.to_string_lossy().to_string())
                    .unwrap_or_default(),
            );
        }
    }
    Ok(json!(best.1))
}

fn row(s: &Summary) -> String {
    format!("{:.3} | {:.3} | {:.3} | {:.3}", s.median, s.p10, s.p90, s.max)
}

fn report(cli: &Cli, engine: &Engine, calls: &Calls, tasks: &[Task], load_before: &str) -> String {
    let mut s = format!("{SECTION}\n\n");
    let mut by = sys::generated_by("mcpool-bench-script", load_before);
    if cfg!(debug_assertions) {
        by = by.replace("a release build", "a DEBUG build (its times are not a release's)");
    }
    let _ = writeln!(s, "{by}\n");
    let _ = writeln!(
        s,
        "Engine: rquickjs 0.14 (QuickJS), one runtime per run on a thread of its own. Times in ms.\n"
    );
    let _ = writeln!(
        s,
        "| what | median | p10 | p90 | max |\n| --- | --- | --- | --- | --- |"
    );
    let _ = writeln!(
        s,
        "| engine start per run (`return 1`, 60 tool names, in process, {} runs) | {} |",
        cli.starts,
        row(&Summary::of(&engine.start_ms))
    );
    let _ = writeln!(
        s,
        "| direct `tools/call` of `f__echo` through `/mcp` ({} calls) | {} |",
        calls.direct_ms.len(),
        row(&Summary::of(&calls.direct_ms))
    );
    let _ = writeln!(
        s,
        "| `mcpool__run_script` with `return 1` through `/mcp` ({} runs) | {} |",
        calls.empty_run_ms.len(),
        row(&Summary::of(&calls.empty_run_ms))
    );
    let _ = writeln!(
        s,
        "| one `f__echo` inside a script ((run of {} sequential calls − empty run) / {}, {} runs) | {} |\n",
        cli.per_run,
        cli.per_run,
        calls.inner_ms.len(),
        row(&Summary::of(&calls.inner_ms))
    );
    let inner = stats::median(&calls.inner_ms);
    let direct = stats::median(&calls.direct_ms);
    let _ = writeln!(
        s,
        "A call inside a script costs {:.3} ms against {:.3} ms for a direct call from an agent: {:+.3} ms.\n",
        inner,
        direct,
        inner - direct
    );
    let _ = writeln!(
        s,
        "Memory per run (QuickJS's own count of its heap at the end of a run, its context included): {} KiB \
         for `return 1`, {} KiB holding an array of 10,000 small objects; the limit is 64 MiB.\n",
        engine.empty_bytes / 1024,
        engine.array_bytes / 1024
    );
    let _ = writeln!(
        s,
        "Bytes an agent sends and receives (JSON of the `tools/list` result, each call's name and arguments, \
         each result), over the official server-filesystem (14 tools), server-everything and the fault server. \
         *plain*: the `all` listing, one call per step; *search*: the `search` listing, one `mcpool__search_tools` \
         per kind of step, then the calls by name; *script*: the `search` listing, the same searches (for the \
         names and signatures), one `mcpool__run_script`. Every way gave the same answer.\n"
    );
    let _ = writeln!(
        s,
        "| task | steps | plain sent / received | search sent / received | script sent / received | script vs plain (total) |\n| --- | --- | --- | --- | --- | --- |"
    );
    for t in tasks {
        let total = |w: (usize, usize)| (w.0 + w.1) as f64;
        let _ = writeln!(
            s,
            "| {} | {} | {} / {} | {} / {} | {} / {} | {:.0} % |",
            t.name,
            t.steps,
            t.plain.0,
            t.plain.1,
            t.search.0,
            t.search.1,
            t.script.0,
            t.script.1,
            100.0 * total(t.script) / total(t.plain)
        );
    }
    s.push('\n');
    s
}
