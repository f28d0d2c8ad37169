//! `mcpool registry search QUERY` and `mcpool registry add NAME[@VERSION]`:
//! MCP registries (the config's `registries`, else the official one) read
//! directly, with or without a running instance. `add` asks for the
//! server's variables (on a terminal; else from `--env NAME=VALUE`),
//! refuses when the runtime it needs is not on PATH (unless `--yes`), and
//! writes the entry with its secrets in the keyring.

use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{anyhow, bail, Context};
use clap::Subcommand;
use mcpool_core::editing::{self, EditError};
use mcpool_core::registry::{self, view, Choice, RegistryClient, Variable};
use mcpool_core::secrets::SecretStore;
use mcpool_core::service::Setup;
use serde_json::{json, Value};

#[derive(Subcommand)]
pub enum RegistryCommand {
    /// Search the MCP registries for servers (name and description).
    Search {
        /// Words of the server's name or description.
        query: String,
        /// How many results (1-100).
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// Print the JSON (the shape of /api/registry/search).
        #[arg(long)]
        json: bool,
        /// mcpool's config file (its `registries`).
        #[arg(long, env = "MCPOOL_CONFIG")]
        config: Option<PathBuf>,
    },
    /// Add a server from a registry to the config, asking for its variables.
    Add(AddArgs),
}

#[derive(clap::Args)]
pub struct AddArgs {
    /// The registry's name for the server, optionally with a version:
    /// io.github.user/weather or io.github.user/weather@1.2.0.
    server: String,
    /// The name in mcpool's config (default: the last part of the registry name).
    #[arg(long = "as", value_name = "LOCAL")]
    local: Option<String>,
    /// A variable's value, by its name (environment variable, header or
    /// argument); repeatable. Without a terminal, the only way to give them.
    #[arg(long = "env", value_name = "NAME=VALUE")]
    env: Vec<String>,
    /// Which way to run it when it offers several: package:N or remote:N (0-based).
    #[arg(long)]
    choice: Option<String>,
    /// Add it even though the runtime it needs (npx, uvx, docker) is not on PATH.
    #[arg(long, short = 'y')]
    yes: bool,
    /// mcpool's config file to add to.
    #[arg(long, env = "MCPOOL_CONFIG")]
    config: Option<PathBuf>,
    #[command(flatten)]
    setup: Setup,
}

pub async fn run(command: RegistryCommand) -> anyhow::Result<ExitCode> {
    match command {
        RegistryCommand::Search {
            query,
            limit,
            json,
            config,
        } => search(&query, limit.clamp(1, 100), json, config).await,
        RegistryCommand::Add(args) => {
            let store: Arc<dyn SecretStore> = Arc::new(args.setup.keyring());
            add(args, store).await
        }
    }
}

/// The registries the config file names, else the official one.
fn registries(config: &std::path::Path) -> anyhow::Result<Vec<String>> {
    let loaded = mcpool_core::config::load(config).map_err(|p| anyhow!("{p}"))?;
    Ok(registry::bases(loaded.registries.as_deref()))
}

async fn search(query: &str, limit: usize, as_json: bool, config: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let bases = registries(&crate::config_path(config))?;
    let searched = RegistryClient::new().search(&bases, query, limit).await;
    let rows: Vec<Value> = searched.servers.iter().map(view::summary).collect();
    if as_json {
        let out = json!({"servers": rows, "offline": searched.offline(), "error": searched.error_sentence()});
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(if searched.offline() {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        });
    }
    if let Some(error) = searched.error_sentence() {
        eprintln!("mcpool: {error}");
    }
    if searched.offline() {
        return Ok(ExitCode::FAILURE);
    }
    if rows.is_empty() {
        println!("No server matches '{query}' in {}.", bases.join(", "));
        return Ok(ExitCode::SUCCESS);
    }
    for row in &rows {
        print!("{}", describe_row(row));
    }
    println!("Add one with: mcpool registry add NAME");
    Ok(ExitCode::SUCCESS)
}

