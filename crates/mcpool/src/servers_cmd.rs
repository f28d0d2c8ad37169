//! `mcpool add`, `mcpool remove` and `mcpool list`: the config's servers,
//! changed in place through `mcpool_core::editing` (comments and key order
//! kept, a `.bak` first). They work on the file whether or not an instance
//! runs; a running one picks the change up through its config watcher.

use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{anyhow, bail, Context};
use mcpool_core::config::{Entry, SandboxEntry, TransportSpec};
use mcpool_core::editing::{self, EditError, ServerChange};
use mcpool_core::secrets::SecretStore;
use mcpool_core::service::Setup;
use serde_json::{json, Value};

use crate::Instance;

#[derive(clap::Args)]
pub struct AddArgs {
    /// The server's name (tool names start with it).
    name: String,
    /// A remote server's URL (Streamable HTTP, or legacy SSE with --transport sse).
    #[arg(long)]
    url: Option<String>,
    /// A remote server's transport: http (default) or sse.
    #[arg(long, requires = "url")]
    transport: Option<String>,
    /// A header sent to a remote server, as 'Name: value' (repeatable).
    #[arg(long = "header", value_name = "'K: V'")]
    headers: Vec<String>,
    /// A header whose value goes to the keyring (read without echo; repeatable).
    #[arg(long = "secret-header", value_name = "K")]
    secret_headers: Vec<String>,
    /// An environment variable of a local server, as K=V (repeatable).
    #[arg(long = "env", value_name = "K=V")]
    env: Vec<String>,
    /// An environment variable whose value goes to the keyring (read without echo; repeatable).
    #[arg(long = "secret-env", value_name = "K")]
    secret_env: Vec<String>,
    /// A local server's working folder.
    #[arg(long)]
    cwd: Option<String>,
    /// A local server's sandbox: off, standard or strict (README: Sandboxing
    /// local servers).
    #[arg(long, value_name = "MODE", value_parser = ["off", "standard", "strict"])]
    sandbox: Option<String>,
    /// A folder or file the sandboxed server may read (repeatable).
    #[arg(long = "allow-read", value_name = "PATH")]
    allow_read: Vec<String>,
    /// A folder or file the sandboxed server may read and write (repeatable).
    #[arg(long = "allow-write", value_name = "PATH")]
    allow_write: Vec<String>,
    /// A Unix socket the sandboxed server may connect to, such as
    /// /var/run/docker.sock (repeatable; no other is reachable).
    #[arg(long = "allow-socket", value_name = "PATH")]
    allow_socket: Vec<String>,
    /// Whether the sandboxed server may use TCP, overriding its mode's.
    #[arg(long, value_name = "on|off", value_parser = ["on", "off"])]
    network: Option<String>,
    /// Startup timeout in milliseconds.
    #[arg(long, value_name = "MS")]
    timeout: Option<u64>,
    /// mcpool's config file.
    #[arg(long, env = "MCPOOL_CONFIG")]
    config: Option<PathBuf>,
    #[command(flatten)]
    setup: Setup,
    /// A local server's command and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND [ARGS]...")]
    command: Vec<String>,
}

#[derive(clap::Args)]
pub struct RemoveArgs {
    name: String,
    /// Also remove the keyring entries only this server used.
    #[arg(long)]
    secrets: bool,
    #[arg(long, env = "MCPOOL_CONFIG")]
    config: Option<PathBuf>,
    #[command(flatten)]
    setup: Setup,
}

#[derive(clap::Args)]
pub struct ListArgs {
    #[arg(long, env = "MCPOOL_CONFIG")]
    config: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    instance: Instance,
}

/// `K=V` or `K: V` split at the first separator, `K` trimmed.
fn pair(text: &str, sep: char, what: &str) -> anyhow::Result<(String, String)> {
    let (k, v) = text
        .split_once(sep)
        .ok_or_else(|| anyhow!("{what} '{text}' needs the form K{sep}V"))?;
    let k = k.trim();
    if k.is_empty() {
        bail!("{what} '{text}' has no name before '{sep}'");
    }
    Ok((k.to_string(), v.trim_start().to_string()))
}

/// Each of `items` split by [`pair`], in order; `None` when there are none.
fn pairs<C: FromIterator<(String, String)>>(items: &[String], sep: char, what: &str) -> anyhow::Result<Option<C>> {
    let split: Vec<_> = items
        .iter()
        .map(|i| pair(i, sep, what))
        .collect::<anyhow::Result<_>>()?;
    Ok((!split.is_empty()).then(|| split.into_iter().collect()))
}

