//! `mcpool-bench-sandbox`: what a sandbox adds to a local server's start.
//!
//! Starts our fault server (`mcpool-faulty stdio`) through mcpool-core's own
//! `upstream::stdio::spawn`, as the pool does, alternately with the sandbox
//! `off` and `standard` (and `strict`), and times each from the spawn to the
//! server's answer to `initialize` on its stdout. The difference of the
//! medians is the sandbox's cost: preparing the Landlock ruleset and the
//! namespaces' plan in mcpool (the server's own folder, its caches'
//! overlays, the sockets to mask), and in the child the namespaces, two
//! more forks, the mounts, dropping capabilities and
//! `landlock_restrict_self`.
//!
//! Build with `cargo build --release --workspace --bins`, then run
//! `target/release/mcpool-bench-sandbox --write docs/benchmarks.md`. Every
//! server it starts is stopped before the next.

#[allow(dead_code)]
mod stats;
#[allow(dead_code)]
mod sys;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use clap::Parser;
use mcpool_core::config::{ServerSpec, TransportSpec};
use mcpool_core::sandbox::{Mode, Sandbox};
use mcpool_core::upstream::stdio;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use stats::Summary;

const SECTION: &str = "## Sandboxed start";
/// The server's name, and so its own folder under mcpool's data folder
/// (removed at the end).
const NAME: &str = "bench-sandbox";

#[derive(Debug, Parser)]
#[command(about = "Benchmarks a local server's start with and without its sandbox")]
struct Cli {
    #[command(flatten)]
    out: sys::Out,
    /// Starts per mode.
    #[arg(long, default_value_t = 60)]
    runs: usize,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let load_before = sys::loadavg();
    let (_, [faulty]) = sys::bench_bins(cli.out.bin_dir.as_deref(), ["mcpool-faulty"])?;
    let modes = [Mode::Off, Mode::Standard, Mode::Strict];
    let mut samples: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for _ in 0..cli.runs {
        // Interleaved, so drift in the machine's load hits every mode alike.
        for mode in modes {
            let ms = start_once(&faulty, mode).await?;
            samples.entry(mode.as_str()).or_default().push(ms);
        }
    }
    let mut out = format!("{SECTION}\n\n");
    let _ = writeln!(out, "{}\n", sys::generated_by("mcpool-bench-sandbox", &load_before));
    let _ = writeln!(
        out,
        "From spawn to the answer to `initialize` of `mcpool-faulty stdio`, started by mcpool-core's \
         `upstream::stdio::spawn` ({} starts per mode, interleaved; kernel {}).\n",
        cli.runs,
        sys::kernel()
    );
    let _ = writeln!(
        out,
        "| sandbox | min ms | p10 ms | median ms | p90 ms | max ms | median over `off` |"
    );
    let _ = writeln!(out, "| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    let off = Summary::of(&samples["off"]).median;
    for mode in modes {
        let s = Summary::of(&samples[mode.as_str()]);
        let _ = writeln!(
            out,
            "| `{}` | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:+.2} ms |",
            mode.as_str(),
            s.min,
            s.p10,
            s.median,
            s.p90,
            s.max,
            s.median - off
        );
    }
    // The server's own folder the sandboxed starts made.
    let _ = std::fs::remove_dir_all(mcpool_core::sandbox::own_folder(NAME));
    sys::publish(cli.out.write.as_deref(), SECTION, &out)
}

/// One start of the fault server under `mode`: ms until its `initialize`
/// answer.
async fn start_once(faulty: &Path, mode: Mode) -> anyhow::Result<f64> {
    let spec = ServerSpec {
        name: NAME.into(),
        disabled: false,
        timeout: mcpool_core::config::DEFAULT_TIMEOUT,
        max_message_bytes: mcpool_core::config::DEFAULT_MAX_MESSAGE_BYTES,
        call_timeout: None,
        log_arguments: false,
        transport: TransportSpec::Stdio {
            command: faulty.display().to_string(),
            args: vec!["stdio".into()],
            env: BTreeMap::new(),
            cwd: None,
        },
        oauth: None,
        sandbox: Sandbox {
            mode,
            ..Sandbox::default()
        },
    };
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#;
    let started = Instant::now();
    let mut spawned = stdio::spawn(&spec, None).map_err(|e| anyhow::anyhow!("{e}"))?;
    spawned.stdin.write_all(format!("{init}\n").as_bytes()).await?;
    let mut line = String::new();
    BufReader::new(&mut spawned.stdout).read_line(&mut line).await?;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    anyhow::ensure!(
        line.contains("\"id\":1"),
        "no answer to initialize under {}: {line}",
        mode.as_str()
    );
    drop(spawned);
    Ok(ms)
}
