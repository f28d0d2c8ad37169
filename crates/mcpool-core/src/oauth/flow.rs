//! Signing in: the server's challenge, discovery (rmcp: protected-resource
//! metadata, authorization-server metadata, the 2025-03-26 fallbacks), the
//! client identity, the loopback redirect and the code exchange.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::transport::auth::{AuthorizationManager, AuthorizationMetadata, AuthorizationRequest, AuthorizationSession};

use super::callback::{self, check_iss, CALLBACK_PATH};
use super::refresh::short;
use super::signin::{LoginState, RecordStore, Signin};
use super::tokens::{ClientCreds, ClientKind};
use crate::sync::lock;

/// How long the browser has to come back with the redirect.
pub const BROWSER_WAIT: Duration = Duration::from_secs(300);

/// What a sign-in needs besides the server's record.
pub struct Begin {
    /// mcpool's client ID metadata document, where servers support one.
    pub client_metadata_url: Option<String>,
    /// The configured `clientSecret`, resolved from the keyring.
    pub client_secret: Option<String>,
    /// The entry's headers (resolved), sent with the probe.
    pub headers: BTreeMap<String, String>,
    /// Runs once the tokens are stored (the server reconnects).
    pub on_success: BoxFuture<'static, ()>,
}

/// Starts a sign-in and returns the authorization URL for the browser. The
/// redirect is awaited on a task the sign-in owns (a new sign-in replaces it).
pub async fn begin(signin: &Arc<Signin>, begin: Begin) -> Result<String, String> {
    signin.load().await;
    let spec = lock(&signin.spec).clone().unwrap_or_default();
    let url = signin.url.clone();
    let noted = lock(&signin.challenge).take();
    let challenge = match noted {
        Some(c) => Some(c),
        None => probe(&url, &begin.headers).await?,
    };
    let mut manager = AuthorizationManager::new_allowing_private_addresses(url.as_str())
        .await
        .map_err(|e| format!("invalid server URL: {e}"))?;
    manager.set_credential_store(RecordStore(Arc::downgrade(signin)));
    let resolution = manager
        .resolve_metadata_from_challenge(challenge.as_deref())
        .await
        .map_err(|e| format!("cannot find how to sign in to {url}: {}", short(&e.to_string())))?;
    let metadata = resolution.metadata.clone();
    manager.set_metadata(resolution.metadata);
    let issuer = metadata.issuer.clone();
    let record = signin.record();
    let same_issuer = record.issuer == issuer;

    // A client registered before keeps its redirect port where it can.
    let registered = record
        .client
        .clone()
        .filter(|c| c.kind == ClientKind::Registered && same_issuer && spec.client_id.is_none());
    let stored_port = registered
        .as_ref()
        .and_then(|c| c.redirect_uri.as_deref())
        .and_then(|u| url::Url::parse(u).ok())
        .and_then(|u| u.port());
    let listener = match (spec.redirect_port, stored_port) {
        (Some(port), _) => callback::bind(Some(port)).await.map_err(|e| {
            format!("cannot listen on 127.0.0.1:{port} for the sign-in redirect (oauth.redirectPort): {e}")
        })?,
        (None, Some(port)) => match callback::bind(Some(port)).await {
            Ok(l) => l,
            Err(_) => callback::bind(None)
                .await
                .map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?,
        },
        (None, None) => callback::bind(None)
            .await
            .map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?,
    };
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let redirect_uri = format!("http://127.0.0.1:{port}{CALLBACK_PATH}");

    // Scopes: configured, else the step-up union, else the challenge's,
    // else the resource's `scopes_supported`, else none.
    let step_up = lock(&signin.step_up).scopes.clone();
    let scopes = match (&spec.scopes, step_up.is_empty()) {
        (Some(configured), _) => configured.clone(),
        (None, false) => step_up,
        (None, true) => manager.select_initial_scopes(&[]).await,
    };

    let client = choose_client(
        &mut manager,
        &metadata,
        &spec,
        (begin.client_secret.clone(), begin.client_metadata_url.clone()),
        registered,
        &redirect_uri,
        &scopes,
    )
    .await?;
    let mut request = AuthorizationRequest::new(redirect_uri.clone())
        .with_client_name("mcpool")
        .with_application_type("native");
    request = if scopes.is_empty() {
        request.with_initial_scope_selection()
    } else {
        request.with_scopes(scopes.clone())
    };
    request = match client.kind {
        ClientKind::MetadataDocument => request.with_client_metadata_url(client.client_id.clone()),
        _ => {
            let r = request.with_preregistered_client(client.client_id.clone());
            match &client.client_secret {
                Some(s) => r.with_client_secret(s.clone()),
                None => r,
            }
        }
    };
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| format!("cannot start the sign-in: {}", short(&e.to_string())))?;
    let authorize_url = session.get_authorization_url().to_string();
    let state = url::Url::parse(&authorize_url)
        .ok()
        .and_then(|u| u.query_pairs().find(|(k, _)| k == "state").map(|(_, v)| v.into_owned()))
        .ok_or("the authorization URL has no state")?;
    let advertised = flag(&metadata, "authorization_response_iss_parameter_supported");

    let task = {
        let signin = signin.clone();
        let on_success = begin.on_success;
        async move {
            let outcome = async {
                let callback =
                    match tokio::time::timeout(BROWSER_WAIT, callback::wait(listener, &state, &signin.server)).await {
                        Ok(r) => r?,
                        Err(_) => {
                            return Err(format!(
                                "no answer from the browser within {} minutes; start the sign-in again",
                                BROWSER_WAIT.as_secs() / 60
                            ))
                        }
                    };
                check_iss(issuer.as_deref(), advertised, callback.iss.as_deref())?;
                session
                    .handle_callback_with_issuer(&callback.code, &callback.state, callback.iss.as_deref())
                    .await
                    .map_err(|e| format!("the authorization server gave no token: {}", short(&e.to_string())))?;
                Ok(session.auth_manager)
            }
            .await;
            match outcome {
                Ok(manager) => {
                    signin
                        .update(|r| {
                            r.issuer = issuer;
                            r.client = Some(client);
                        })
                        .await;
                    signin.adopt(manager);
                    tracing::info!(server = %signin.server, "signed in");
                    on_success.await;
                    signin.set_login(LoginState::Succeeded, None);
                }
                Err(e) => {
                    tracing::warn!(server = %signin.server, "sign-in failed: {e}");
                    signin.set_login(LoginState::Failed, Some(e));
                }
            }
        }
    };
    signin.set_login(LoginState::Waiting, None);
    if let Some(previous) = lock(&signin.flow).replace(tokio::spawn(task)) {
        previous.abort();
    }
    Ok(authorize_url)
}