/// The change `mcpool add` makes, secret values still to be read.
fn change_of(args: &AddArgs) -> anyhow::Result<ServerChange> {
    let mut entry = Entry::default();
    match (&args.url, args.command.split_first()) {
        (Some(_), Some(_)) => bail!("give either --url (a remote server) or `-- COMMAND` (a local one), not both"),
        (None, None) => bail!("give the server's command after `--` (mcpool add NAME -- COMMAND ARGS...) or --url URL"),
        (Some(url), None) => {
            if !args.env.is_empty() || !args.secret_env.is_empty() || args.cwd.is_some() {
                bail!("--env, --secret-env and --cwd are for a local server; a remote one takes --header");
            }
            if sandbox_of(args)?.is_some() {
                bail!("--sandbox, --allow-read, --allow-write and --network are for a local server; a remote one runs elsewhere");
            }
            entry.url = Some(url.clone());
            entry.transport = args.transport.clone();
            entry.headers = pairs(&args.headers, ':', "header")?;
        }
        (None, Some((command, rest))) => {
            if !args.headers.is_empty() || !args.secret_headers.is_empty() {
                bail!("--header and --secret-header are for a remote server; a local one takes --env");
            }
            entry.command = Some(command.clone());
            entry.args = Some(rest.to_vec()).filter(|a| !a.is_empty());
            entry.env = pairs(&args.env, '=', "--env")?;
            entry.cwd = args.cwd.clone();
            entry.sandbox = sandbox_of(args)?;
        }
    }
    entry.timeout = args.timeout;
    Ok(ServerChange {
        name: args.name.clone(),
        entry: entry.to_map(),
        ..ServerChange::default()
    })
}

/// The entry's `sandbox` from the flags (written as the mode's word alone
/// when there is nothing else), its grants made absolute from this folder,
/// as typed here; `None` when no flag is given.
fn sandbox_of(args: &AddArgs) -> anyhow::Result<Option<SandboxEntry>> {
    if args.sandbox.is_none()
        && args.allow_read.is_empty()
        && args.allow_write.is_empty()
        && args.allow_socket.is_empty()
        && args.network.is_none()
    {
        return Ok(None);
    }
    let here = std::env::current_dir().context("cannot read the current folder")?;
    let absolute = |paths: &[String]| -> Option<Vec<String>> {
        let made: Vec<String> = paths
            .iter()
            .map(|p| {
                if p.starts_with('~') || Path::new(p).is_absolute() {
                    p.clone()
                } else {
                    here.join(p).display().to_string()
                }
            })
            .collect();
        (!made.is_empty()).then_some(made)
    };
    Ok(Some(SandboxEntry {
        mode: args.sandbox.clone(),
        allow_read: absolute(&args.allow_read),
        allow_write: absolute(&args.allow_write),
        allow_sockets: absolute(&args.allow_socket),
        network: args.network.as_deref().map(|n| n == "on"),
        allow_unsandboxed: None,
    }))
}

/// Reads each secret's value: without echo on a terminal, else one line of
/// stdin per secret, in the order given.
fn read_secrets(names: &[String], kind: &str) -> anyhow::Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let stdin = std::io::stdin();
    for name in names {
        let value = if stdin.is_terminal() {
            rpassword::prompt_password(format!("value of {kind} {name} (not shown): "))
                .with_context(|| format!("cannot read the value of {name}"))?
        } else {
            let mut line = String::new();
            stdin
                .lock()
                .read_line(&mut line)
                .with_context(|| format!("cannot read the value of {name} from stdin"))?;
            line.trim_end_matches(['\r', '\n']).to_string()
        };
        if value.is_empty() {
            bail!("no value given for {kind} {name} (nothing written)");
        }
        out.insert(name.clone(), value);
    }
    Ok(out)
}

/// Runs an edit of the config at `path` off the runtime (it takes the
/// file's lock and may wait for it).
async fn edit<T: Send + 'static>(
    path: &Path,
    f: impl FnOnce(&Path) -> Result<T, EditError> + Send + 'static,
) -> anyhow::Result<T> {
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || f(&path))
        .await?
        .map_err(|e| anyhow!("{e}"))
}

/// [`edit`] with the keyring of `setup`, for an edit that writes or
/// removes secrets.
async fn edit_keyed<T: Send + 'static>(
    path: &Path,
    setup: &Setup,
    f: impl FnOnce(&Path, &dyn SecretStore) -> Result<T, EditError> + Send + 'static,
) -> anyhow::Result<T> {
    let store: Arc<dyn SecretStore> = Arc::new(setup.keyring());
    edit(path, move |p| f(p, store.as_ref())).await
}

