//! One server's sign-in: its record in memory and in the OS keyring, the
//! bearer token for each request, and refreshes one at a time.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use futures::future::BoxFuture;
use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};
use serde::Serialize;

use super::tokens::{now_epoch_secs, token_state, Record, RefreshError, TokenState};
use crate::config::OAuthSpec;
use crate::secrets::{remember_secrets, SecretError, SecretStore};
use crate::sync::lock;

/// Gets a new access token for a signed-in server; the result lands in the
/// server's record through [`RecordStore`] or [`Signin::set_tokens`].
pub trait Refresher: Send + Sync {
    fn refresh<'a>(&'a self, signin: &'a Arc<Signin>) -> BoxFuture<'a, Result<(), RefreshError>>;

    /// Keeps the manager a sign-in just used, so the first refresh needs no
    /// discovery.
    fn adopt(&self, _manager: rmcp::transport::auth::AuthorizationManager) {}
}

/// Where a sign-in started from `/api/servers/{name}/login` stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoginState {
    Idle,
    /// The browser has the authorization URL; the redirect has not come.
    Waiting,
    Succeeded,
    Failed,
}

/// How many times a server may ask for more scopes (`403
/// insufficient_scope`) without the set growing before mcpool stops asking
/// the user to sign in again for it.
pub const MAX_STEP_UPS: u32 = 3;

#[derive(Default)]
pub(crate) struct StepUp {
    /// Scopes the server asked for beyond the grant, to add at the next sign-in.
    pub scopes: Vec<String>,
    pub stalled: u32,
}

pub(crate) struct Login {
    pub state: LoginState,
    pub error: Option<String>,
}

/// The non-secret view of a sign-in that `/api/servers` shows.
#[derive(Debug, Clone, Serialize)]
pub struct AuthSnapshot {
    pub signed_in: bool,
    pub issuer: Option<String>,
    /// Epoch seconds at which the access token ends, when the server says.
    pub expires_at: Option<u64>,
    pub token: Option<TokenState>,
    pub refreshing: bool,
    pub login: LoginState,
    pub login_error: Option<String>,
    /// False when no keyring is reachable: the sign-in lasts until mcpool stops.
    pub stored: bool,
}

pub struct Signin {
    pub(crate) server: String,
    pub(crate) url: String,
    entry: String,
    store: Arc<dyn SecretStore>,
    record: Mutex<Record>,
    loaded: tokio::sync::OnceCell<()>,
    persistent: AtomicBool,
    persist_turn: tokio::sync::Mutex<()>,
    refresh_turn: tokio::sync::Mutex<()>,
    refreshing: AtomicBool,
    refreshes: AtomicU64,
    refresher: Box<dyn Refresher>,
    clock: Box<dyn Fn() -> u64 + Send + Sync>,
    pub(crate) spec: Mutex<Option<OAuthSpec>>,
    pub(crate) login: Mutex<Login>,
    /// The sign-in in progress: its redirect listener and code exchange.
    pub(crate) flow: Mutex<Option<tokio::task::JoinHandle<()>>>,
    pub(crate) step_up: Mutex<StepUp>,
    /// The server's last `WWW-Authenticate` challenge, for the next sign-in.
    pub(crate) challenge: Mutex<Option<String>>,
}

impl Drop for Signin {
    fn drop(&mut self) {
        if let Some(flow) = lock(&self.flow).take() {
            flow.abort();
        }
    }
}

impl Signin {
    pub fn new(
        server: &str,
        url: &str,
        entry: String,
        store: Arc<dyn SecretStore>,
        refresher: Box<dyn Refresher>,
    ) -> Arc<Self> {
        Self::with_clock(server, url, entry, store, refresher, Box::new(now_epoch_secs))
    }

    /// As [`Signin::new`] with a wall clock of the caller's (tests).
    pub fn with_clock(
        server: &str,
        url: &str,
        entry: String,
        store: Arc<dyn SecretStore>,
        refresher: Box<dyn Refresher>,
        clock: Box<dyn Fn() -> u64 + Send + Sync>,
    ) -> Arc<Self> {
        Arc::new(Signin {
            server: server.to_string(),
            url: url.to_string(),
            entry,
            store,
            record: Mutex::default(),
            loaded: tokio::sync::OnceCell::new(),
            persistent: AtomicBool::new(true),
            persist_turn: tokio::sync::Mutex::new(()),
            refresh_turn: tokio::sync::Mutex::new(()),
            refreshing: AtomicBool::new(false),
            refreshes: AtomicU64::new(0),
            refresher,
            clock,
            spec: Mutex::new(None),
            login: Mutex::new(Login {
                state: LoginState::Idle,
                error: None,
            }),
            flow: Mutex::new(None),
            step_up: Mutex::default(),
            challenge: Mutex::new(None),
        })
    }

