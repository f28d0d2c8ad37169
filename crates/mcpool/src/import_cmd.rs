//! `mcpool import [FILE]`: show the plan, ask, move secrets into the keyring,
//! then write mcpool's config. Source files are only read.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Context};
use mcpool_core::agent_config::Dirs;
use mcpool_core::import::{self, Plan, Step};
use mcpool_core::secrets::{SecretStore, Secrets};
use mcpool_core::service::Setup;
use serde_json::Value;

#[derive(clap::Args)]
pub struct ImportArgs {
    /// A client config to import; without it, every standard one found.
    file: Option<PathBuf>,
    /// mcpool's config file to add to.
    #[arg(long, env = "MCPOOL_CONFIG")]
    config: Option<PathBuf>,
    /// Write without asking.
    #[arg(long, short = 'y')]
    yes: bool,
    /// Only show the plan.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    setup: Setup,
}

fn read_json(path: &Path) -> anyhow::Result<Value> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    if text.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    mcpool_core::jsonc::value(&text).with_context(|| format!("{} is not valid JSON", path.display()))
}

pub async fn run(args: ImportArgs) -> anyhow::Result<ExitCode> {
    let keyring = args.setup.keyring();
    run_with(args, Arc::new(keyring)).await
}

pub async fn run_with(args: ImportArgs, store: Arc<dyn SecretStore>) -> anyhow::Result<ExitCode> {
    let target = crate::config_path(args.config);
    let existing = if target.exists() {
        read_json(&target)?
    } else {
        Value::Object(Default::default())
    };
    let sources: Vec<(import::Client, PathBuf, Value)> = match &args.file {
        Some(file) => {
            let root = read_json(file)?;
            vec![(import::detect(file, &root), file.clone(), root)]
        }
        None => {
            let dirs = Dirs::from_env();
            let mut found = Vec::new();
            for (client, path) in import::standard_files(&dirs) {
                if path.exists() && path != target {
                    match read_json(&path) {
                        Ok(root) => found.push((client, path, root)),
                        Err(e) => eprintln!("skipping {}: {e:#}", path.display()),
                    }
                }
            }
            if found.is_empty() {
                eprintln!("No Claude Desktop, Claude Code, Cursor, VS Code or opencode config found.");
                return Ok(ExitCode::SUCCESS);
            }
            found
        }
    };
    let mut plans: Vec<Plan> = Vec::new();
    for (client, path, root) in sources {
        let candidates = import::candidates(client, &root);
        let plan = import::plan(&path, client, candidates, &existing);
        // A server found in two sources is added once.
        let plan = import::dedupe_against(plan, &plans);
        print!("{}", import::describe(&plan));
        plans.push(plan);
    }
    let adds = plans
        .iter()
        .flat_map(|p| &p.steps)
        .filter(|s| matches!(s, Step::Add { .. }))
        .count();
    if adds == 0 {
        println!("Nothing to import: mcpool already has these servers.");
        return Ok(ExitCode::SUCCESS);
    }
    if args.dry_run {
        println!("Dry run: nothing written.");
        return Ok(ExitCode::SUCCESS);
    }
    if !args.yes && !confirm(&target)? {
        println!("Nothing written.");
        return Ok(ExitCode::SUCCESS);
    }
    // Secrets first, so the config never names a secret that is not there.
    let moved: Vec<(String, String)> = plans
        .iter()
        .flat_map(|p| &p.steps)
        .filter_map(|s| match s {
            Step::Add { secrets, .. } => Some(secrets.iter().map(|m| (m.name.clone(), m.value.clone()))),
            _ => None,
        })
        .flatten()
        .collect();
    let count = moved.len();
    let needed: Vec<String> = plans
        .iter()
        .flat_map(|p| &p.steps)
        .filter_map(|s| match s {
            Step::Add { needed, .. } => Some(needed.iter().map(|n| n.name.clone())),
            _ => None,
        })
        .flatten()
        .collect();
    tokio::task::spawn_blocking(move || {
        let secrets = Secrets::new(store);
        for (name, value) in moved {
            secrets
                .set(&name, &value)
                .with_context(|| format!("cannot store the secret '{name}' in the keyring"))?;
        }
        anyhow::Ok(())
    })
    .await??;
    // In place: the file keeps its comments and key order, the previous
    // version goes to `.bak`.
    let entries = import::added_entries(&plans);
    let path = target.clone();
    let (added, _backup) = tokio::task::spawn_blocking(move || mcpool_core::editing::add_entries(&path, &entries))
        .await?
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    println!(
        "Added {added} servers to {} ({count} secrets moved to the keyring).",
        target.display()
    );
    for name in needed {
        println!("Still to set: mcpool secret set {name}");
    }
    Ok(ExitCode::SUCCESS)
}

fn confirm(target: &Path) -> anyhow::Result<bool> {
    if !std::io::stdin().is_terminal() {
        bail!("not writing without confirmation: run again with --yes (or --dry-run to only see the plan)");
    }
    print!("Write these changes to {}? [y/N] ", target.display());
    std::io::stdout().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "YES"))
}
