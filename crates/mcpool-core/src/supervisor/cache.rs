//! The supervisor's side of secrets and the disk cache: resolve
//! `${keyring:…}` for an attempt, offer cached tools at start, and write the
//! live list back.

use std::sync::Arc;

use rmcp::model::Tool;

use super::Supervisor;
use crate::cache::{identity, key, CacheMiss, IdentityInputs};
use crate::config::{ServerSpec, TransportSpec};
use crate::errors::ConnectError;
use crate::lifecycle::Event;
use crate::secrets::{resolve_spec, Resolved};

impl Supervisor {
    /// Resolves the spec's secrets off the runtime (the keyring may block).
    pub(super) async fn resolve(&self, spec: &ServerSpec) -> Result<Resolved, ConnectError> {
        let store = self.ctx.secrets.clone();
        let spec = spec.clone();
        match tokio::task::spawn_blocking(move || resolve_spec(&spec, store.as_ref())).await {
            Ok(Ok(resolved)) => Ok(resolved),
            Ok(Err(e)) => Err(ConnectError::Secret(e)),
            Err(e) => Err(ConnectError::Other(format!("resolving secrets failed: {e}"))),
        }
    }

    /// The cache file key of a resolved spec, when the cache is enabled.
    pub(super) fn cache_key(&self, resolved: &Resolved) -> Option<String> {
        let (_, fingerprinter) = self.ctx.cache.as_ref()?;
        let mut inputs = IdentityInputs {
            profile: Some(self.ctx.profile.clone()),
            credential_id: self.credential_id().map(|id| fingerprinter.fingerprint(&id)),
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

    /// At start: offer the last live tools from disk until the server answers.
    pub(super) async fn load_cache(self: &Arc<Self>) {
        let Some((cache, _)) = &self.ctx.cache else { return };
        let spec = self.spec();
        // The signed-in credential is part of the identity.
        if let Some(signin) = self.ctx.oauth.signin(&spec) {
            signin.load().await;
        }
        let Ok(resolved) = self.resolve(&spec).await else {
            return;
        };
        let Some(k) = self.cache_key(&resolved) else { return };
        let cache = cache.clone();
        let file_key = k.clone();
        let loaded = tokio::task::spawn_blocking(move || cache.load(&file_key)).await;
        let tools = match loaded {
            Ok(Ok(tools)) => tools,
            Ok(Err(CacheMiss::Absent)) | Err(_) => return,
            Ok(Err(miss @ CacheMiss::Corrupt { .. })) => {
                tracing::warn!(server = %self.name, "{miss}");
                return;
            }
        };
        // Written by an older mcpool, a cache may hold what agents would reject.
        let checked = crate::tool_check::check(tools.iter().map(crate::tool_check::raw).collect());
        let tools = checked.tools;
        let offered = {
            let mut inner = self.lock();
            if !checked.warnings.is_empty() {
                inner.recent.listed(&self.name, checked.warnings);
            }
            // The machine takes them only before anything else is offered.
            let offered = self.apply(&mut inner, Event::CacheLoaded { tools }).lists_changed;
            if offered {
                inner.cache_key = Some(k);
            }
            offered
        };
        if offered {
            self.ctx.cache_hits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.notify_lists();
        }
    }

    /// Writes a live tool list (the machine says when: `Effect::StoreTools`).
    pub(super) fn store_tools(&self, key: Option<&str>, tools: &[Tool]) {
        let (Some(key), Some((cache, _))) = (key, &self.ctx.cache) else {
            return;
        };
        let cache = cache.clone();
        let key = key.to_string();
        let name = self.name.clone();
        let tools = tools.to_vec();
        tokio::task::spawn_blocking(move || {
            if let Err(e) = cache.store(&key, &name, &tools) {
                tracing::warn!(server = %name, "cannot write the tool cache: {e}");
            }
        });
    }

    /// Deletes this server's cache file (removed or reconfigured).
    pub fn forget_cache(&self) {
        let key = self.lock().cache_key.take();
        if let (Some(key), Some((cache, _))) = (key, &self.ctx.cache) {
            cache.remove(&key);
        }
    }
}