/// Tells what an edit did: `done`, a line for each of `notes`, and the
/// backup of the previous version when one was kept.
fn tell(done: String, notes: impl IntoIterator<Item = String>, backup: Option<PathBuf>) -> ExitCode {
    eprintln!("{done}");
    for note in notes {
        eprintln!("  {note}");
    }
    if let Some(b) = backup {
        eprintln!("  previous version: {}", b.display());
    }
    ExitCode::SUCCESS
}

/// Tells what an edit did: `done`, then each keyring entry after `secret`
/// (what became of it), then the backup.
fn tell_edit(done: String, keyring: &[String], secret: &str, backup: Option<PathBuf>) -> ExitCode {
    tell(done, keyring.iter().map(|entry| format!("{secret} {entry}")), backup)
}

pub async fn add(args: AddArgs) -> anyhow::Result<ExitCode> {
    let mut change = change_of(&args)?;
    let path = crate::config_path(args.config.clone());
    // The entry is checked before any secret is asked for.
    let mut c = change.clone();
    let placeholder = |names: &[String]| names.iter().map(|n| (n.clone(), "-".to_string())).collect();
    c.secret_env = placeholder(&args.secret_env);
    c.secret_headers = placeholder(&args.secret_headers);
    edit(&path, move |p| editing::check_add(p, &c)).await?;
    change.secret_env = read_secrets(&args.secret_env, "environment variable")?;
    change.secret_headers = read_secrets(&args.secret_headers, "header")?;
    let written = edit_keyed(&path, &args.setup, move |p, store| editing::add(p, change, store)).await?;
    let done = format!("added '{}' to {}", written.name, path.display());
    Ok(tell_edit(
        done,
        &written.secrets,
        "secret kept in the keyring as",
        written.backup,
    ))
}

pub async fn remove(args: RemoveArgs) -> anyhow::Result<ExitCode> {
    let path = crate::config_path(args.config);
    let (name, with_secrets) = (args.name.clone(), args.secrets);
    let removed = edit_keyed(&path, &args.setup, move |p, store| {
        editing::remove(p, &name, with_secrets, store)
    })
    .await?;
    let done = format!("removed '{}' from {}", args.name, path.display());
    Ok(tell_edit(
        done,
        &removed.removed_secrets,
        "removed the keyring entry",
        removed.backup,
    ))
}

/// The config's servers, with the running instance's status when one answers.
pub async fn list(args: ListArgs) -> anyhow::Result<ExitCode> {
    let path = crate::config_path(args.config);
    let config = mcpool_core::config::load(&path).map_err(|p| anyhow!("{p}"))?;
    let statuses = running_statuses(&args.instance).await;
    let rows: Vec<Value> = config
        .servers
        .values()
        .map(|spec| {
            let target = match &spec.transport {
                TransportSpec::Stdio { command, args, .. } => std::iter::once(command.as_str())
                    .chain(args.iter().map(String::as_str))
                    .collect::<Vec<_>>()
                    .join(" "),
                TransportSpec::Http { url, .. } | TransportSpec::Sse { url, .. } => url.clone(),
            };
            let status = statuses.as_ref().map(|s| {
                s.get(&spec.name)
                    .cloned()
                    .unwrap_or_else(|| "not loaded yet".to_string())
            });
            json!({
                "name": spec.name,
                "transport": spec.transport.kind(),
                "target": target,
                "disabled": spec.disabled,
                "status": status,
            })
        })
        .collect();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        eprintln!(
            "{} has no servers; add one with `mcpool add NAME -- COMMAND`",
            path.display()
        );
    }
    let width = rows
        .iter()
        .filter_map(|r| r["name"].as_str())
        .map(str::len)
        .max()
        .unwrap_or(4)
        .max(4);
    println!("{:width$}  {:5}  {:14}  TARGET", "NAME", "KIND", "STATUS");
    for row in &rows {
        let status = match (&row["status"], row["disabled"].as_bool()) {
            (Value::String(s), _) => s.clone(),
            (_, Some(true)) => "disabled".into(),
            _ => "(not running)".into(),
        };
        println!(
            "{:width$}  {:5}  {:14}  {}",
            row["name"].as_str().unwrap_or_default(),
            row["transport"].as_str().unwrap_or_default(),
            status,
            row["target"].as_str().unwrap_or_default()
        );
    }
    for p in &config.problems {
        eprintln!("mcpool: {p}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Each server's status from the running instance; `None` when none answers.
async fn running_statuses(instance: &Instance) -> Option<BTreeMap<String, String>> {
    let response = crate::client::send(instance, reqwest::Method::GET, "/api/servers")
        .await
        .ok()?;
    let rows: Vec<Value> = response.error_for_status().ok()?.json().await.ok()?;
    Some(
        rows.iter()
            .filter_map(|r| Some((r["name"].as_str()?.to_string(), r["status"].as_str()?.to_string())))
            .collect(),
    )
}