/// Two lines per server: name, version, how it runs and what it needs;
/// then its description.
fn describe_row(row: &Value) -> String {
    let s = |k: &str| row[k].as_str().unwrap_or_default().to_string();
    let list = |k: &str| -> Vec<String> {
        row[k]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default()
    };
    let mut how: Vec<String> = list("packages");
    how.extend(list("remotes").into_iter().map(|r| format!("{r} remote")));
    let needs = list("needs");
    let mut line = format!("{}  {}  {}", s("name"), s("version"), s("kind"));
    if !how.is_empty() {
        line.push_str(&format!(" ({})", how.join(", ")));
    }
    if !needs.is_empty() {
        line.push_str(&format!("  needs {}", needs.join(", ")));
    }
    if let Some(problem) = row["problem"].as_str() {
        line.push_str(&format!("  [{problem}]"));
    }
    format!("{line}\n    {}\n", s("description"))
}

/// `NAME@VERSION` → (NAME, VERSION); registry names hold no `@`.
fn split_version(spec: &str) -> (&str, Option<&str>) {
    match spec.rsplit_once('@') {
        Some((name, version)) if !name.is_empty() && !version.is_empty() => (name, Some(version)),
        _ => (spec.trim_end_matches('@'), None),
    }
}

fn parse_env(pairs: &[String]) -> anyhow::Result<BTreeMap<String, String>> {
    pairs
        .iter()
        .map(|p| {
            p.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.to_string()))
                .filter(|(k, _)| !k.is_empty())
                .ok_or_else(|| anyhow!("--env {p}: expected NAME=VALUE"))
        })
        .collect()
}

pub async fn add(args: AddArgs, store: Arc<dyn SecretStore>) -> anyhow::Result<ExitCode> {
    let path = crate::config_path(args.config.clone());
    let bases = registries(&path)?;
    let (name, version) = split_version(&args.server);
    let choice = match args.choice.as_deref() {
        Some(text) => {
            Some(Choice::parse(text).ok_or_else(|| anyhow!("--choice {text}: expected package:N or remote:N"))?)
        }
        None => None,
    };
    let found = RegistryClient::new()
        .server(&bases, name, version)
        .await
        .map_err(|e| anyhow!("{e}"))?;
    let form = registry::form(&found.server, choice).map_err(|e| anyhow!("{e}"))?;
    let local = args.local.clone().unwrap_or_else(|| form.suggested_name.clone());
    let mut given = parse_env(&args.env)?;
    let unknown: Vec<&String> = given
        .keys()
        .filter(|k| !form.variables.iter().any(|v| &v.name == *k))
        .collect();
    if !unknown.is_empty() {
        let known: Vec<&str> = form.variables.iter().map(|v| v.name.as_str()).collect();
        bail!(
            "'{}' has no variable {} (its variables: {}); nothing written",
            found.server.name,
            unknown.iter().map(|u| format!("'{u}'")).collect::<Vec<_>>().join(", "),
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        );
    }
    // The name first, before anything is asked (the entry is checked in
    // full when it is written).
    let mut change = editing::ServerChange {
        name: local.clone(),
        entry: form.entry.clone(),
        ..Default::default()
    };
    {
        let (p, c) = (path.clone(), change.clone());
        match tokio::task::spawn_blocking(move || editing::check_add(&p, &c)).await? {
            Err(e) if matches!(&e, EditError::Field { field: Some(f), .. } if f == "name") => {
                bail!("{e} (choose another name with --as NAME)")
            }
            Err(e @ EditError::Failed(_)) => bail!("{e}"),
            _ => {}
        }
    }
    let terminal = std::io::stdin().is_terminal();
    eprintln!(
        "{} {} from {} as '{local}': {}",
        found.server.name,
        form.version.as_deref().unwrap_or(""),
        found.registry,
        registry::label(&found.server, form.choice)
    );
    // Said before anything is asked: a runtime missing is the first thing to fix.
    let runtime = registry::runtime_for(&form.entry, std::env::var_os("PATH").as_deref());
    if let Some(missing) = runtime.as_ref().and_then(|r| r.missing_sentence()) {
        let sentence = format!("'{local}' {missing}");
        if args.yes {
            eprintln!("warning: {sentence}; adding it anyway (--yes)");
        } else if terminal {
            eprintln!("{sentence}");
            if !confirm("Add it anyway?")? {
                eprintln!("Nothing written.");
                return Ok(ExitCode::FAILURE);
            }
        } else {
            bail!("{sentence}; nothing written (add it anyway with --yes)");
        }
    }
    if terminal {
        for variable in &form.variables {
            if !given.contains_key(&variable.name) {
                if let Some(value) = ask(variable)? {
                    given.insert(variable.name.clone(), value);
                }
            }
        }
    }
    let filled = registry::apply(&form, &given).map_err(|e| match e {
        registry::PlanError::Missing { .. } => anyhow!("{e}; give them with --env NAME=VALUE (nothing written)"),
        other => anyhow!("{other} (nothing written)"),
    })?;
    change.entry = filled.entry;
    change.secret_env = filled.secret_env;
    change.secret_headers = filled.secret_headers;
    let p = path.clone();
    let written = tokio::task::spawn_blocking(move || editing::add(&p, change, store.as_ref()))
        .await?
        .map_err(|e| anyhow!("{e}"))?;
    let secrets = written.secrets.len();
    eprintln!(
        "added '{}' to {}{}",
        written.name,
        path.display(),
        if secrets > 0 {
            format!(
                " ({secrets} secret{} in the keyring)",
                if secrets == 1 { "" } else { "s" }
            )
        } else {
            String::new()
        }
    );
    Ok(ExitCode::SUCCESS)
}

