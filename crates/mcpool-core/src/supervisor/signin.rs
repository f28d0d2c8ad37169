//! The supervisor's side of sign-in, [`SignIn`]: start one (the
//! authorization URL for the browser), forget one, show it, and refresh it
//! before a wake's reconnect.

use futures::future::BoxFuture;

use super::Context;
use crate::config::{ServerSpec, TransportSpec};
use crate::lifecycle::Status;
use crate::oauth::flow::{self, Begin};
use crate::oauth::{AuthSnapshot, LoginState};
use crate::secrets::{remember_secrets, resolve_value};

/// One server's sign-in (OAuth), as its entry stands now.
pub(super) struct SignIn<'a> {
    pub ctx: &'a Context,
    pub name: &'a str,
    pub spec: ServerSpec,
}

impl SignIn<'_> {
    /// Starts signing the server in and returns the URL to open in the
    /// browser; `on_success` runs once the browser comes back.
    pub async fn begin(&self, on_success: BoxFuture<'static, ()>) -> Result<String, String> {
        let spec = &self.spec;
        let Some(signin) = self.ctx.oauth.signin(spec) else {
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
        let resolved = super::cache::resolve(self.ctx, spec)
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
            self.name, "signin", "started", None,
        ));
        Ok(url)
    }

    /// Forgets the server's tokens.
    pub async fn forget(&self) -> Result<(), String> {
        let Some(signin) = self.ctx.oauth.signin(&self.spec) else {
            return Err(format!("Server '{}' does not sign in.", self.name));
        };
        signin.load().await;
        signin.forget().await;
        tracing::info!(server = %self.name, "signed out");
        self.ctx.activity.record(crate::activity::Entry::server_event(
            self.name,
            "signin",
            "signed_out",
            None,
        ));
        Ok(())
    }

    /// What `/api/servers` shows of the sign-in: only for a server that is
    /// signed in, needs it, or has a sign-in going.
    pub fn snapshot(&self, status: Status) -> Option<AuthSnapshot> {
        let signin = self.ctx.oauth.signin(&self.spec)?;
        let snapshot = signin.snapshot();
        (snapshot.signed_in || status == Status::NeedsAuth || snapshot.login != LoginState::Idle).then_some(snapshot)
    }

    /// A fingerprint-ready id of the signed-in credential (issuer and
    /// client), for the cache identity.
    pub fn credential_id(&self) -> Option<String> {
        let signin = self.ctx.oauth.signin(&self.spec)?;
        let record = signin.record();
        record.tokens.as_ref()?;
        let client = record.client.as_ref().map(|c| c.client_id.clone()).unwrap_or_default();
        Some(format!("{}\0{client}", record.issuer.unwrap_or_default()))
    }

    /// A token that ran out (while asleep) is refreshed, so the next
    /// connection needs no browser.
    pub async fn refresh(&self) {
        if let Some(signin) = self.ctx.oauth.signin(&self.spec) {
            signin.refresh_if_due().await;
        }
    }
}
