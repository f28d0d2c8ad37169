//! Refreshing a sign-in with rmcp's `AuthorizationManager`: the token
//! request with the `resource` indicator, the client's authentication
//! method, and `invalid_grant` told apart from a passing failure.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use futures::FutureExt;
use rmcp::transport::auth::{AuthError, AuthorizationManager, OAuthClientConfig};

use super::signin::{RecordStore, Refresher, Signin};
use super::tokens::RefreshError;
use crate::sync::lock;

/// The production [`Refresher`]: the manager from the last sign-in, or one
/// set up again by discovery after a restart.
#[derive(Default)]
pub struct ManagerRefresher {
    manager: Mutex<Option<Arc<AuthorizationManager>>>,
}

impl Refresher for ManagerRefresher {
    fn refresh<'a>(&'a self, signin: &'a Arc<Signin>) -> BoxFuture<'a, Result<(), RefreshError>> {
        async move {
            let kept = lock(&self.manager).clone();
            let manager = match kept {
                Some(m) => m,
                None => {
                    let m = Arc::new(rebuild(signin).await?);
                    *lock(&self.manager) = Some(m.clone());
                    m
                }
            };
            match manager.refresh_token().await {
                Ok(_) => Ok(()),
                Err(AuthError::TokenRefreshRejected(m)) => Err(RefreshError::Rejected(short(&m))),
                Err(AuthError::AuthorizationRequired) => Err(RefreshError::Rejected("no refresh token".into())),
                Err(e) => {
                    // Discover again next time: the server may have moved.
                    *lock(&self.manager) = None;
                    Err(RefreshError::Failed(short(&e.to_string())))
                }
            }
        }
        .boxed()
    }

    fn adopt(&self, manager: AuthorizationManager) {
        *lock(&self.manager) = Some(Arc::new(manager));
    }
}

/// A manager for a stored sign-in: discovery again (for the token endpoint
/// and the resource), then the client that signed in.
async fn rebuild(signin: &Arc<Signin>) -> Result<AuthorizationManager, RefreshError> {
    let record = signin.record();
    let Some(client) = record.client else {
        return Err(RefreshError::Rejected("no client is recorded".into()));
    };
    let failed = |e: AuthError| RefreshError::Failed(short(&e.to_string()));
    let mut manager = AuthorizationManager::new_allowing_private_addresses(signin.url.as_str())
        .await
        .map_err(failed)?;
    manager.set_credential_store(RecordStore(Arc::downgrade(signin)));
    let resolution = manager.resolve_metadata().await.map_err(failed)?;
    if let (Some(was), Some(now)) = (&record.issuer, &resolution.metadata.issuer) {
        if was != now {
            return Err(RefreshError::Rejected(format!(
                "the authorization server changed from {was} to {now}"
            )));
        }
    }
    manager.set_metadata(resolution.metadata);
    let redirect = client
        .redirect_uri
        .clone()
        .unwrap_or_else(|| "http://127.0.0.1/callback".into());
    let mut config = OAuthClientConfig::new(client.client_id, redirect);
    if let Some(secret) = client.client_secret {
        config = config.with_client_secret(secret);
    }
    manager.configure_client(config).map_err(failed)?;
    Ok(manager)
}

/// An authorization server's error text, one line and bounded.
pub(crate) fn short(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(300) {
        Some((at, _)) => format!("{}…", &one_line[..at]),
        None => one_line,
    }
}
