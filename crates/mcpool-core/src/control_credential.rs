//! The control credential: what lets mcpool's own CLI change things
//! (config, grants, secrets, sign-in) through the control API, where the
//! agents' token may only read. A running instance makes a new random one
//! at start and keeps it in one file per listen port in
//! [`runtime_dir`](crate::os::paths::runtime_dir) (0600 in a 0700 folder;
//! never the keyring, which a confined server might reach), removed at a
//! clean shutdown. It is never logged and owes nothing to `MCPOOL_TOKEN`.

use std::path::{Path, PathBuf};

use crate::os::{files, paths};

/// The file of the instance listening on `port`, in `dir`.
pub fn file_in(dir: &Path, port: u16) -> PathBuf {
    dir.join(format!("control-{port}"))
}

/// The file of the instance listening on `port`.
pub fn file(port: u16) -> PathBuf {
    file_in(&paths::runtime_dir(), port)
}

/// The credential of a running instance, kept in its file while it runs.
#[derive(Debug)]
pub struct ControlCredential {
    value: String,
    path: PathBuf,
}

impl ControlCredential {
    /// A new credential for the instance on `port`, written to its file in
    /// `dir` (made the user's alone if it exists already).
    pub fn create_in(dir: &Path, port: u16) -> std::io::Result<ControlCredential> {
        files::create_private_dir(dir)?;
        files::restrict_dir(dir)?;
        let value = crate::token::generate();
        let path = file_in(dir, port);
        files::write_private(&path, value.as_bytes())?;
        Ok(ControlCredential { value, path })
    }

    /// [`create_in`](Self::create_in) the runtime folder.
    pub fn create(port: u16) -> std::io::Result<ControlCredential> {
        Self::create_in(&paths::runtime_dir(), port)
    }

    pub fn value(&self) -> &str {
        &self.value
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the file, unless another instance has written its own there
    /// since (it answers on this port now).
    pub fn remove(&self) {
        if read_file(&self.path).as_deref() == Some(self.value.as_str()) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The credential of the instance on `port`, if this user can read it.
pub fn read(port: u16) -> Option<String> {
    read_file(&file(port))
}

fn read_file(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    Some(text.trim().to_string()).filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_the_users_alone_and_goes_at_shutdown() {
        let dir = crate::scratch::made_scratch_dir("control-credential");
        let run = dir.join("run");
        let credential = ControlCredential::create_in(&run, 7410).unwrap();
        assert_eq!(credential.path(), file_in(&run, 7410));
        assert_eq!(read_file(credential.path()).as_deref(), Some(credential.value()));
        assert_eq!(credential.value().len(), 64);
        files::assert_private(credential.path());
        files::assert_private_dir(&run);
        let other = ControlCredential::create_in(&run, 7411).unwrap();
        assert_ne!(other.value(), credential.value(), "each instance has its own");
        credential.remove();
        assert!(!credential.path().exists());
        assert!(other.path().exists(), "another port's file stays");
    }

    #[test]
    fn a_file_another_instance_wrote_since_is_kept() {
        let dir = crate::scratch::made_scratch_dir("control-credential-kept");
        let first = ControlCredential::create_in(&dir, 9).unwrap();
        let second = ControlCredential::create_in(&dir, 9).unwrap();
        first.remove();
        assert_eq!(read_file(second.path()).as_deref(), Some(second.value()));
    }
}
