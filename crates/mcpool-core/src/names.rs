//! Public names of aggregated tools and prompts: `<server>__<name>`, only
//! `[A-Za-z0-9_-]`, at most 64 characters, collisions resolved the same way
//! whatever order the servers answered in.

use std::collections::{BTreeMap, BTreeSet};

use sha2::{Digest, Sha256};

/// The server name mcpool's own tools live under (`mcpool__status`,
/// `mcpool__search_tools`, …).
pub const BUILTIN_SERVER: &str = "mcpool";
pub const MAX_NAME_LEN: usize = 64;
pub const SEPARATOR: &str = "__";
/// `_` plus 8 hex digits.
const SUFFIX_LEN: usize = 9;

/// Replaces every character outside `[A-Za-z0-9_-]` with `_`.
pub fn sanitize(part: &str) -> String {
    part.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn short_hash(server: &str, name: &str, salt: u32) -> String {
    let mut h = Sha256::new();
    h.update(server.as_bytes());
    h.update([0]);
    h.update(name.as_bytes());
    h.update(salt.to_le_bytes());
    hex::encode(&h.finalize()[..4])
}

fn with_suffix(base: &str, suffix: &str) -> String {
    let keep = MAX_NAME_LEN - SUFFIX_LEN;
    let cut: String = base.chars().take(keep).collect();
    format!("{cut}_{suffix}")
}

/// The preferred public name, before collisions are looked at.
pub fn qualified(server: &str, name: &str) -> String {
    let plain = format!("{}{SEPARATOR}{}", sanitize(server), sanitize(name));
    if plain.len() <= MAX_NAME_LEN {
        plain
    } else {
        with_suffix(&plain, &short_hash(server, name, 0))
    }
}

/// A two-way map between public names and `(server, name)` pairs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameTable {
    public: BTreeMap<String, (String, String)>,
    by_origin: BTreeMap<(String, String), String>,
}

impl NameTable {
    /// Builds the table from every `(server, name)` pair. Pairs are taken in
    /// sorted order, so the first keeps its preferred name and a later
    /// colliding one gets a hash suffix: the outcome depends only on the set.
    pub fn build<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        Self::build_reserving(&[], pairs)
    }

    /// Like [`NameTable::build`], with `reserved` public names never given out.
    pub fn build_reserving<'a>(reserved: &[&str], pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let sorted: BTreeSet<(&str, &str)> = pairs.into_iter().collect();
        let mut table = NameTable::default();
        let taken = |table: &NameTable, name: &str| table.public.contains_key(name) || reserved.contains(&name);
        for (server, name) in sorted {
            let mut candidate = qualified(server, name);
            let mut salt = 0;
            while taken(&table, &candidate) {
                salt += 1;
                candidate = with_suffix(
                    &format!("{}{SEPARATOR}{}", sanitize(server), sanitize(name)),
                    &short_hash(server, name, salt),
                );
            }
            table
                .public
                .insert(candidate.clone(), (server.to_string(), name.to_string()));
            table
                .by_origin
                .insert((server.to_string(), name.to_string()), candidate);
        }
        table
    }

    pub fn resolve(&self, public: &str) -> Option<(&str, &str)> {
        self.public.get(public).map(|(s, n)| (s.as_str(), n.as_str()))
    }

    pub fn public_name(&self, server: &str, name: &str) -> Option<&str> {
        self.by_origin
            .get(&(server.to_string(), name.to_string()))
            .map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.public.len()
    }

    pub fn is_empty(&self) -> bool {
        self.public.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn plain_names() {
        assert_eq!(qualified("github", "create_issue"), "github__create_issue");
        assert_eq!(qualified("my server", "a.b/c"), "my_server__a_b_c");
    }

    #[test]
    fn reserved_names_are_never_given_out() {
        let t = NameTable::build_reserving(&["mcpool__status"], [("mcpool", "status")]);
        let public = t.public_name("mcpool", "status").unwrap();
        assert_ne!(public, "mcpool__status");
        assert!(public.starts_with("mcpool__status_"));
    }

    #[test]
    fn collisions_get_a_suffix_whatever_the_order() {
        let a = NameTable::build([("a b", "x"), ("a_b", "x"), ("z", "t")]);
        let b = NameTable::build([("z", "t"), ("a_b", "x"), ("a b", "x")]);
        assert_eq!(a, b);
        assert_eq!(a.len(), 3);
        assert_eq!(a.public_name("a b", "x"), Some("a_b__x"));
        let other = a.public_name("a_b", "x").unwrap();
        assert_ne!(other, "a_b__x");
        assert_eq!(a.resolve(other), Some(("a_b", "x")));
    }

    proptest! {
        #[test]
        fn names_are_valid_short_and_unique(pairs in proptest::collection::vec(("[ -~]{0,40}", "[ -~\u{e9}\u{4e2d}]{0,80}"), 0..30)) {
            let refs: Vec<(&str, &str)> = pairs.iter().map(|(s, n)| (s.as_str(), n.as_str())).collect();
            let table = NameTable::build(refs.iter().copied());
            let distinct: BTreeSet<_> = refs.iter().copied().collect();
            prop_assert_eq!(table.len(), distinct.len());
            for (server, name) in distinct {
                let public = table.public_name(server, name).unwrap();
                prop_assert!(public.len() <= MAX_NAME_LEN);
                prop_assert!(public.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
                prop_assert_eq!(table.resolve(public), Some((server, name)));
            }
        }
    }
}
