use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use oauth2::basic::BasicTokenType;
use oauth2::{AccessToken, RefreshToken};
use rmcp::transport::auth::{OAuthTokenResponse, VendorExtraTokenFields};

use super::*;
use crate::secrets::MemoryStore;

static NOW: AtomicU64 = AtomicU64::new(1_000);

fn tokens(access: &str, refresh: &str, received: u64, lifetime: u64) -> StoredCredentials {
    let mut response = OAuthTokenResponse::new(
        AccessToken::new(access.into()),
        BasicTokenType::Bearer,
        VendorExtraTokenFields::default(),
    );
    response.set_refresh_token(Some(RefreshToken::new(refresh.into())));
    response.set_expires_in(Some(&Duration::from_secs(lifetime)));
    StoredCredentials::new("client".into(), Some(response), vec!["read".into()], Some(received))
}

/// A refresh that takes a while and counts itself; `refuse` answers
/// `invalid_grant`.
struct Slow {
    calls: Arc<AtomicU64>,
    refuse: bool,
}

impl Refresher for Slow {
    fn refresh<'a>(&'a self, signin: &'a Arc<Signin>) -> BoxFuture<'a, Result<(), RefreshError>> {
        Box::pin(async move {
            let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
            tokio::time::sleep(Duration::from_millis(300)).await;
            if self.refuse {
                return Err(RefreshError::Rejected("invalid_grant".into()));
            }
            let now = signin.now();
            signin
                .set_tokens(Some(tokens(&format!("access-{n}"), &format!("refresh-{n}"), now, 3600)))
                .await;
            Ok(())
        })
    }
}

fn signin(store: &MemoryStore, refuse: bool) -> (Arc<Signin>, Arc<AtomicU64>) {
    let calls = Arc::new(AtomicU64::new(0));
    let s = Signin::with_clock(
        "srv",
        "https://srv.test/mcp",
        "__mcpool_oauth_test".into(),
        Arc::new(store.clone()),
        Box::new(Slow {
            calls: calls.clone(),
            refuse,
        }),
        Box::new(|| NOW.load(Ordering::SeqCst)),
    );
    (s, calls)
}

#[tokio::test(start_paused = true)]
async fn parallel_requests_across_an_expiry_refresh_once() {
    let store = MemoryStore::default();
    let (s, calls) = signin(&store, false);
    s.set_tokens(Some(tokens("access-0", "refresh-0", 1_000, 60))).await;
    assert_eq!(s.bearer().await.unwrap().as_deref(), Some("access-0"));
    // The token's minute is over for every caller at once.
    NOW.store(1_100, Ordering::SeqCst);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..10 {
        let s = s.clone();
        tasks.spawn(async move { s.bearer().await.unwrap() });
    }
    while let Some(got) = tasks.join_next().await {
        assert_eq!(got.unwrap().as_deref(), Some("access-1"));
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // A 401 to a token that another request already replaced: no refresh.
    assert_eq!(s.after_rejection("access-0").await.unwrap(), "access-1");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // A 401 to the current token: one refresh.
    assert_eq!(s.after_rejection("access-1").await.unwrap(), "access-2");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    // The keyring holds the newest record, never an older one.
    let stored: Record = serde_json::from_str(&store.dump()["__mcpool_oauth_test"]).unwrap();
    assert_eq!(stored.access().unwrap().0, "access-2");
    NOW.store(1_000, Ordering::SeqCst);
}

#[tokio::test(start_paused = true)]
async fn a_refused_refresh_signs_out_once_and_is_not_retried() {
    let store = MemoryStore::default();
    let (s, calls) = signin(&store, true);
    s.set_tokens(Some(tokens("old", "gone", 0, 60))).await;
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..5 {
        let s = s.clone();
        tasks.spawn(async move { s.bearer().await });
    }
    let mut refused = 0;
    let mut without = 0;
    while let Some(got) = tasks.join_next().await {
        match got.unwrap() {
            Err(AuthError::AuthorizationRequired) => refused += 1,
            Ok(None) => without += 1,
            other => panic!("{other:?}"),
        }
    }
    // One refresh; the others find the tokens gone (signed out).
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(refused + without, 5);
    assert!(!s.signed_in());
    assert!(!store.dump().contains_key("__mcpool_oauth_test"));
    // Later requests go without a token and never refresh again.
    assert_eq!(s.bearer().await.unwrap(), None);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn without_a_keyring_the_sign_in_lives_in_memory() {
    let store = MemoryStore::unavailable();
    let (s, _) = signin(&store, false);
    s.load().await;
    s.set_tokens(Some(tokens("mem", "r", NOW.load(Ordering::SeqCst), 3600)))
        .await;
    assert_eq!(s.bearer().await.unwrap().as_deref(), Some("mem"));
    let snap = s.snapshot();
    assert!(snap.signed_in && !snap.stored);
}

#[tokio::test]
async fn step_up_asks_for_the_union_and_stops_when_it_stops_growing() {
    let store = MemoryStore::default();
    let (s, _) = signin(&store, false);
    s.set_tokens(Some(tokens("a", "r", 0, 3600))).await;
    assert!(s.step_up(Some("write")));
    assert_eq!(s.step_up.lock().unwrap().scopes, vec!["read", "write"]);
    assert!(s.step_up(Some("admin")));
    assert_eq!(s.step_up.lock().unwrap().scopes, vec!["read", "write", "admin"]);
    // The server keeps asking for what it was given: bounded.
    let asks: Vec<bool> = (0..MAX_STEP_UPS).map(|_| s.step_up(Some("write"))).collect();
    assert_eq!(asks.last(), Some(&false));
}

#[tokio::test]
async fn tokens_reach_the_log_redaction_set() {
    let store = MemoryStore::default();
    let (s, _) = signin(&store, false);
    s.set_tokens(Some(tokens("tok-access-redact-me", "tok-refresh-redact-me", 0, 3600)))
        .await;
    let line = crate::secrets::redact_resolved("sent tok-access-redact-me and tok-refresh-redact-me");
    assert_eq!(line, "sent [secret] and [secret]");
}
