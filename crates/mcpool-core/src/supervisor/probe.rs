//! One connection attempt outside the pool ("test before saving"): connect
//! with exactly the spec given, list its tools, close. No state is kept,
//! nothing is cached, and no agent sees it.

use std::sync::Arc;

use serde::Serialize;
use tokio::sync::mpsc;

use super::live::list_all;
use super::Context;
use crate::config::ServerSpec;
use crate::errors::ConnectError;
use crate::lifecycle::FailureKind;
use crate::secrets::{redact, resolve_spec};
use crate::upstream::{self, ledger::ProgressLedger, UpstreamHandler};

/// What one test connection found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Probe {
    pub ok: bool,
    pub tools: Vec<ProbedTool>,
    /// The sentence of the failure, secrets redacted.
    pub error: Option<String>,
    /// The server asks for sign-in: save it, then sign in from its card.
    pub needs_auth: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProbedTool {
    pub name: String,
    pub description: Option<String>,
}

/// Connects to `spec` once within its startup timeout; `typed` are secret
/// values the spec holds literally (typed, not yet stored), kept out of
/// every text the answer holds.
pub async fn probe(spec: ServerSpec, ctx: &Context, typed: &[String]) -> Probe {
    let store = ctx.secrets.clone();
    let to_resolve = spec.clone();
    let resolved = match tokio::task::spawn_blocking(move || resolve_spec(&to_resolve, store.as_ref())).await {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => Err(ConnectError::Secret(e)),
        Err(e) => Err(ConnectError::Other(format!("resolving secrets failed: {e}"))),
    };
    let mut hidden = typed.to_vec();
    if let Ok(r) = &resolved {
        hidden.extend(r.secret_values.iter().cloned());
    }
    crate::secrets::remember_secrets(&hidden);
    let (signals, _unheard) = mpsc::unbounded_channel();
    let handler = UpstreamHandler {
        server: spec.name.clone(),
        hub: ctx.hub.clone(),
        signals,
        ledger: Arc::new(ProgressLedger::default()),
        extensions: None,
    };
    let signin = ctx.oauth.signin(&spec);
    if let Some(s) = &signin {
        s.load().await;
    }
    let work = async {
        let resolved = resolved?;
        let mut established = upstream::connect(&resolved.spec, handler, signin, None).await?;
        let listed = list_all(&established.peer).await;
        established.running.cancellation_token().cancel();
        if let Some(group) = established.group.as_mut() {
            group.stop(crate::os::process::STOP_GRACE).await;
        }
        listed.map_err(|e| ConnectError::from_transport(&e))
    };
    let outcome = match tokio::time::timeout(spec.timeout, work).await {
        Ok(r) => r,
        Err(_) => Err(ConnectError::Timeout(spec.timeout)),
    };
    match outcome {
        Ok((lists, _warnings)) => Probe {
            ok: true,
            tools: lists
                .tools
                .iter()
                .map(|t| ProbedTool {
                    name: t.name.to_string(),
                    description: t.description.as_ref().map(|d| redact(d, &hidden)),
                })
                .collect(),
            error: None,
            needs_auth: false,
        },
        Err(err) => {
            let needs_auth = matches!(err.kind(), FailureKind::Auth);
            let sentence = if needs_auth {
                format!(
                    "Server '{}' needs sign-in ({}); save it, then sign in from its card.",
                    spec.name,
                    err.summary()
                )
            } else {
                format!("Server '{}' did not connect: {}.", spec.name, err.summary())
            };
            Probe {
                ok: false,
                tools: Vec::new(),
                error: Some(redact(&sentence, &hidden)),
                needs_auth,
            }
        }
    }
}
