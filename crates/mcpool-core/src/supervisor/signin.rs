//! The supervisor's side of sign-in: start one (the authorization URL for
//! the browser), forget one, show it, and refresh it before a wake's
//! reconnect.

use std::sync::Arc;

use futures::FutureExt;

use super::Supervisor;
use crate::config::TransportSpec;
use crate::lifecycle::Status;
use crate::oauth::flow::{self, Begin};
use crate::oauth::{AuthSnapshot, LoginState};
use crate::secrets::{remember_secrets, resolve_value};

impl Supervisor {
    /// Starts signing this server in and returns the URL to open in the
    /// browser; once the browser comes back the server connects at once.
    pub async fn login(self: &Arc<Self>) -> Result<String, String> {
        let spec = self.spec();
        let Some(signin) = self.ctx.oauth.signin(&spec) else {
            return Err(match spec.transport {
                TransportSpec::Stdio { .. } => {
                    format!("Server '{}' is a local server; only remote servers sign in.", self.name)
                }
                _ => format!(
                    "Server '{}' sends the Authorization header from the mcpool config; it does not sign in.",
                    self.name
                ),
            });
        };
        let resolved = self
            .resolve(&spec)
            .await
            .map_err(|e| format!("Signing in to '{}' failed: {e}.", self.name))?;
        let headers = match resolved.spec.transport {
            TransportSpec::Http { headers, .. } | TransportSpec::Sse { headers, .. } => headers,
            TransportSpec::Stdio { .. } => Default::default(),
        };
        let client_secret = match spec.oauth.as_ref().and_then(|o| o.client_secret.clone()) {
            Some(value) => {
                let store = self.ctx.secrets.clone();
                let secret = tokio::task::spawn_blocking(move || resolve_value(&value, store.as_ref()))
                    .await
                    .map_err(|e| e.to_string())?
                    .map_err(|e| format!("Signing in to '{}' failed: {e}.", self.name))?;
                remember_secrets(std::slice::from_ref(&secret));
                Some(secret)
            }
            None => None,
        };
        let this = Arc::downgrade(self);
        let on_success = async move {
            if let Some(sup) = this.upgrade() {
                sup.ctx.activity.record(crate::activity::Entry::server_event(
                    &sup.name,
                    "signin",
                    "signed_in",
                    None,
                ));
                let _ = sup.reconnect().await;
            }
        }
        .boxed();
        let begin = Begin {
            client_metadata_url: self.ctx.oauth.client_metadata_url(),
            client_secret,
            headers,
            on_success,
        };
        let url = flow::begin(&signin, begin)
            .await
            .map_err(|e| format!("Signing in to '{}' failed: {}.", self.name, e.trim_end_matches('.')))?;
        self.ctx.activity.record(crate::activity::Entry::server_event(
            &self.name, "signin", "started", None,
        ));
        self.notify_status();
        Ok(url)
    }

    /// Forgets this server's tokens and reconnects it without them (a server
    /// that needs them is `needs_auth` again).
    pub async fn logout(self: &Arc<Self>) -> Result<(), String> {
        let spec = self.spec();
        let Some(signin) = self.ctx.oauth.signin(&spec) else {
            return Err(format!("Server '{}' does not sign in.", self.name));
        };
        signin.load().await;
        signin.forget().await;
        tracing::info!(server = %self.name, "signed out");
        self.ctx.activity.record(crate::activity::Entry::server_event(
            &self.name,
            "signin",
            "signed_out",
            None,
        ));
        let disabled = self.status() == Status::Disabled;
        if !disabled {
            let _ = self.reconnect().await;
        }
        Ok(())
    }

    /// What `/api/servers` shows of the sign-in: only for a server that is
    /// signed in, needs it, or has a sign-in going.
    pub(super) fn auth_snapshot(&self, status: Status) -> Option<AuthSnapshot> {
        let spec = self.spec();
        let signin = self.ctx.oauth.signin(&spec)?;
        let snapshot = signin.snapshot();
        (snapshot.signed_in || status == Status::NeedsAuth || snapshot.login != LoginState::Idle).then_some(snapshot)
    }

    /// A fingerprint-ready id of the signed-in credential (issuer and
    /// client), for the cache identity.
    pub(super) fn credential_id(&self) -> Option<String> {
        let signin = self.ctx.oauth.signin(&self.spec())?;
        let record = signin.record();
        record.tokens.as_ref()?;
        let client = record.client.as_ref().map(|c| c.client_id.clone()).unwrap_or_default();
        Some(format!("{}\0{client}", record.issuer.unwrap_or_default()))
    }

    /// Before a wake's reconnect: a token that ran out while asleep is
    /// refreshed first, so the laptop comes back signed in.
    pub async fn refresh_signin(&self) {
        if let Some(signin) = self.ctx.oauth.signin(&self.spec()) {
            signin.refresh_if_due().await;
        }
    }
}