fn confirm(question: &str) -> anyhow::Result<bool> {
    eprint!("{question} [y/N] ");
    std::io::stderr().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "YES"))
}

/// One variable on the terminal: its description, choices and default
/// shown; a secret one read without echo. An empty answer takes the default.
fn ask(v: &Variable) -> anyhow::Result<Option<String>> {
    let mut about = Vec::new();
    if let Some(d) = &v.description {
        about.push(d.clone());
    }
    if !v.choices.is_empty() {
        about.push(format!("one of: {}", v.choices.join(", ")));
    }
    if let Some(f) = &v.format {
        about.push(format!("a {f}"));
    }
    let mut prompt = v.name.clone();
    if v.required {
        prompt.push_str(" (required");
    } else {
        prompt.push_str(" (optional");
    }
    if v.secret {
        prompt.push_str(", secret: kept in the keyring");
    }
    prompt.push(')');
    if let Some(d) = &v.default {
        prompt.push_str(&format!(" [{d}]"));
    }
    prompt.push_str(": ");
    if !about.is_empty() {
        eprintln!("  {}", about.join("; "));
    }
    let answer = if v.secret {
        rpassword::prompt_password(&prompt).context("cannot read the value")?
    } else {
        eprint!("{prompt}");
        std::io::stderr().flush()?;
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
        line.trim_end_matches(['\r', '\n']).to_string()
    };
    Ok(Some(answer).filter(|a| !a.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_after_the_last_at() {
        assert_eq!(split_version("io.github.u/w@1.2.0"), ("io.github.u/w", Some("1.2.0")));
        assert_eq!(split_version("io.github.u/w"), ("io.github.u/w", None));
        assert_eq!(split_version("io.github.u/w@"), ("io.github.u/w", None));
    }

    #[test]
    fn env_pairs_keep_equals_in_values() {
        let got = parse_env(&["A=b=c".into(), "B=".into()]).unwrap_or_default();
        assert_eq!(got.get("A").map(String::as_str), Some("b=c"));
        assert_eq!(got.get("B").map(String::as_str), Some(""));
        assert!(parse_env(&["nope".into()]).is_err());
    }
}
