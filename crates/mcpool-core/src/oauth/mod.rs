//! Sign-in for remote servers (OAuth 2.1, MCP authorization): one
//! [`Signin`] per server identity (name + URL), its tokens only in the OS
//! keyring, requests signed through [`SignedInClient`].
//!
//! rmcp's `auth` module does discovery (RFC 9728, RFC 8414 and OpenID
//! configuration, the 2025-03-26 fallbacks), dynamic registration, PKCE,
//! the `resource` indicator and the token requests; this module owns which
//! client to use, the loopback redirect, the keyring record, single-flight
//! refresh, step-up and what the rest of mcpool sees.

pub mod callback;
pub mod flow;
pub mod http;
pub mod refresh;
pub mod signin;
pub mod tokens;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

pub use http::SignedInClient;
pub use signin::{AuthSnapshot, LoginState, Signin};
pub use tokens::{token_state, TokenState};

use crate::config::{ServerSpec, TransportSpec};
use crate::secrets::SecretStore;
use crate::sync::lock;

/// The keyring entry of a server identity; internal (`__` names are not
/// user secrets and `secret list` does not show them).
pub fn entry_name(server: &str, url: &str) -> String {
    let digest = Sha256::digest(format!("{server}\0{url}").as_bytes());
    format!("__mcpool_oauth_{}", &hex::encode(digest)[..24])
}

/// Whether a remote entry brings its own `Authorization` header, which
/// mcpool then sends as it is and never signs in over.
pub fn has_static_authorization(headers: &std::collections::BTreeMap<String, String>) -> bool {
    headers.keys().any(|k| k.eq_ignore_ascii_case("authorization"))
}

/// Every server's sign-in, by identity.
pub struct OAuth {
    store: Arc<dyn SecretStore>,
    signins: Mutex<HashMap<String, Arc<Signin>>>,
    client_metadata_url: Mutex<Option<String>>,
}

impl OAuth {
    pub fn new(store: Arc<dyn SecretStore>) -> Self {
        OAuth {
            store,
            signins: Mutex::default(),
            client_metadata_url: Mutex::new(None),
        }
    }

    /// The config's `oauthClientMetadataUrl`: where the user publishes
    /// mcpool's client ID metadata document (docs/oauth/client-metadata.json,
    /// its `client_id` set to that URL). There is no default: an
    /// authorization server fetches that URL and trusts its redirect URIs,
    /// so it must be one the user controls; without it, dynamic
    /// registration is used.
    pub fn set_client_metadata_url(&self, url: Option<String>) {
        *lock(&self.client_metadata_url) = url;
    }

    pub fn client_metadata_url(&self) -> Option<String> {
        lock(&self.client_metadata_url).clone()
    }

    /// The sign-in of a remote server, or `None` for a local server or one
    /// with a configured `Authorization` header. Not read from the keyring
    /// yet: [`Signin::load`] does that off the runtime.
    pub fn signin(&self, spec: &ServerSpec) -> Option<Arc<Signin>> {
        let url = match &spec.transport {
            TransportSpec::Http { url, headers, .. } | TransportSpec::Sse { url, headers, .. } => {
                if has_static_authorization(headers) {
                    return None;
                }
                url
            }
            TransportSpec::Stdio { .. } => return None,
        };
        let entry = entry_name(&spec.name, url);
        let mut signins = lock(&self.signins);
        let signin = signins
            .entry(entry.clone())
            .or_insert_with(|| {
                Signin::new(
                    &spec.name,
                    url,
                    entry,
                    self.store.clone(),
                    Box::new(refresh::ManagerRefresher::default()),
                )
            })
            .clone();
        lock(&signin.spec).clone_from(&spec.oauth);
        Some(signin)
    }
}
