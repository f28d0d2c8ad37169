//! The write of a [`Plan`]: the backup, then the new text atomically,
//! under the file's lock.

use std::path::{Path, PathBuf};

use super::{Plan, WriteError};

/// What `apply` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub backup: Option<PathBuf>,
}

/// Writes the plan: the original to its backup first (same mode), then the
/// new text atomically (same mode, less group and others' bits once it
/// holds the token; 0600 for a new file), holding the file's lock
/// (os/files/lock.rs) throughout. Refuses when the file changed since the plan
/// was made. An up-to-date plan writes nothing.
pub fn apply(plan: &Plan) -> Result<Written, WriteError> {
    if plan.up_to_date() {
        return Ok(Written { backup: None });
    }
    let write_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| WriteError::Write { path, source }
    };
    // Another `connect --write` (or the dashboard's "Add to") waits here,
    // then finds the file changed and says so, rather than writing over it.
    // The lock is in mcpool's runtime folder, not beside the agent's file.
    use crate::os::files::lock::{FileLock, Place, WAIT};
    let runtime = crate::os::paths::runtime_dir();
    let _held = FileLock::acquire_in(&plan.target, Place::Runtime(&runtime), WAIT)
        .map_err(|e| WriteError::Locked(e.to_string()))?;
    let now = match std::fs::read_to_string(&plan.target) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => {
            return Err(WriteError::Read {
                path: plan.path.clone(),
                source,
            })
        }
    };
    if now != plan.original {
        return Err(WriteError::Changed {
            path: plan.path.clone(),
        });
    }
    let mut backup = None;
    if let (Some(original), Some(path)) = (&plan.original, &plan.backup) {
        let path = unique(path);
        crate::os::files::write_new(&path, original.as_bytes(), plan.backup_mode).map_err(write_err(&path))?;
        backup = Some(path);
    }
    if let Some(dir) = plan.target.parent() {
        std::fs::create_dir_all(dir).map_err(write_err(dir))?;
    }
    let name = plan
        .target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = plan.target.with_file_name(format!(".{name}.mcpool-tmp"));
    let _ = std::fs::remove_file(&tmp);
    crate::os::files::write_new(&tmp, plan.updated.as_bytes(), plan.mode).map_err(write_err(&plan.path))?;
    crate::os::files::rename_over(&tmp, &plan.target).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        WriteError::Write {
            path: plan.path.clone(),
            source: e,
        }
    })?;
    Ok(Written { backup })
}

/// The path, or the first of `path-2`, `path-3`, … that does not exist yet.
fn unique(path: &Path) -> PathBuf {
    if !path.exists() {
        return path.to_path_buf();
    }
    (2..)
        .map(|n| PathBuf::from(format!("{}-{n}", path.display())))
        .find(|p| !p.exists())
        .unwrap_or_else(|| path.to_path_buf())
}
