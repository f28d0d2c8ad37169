//! What Linux's /proc says about processes and the machine.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context as _};

/// The binaries to measure, by name, from `--bin-dir` (else this program's
/// own folder), each checked to exist.
#[allow(dead_code)] // not every bench program measures every binary.
pub fn bench_bins<const N: usize>(bin_dir: Option<&Path>, names: [&str; N]) -> anyhow::Result<(PathBuf, [PathBuf; N])> {
    let dir = match bin_dir {
        Some(dir) => dir.to_path_buf(),
        None => std::env::current_exe()?
            .parent()
            .context("this binary has no parent directory")?
            .to_path_buf(),
    };
    let bins = names.map(|name| dir.join(name));
    for bin in &bins {
        if !bin.exists() {
            bail!(
                "{} is missing: run `cargo build --release --workspace --bins` first",
                bin.display()
            );
        }
    }
    Ok((dir, bins))
}

/// This run's scratch dir under `bin_dir/bench-tmp`, `NAME-PID`, made.
#[allow(dead_code)] // mcpool-bench keeps its own.
pub fn scratch_dir(bin_dir: &Path, name: &str) -> anyhow::Result<PathBuf> {
    let tmp = bin_dir.join("bench-tmp").join(format!("{name}-{}", std::process::id()));
    std::fs::create_dir_all(&tmp)?;
    Ok(tmp)
}

