//! Finds keys that appear twice in one JSON object. JSON parsers keep the
//! last one silently; a config that says the same thing twice deserves a
//! warning that names the key.

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

/// The path of every repeated key, e.g. `["mcpServers", "github", "env",
/// "TOKEN"]`, in document order. Text that is not JSON yields nothing (the
/// parser proper reports it).
pub fn duplicate_keys(text: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let mut de = serde_json::Deserializer::from_str(text);
    let seed = Walk {
        path: Vec::new(),
        found: &mut found,
    };
    if seed.deserialize(&mut de).is_err() {
        return Vec::new();
    }
    found
}

struct Walk<'a> {
    path: Vec<String>,
    found: &'a mut Vec<Vec<String>>,
}

impl Walk<'_> {
    fn child(&mut self, key: String) -> Walk<'_> {
        let mut path = self.path.clone();
        path.push(key);
        Walk {
            path,
            found: self.found,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                let mut path = self.path.clone();
                path.push(key.clone());
                self.found.push(path);
            }
            map.next_value_seed(self.child(key))?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0usize;
        while seq.next_element_seed(self.child(index.to_string()))?.is_some() {
            index += 1;
        }
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_keys_are_found_at_every_depth() {
        let text = r#"{"mcpServers": {"a": {"command": "x", "env": {"K": "1", "K": "2"}}, "a": {"url": "u"}},
                       "list": [{"x": 1, "x": 2}], "top": 1, "top": 2}"#;
        let paths: Vec<String> = duplicate_keys(text).into_iter().map(|p| p.join(".")).collect();
        assert_eq!(paths, ["mcpServers.a.env.K", "mcpServers.a", "list.0.x", "top"]);
    }

    #[test]
    fn clean_or_broken_text_has_none() {
        assert!(duplicate_keys(r#"{"a": {"b": 1}, "b": {"a": 2}}"#).is_empty());
        assert!(duplicate_keys("{not json").is_empty());
    }
}
