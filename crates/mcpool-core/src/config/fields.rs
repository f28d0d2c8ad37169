//! How each field of a server entry is read: serde `deserialize_with`
//! functions whose errors are the sentences a user reads ("expected true or
//! false"), while `serde_path_to_error` keeps the path of the field
//! (`args[2]`, `env.TOKEN`, `oauth.scopes[0]`). `null` reads as absent.

use std::fmt;
use std::marker::PhantomData;

use indexmap::IndexMap;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::{MAX_MAX_MESSAGE_BYTES, MIN_MAX_MESSAGE_BYTES};

/// A value read whole, then checked by `check`; `null` is `None`.
fn checked<'de, D, T>(d: D, check: impl FnOnce(Value) -> Result<T, String>) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
{
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        value => check(value).map(Some).map_err(de::Error::custom),
    }
}

pub(super) fn text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    checked(d, |v| {
        v.as_str().map(str::to_string).ok_or_else(|| "expected a string".into())
    })
}

/// A non-empty string (`oauth.clientId`, `oauth.clientSecret`).
pub(super) fn filled_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let filled = |v: &Value| v.as_str().filter(|s| !s.trim().is_empty()).map(str::to_string);
    checked(d, |v| filled(&v).ok_or_else(|| "expected a non-empty string".into()))
}

pub(super) fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    checked(d, |v| v.as_bool().ok_or_else(|| "expected true or false".into()))
}

/// `timeout`: a positive number of milliseconds.
pub(super) fn millis<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    checked(d, |v| match v {
        Value::Number(n) => n
            .as_u64()
            .filter(|ms| *ms > 0)
            .ok_or_else(|| "expected a positive number of milliseconds".into()),
        _ => Err("expected a number of milliseconds".into()),
    })
}

/// `callTimeout`: milliseconds, `0` for no limit.
pub(super) fn call_millis<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    checked(d, |v| {
        v.as_u64()
            .ok_or_else(|| "expected a number of milliseconds (0 for no limit)".into())
    })
}

/// `maxMessageBytes`, within its bounds.
pub(super) fn message_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    checked(d, |v| match v {
        Value::Number(n) => n
            .as_u64()
            .filter(|b| (MIN_MAX_MESSAGE_BYTES..=MAX_MAX_MESSAGE_BYTES).contains(b))
            .ok_or_else(|| {
                format!("expected a number of bytes from {MIN_MAX_MESSAGE_BYTES} to {MAX_MAX_MESSAGE_BYTES}")
            }),
        _ => Err("expected a number of bytes".into()),
    })
}

/// `oauth.redirectPort`.
pub(super) fn port<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u16>, D::Error> {
    checked(d, |v| match v {
        Value::Number(n) => n
            .as_u64()
            .and_then(|p| u16::try_from(p).ok())
            .filter(|p| *p > 0)
            .ok_or_else(|| "expected a port number (1-65535)".into()),
        _ => Err("expected a port number".into()),
    })
}

/// One item of `args`: a string, or a number written as one.
struct Arg(String);

impl<'de> Deserialize<'de> for Arg {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        scalar_text(Value::deserialize(d)?, false).map(Arg)
    }
}

/// One value of `env` or `headers`: a string, or a number or boolean
/// written as one.
struct Scalar(String);

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        scalar_text(Value::deserialize(d)?, true).map(Scalar)
    }
}

/// A string, or a number (and with `bools` a boolean) as its text.
fn scalar_text<E: de::Error>(value: Value, bools: bool) -> Result<String, E> {
    match value {
        Value::String(s) => Ok(s),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) if bools => Ok(b.to_string()),
        _ => Err(E::custom("expected a string")),
    }
}

/// One of `oauth.scopes`: a string without spaces.
struct Scope(String);

impl<'de> Deserialize<'de> for Scope {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::String(s) if !s.is_empty() && !s.contains(char::is_whitespace) => Ok(Scope(s)),
            _ => Err(de::Error::custom("expected a scope (a string without spaces)")),
        }
    }
}

pub(super) fn args<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    let list = d.deserialize_any(Items::<Arg>::list())?;
    Ok(list.map(|items| items.into_iter().map(|(_, Arg(s))| s).collect()))
}

pub(super) fn scopes<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    let list = d.deserialize_any(Items::<Scope>::list())?;
    Ok(list.map(|items| items.into_iter().map(|(_, Scope(s))| s).collect()))
}

/// `env` and `headers`: an object of strings.
pub(super) fn strings<'de, D: Deserializer<'de>>(d: D) -> Result<Option<IndexMap<String, String>>, D::Error> {
    let map = d.deserialize_any(Items::<Scalar>::object())?;
    Ok(map.map(|items| items.into_iter().map(|(k, Scalar(v))| (k, v)).collect()))
}