/// Client identity in order: configured, the client ID metadata document
/// where the server supports it, a client this server registered before,
/// else dynamic registration (RFC 7591) as a native application.
async fn choose_client(
    manager: &mut AuthorizationManager,
    metadata: &AuthorizationMetadata,
    spec: &crate::config::OAuthSpec,
    (client_secret, client_metadata_url): (Option<String>, Option<String>),
    registered: Option<ClientCreds>,
    redirect_uri: &str,
    scopes: &[String],
) -> Result<ClientCreds, String> {
    if let Some(id) = &spec.client_id {
        return Ok(ClientCreds {
            client_id: id.clone(),
            client_secret,
            redirect_uri: None,
            kind: ClientKind::Configured,
        });
    }
    if let (true, Some(doc)) = (
        flag(metadata, "client_id_metadata_document_supported"),
        client_metadata_url,
    ) {
        return Ok(ClientCreds {
            client_id: doc,
            client_secret: None,
            redirect_uri: None,
            kind: ClientKind::MetadataDocument,
        });
    }
    if let Some(c) = registered.filter(|c| c.redirect_uri.as_deref() == Some(redirect_uri)) {
        return Ok(c);
    }
    if metadata.registration_endpoint.is_none() {
        return Err(
            "the authorization server offers no client registration; set oauth.clientId for this server in the mcpool config"
                .into(),
        );
    }
    let refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
    let config = manager
        .register_client("mcpool", redirect_uri, &refs)
        .await
        .map_err(|e| {
            format!(
                "registering mcpool with the authorization server failed: {}",
                short(&e.to_string())
            )
        })?;
    Ok(ClientCreds {
        client_id: config.client_id,
        client_secret: config.client_secret,
        redirect_uri: Some(redirect_uri.to_string()),
        kind: ClientKind::Registered,
    })
}

fn flag(metadata: &AuthorizationMetadata, key: &str) -> bool {
    metadata
        .additional_fields
        .get(key)
        .and_then(|v| v.as_bool())
        .unwrap_or(false)
}

/// Asks the server without a token to learn its challenge
/// (`WWW-Authenticate` of the 401), if it gives one.
async fn probe(url: &str, headers: &BTreeMap<String, String>) -> Result<Option<String>, String> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(15))
        .build()
        .map_err(|e| e.to_string())?;
    let mut request = client
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .json(&serde_json::json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "mcpool", "version": env!("CARGO_PKG_VERSION")}}
        }));
    for (k, v) in headers {
        request = request.header(k.as_str(), v.as_str());
    }
    let response = request
        .send()
        .await
        .map_err(|e| format!("cannot reach {url}: {}", short(&crate::error_text::chain_text(&e))))?;
    if !matches!(response.status().as_u16(), 401 | 403) {
        return Ok(None);
    }
    Ok(response
        .headers()
        .get(reqwest::header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string))
}
