//! `mcpool stdio`: a stdio MCP server that relays every message to the
//! running instance's endpoint, for clients that only spawn stdio servers.

use std::process::ExitCode;

use anyhow::anyhow;
use rmcp::service::{RoleClient, RoleServer};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{IntoTransport, StreamableHttpClientTransport, Transport};

use crate::Instance;

pub async fn run(instance: &Instance, token: String) -> anyhow::Result<ExitCode> {
    let url = format!("http://{}/mcp", instance.listen);
    // Say clearly when nothing is listening, before the client's first message.
    let probe = reqwest::Client::new()
        .get(format!("http://{}/api/servers", instance.listen))
        .bearer_auth(&token)
        .send()
        .await;
    match probe {
        Err(e) if e.is_connect() => {
            eprintln!(
                "mcpool stdio: no mcpool instance is running at {} (start it with `mcpool serve` or the tray app)",
                instance.listen
            );
            return Ok(ExitCode::FAILURE);
        }
        Ok(r) if r.status() == reqwest::StatusCode::UNAUTHORIZED => {
            eprintln!(
                "mcpool stdio: the instance at {} refused the token (check MCPOOL_TOKEN)",
                instance.listen
            );
            return Ok(ExitCode::FAILURE);
        }
        _ => {}
    }
    let mut upstream = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url).auth_header(token),
    );
    let mut local = IntoTransport::<RoleServer, _, _>::into_transport((tokio::io::stdin(), tokio::io::stdout()));
    loop {
        tokio::select! {
            from_client = local.receive() => match from_client {
                Some(message) => Transport::<RoleClient>::send(&mut upstream, message).await.map_err(|e| anyhow!("relay to mcpool failed: {e}"))?,
                None => break,
            },
            from_pool = Transport::<RoleClient>::receive(&mut upstream) => match from_pool {
                Some(message) => local.send(message).await.map_err(|e| anyhow!("relay to the client failed: {e}"))?,
                None => {
                    eprintln!("mcpool stdio: the connection to mcpool at {} closed", instance.listen);
                    return Ok(ExitCode::FAILURE);
                }
            },
        }
    }
    let _ = Transport::<RoleClient>::close(&mut upstream).await;
    Ok(ExitCode::SUCCESS)
}
