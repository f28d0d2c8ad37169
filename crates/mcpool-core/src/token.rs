//! The endpoint's bearer token: `MCPOOL_TOKEN` if set, else one generated
//! once and kept in the OS keyring; where no keyring is reachable, in a 0600
//! file, with a warning that says so.

use std::path::{Path, PathBuf};

use rand::RngCore;

use crate::secrets::{SecretError, SecretStore, TOKEN_ENTRY};

pub const ENV: &str = "MCPOOL_TOKEN";

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("cannot read the token file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("cannot write the token file {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("the token file {path} is empty; delete it to make a new token")]
    Empty { path: PathBuf },
    #[error("cannot keep the token in the OS keyring: {0}")]
    Keyring(SecretError),
}

/// A token and, when it lives in a file for want of a keyring, the warning
/// to show once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub value: String,
    pub warning: Option<String>,
}

pub fn token_file(data_dir: &Path) -> PathBuf {
    data_dir.join("token")
}

/// The token from the environment, else the keyring's, else a new one that
/// is stored (`create`) or none (`!create`: clients never invent one).
/// Blocking (D-Bus): call from `spawn_blocking` inside async code.
pub fn resolve(
    env_token: Option<String>,
    store: &dyn SecretStore,
    data_dir: &Path,
    create: bool,
) -> Result<Option<Token>, TokenError> {
    if let Some(t) = env_token.map(|t| t.trim().to_string()).filter(|t| !t.is_empty()) {
        return Ok(Some(Token {
            value: t,
            warning: None,
        }));
    }
    let path = token_file(data_dir);
    match store.get(TOKEN_ENTRY) {
        Ok(Some(value)) => Ok(Some(Token { value, warning: None })),
        Ok(None) => {
            // A token kept in a file while no keyring was reachable moves in.
            if let Some(value) = read_file(&path)? {
                if store.set(TOKEN_ENTRY, &value).is_ok() {
                    let _ = std::fs::remove_file(&path);
                }
                return Ok(Some(Token { value, warning: None }));
            }
            if !create {
                return Ok(None);
            }
            let value = generate();
            store.set(TOKEN_ENTRY, &value).map_err(TokenError::Keyring)?;
            Ok(Some(Token { value, warning: None }))
        }
        Err(e) => {
            let warning = Some(format!(
                "{e}; the endpoint token is kept in {} (mode 0600) instead",
                path.display()
            ));
            // Said once, when the file is made: every later command
            // reads the same file and has nothing new to say.
            if let Some(value) = read_file(&path)? {
                return Ok(Some(Token { value, warning: None }));
            }
            if !create {
                return Ok(None);
            }
            let value = generate();
            crate::os::files::write_private(&path, value.as_bytes()).map_err(|source| TokenError::Write {
                path: path.clone(),
                source,
            })?;
            Ok(Some(Token { value, warning }))
        }
    }
}

fn read_file(path: &Path) -> Result<Option<String>, TokenError> {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let t = text.trim().to_string();
            if t.is_empty() {
                return Err(TokenError::Empty {
                    path: path.to_path_buf(),
                });
            }
            Ok(Some(t))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(TokenError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

pub fn generate() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets::MemoryStore;

    #[test]
    fn env_wins_then_keyring_generated_once() {
        let dir = crate::scratch::scratch_dir("token-kr");
        let store = MemoryStore::default();
        assert_eq!(
            resolve(Some("abc".into()), &store, &dir, true).unwrap().unwrap().value,
            "abc"
        );
        assert_eq!(resolve(None, &store, &dir, false).unwrap(), None);
        let made = resolve(None, &store, &dir, true).unwrap().unwrap();
        assert_eq!(made.value.len(), 64);
        assert_eq!(made.warning, None);
        assert_eq!(resolve(None, &store, &dir, true).unwrap().unwrap().value, made.value);
        assert_eq!(store.dump()[TOKEN_ENTRY], made.value);
        assert!(!token_file(&dir).exists(), "a keyring token is never written to disk");
    }

    #[test]
    fn without_a_keyring_a_0600_file_with_a_warning() {
        let dir = crate::scratch::scratch_dir("token-file");
        let store = MemoryStore::unavailable();
        let made = resolve(None, &store, &dir, true).unwrap().unwrap();
        assert!(made.warning.as_deref().unwrap_or("").contains("kept in"), "{made:?}");
        crate::os::files::assert_private(&token_file(&dir));
        let again = resolve(None, &store, &dir, true).unwrap().unwrap();
        assert_eq!(
            (again.value.as_str(), again.warning),
            (made.value.as_str(), None),
            "said once"
        );
        assert_eq!(resolve(None, &store, &dir, false).unwrap().unwrap().value, made.value);
        // Once a keyring is there, the file's token moves into it.
        let keyring = MemoryStore::default();
        assert_eq!(resolve(None, &keyring, &dir, false).unwrap().unwrap().value, made.value);
        assert!(!token_file(&dir).exists());
        assert_eq!(keyring.dump()[TOKEN_ENTRY], made.value);
        std::fs::remove_dir_all(&dir).ok();
    }
}
