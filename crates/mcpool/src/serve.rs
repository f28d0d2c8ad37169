//! `mcpool serve`: the pool and endpoint of [`mcpool_core::service`] in the
//! foreground, until SIGINT/SIGTERM stops every child.

use std::process::ExitCode;

use mcpool_core::service;
pub use mcpool_core::service::ServeArgs;

pub async fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    mcpool_core::log::init();
    args.check_listen()?;
    let token = crate::client::token_or_create(&args.setup).await?;
    let mut service = service::start(args.options(token)?).await?;
    println!("mcpool listening on {}", service.endpoint_url());

    tokio::select! {
        asked = service::stop_requested() => asked?,
        e = service.stopped() => {
            service.shutdown().await;
            return Err(e.into());
        }
    }
    tracing::info!("stopping");
    service.shutdown().await;
    Ok(ExitCode::SUCCESS)
}
