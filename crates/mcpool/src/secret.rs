//! `mcpool secret set|list|rm`: named secrets in the OS keyring, referenced
//! from the config as `${keyring:NAME}`.

use std::io::{IsTerminal, Read};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Context};
use mcpool_core::secrets::Secrets;
use mcpool_core::service::Setup;

#[derive(clap::Args)]
pub struct SecretArgs {
    #[command(subcommand)]
    command: SecretCommand,
    #[command(flatten)]
    setup: Setup,
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

pub async fn run(args: SecretArgs) -> anyhow::Result<ExitCode> {
    let secrets = Secrets::new(Arc::new(args.setup.keyring()));
    match args.command {
        SecretCommand::Set { name } => {
            let value = read_value(&name)?;
            if value.is_empty() {
                bail!("no value given for '{name}' (nothing stored)");
            }
            let n = name.clone();
            tokio::task::spawn_blocking(move || secrets.set(&n, &value)).await??;
            eprintln!("stored '{name}' in the keyring; use it in the config as ${{keyring:{name}}}");
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