    pub(crate) fn now(&self) -> u64 {
        (self.clock)()
    }

    /// Reads the keyring entry once (off the runtime: the keyring blocks).
    pub async fn load(&self) {
        self.loaded
            .get_or_init(|| async {
                let store = self.store.clone();
                let entry = self.entry.clone();
                let read = tokio::task::spawn_blocking(move || store.get(&entry)).await;
                let record = match read {
                    Ok(Ok(Some(json))) => serde_json::from_str::<Record>(&json).unwrap_or_default(),
                    Ok(Ok(None)) => Record::default(),
                    Ok(Err(e)) => {
                        self.keyring_failed(&e);
                        Record::default()
                    }
                    Err(_) => Record::default(),
                };
                remember_secrets(&record.secret_values());
                let mut current = lock(&self.record);
                // A sign-in that finished meanwhile is newer than the keyring.
                if current.tokens.is_none() && current.client.is_none() {
                    *current = record;
                }
            })
            .await;
    }

    fn keyring_failed(&self, e: &SecretError) {
        if self.persistent.swap(false, Ordering::Relaxed) {
            tracing::warn!(
                server = %self.server,
                "{e}; the sign-in is kept in memory only and ends when mcpool stops"
            );
        }
    }

    pub(crate) fn record(&self) -> Record {
        lock(&self.record).clone()
    }

    /// Changes the record and writes it to the keyring (an empty record
    /// deletes the entry). Writes happen in order: the last one holds the
    /// newest record.
    pub(crate) async fn update(&self, change: impl FnOnce(&mut Record)) {
        {
            let mut record = lock(&self.record);
            change(&mut record);
            remember_secrets(&record.secret_values());
        }
        let _turn = self.persist_turn.lock().await;
        let record = self.record();
        let empty = record.tokens.is_none() && record.client.is_none() && record.issuer.is_none();
        let json = match serde_json::to_string(&record) {
            Ok(j) => j,
            Err(_) => return,
        };
        let store = self.store.clone();
        let entry = self.entry.clone();
        let written = tokio::task::spawn_blocking(move || {
            if empty {
                store.delete(&entry).map(drop)
            } else {
                store.set(&entry, &json)
            }
        })
        .await;
        if let Ok(Err(e)) = written {
            self.keyring_failed(&e);
        }
    }

    pub(crate) async fn set_tokens(&self, tokens: Option<StoredCredentials>) {
        self.update(|r| r.tokens = tokens).await;
    }

    /// The current access token and its state, if signed in.
    pub fn current(&self) -> Option<(String, TokenState)> {
        let (token, received, lifetime) = lock(&self.record).access()?;
        Some((token, token_state(received, lifetime, self.now())))
    }

    pub fn signed_in(&self) -> bool {
        lock(&self.record).access().is_some()
    }

    /// How many refreshes were made (for tests and the log).
    pub fn refresh_count(&self) -> u64 {
        self.refreshes.load(Ordering::Relaxed)
    }

    /// The token for the next request: `None` when not signed in (the
    /// request goes without, and the server's 401 says what to do). A token
    /// near its end is refreshed first; a refused refresh is
    /// [`AuthError::AuthorizationRequired`], which makes the server
    /// `needs_auth`.
    pub async fn bearer(self: &Arc<Self>) -> Result<Option<String>, AuthError> {
        self.load().await;
        let Some((token, state)) = self.current() else {
            return Ok(None);
        };
        match state {
            TokenState::Fresh => Ok(Some(token)),
            // Still valid: a failed early refresh keeps using it.
            TokenState::Expiring => Ok(Some(self.refresh_after(&token).await.unwrap_or(token))),
            TokenState::Expired => self.refresh_after(&token).await.map(Some).map_err(auth_error),
        }
    }

    /// After the server refused `sent`: the newer token another request
    /// already got, or one refresh.
    pub async fn after_rejection(self: &Arc<Self>, sent: &str) -> Result<String, AuthError> {
        self.refresh_after(sent).await.map_err(auth_error)
    }

