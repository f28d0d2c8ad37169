//! The endpoint's bearer token: `MCPOOL_TOKEN` if set, else one generated
//! once and kept in a 0600 file in the data dir.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rand::RngCore;

pub const ENV: &str = "MCPOOL_TOKEN";

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("cannot read the token file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("cannot write the token file {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("the token file {path} is empty; delete it to make a new token")]
    Empty { path: PathBuf },
}

pub fn token_file(data_dir: &Path) -> PathBuf {
    data_dir.join("token")
}

/// The token from the environment, else the stored one, else a new one that
/// is stored (`create`) or an error (`!create`: clients never invent one).
pub fn resolve(env_token: Option<String>, data_dir: &Path, create: bool) -> Result<Option<String>, TokenError> {
    if let Some(t) = env_token.map(|t| t.trim().to_string()).filter(|t| !t.is_empty()) {
        return Ok(Some(t));
    }
    let path = token_file(data_dir);
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let t = text.trim().to_string();
            if t.is_empty() {
                return Err(TokenError::Empty { path });
            }
            Ok(Some(t))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if !create {
                return Ok(None);
            }
            let token = generate();
            write_private(&path, &token).map_err(|source| TokenError::Write {
                path: path.clone(),
                source,
            })?;
            Ok(Some(token))
        }
        Err(source) => Err(TokenError::Read { path, source }),
    }
}

pub fn generate() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

fn write_private(path: &Path, token: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(token.as_bytes())?;
    f.sync_all()?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_wins_then_file_then_generated_once() {
        let dir = std::env::temp_dir().join(format!("mcpool-token-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(resolve(Some("abc".into()), &dir, true).unwrap().as_deref(), Some("abc"));
        assert_eq!(resolve(None, &dir, false).unwrap(), None);
        let made = resolve(None, &dir, true).unwrap().unwrap();
        assert_eq!(made.len(), 64);
        assert_eq!(resolve(None, &dir, true).unwrap(), Some(made));
        let mode = std::fs::metadata(token_file(&dir)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
