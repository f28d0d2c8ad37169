//! The tree the map is checked against: the checkout on disk, or a made-up
//! one for the self-tests, and the rooms it has.

use super::*;

/// What the checks ask of the tree.
pub(crate) trait Tree {
    fn is_file(&self, path: &str) -> bool;
    fn is_dir(&self, path: &str) -> bool;
}

/// The checkout on disk.
pub(crate) struct Disk(pub(crate) PathBuf);

impl Tree for Disk {
    fn is_file(&self, path: &str) -> bool {
        self.0.join(path).is_file()
    }
    fn is_dir(&self, path: &str) -> bool {
        path.is_empty() || self.0.join(path.trim_end_matches('/')).is_dir()
    }
}

/// A made-up tree: its files (folders are their prefixes).
pub(crate) struct Listed(pub(crate) BTreeSet<String>);

impl Tree for Listed {
    fn is_file(&self, path: &str) -> bool {
        self.0.contains(path)
    }
    fn is_dir(&self, path: &str) -> bool {
        let dir = format!("{}/", path.trim_end_matches('/'));
        path.is_empty() || self.0.iter().any(|f| f.starts_with(&dir))
    }
}

/// Every file under `rel` (relative to `root`), hidden folders and build
/// output left out.
pub(crate) fn walk(root: &Path, rel: &str) -> Vec<String> {
    let mut files = Vec::new();
    let mut stack = vec![rel.trim_end_matches('/').to_string()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(root.join(&dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || name == "target" || name == "node_modules" {
                continue;
            }
            let path = format!("{dir}/{name}");
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(path),
                Ok(t) if t.is_file() => files.push(path),
                _ => {}
            }
        }
    }
    files.sort();
    files
}

/// The rooms the code map must have an entry for, from the files under
/// `crates/` and the top-level folders that exist.
pub(crate) fn rooms(crate_files: &[String], tree: &dyn Tree) -> Vec<String> {
    let mut rooms = BTreeSet::new();
    for file in crate_files {
        let parts: Vec<&str> = file.split('/').collect();
        if parts.len() < 3 || parts[0] != "crates" {
            continue;
        }
        rooms.insert(format!("crates/{}/", parts[1]));
        if parts.len() < 4 || parts[2] != "src" || !file.ends_with(".rs") {
            continue;
        }
        if parts.len() > 4 {
            rooms.insert(format!("crates/{}/src/{}/", parts[1], parts[3]));
        } else if parts[3] != "lib.rs" && parts[3] != "main.rs" {
            rooms.insert(file.clone());
        }
    }
    rooms.extend(ROOM_FOLDERS.iter().filter(|f| tree.is_dir(f)).map(|f| f.to_string()));
    rooms.into_iter().collect()
}

/// A unit-test file or folder: not looked at for environment reads.
pub(crate) fn is_test_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name == "tests.rs" || name.ends_with("_tests.rs") || path.split('/').skip(1).any(|part| part == "tests")
}
