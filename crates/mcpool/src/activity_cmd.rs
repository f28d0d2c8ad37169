//! `mcpool activity [--follow] [filters]`: the activity log of this
//! profile, read from its file in the data dir (so it works whether or not
//! mcpool runs), oldest first like a log; `--follow` keeps printing what
//! is added.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use clap::Args;
use mcpool_core::activity::{self, Filter, Item};
use mcpool_core::service::Setup;

#[derive(Args)]
pub struct ActivityArgs {
    /// Only this server's entries.
    #[arg(long)]
    server: Option<String>,
    /// Only calls of this tool (the server's own name for it).
    #[arg(long)]
    tool: Option<String>,
    /// Only requests of this agent (its clientInfo name, e.g. claude-code).
    #[arg(long)]
    client: Option<String>,
    /// `ok`, `error` (any failure), or one outcome: tool_error, unavailable,
    /// refused, protocol_error, cancelled, timeout.
    #[arg(long)]
    outcome: Option<String>,
    /// tool, prompt, resource or server (status changes, reconnects, sign-ins).
    #[arg(long)]
    kind: Option<String>,
    /// From this time: RFC 3339, or an age such as 15m, 2h, 7d.
    #[arg(long)]
    since: Option<String>,
    /// Up to this time (same forms as --since).
    #[arg(long)]
    until: Option<String>,
    /// Only the tool calls of this script run (its id, shown as `run #ID`).
    #[arg(long)]
    parent: Option<String>,
    /// How many entries to show (1-1000).
    #[arg(long, default_value_t = 50)]
    limit: u32,
    /// Keep printing new entries as they are recorded (Ctrl-C ends).
    #[arg(long, short)]
    follow: bool,
    /// One JSON object per line (the items of GET /api/activity).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    setup: Setup,
}

pub async fn run(args: ActivityArgs) -> anyhow::Result<ExitCode> {
    let path = activity::file_for(&mcpool_core::os::paths::data_dir(), args.setup.profile());
    let mut params: BTreeMap<String, String> = BTreeMap::new();
    for (k, v) in [
        ("server", &args.server),
        ("tool", &args.tool),
        ("client", &args.client),
        ("outcome", &args.outcome),
        ("kind", &args.kind),
        ("since", &args.since),
        ("until", &args.until),
        ("parent", &args.parent),
    ] {
        if let Some(v) = v {
            params.insert(k.to_string(), v.clone());
        }
    }
    params.insert("limit".into(), args.limit.to_string());
    let filter = match Filter::from_query(&params, SystemTime::now()) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("mcpool activity: --{} {}", e.field, e.message);
            return Ok(ExitCode::from(2));
        }
    };
    let read = |filter: Filter| {
        let path = path.clone();
        async move {
            tokio::task::spawn_blocking(move || activity::query_file(&path, &filter))
                .await
                .map_err(|e| e.to_string())?
        }
    };
    let page = match read(filter.clone()).await {
        Ok(p) => p,
        Err(sentence) => {
            eprintln!("{sentence}");
            return Ok(ExitCode::FAILURE);
        }
    };
    if page.items.is_empty() && !args.follow {
        if path.exists() {
            eprintln!("No activity matches (in {}).", path.display());
        } else {
            eprintln!(
                "No activity yet: {} does not exist (mcpool writes it once it runs).",
                path.display()
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    for item in page.items.iter().rev() {
        print_item(&mut out, item, args.json)?;
    }
    out.flush()?;
    drop(out);
    if !args.follow {
        return Ok(ExitCode::SUCCESS);
    }
    let mut last = page.last_id;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(500)) => {}
            _ = tokio::signal::ctrl_c() => return Ok(ExitCode::SUCCESS),
        }
        let next = Filter {
            after: Some(last),
            cursor: None,
            limit: activity::query::MAX_LIMIT,
            ..filter.clone()
        };
        match read(next).await {
            Ok(page) => {
                let mut out = std::io::stdout().lock();
                for item in &page.items {
                    print_item(&mut out, item, args.json)?;
                    last = last.max(item.id);
                }
                out.flush()?;
                // A file replaced (ids start again) is followed from its start.
                if page.last_id < last {
                    last = 0;
                }
            }
            Err(sentence) => eprintln!("{sentence}"),
        }
    }
}

fn print_item(out: &mut impl Write, item: &Item, json: bool) -> std::io::Result<()> {
    if json {
        let line = serde_json::to_string(item).unwrap_or_default();
        return writeln!(out, "{line}");
    }
    writeln!(out, "{}", line(item))
}

/// One entry as a line of text.
pub fn line(item: &Item) -> String {
    let what = match (&item.tool, &item.prompt, &item.uri, &item.event) {
        (Some(t), ..) => format!("{}/{t}", item.server),
        (_, Some(p), ..) => format!("{} prompt {p}", item.server),
        (_, _, Some(u), _) => format!("{} read {u}", item.server),
        (.., Some(e)) => format!("{} {e}", item.server),
        _ => item.server.clone(),
    };
    let client = match (&item.client, &item.client_version) {
        (Some(c), Some(v)) => format!(" {c} {v}"),
        (Some(c), None) => format!(" {c}"),
        _ => String::new(),
    };
    let duration = item.duration_ms.map(|d| format!(" {d} ms")).unwrap_or_default();
    // Code mode: a run shows the id its calls name; a call, its run.
    let run = match item.parent {
        Some(parent) => format!(" (in run #{parent})"),
        None if item.server == "mcpool" && item.tool.as_deref() == Some("run_script") => format!(" run #{}", item.id),
        None => String::new(),
    };
    let said = item
        .error
        .as_deref()
        .or(item.detail.as_deref())
        .map(|e| format!(": {}", e.replace('\n', " ")))
        .unwrap_or_default();
    format!(
        "{} {:<8} {what}{run}{client}{duration} {}{said}",
        item.time, item.kind, item.outcome
    )
}
