//! Unix permissions: modes, set exactly (the umask may have taken bits).

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

pub fn create_new(mut options: OpenOptions, path: &Path, mode: u32) -> std::io::Result<File> {
    options.mode(mode);
    let file = options.open(path)?;
    file.set_permissions(std::fs::Permissions::from_mode(mode))?;
    Ok(file)
}

pub fn open_private(options: &mut OpenOptions, path: &Path) -> std::io::Result<File> {
    options.mode(super::PRIVATE).open(path)
}

pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

pub fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

pub fn mode_of(path: &Path) -> std::io::Result<u32> {
    Ok(std::fs::metadata(path)?.permissions().mode() & 0o7777)
}

/// A rename over a file another program has open simply succeeds on Unix.
pub fn is_busy(_: &std::io::Error) -> bool {
    false
}