/// A visitor's answers to booleans and numbers (refused with `$msg`, in
/// which `$this` is the visitor) and to `null` (absent).
macro_rules! refuse_scalars {
    ($this:ident, $msg:expr) => {
        fn visit_bool<E: de::Error>($this, _: bool) -> Result<Self::Value, E> {
            Err(E::custom($msg))
        }
        fn visit_i64<E: de::Error>($this, _: i64) -> Result<Self::Value, E> {
            Err(E::custom($msg))
        }
        fn visit_u64<E: de::Error>($this, _: u64) -> Result<Self::Value, E> {
            Err(E::custom($msg))
        }
        fn visit_f64<E: de::Error>($this, _: f64) -> Result<Self::Value, E> {
            Err(E::custom($msg))
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
    };
}

/// An array (`object` false) or an object (true) whose items are read one
/// by one, so an item's error has its index or key in the path; the items
/// with their keys (empty for an array's).
struct Items<T> {
    object: bool,
    expected: &'static str,
    item: PhantomData<T>,
}

impl<T> Items<T> {
    fn list() -> Self {
        Items {
            object: false,
            expected: "expected an array of strings",
            item: PhantomData,
        }
    }

    fn object() -> Self {
        Items {
            object: true,
            expected: "expected an object of strings",
            item: PhantomData,
        }
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for Items<T> {
    type Value = Option<Vec<(String, T)>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.expected.trim_start_matches("expected "))
    }

    refuse_scalars!(self, self.expected);

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Err(E::custom(self.expected))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        if self.object {
            return Err(de::Error::custom(self.expected));
        }
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push((String::new(), item));
        }
        Ok(Some(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        if !self.object {
            return Err(de::Error::custom(self.expected));
        }
        let mut items = Vec::new();
        while let Some(entry) = map.next_entry()? {
            items.push(entry);
        }
        Ok(Some(items))
    }
}

/// An entry's `sandbox` as written: a mode (`"standard"`), or an object
/// with the mode and grants.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SandboxEntry {
    #[serde(default, deserialize_with = "mode", skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(default, deserialize_with = "args", skip_serializing_if = "Option::is_none")]
    pub allow_read: Option<Vec<String>>,
    #[serde(default, deserialize_with = "args", skip_serializing_if = "Option::is_none")]
    pub allow_write: Option<Vec<String>>,
    #[serde(default, deserialize_with = "args", skip_serializing_if = "Option::is_none")]
    pub allow_sockets: Option<Vec<String>>,
    #[serde(default, deserialize_with = "flag", skip_serializing_if = "Option::is_none")]
    pub network: Option<bool>,
    #[serde(default, deserialize_with = "flag", skip_serializing_if = "Option::is_none")]
    pub allow_unsandboxed: Option<bool>,
}

impl SandboxEntry {
    /// Only a mode: written as the mode's word.
    fn is_mode_only(&self) -> bool {
        self.allow_read.is_none()
            && self.allow_write.is_none()
            && self.allow_sockets.is_none()
            && self.network.is_none()
            && self.allow_unsandboxed.is_none()
    }
}

fn mode<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    checked(d, |v| match v {
        Value::String(s) if crate::sandbox::Mode::parse(&s).is_some() => Ok(s),
        _ => Err("expected off, standard or strict".into()),
    })
}

/// `sandbox`: a mode's word or an object.
pub(super) fn sandbox<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SandboxEntry>, D::Error> {
    d.deserialize_any(SandboxVisitor)
}

struct SandboxVisitor;

const SANDBOX_EXPECTED: &str = "expected off, standard or strict, or an object with \"mode\"";

impl<'de> Visitor<'de> for SandboxVisitor {
    type Value = Option<SandboxEntry>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("off, standard, strict or an object with \"mode\"")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        match crate::sandbox::Mode::parse(text) {
            Some(_) => Ok(Some(SandboxEntry {
                mode: Some(text.to_string()),
                ..SandboxEntry::default()
            })),
            None => Err(E::custom(SANDBOX_EXPECTED)),
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        SandboxEntry::deserialize(de::value::MapAccessDeserializer::new(map)).map(Some)
    }

    refuse_scalars!(self, SANDBOX_EXPECTED);

    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
        Err(de::Error::custom(SANDBOX_EXPECTED))
    }
}

/// Written back as the mode's word when it is only a mode.
pub(super) fn write_sandbox<S: serde::Serializer>(entry: &Option<SandboxEntry>, s: S) -> Result<S::Ok, S::Error> {
    use serde::Serialize;
    match entry {
        Some(e) if e.is_mode_only() => e.mode.serialize(s),
        other => other.serialize(s),
    }
}

/// The config's top level, for its `sandbox` alone.
#[derive(Deserialize)]
pub(super) struct Top {
    #[serde(default, deserialize_with = "sandbox")]
    pub sandbox: Option<SandboxEntry>,
}
