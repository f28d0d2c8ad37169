//! The tools searches found for 2026-07-28 agents, which have no session to
//! keep them (a session agent's are in its [`AgentSession`](super::session::AgentSession)):
//! by endpoint and client (`clientInfo`), the most recent [`FoundBook::KEPT`].

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use crate::search::listing::FoundTools;
use crate::sync::lock;

#[derive(Default)]
pub struct FoundBook {
    inner: Mutex<Sets>,
}

#[derive(Default)]
struct Sets {
    sets: HashMap<String, FoundTools>,
    order: VecDeque<String>,
}

impl FoundBook {
    const KEPT: usize = 256;

    /// Adds `names` to the found tools of client `key`; answers whether its
    /// set changed.
    pub fn add(&self, key: &str, names: &[&str]) -> bool {
        let mut all = lock(&self.inner);
        if !all.sets.contains_key(key) {
            all.order.push_back(key.to_string());
            while all.order.len() > Self::KEPT {
                if let Some(oldest) = all.order.pop_front() {
                    all.sets.remove(&oldest);
                }
            }
        }
        all.sets.entry(key.to_string()).or_default().add(names.iter().copied())
    }

    /// The found tools of client `key`.
    pub fn get(&self, key: &str) -> FoundTools {
        lock(&self.inner).sets.get(key).cloned().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_are_kept_apart_and_bounded() {
        let book = FoundBook::default();
        assert!(book.add("a", &["x__one"]));
        assert!(!book.add("a", &["x__one"]), "nothing new");
        assert!(book.get("a").contains("x__one"));
        assert!(!book.get("b").contains("x__one"));
        for i in 0..FoundBook::KEPT {
            book.add(&format!("c{i}"), &["y"]);
        }
        assert!(!book.get("a").contains("x__one"), "the oldest client made room");
    }
}
