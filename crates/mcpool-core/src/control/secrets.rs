//! Named secrets in the pool's keyring (`${keyring:NAME}` in the config):
//! store, list (names only) and remove, as `mcpool secret` does them through
//! a running instance, so short-lived commands do not each open a Secret
//! Service session of their own.

use std::collections::BTreeSet;

use super::{Control, ControlError};
use crate::secrets::{self, SecretError};

impl Control {
    /// The keyring profile this pool's secrets live under.
    pub fn profile(&self) -> &str {
        self.pool.profile()
    }

    /// Stores `value` as the secret `name`. A server using it reads it at
    /// its next connection.
    pub async fn set_secret(&self, name: &str, value: String) -> Result<(), ControlError> {
        let (store, name) = (self.pool.secrets(), name.to_string());
        blocking(move || secrets::set_named(store.as_ref(), &name, &value)).await
    }

    /// The names of the stored secrets, never their values.
    pub async fn secret_names(&self) -> Result<BTreeSet<String>, ControlError> {
        let store = self.pool.secrets();
        blocking(move || secrets::list_named(store.as_ref())).await
    }

    /// Removes the secret `name`; whether there was one.
    pub async fn remove_secret(&self, name: &str) -> Result<bool, ControlError> {
        let (store, name) = (self.pool.secrets(), name.to_string());
        blocking(move || secrets::remove_named(store.as_ref(), &name)).await
    }
}

/// A keyring call off the runtime (D-Bus blocks).
async fn blocking<T: Send + 'static>(
    call: impl FnOnce() -> Result<T, SecretError> + Send + 'static,
) -> Result<T, ControlError> {
    match tokio::task::spawn_blocking(call).await {
        Ok(done) => done.map_err(ControlError::Secret),
        Err(e) => Err(ControlError::Secret(SecretError::Failed(e.to_string()))),
    }
}
