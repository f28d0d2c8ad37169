//! What one server's sign-in keeps (the keyring record) and the pure rule
//! for when its access token needs a refresh.

use oauth2::TokenResponse;
use rmcp::transport::auth::StoredCredentials;
use serde::{Deserialize, Serialize};

/// Where an access token stands at a moment (wall-clock seconds, so a night
/// of sleep counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenState {
    /// Good for a while, or the server gave no lifetime.
    Fresh,
    /// Still valid, but close enough to its end to refresh first.
    Expiring,
    Expired,
}

/// The longest margin before expiry at which a token is refreshed: one
/// minute, or half its lifetime when that is shorter, so a token that lives
/// 10 s is not refreshed on every request.
pub const REFRESH_MARGIN_SECS: u64 = 60;

/// The state of a token received at `received_at` that lives `expires_in`
/// seconds, at `now` (all epoch seconds).
pub fn token_state(received_at: Option<u64>, expires_in: Option<u64>, now: u64) -> TokenState {
    let (Some(received), Some(lifetime)) = (received_at, expires_in) else {
        return TokenState::Fresh;
    };
    let expires_at = received.saturating_add(lifetime);
    if now >= expires_at {
        return TokenState::Expired;
    }
    let margin = REFRESH_MARGIN_SECS.min(lifetime / 2);
    if expires_at - now <= margin {
        TokenState::Expiring
    } else {
        TokenState::Fresh
    }
}

/// The client the tokens belong to, as it was used to sign in: configured,
/// a client ID metadata document URL, or registered dynamically.
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ClientCreds {
    pub client_id: String,
    pub client_secret: Option<String>,
    /// The redirect URI it was registered with (dynamic registration only).
    pub redirect_uri: Option<String>,
    pub kind: ClientKind,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ClientKind {
    Configured,
    MetadataDocument,
    Registered,
}

/// One keyring entry per server identity (name + URL): the authorization
/// server it signed in with, that server's client, and the tokens.
#[derive(Clone, Default, Serialize, Deserialize)]
pub struct Record {
    pub issuer: Option<String>,
    pub client: Option<ClientCreds>,
    pub tokens: Option<StoredCredentials>,
}

impl Record {
    /// The access token and when it was received and lasts, if signed in.
    pub fn access(&self) -> Option<(String, Option<u64>, Option<u64>)> {
        let creds = self.tokens.as_ref()?;
        let response = creds.token_response.as_ref()?;
        Some((
            response.access_token().secret().to_string(),
            creds.token_received_at,
            response.expires_in().map(|d| d.as_secs()),
        ))
    }

    /// Epoch seconds at which the access token ends, when it says.
    pub fn expires_at(&self) -> Option<u64> {
        let (_, received, lifetime) = self.access()?;
        Some(received?.saturating_add(lifetime?))
    }

    /// Every secret value in the record, for the log redaction set.
    pub fn secret_values(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(c) = &self.client {
            out.extend(c.client_secret.clone());
        }
        if let Some(r) = self.tokens.as_ref().and_then(|t| t.token_response.as_ref()) {
            out.push(r.access_token().secret().to_string());
            out.extend(r.refresh_token().map(|t| t.secret().to_string()));
        }
        out
    }
}

/// Why a refresh did not give a new token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RefreshError {
    /// The authorization server refused the refresh token (`invalid_grant`),
    /// or there is none: only a new sign-in helps.
    #[error("the sign-in expired ({0})")]
    Rejected(String),
    /// Anything else (network, the server down): try again later.
    #[error("refreshing the sign-in failed: {0}")]
    Failed(String),
}

pub fn now_epoch_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_state_follows_the_wall_clock() {
        // An hour-long token: fresh until its last minute.
        assert_eq!(token_state(Some(1000), Some(3600), 1000), TokenState::Fresh);
        assert_eq!(token_state(Some(1000), Some(3600), 4539), TokenState::Fresh);
        assert_eq!(token_state(Some(1000), Some(3600), 4540), TokenState::Expiring);
        assert_eq!(token_state(Some(1000), Some(3600), 4600), TokenState::Expired);
        // A night asleep: long expired.
        assert_eq!(token_state(Some(1000), Some(3600), 40_000), TokenState::Expired);
        // A short token: the margin is half its life.
        assert_eq!(token_state(Some(0), Some(10), 4), TokenState::Fresh);
        assert_eq!(token_state(Some(0), Some(10), 5), TokenState::Expiring);
        assert_eq!(token_state(Some(0), Some(10), 10), TokenState::Expired);
        // No lifetime given: used until the server refuses it.
        assert_eq!(token_state(Some(0), None, u64::MAX), TokenState::Fresh);
        assert_eq!(token_state(None, Some(10), u64::MAX), TokenState::Fresh);
    }
}
