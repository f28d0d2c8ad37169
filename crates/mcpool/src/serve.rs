//! `mcpool serve`: the pool and endpoint of [`mcpool_core::service`] in the
//! foreground, until SIGINT/SIGTERM stops every child.

use std::io::IsTerminal;
use std::process::ExitCode;

use mcpool_core::log::RedactingStderr;
use mcpool_core::service;
pub use mcpool_core::service::ServeArgs;
use tokio::signal::unix::{signal, SignalKind};

pub async fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    init_tracing();
    args.check_listen()?;
    let token = crate::client::token_or_create().await?;
    let mut service = service::start(args.options(token)?).await?;
    println!("mcpool listening on {}", service.endpoint_url());

    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
        e = service.stopped() => {
            service.shutdown().await;
            return Err(e.into());
        }
    }
    tracing::info!("stopping");
    service.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("MCPOOL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,rmcp=warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(RedactingStderr::default)
        .try_init();
}
