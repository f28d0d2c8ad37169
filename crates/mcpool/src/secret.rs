//! `mcpool secret set|list|rm`: named secrets in the OS keyring, referenced
//! from the config as `${keyring:NAME}`. Through the running instance when
//! there is one (`/api/secrets`, with the control credential), so that many
//! short commands do not each open a Secret Service session; else in the
//! keyring directly, let go of before exiting.

use std::io::{IsTerminal, Read};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Context};
use mcpool_core::control_credential;
use mcpool_core::secrets::Secrets;
use serde_json::{json, Value};

use crate::Instance;

#[derive(clap::Args)]
pub struct SecretArgs {
    #[command(subcommand)]
    command: SecretCommand,
    #[command(flatten)]
    instance: Instance,
}

#[derive(clap::Subcommand)]
pub enum SecretCommand {
    /// Store a secret; the value is read from stdin (without echo on a terminal).
    Set { name: String },
    /// List the names of stored secrets (never their values).
    List,
    /// Remove a secret.
    Rm { name: String },
}

/// Through the running instance when one answers (it holds the keyring open
/// already), else the keyring itself, closed before the command exits.
pub async fn run(args: SecretArgs) -> anyhow::Result<ExitCode> {
    let value = match &args.command {
        SecretCommand::Set { name } => {
            let value = read_value(name)?;
            if value.is_empty() {
                bail!("no value given for '{name}' (nothing stored)");
            }
            Some(value)
        }
        _ => None,
    };
    if let Some(done) = through_instance(&args.instance, &args.command, value.as_deref()).await? {
        return done;
    }
    // main lets go of the keyring before the process exits.
    in_keyring(&args.instance, args.command, value).await
}

/// The command done by the instance on `--listen`, when it runs as this
/// user (its control credential is readable) and keeps this profile's
/// secrets; `None` when there is no such instance.
async fn through_instance(
    instance: &Instance,
    command: &SecretCommand,
    value: Option<&str>,
) -> anyhow::Result<Option<anyhow::Result<ExitCode>>> {
    let Some(control) = control_credential::read(instance.listen.port()) else {
        return Ok(None);
    };
    let profile = instance.setup.profile();
    let base = format!("http://{}/api/secrets", instance.listen);
    let query = format!("?profile={}", encode(profile));
    let client = reqwest::Client::new();
    let request = match command {
        SecretCommand::Set { name } => client
            .post(format!("{base}{query}"))
            .json(&json!({"name": name, "value": value.unwrap_or_default()})),
        SecretCommand::List => client.get(format!("{base}{query}")),
        SecretCommand::Rm { name } => client.delete(format!("{base}/{}{query}", encode(name))),
    };
    let Ok(response) = request.bearer_auth(control).send().await else {
        return Ok(None);
    };
    let status = response.status();
    // Another profile's instance, or one from before this API: the keyring.
    if status == reqwest::StatusCode::CONFLICT || status == reqwest::StatusCode::METHOD_NOT_ALLOWED {
        return Ok(None);
    }
    if status == reqwest::StatusCode::UNAUTHORIZED {
        // A control file left by an instance that stopped without removing it.
        return Ok(None);
    }
    let body: Value = response.json().await.unwrap_or_default();
    if !status.is_success() {
        let why = body["error"].as_str().unwrap_or("the instance refused");
        return Ok(Some(Err(anyhow::anyhow!("{why}"))));
    }
    match command {
        SecretCommand::Set { name } => stored(name),
        SecretCommand::List => {
            for name in body["names"].as_array().into_iter().flatten().filter_map(Value::as_str) {
                println!("{name}");
            }
        }
        SecretCommand::Rm { name } => eprintln!("removed '{name}'"),
    }
    Ok(Some(Ok(ExitCode::SUCCESS)))
}

/// A secret's or profile's name as one URL component (names are letters,
/// digits and `._-`; anything else is escaped).
fn encode(name: &str) -> String {
    name.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'_' | b'-' => (b as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

fn stored(name: &str) {
    eprintln!("stored '{name}' in the keyring; use it in the config as ${{keyring:{name}}}");
}

async fn in_keyring(instance: &Instance, command: SecretCommand, value: Option<String>) -> anyhow::Result<ExitCode> {
    let secrets = Secrets::new(Arc::new(instance.setup.keyring()));
    match command {
        SecretCommand::Set { name } => {
            let (n, value) = (name.clone(), value.unwrap_or_default());
            tokio::task::spawn_blocking(move || secrets.set(&n, &value)).await??;
            stored(&name);
        }
        SecretCommand::List => {
            let names = tokio::task::spawn_blocking(move || secrets.list()).await??;
            for name in names {
                println!("{name}");
            }
        }
        SecretCommand::Rm { name } => {
            let n = name.clone();
            if tokio::task::spawn_blocking(move || secrets.remove(&n)).await?? {
                eprintln!("removed '{name}'");
            } else {
                bail!("there is no secret named '{name}'");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn read_value(name: &str) -> anyhow::Result<String> {
    if std::io::stdin().is_terminal() {
        return rpassword::prompt_password(format!("value for {name}: ")).context("cannot read the value");
    }
    let mut value = String::new();
    std::io::stdin()
        .read_to_string(&mut value)
        .context("cannot read the value from stdin")?;
    Ok(value.trim_end_matches(['\r', '\n']).to_string())
}
