//! `mcpool-bench-scan`: how well the tool-definition scanner
//! (crates/mcpool-core/src/scan/) tells attacks from benign definitions, on
//! the labelled set `bench/scan/cases.json`, beside a plain keyword
//! baseline, and how long a scan of 5,000 tools takes.
//!
//! Every case is scanned within one pool: all cases plus the `peers` a
//! shadowing case names. Recall is per attack class (an attack counts as
//! found when it is flagged at all, and separately when it is held back as
//! `dangerous`); false positives are the benign definitions and the hard
//! negatives flagged `dangerous`, and flagged at all. Reported per split:
//! tune on `dev`, read `test`.
//!
//! Build with `cargo build --release -p mcpool-bench`, then run
//! `target/release/mcpool-bench-scan --write docs/benchmarks.md`;
//! `--misses dev` lists the dev cases the scanner gets wrong.

#[allow(dead_code)]
mod stats;
#[allow(dead_code)]
mod sys;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use mcpool_core::scan::{self, Definition, Pool, Previous, Verdict};
use serde::Deserialize;
use serde_json::Value;

use stats::Summary;

const SECTION: &str = "## Tool-definition scanner";

const ATTACKS: &[&str] = &[
    "hidden_unicode",
    "encoded_payload",
    "exfiltration",
    "rug_pull",
    "hidden_instructions",
    "shadowing",
];

#[derive(Debug, Parser)]
#[command(about = "Measures the tool-definition scanner on bench/scan/cases.json")]
struct Cli {
    #[command(flatten)]
    out: sys::Out,
    /// The labelled set.
    #[arg(long, default_value = "bench/scan/cases.json")]
    cases: PathBuf,
    /// Lists the cases of this split (`dev`, `test`) the scanner gets wrong.
    #[arg(long)]
    misses: Option<String>,
    /// Timed scans of the 5,000-tool pool.
    #[arg(long, default_value_t = 20)]
    runs: usize,
}

#[derive(Deserialize)]
struct Cases {
    cases: Vec<Case>,
}

#[derive(Deserialize, Clone)]
struct Case {
    id: String,
    split: String,
    class: String,
    expect: String,
    server: String,
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(rename = "inputSchema", default)]
    input_schema: Value,
    #[serde(default)]
    previous: Option<Previous>,
    #[serde(default)]
    peers: Vec<Peer>,
}

#[derive(Deserialize, Clone)]
struct Peer {
    server: String,
    name: String,
}

impl Case {
    fn definition(&self) -> Definition {
        Definition {
            id: Some(self.id.clone()),
            server: self.server.clone(),
            name: self.name.clone(),
            title: None,
            description: self.description.clone(),
            input_schema: self.input_schema.clone(),
            previous: self.previous.clone(),
        }
    }
}

/// The plain baseline: `dangerous` when the description or the schema's
/// text holds one of a few words attacks use.
fn keyword_verdict(case: &Case) -> Verdict {
    const WORDS: &[&str] = &[
        "ignore",
        "important",
        "instruction",
        "do not tell",
        "don't tell",
        "ssh",
        "id_rsa",
        "password",
        "secret",
        "token",
        "system prompt",
        "conversation",
        "base64",
        "curl",
        "bcc",
    ];
    let text = format!("{} {}", case.description.as_deref().unwrap_or(""), case.input_schema).to_lowercase();
    if WORDS.iter().any(|w| text.contains(w)) {
        Verdict::Dangerous
    } else {
        Verdict::Clean
    }
}

/// Counts for one group of cases under one scanner.
#[derive(Default, Clone, Copy)]
struct Tally {
    cases: usize,
    flagged: usize,
    dangerous: usize,
}