    /// Refreshes unless it is no longer needed, so the token is refreshed at
    /// most once for all requests waiting here (a rotating refresh token is
    /// used once).
    pub async fn refresh_after(self: &Arc<Self>, seen: &str) -> Result<String, RefreshError> {
        let _turn = self.refresh_turn.lock().await;
        match self.current() {
            None => return Err(RefreshError::Rejected("signed out".into())),
            Some((token, state)) if token != seen && state != TokenState::Expired => return Ok(token),
            Some(_) => {}
        }
        self.refreshing.store(true, Ordering::Relaxed);
        self.refreshes.fetch_add(1, Ordering::Relaxed);
        let result = self.refresher.refresh(self).await;
        self.refreshing.store(false, Ordering::Relaxed);
        match result {
            Ok(()) => match self.current() {
                Some((token, _)) => {
                    tracing::info!(server = %self.server, "sign-in refreshed");
                    Ok(token)
                }
                None => Err(RefreshError::Rejected("no token after the refresh".into())),
            },
            Err(e @ RefreshError::Rejected(_)) => {
                // Forget the refused tokens: the next request goes without
                // and the server's 401 makes it needs_auth, once.
                tracing::warn!(server = %self.server, "{e}; sign in again");
                self.set_tokens(None).await;
                Err(e)
            }
            Err(e) => {
                tracing::warn!(server = %self.server, "{e}");
                Err(e)
            }
        }
    }

    /// Before a wake's reconnect: refresh a token that ran out while asleep.
    pub async fn refresh_if_due(self: &Arc<Self>) {
        self.load().await;
        if let Some((token, TokenState::Expiring | TokenState::Expired)) = self.current() {
            let _ = self.refresh_after(&token).await;
        }
    }

    /// Forgets the tokens (the client registration stays for the next sign-in).
    pub async fn forget(&self) {
        if let Some(flow) = lock(&self.flow).take() {
            flow.abort();
        }
        *lock(&self.step_up) = StepUp::default();
        {
            let mut login = lock(&self.login);
            login.state = LoginState::Idle;
            login.error = None;
        }
        self.set_tokens(None).await;
    }

    /// A `403 insufficient_scope` asking for `required`: remembers the scopes
    /// for the next sign-in. Returns false once the server keeps asking
    /// without the set growing (bounded step-up).
    pub fn step_up(&self, required: Option<&str>) -> bool {
        let granted: Vec<String> = lock(&self.record)
            .tokens
            .as_ref()
            .map(|t| t.granted_scopes.clone())
            .unwrap_or_default();
        let mut step = lock(&self.step_up);
        let mut union: Vec<String> = granted;
        for s in step
            .scopes
            .iter()
            .map(String::as_str)
            .chain(required.unwrap_or("").split_whitespace())
        {
            if !union.iter().any(|u| u == s) {
                union.push(s.to_string());
            }
        }
        let grew = union.iter().any(|s| !step.scopes.contains(s));
        if !grew {
            step.stalled += 1;
        }
        step.scopes = union;
        step.stalled < MAX_STEP_UPS
    }

    pub(crate) fn adopt(&self, manager: rmcp::transport::auth::AuthorizationManager) {
        self.refresher.adopt(manager);
    }

    /// Keeps a server's challenge (a 401's or 403's `WWW-Authenticate`).
    pub fn note_challenge(&self, header: &str) {
        *lock(&self.challenge) = Some(header.to_string());
    }

    pub(crate) fn set_login(&self, state: LoginState, error: Option<String>) {
        let mut login = lock(&self.login);
        login.state = state;
        login.error = error;
    }

    pub fn snapshot(&self) -> AuthSnapshot {
        let record = self.record();
        let login = lock(&self.login);
        AuthSnapshot {
            signed_in: record.access().is_some(),
            issuer: record.issuer.clone(),
            expires_at: record.expires_at(),
            token: self.current().map(|(_, s)| s),
            refreshing: self.refreshing.load(Ordering::Relaxed),
            login: login.state.clone(),
            login_error: login.error.clone(),
            stored: self.persistent.load(Ordering::Relaxed),
        }
    }
}

fn auth_error(e: RefreshError) -> AuthError {
    match e {
        RefreshError::Rejected(_) => AuthError::AuthorizationRequired,
        RefreshError::Failed(m) => AuthError::TokenRefreshFailed(m),
    }
}

/// rmcp's credential store over a sign-in's record, so the tokens rmcp gets
/// (code exchange, refresh) go straight to the keyring.
pub struct RecordStore(pub Weak<Signin>);

#[async_trait::async_trait]
impl CredentialStore for RecordStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        Ok(self.0.upgrade().and_then(|s| s.record().tokens))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        match self.0.upgrade() {
            Some(s) => {
                s.set_tokens(Some(credentials)).await;
                Ok(())
            }
            None => Err(AuthError::CredentialStoreError("the server was removed".into())),
        }
    }

    async fn clear(&self) -> Result<(), AuthError> {
        if let Some(s) = self.0.upgrade() {
            s.set_tokens(None).await;
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "signin_tests.rs"]
mod tests;
