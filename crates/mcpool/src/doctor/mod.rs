//! `mcpool doctor`: checks what usually goes wrong (keyring, config,
//! runtimes, port, servers, agents, desktop) and says what to do, one line
//! per check; `--bundle FILE` also writes a redacted support bundle.

mod bundle;
mod checks;
mod local;
mod report;
mod sandbox;
mod servers;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use mcpool_core::config::{ServerSpec, TransportSpec};
use mcpool_core::secrets::{references, SecretStore};
use mcpool_core::service::Setup;

use crate::Instance;
use report::Check;

/// How long the keyring may take to give the values kept out of the output.
const SECRETS_WAIT: Duration = Duration::from_secs(10);

#[derive(clap::Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    instance: Instance,
    /// The config file (default: MCPOOL_CONFIG, else the one the running
    /// instance reads, else the platform default).
    #[arg(long, env = "MCPOOL_CONFIG")]
    config: Option<PathBuf>,
    /// Print a JSON array of {"check", "status", "detail", "hint"} instead of lines.
    #[arg(long)]
    json: bool,
    /// Also write a support bundle (JSON, mode 0600) with every secret redacted.
    #[arg(long, value_name = "FILE")]
    bundle: Option<PathBuf>,
}

pub async fn run(args: DoctorArgs) -> anyhow::Result<ExitCode> {
    let listen = args.instance.listen;
    let setup = &args.instance.setup;
    let token = token(setup).await;
    let (keyring, port, desktop) = tokio::join!(
        checks::keyring(setup),
        checks::port(listen, token.as_deref()),
        local::desktop(),
    );
    let config_path = args
        .config
        .clone()
        .or_else(|| port.config_path.clone())
        .unwrap_or_else(mcpool_core::os::paths::default_config);
    let loaded = mcpool_core::config::load(&config_path);
    let config = checks::config(&config_path, &loaded);
    let specs: Vec<ServerSpec> = loaded
        .as_ref()
        .map(|c| c.servers.values().cloned().collect())
        .unwrap_or_default();
    let reachable = async {
        match &port.servers {
            Some(servers) => servers::from_instance(servers),
            None if loaded.is_err() => Vec::new(),
            None => servers::probe_all(&specs, setup).await,
        }
    };
    let ((runtimes, programs), reachable, mut secrets) =
        tokio::join!(checks::runtimes(&specs), reachable, secret_values(&specs, setup));
    let clients = local::clients(listen, token.as_deref(), setup.fixed_token().is_some());
    secrets.extend(token);
    secrets.sort_by_key(|v| std::cmp::Reverse(v.len()));
    secrets.dedup();

    let activity = checks::activity(setup.profile());
    let all: Vec<Check> = std::iter::once(keyring)
        .chain(config)
        .chain(std::iter::once(activity))
        .chain(runtimes)
        .chain(sandbox::checks(&specs))
        .chain(std::iter::once(port.check.clone()))
        .chain(reachable)
        .chain(clients)
        .chain(desktop)
        .map(|c| c.redacted(&secrets))
        .collect();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&all)?);
    } else {
        for check in &all {
            println!("{}", check.line());
        }
    }
    if let Some(file) = &args.bundle {
        let bundle = bundle::build(&bundle::Inputs {
            checks: &all,
            config_path: &config_path,
            servers: port.servers.as_deref(),
            programs: &programs,
            secrets: &secrets,
            profile: setup.profile(),
        });
        bundle::write(file, &bundle)?;
        let said = format!(
            "Wrote the support bundle to {} (mode 0600). It contains no secrets: config env and header values, \
             client secrets, URL queries, tokens and keyring values are redacted.",
            file.display()
        );
        if args.json {
            eprintln!("{said}");
        } else {
            println!("{said}");
        }
    }
    Ok(if report::failed(&all) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The endpoint token, if one exists (none is made); `None` when the
/// keyring does not answer in time.
async fn token(setup: &Setup) -> Option<String> {
    let fixed = setup.fixed_token().map(str::to_string);
    let keyring = setup.keyring();
    let read = tokio::task::spawn_blocking(move || {
        mcpool_core::token::resolve(fixed, &keyring, &mcpool_core::os::paths::data_dir(), false)
    });
    match tokio::time::timeout(SECRETS_WAIT, read).await {
        Ok(Ok(Ok(Some(t)))) => Some(t.value),
        _ => None,
    }
}

/// Every secret value the config leads to, kept out of all output: the
/// keyring values its references name, OAuth tokens and client secrets
/// kept for its remote servers, and the values it holds literally (every
/// header value, secret-named env values, URL passwords and secret query
/// values, client secrets).
async fn secret_values(specs: &[ServerSpec], setup: &Setup) -> Vec<String> {
    let specs = specs.to_vec();
    let store = setup.keyring();
    let read = tokio::task::spawn_blocking(move || {
        let mut out = Vec::new();
        for spec in &specs {
            // Unresolved: a reference itself is no secret.
            out.extend(
                mcpool_core::secrets::literal_secrets(&spec.transport)
                    .into_iter()
                    .filter(|v| references(v).is_empty()),
            );
            let mut values: Vec<&String> = Vec::new();
            match &spec.transport {
                TransportSpec::Stdio { env, .. } => values.extend(env.values()),
                TransportSpec::Http { url, headers } | TransportSpec::Sse { url, headers } => {
                    values.push(url);
                    values.extend(headers.values());
                    out.extend(headers.values().filter(|v| references(v).is_empty()).cloned());
                    let entry = mcpool_core::oauth::entry_name(&spec.name, url);
                    if let Ok(Some(json)) = store.get(&entry) {
                        if let Ok(record) = serde_json::from_str::<mcpool_core::oauth::tokens::Record>(&json) {
                            out.extend(record.secret_values());
                        }
                    }
                }
            }
            let client_secret = spec.oauth.as_ref().and_then(|o| o.client_secret.as_ref());
            values.extend(client_secret);
            out.extend(client_secret.filter(|v| references(v).is_empty()).cloned());
            for name in values.iter().flat_map(|v| references(v)) {
                if let Ok(Some(v)) = store.get(name) {
                    out.push(v);
                }
            }
        }
        out
    });
    match tokio::time::timeout(SECRETS_WAIT, read).await {
        Ok(Ok(values)) => values,
        _ => Vec::new(),
    }
}
