//! The supervisor's side of secrets and the disk cache: resolve
//! `${keyring:…}` for an attempt ([`resolve`]), and [`DiskCache`], one
//! server's file of the tool cache: its key, the tools offered from it at
//! start, and the live list written back.

use rmcp::model::Tool;

use super::Context;
use crate::cache::{identity, key, CacheMiss, IdentityInputs};
use crate::config::{ServerSpec, TransportSpec};
use crate::errors::ConnectError;
use crate::secrets::{resolve_spec, Resolved};

/// Resolves the spec's secrets off the runtime (the keyring may block).
pub(super) async fn resolve(ctx: &Context, spec: &ServerSpec) -> Result<Resolved, ConnectError> {
    let store = ctx.secrets.clone();
    let spec = spec.clone();
    match tokio::task::spawn_blocking(move || resolve_spec(&spec, store.as_ref())).await {
        Ok(Ok(resolved)) => Ok(resolved),
        Ok(Err(e)) => Err(ConnectError::Secret(e)),
        Err(e) => Err(ConnectError::Other(format!("resolving secrets failed: {e}"))),
    }
}

/// One server's use of the pool's tool cache (nothing when it is off).
pub(super) struct DiskCache<'a> {
    pub ctx: &'a Context,
    pub name: &'a str,
}

impl DiskCache<'_> {
    /// Whether the pool keeps a tool cache at all.
    pub fn enabled(&self) -> bool {
        self.ctx.cache.is_some()
    }

    /// The cache file key of a resolved spec, when the cache is enabled;
    /// `credential_id` is the signed-in credential's (see
    /// [`SignIn::credential_id`](super::signin::SignIn::credential_id)).
    pub fn key(&self, resolved: &Resolved, credential_id: impl FnOnce() -> Option<String>) -> Option<String> {
        let (_, fingerprinter) = self.ctx.cache.as_ref()?;
        let mut inputs = IdentityInputs {
            profile: Some(self.ctx.profile.clone()),
            credential_id: credential_id().map(|id| fingerprinter.fingerprint(&id)),
            ..Default::default()
        };
        match &resolved.spec.transport {
            TransportSpec::Stdio { env, .. } => inputs.env = env.clone(),
            TransportSpec::Http { headers, .. } | TransportSpec::Sse { headers, .. } => {
                inputs.headers = headers.clone()
            }
        }
        Some(key(&identity(&resolved.spec, &inputs, fingerprinter)))
    }

    /// The tools kept under `key`; none when absent, unreadable or corrupt
    /// (logged).
    pub async fn load(&self, key: &str) -> Option<Vec<Tool>> {
        let (cache, _) = self.ctx.cache.as_ref()?;
        let cache = cache.clone();
        let file_key = key.to_string();
        let loaded = tokio::task::spawn_blocking(move || cache.load(&file_key)).await;
        match loaded {
            Ok(Ok(tools)) => Some(tools),
            Ok(Err(CacheMiss::Absent)) | Err(_) => None,
            Ok(Err(miss @ CacheMiss::Corrupt { .. })) => {
                tracing::warn!(server = %self.name, "{miss}");
                None
            }
        }
    }

    /// Writes a live tool list (the machine says when: `Effect::StoreTools`).
    pub fn store(&self, key: Option<&str>, tools: &[Tool]) {
        let (Some(key), Some((cache, _))) = (key, &self.ctx.cache) else {
            return;
        };
        let cache = cache.clone();
        let key = key.to_string();
        let name = self.name.to_string();
        let tools = tools.to_vec();
        tokio::task::spawn_blocking(move || {
            if let Err(e) = cache.store(&key, &name, &tools) {
                tracing::warn!(server = %name, "cannot write the tool cache: {e}");
            }
        });
    }

    /// Deletes the cache file of `key`.
    pub fn remove(&self, key: Option<String>) {
        if let (Some(key), Some((cache, _))) = (key, &self.ctx.cache) {
            cache.remove(&key);
        }
    }
}