impl Tally {
    fn add(&mut self, verdict: Verdict) {
        self.cases += 1;
        self.flagged += usize::from(verdict != Verdict::Clean);
        self.dangerous += usize::from(verdict == Verdict::Dangerous);
    }
    fn share(n: usize, of: usize) -> f64 {
        if of == 0 {
            f64::NAN
        } else {
            n as f64 / of as f64
        }
    }
    fn flagged_share(&self) -> f64 {
        Self::share(self.flagged, self.cases)
    }
    fn dangerous_share(&self) -> f64 {
        Self::share(self.dangerous, self.cases)
    }
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let load_before = sys::loadavg();
    let cases: Cases = serde_json::from_slice(&std::fs::read(&cli.cases)?)?;
    let cases = cases.cases;
    let mut pool = Pool::default();
    for case in &cases {
        pool.add(&case.server, &case.name);
        for peer in &case.peers {
            pool.add(&peer.server, &peer.name);
        }
    }
    // (split, class) → tallies of the scanner and of the baseline.
    let mut tallies: BTreeMap<(String, String), (Tally, Tally)> = BTreeMap::new();
    for case in &cases {
        let report = scan::scan(&case.definition(), &pool);
        let baseline = keyword_verdict(case);
        for split in [case.split.as_str(), "all"] {
            let entry = tallies.entry((split.to_string(), case.class.clone())).or_default();
            entry.0.add(report.verdict);
            entry.1.add(baseline);
        }
        if cli.misses.as_deref() == Some(case.split.as_str()) {
            let attack = ATTACKS.contains(&case.class.as_str());
            let wrong = if attack {
                report.verdict == Verdict::Clean
            } else {
                report.verdict == Verdict::Dangerous || (case.expect == "clean" && report.verdict != Verdict::Clean)
            };
            if wrong {
                println!(
                    "{} [{}] expect {} got {}: {}\n   {}\n",
                    case.id,
                    case.class,
                    case.expect,
                    report.verdict.as_str(),
                    serde_json::to_string(&report.findings)?,
                    case.description
                        .as_deref()
                        .unwrap_or("")
                        .chars()
                        .take(300)
                        .collect::<String>()
                );
            }
        }
    }
    let timing = time_5000(&cases, cli.runs);

    let mut out = format!("{SECTION}\n\n");
    let _ = writeln!(out, "{}\n", sys::generated_by("mcpool-bench-scan", &load_before));
    let _ = writeln!(
        out,
        "On `bench/scan/cases.json` ({} cases; sources, licences and how they were made in `bench/scan/README.md`), \
         every case scanned within one pool (all cases and the peers shadowing cases name). *flagged* is `review` or \
         `dangerous`; *held* is `dangerous` (held back from agents). The baseline calls a definition dangerous when its \
         description or schema holds one of 15 words attacks use (`ignore`, `important`, `ssh`, `password`, …). \
         The scanner's thresholds were set on `dev`; `test` was read, not tuned on.\n",
        cases.len()
    );
    for split in ["dev", "test"] {
        let _ = writeln!(out, "**{split}**\n");
        let _ = writeln!(
            out,
            "| class | cases | scanner flagged | scanner held | baseline flagged | aim |"
        );
        let _ = writeln!(out, "| --- | ---: | ---: | ---: | ---: | --- |");
        for class in ATTACKS.iter().copied().chain(["benign", "hard_negative"]) {
            let Some((scanner, baseline)) = tallies.get(&(split.to_string(), class.to_string())) else {
                continue;
            };
            let aim = match class {
                "hidden_unicode" | "encoded_payload" | "exfiltration" | "rug_pull" => "recall ≥ 0.90",
                "hidden_instructions" | "shadowing" => "recall ≥ 0.70",
                "benign" => "held ≤ 0.02, flagged ≤ 0.10",
                _ => "(as few as can be)",
            };
            let _ = writeln!(
                out,
                "| {class} | {} | {:.3} | {:.3} | {:.3} | {aim} |",
                scanner.cases,
                scanner.flagged_share(),
                scanner.dangerous_share(),
                baseline.flagged_share()
            );
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(
        out,
        "A scan of 5,000 tools (the set's benign definitions repeated under distinct server names, as one pool, \
         in process, {} runs): median {:.1} ms (min {:.1}, p90 {:.1}); aim under 50 ms.",
        cli.runs, timing.median, timing.min, timing.p90
    );
    sys::publish(cli.out.write.as_deref(), SECTION, &out)
}

/// ms per scan of a pool of 5,000 tools.
fn time_5000(cases: &[Case], runs: usize) -> Summary {
    let benign: Vec<&Case> = cases.iter().filter(|c| c.class == "benign").collect();
    let definitions: Vec<Definition> = (0..5000)
        .map(|i| {
            let case = benign[i % benign.len()];
            let mut definition = case.definition();
            definition.server = format!("{}-{}", case.server, i / benign.len());
            definition
        })
        .collect();
    let _ = scan::scan_all(&definitions);
    let samples: Vec<f64> = (0..runs)
        .map(|_| {
            let started = Instant::now();
            let reports = scan::scan_all(&definitions);
            std::hint::black_box(reports);
            started.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    Summary::of(&samples)
}