/// Prints `section`, and with `write` puts it in that file under `heading`.
#[allow(dead_code)] // mcpool-bench writes the whole file.
pub fn publish(write: Option<&Path>, heading: &str, section: &str) -> anyhow::Result<()> {
    print!("{section}");
    if let Some(path) = write {
        let old = std::fs::read_to_string(path).unwrap_or_default();
        std::fs::write(path, replace_section(&old, heading, section))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

/// CPU time (ns) of every thread of `pid` (this process when `None`), from
/// `/proc/PID/task/*/schedstat`. Threads that already exited are not counted.
pub fn cpu_ns(pid: Option<u32>) -> u64 {
    let dir = match pid {
        Some(pid) => format!("/proc/{pid}/task"),
        None => "/proc/self/task".to_string(),
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next().and_then(|n| n.parse::<u64>().ok()))
        .sum()
}

/// A numeric field (e.g. `VmRSS`, in kB) of `/proc/PID/status`.
pub fn status_kb(pid: u32, field: &str) -> anyhow::Result<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status_field(&text, field).ok_or_else(|| anyhow::anyhow!("no {field} in /proc/{pid}/status"))
}

fn status_field(text: &str, field: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

pub struct Proc {
    pub pid: u32,
    pub cmdline: String,
    pub rss_kb: u64,
    pub hwm_kb: u64,
}

impl Proc {
    /// The command line with paths cut to their last two components.
    pub fn short_name(&self) -> String {
        self.cmdline
            .split(' ')
            .map(|arg| {
                let parts: Vec<&str> = arg
                    .rsplit('/')
                    .take(if arg.contains("node_modules") { 4 } else { 1 })
                    .collect();
                parts.into_iter().rev().collect::<Vec<_>>().join("/")
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn ppid(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // pid (comm) state ppid ...; comm may hold spaces and parentheses.
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Every live descendant of `root`, breadth first.
pub fn descendants(root: u32) -> Vec<Proc> {
    let mut all: Vec<(u32, u32)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for e in entries.flatten() {
            if let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) {
                if let Some(parent) = ppid(pid) {
                    all.push((pid, parent));
                }
            }
        }
    }
    let mut out = Vec::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for &(pid, _) in all.iter().filter(|(_, p)| *p == parent) {
            frontier.push(pid);
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|b| {
                    String::from_utf8_lossy(&b)
                        .split('\0')
                        .filter(|s| !s.is_empty())
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .unwrap_or_default();
            out.push(Proc {
                pid,
                cmdline,
                rss_kb: status_kb(pid, "VmRSS").unwrap_or(0),
                hwm_kb: status_kb(pid, "VmHWM").unwrap_or(0),
            });
        }
    }
    out
}

pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

pub fn load1() -> f64 {
    loadavg().split(' ').next().and_then(|s| s.parse().ok()).unwrap_or(0.0)
}

pub fn nproc() -> usize {
    std::thread::available_parallelism().map(usize::from).unwrap_or(0)
}

pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

pub fn mem_total() -> String {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| status_field(&s, "MemTotal"))
        .map(|kb| format!("{:.1} GiB", kb as f64 / 1024.0 / 1024.0))
        .unwrap_or_else(|| "unknown".into())
}

pub fn kernel() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| format!("Linux {}", s.trim()))
        .unwrap_or_else(|_| "unknown".into())
}

/// The first line a command prints, or "unknown".
pub fn command_line(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8_lossy(&o.stdout).lines().next().map(str::to_string))
        .unwrap_or_else(|| "unknown".into())
}

pub fn git_describe(repo: &Path) -> String {
    let repo = repo.display().to_string();
    let head = command_line("git", &["-C", &repo, "rev-parse", "--short", "HEAD"]);
    let dirty = Command::new("git")
        .args(["-C", &repo, "status", "--porcelain", "--untracked-files=no"])
        .output()
        .map(|o| !o.stdout.is_empty())
        .unwrap_or(false);
    if dirty {
        format!("{head} (plus uncommitted changes)")
    } else {
        head
    }
}

/// This program's command line, with the binary shown relative to the repo.
pub fn invocation() -> String {
    let program = std::env::args()
        .next()
        .and_then(|p| {
            std::path::Path::new(&p)
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
        })
        .unwrap_or_else(|| "mcpool-bench".into());
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut line = format!("target/release/{program}");
    for a in args {
        line.push(' ');
        if a.contains(' ') {
            line.push_str(&format!("'{a}'"));
        } else {
            line.push_str(&a);
        }
    }
    line
}

/// `doc` with the section under `heading` (up to the next `## `) replaced
/// by `section`, or with `section` appended when there is none.
#[allow(dead_code)] // mcpool-bench writes the whole file.
pub fn replace_section(doc: &str, heading: &str, section: &str) -> String {
    let Some(start) = doc.find(heading) else {
        return format!("{}\n\n{section}", doc.trim_end());
    };
    let after = &doc[start + heading.len()..];
    let end = after.find("\n## ").map_or(doc.len(), |i| start + heading.len() + i + 1);
    format!("{}{section}{}", &doc[..start], &doc[end..])
}

/// The options of a benchmark that writes a section of docs/benchmarks.md.
#[derive(Debug, clap::Args)]
pub struct Out {
    /// Where mcpool and mcpool-faulty are (default: next to this binary).
    #[arg(long)]
    pub bin_dir: Option<PathBuf>,
    /// Replace (or append) this program's section in this markdown file.
    #[arg(long)]
    pub write: Option<PathBuf>,
}

/// "Generated by `program` on DATE, commit C, a release build, N CPUs
/// (MODEL), load average before: B, after: A.", the line a report opens with.
pub fn generated_by(program: &str, load_before: &str) -> String {
    format!(
        "Generated by `{program}` on {}, commit {}, a release build, {} CPUs ({}), load average before: \
         {load_before}, after: {}.",
        command_line("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        git_describe(&mcpool_tests::repo_root()),
        nproc(),
        cpu_model(),
        loadavg()
    )
}

/// `n` runs, `run(i)` in `tmp/run-{i}`, each told by `tell(i, &run)`,
/// stopping at the first error; `tmp` is removed either way.
pub async fn runs<R>(
    n: usize,
    tmp: &std::path::Path,
    mut run: impl AsyncFnMut(&std::path::Path) -> anyhow::Result<R>,
    tell: impl Fn(usize, &R),
) -> anyhow::Result<Vec<R>> {
    let mut runs = Vec::new();
    let mut result = Ok(());
    for i in 0..n {
        match run(&tmp.join(format!("run-{i}"))).await {
            Ok(r) => {
                tell(i, &r);
                runs.push(r);
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    let _ = std::fs::remove_dir_all(tmp);
    result.map(|()| runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_status_fields() {
        let text = "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\nThreads:\t5\n";
        assert_eq!(status_field(text, "VmRSS"), Some(1024));
        assert_eq!(status_field(text, "VmHWM"), Some(2048));
        assert_eq!(status_field(text, "Threads"), Some(5));
        assert_eq!(status_field(text, "Vm"), None);
    }

    #[test]
    fn a_section_is_replaced_in_place_or_appended() {
        let doc = "# t\n\n## A\n\nold a\n\n## B\n\nb\n";
        assert_eq!(
            replace_section(doc, "## A", "## A\n\nnew a\n\n"),
            "# t\n\n## A\n\nnew a\n\n## B\n\nb\n"
        );
        assert_eq!(
            replace_section(doc, "## B", "## B\n\nnew b\n"),
            "# t\n\n## A\n\nold a\n\n## B\n\nnew b\n"
        );
        assert_eq!(replace_section("# t\n", "## C", "## C\n"), "# t\n\n## C\n");
    }

    #[test]
    fn this_process_has_rss_and_cpu() {
        let me = std::process::id();
        assert!(status_kb(me, "VmRSS").unwrap() > 0);
        assert!(cpu_ns(None) > 0);
        assert!(ppid(me).is_some());
    }
}
