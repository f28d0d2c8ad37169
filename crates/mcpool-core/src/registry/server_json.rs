//! The server.json document (and the registry's list and version answers)
//! as serde types. Tolerant: unknown fields are ignored, the current
//! camelCase names are primary and the older snake_case ones are accepted.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One server as a registry describes it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerJson {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The 2025-07 documents' `version_detail: {version}`.
    #[serde(default, alias = "version_detail", skip_serializing_if = "Option::is_none")]
    pub version_detail: Option<VersionDetail>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<Repository>,
    #[serde(default, alias = "website_url", skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
    #[serde(default, deserialize_with = "lenient_list")]
    pub packages: Vec<Package>,
    #[serde(default, deserialize_with = "lenient_list")]
    pub remotes: Vec<Remote>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct VersionDetail {
    #[serde(default)]
    pub version: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct Repository {
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub source: Option<String>,
}

impl ServerJson {
    /// `version`, else the older `version_detail.version`.
    pub fn version(&self) -> Option<&str> {
        self.version
            .as_deref()
            .or_else(|| self.version_detail.as_ref().and_then(|v| v.version.as_deref()))
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Package {
    #[serde(default, alias = "registry_type", alias = "registry_name")]
    pub registry_type: String,
    #[serde(default, alias = "registry_base_url", skip_serializing_if = "Option::is_none")]
    pub registry_base_url: Option<String>,
    #[serde(default, alias = "name")]
    pub identifier: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, alias = "runtime_hint", skip_serializing_if = "Option::is_none")]
    pub runtime_hint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<Transport>,
    #[serde(default, alias = "runtime_arguments", deserialize_with = "lenient_list")]
    pub runtime_arguments: Vec<Input>,
    #[serde(default, alias = "package_arguments", deserialize_with = "lenient_list")]
    pub package_arguments: Vec<Input>,
    #[serde(default, alias = "environment_variables", deserialize_with = "lenient_list")]
    pub environment_variables: Vec<Input>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct Transport {
    #[serde(default, rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// A remote endpoint: `streamable-http` or `sse`, its URL (a template whose
/// `{names}` come from `variables`) and the headers it declares.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct Remote {
    #[serde(default, rename = "type", alias = "transport_type")]
    pub kind: String,
    #[serde(default)]
    pub url: String,
    #[serde(default, deserialize_with = "lenient_list")]
    pub headers: Vec<Input>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variables: BTreeMap<String, Input>,
}

/// Every kind of input server.json has: an argument (`type` positional or
/// named), an environment variable or header (`name`), or a variable of
/// another input's `value` template.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Input {
    /// `positional` or `named` for arguments.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The flag (named argument), variable or header name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, alias = "value_hint", skip_serializing_if = "Option::is_none")]
    pub value_hint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, alias = "is_required")]
    pub is_required: bool,
    #[serde(default, alias = "is_secret")]
    pub is_secret: bool,
    #[serde(default, alias = "is_repeated")]
    pub is_repeated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    #[serde(
        default,
        deserialize_with = "lenient_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub value: Option<String>,
    #[serde(
        default,
        deserialize_with = "lenient_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub default: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placeholder: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variables: BTreeMap<String, Input>,
}

/// `GET /v0/servers`: `{"servers": [{"server": {...}, "_meta": {...}}],
/// "metadata": {"nextCursor", "count"}}`; an entry without the `server`
/// wrapper (the 2025-07 answers) is read as the server itself.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ServerList {
    #[serde(default, deserialize_with = "lenient_list")]
    pub servers: Vec<Listed>,
    #[serde(default)]
    pub metadata: Option<Value>,
}

/// One entry of a list answer, or the answer of `GET
/// /v0/servers/{name}/versions/{version}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Listed {
    Wrapped {
        server: ServerJson,
        #[serde(default, rename = "_meta")]
        meta: Option<Value>,
    },
    Flat(ServerJson),
}

impl Listed {
    pub fn server(&self) -> &ServerJson {
        match self {
            Listed::Wrapped { server, .. } | Listed::Flat(server) => server,
        }
    }

    pub fn into_server(self) -> ServerJson {
        match self {
            Listed::Wrapped { server, .. } | Listed::Flat(server) => server,
        }
    }

    /// The official registry's status (`active`, `deprecated`, `deleted`)
    /// when the answer gives one.
    pub fn status(&self) -> Option<&str> {
        match self {
            Listed::Wrapped { meta: Some(meta), .. } => meta
                .get("io.modelcontextprotocol.registry/official")
                .and_then(|o| o.get("status"))
                .and_then(Value::as_str),
            _ => None,
        }
    }
}

/// A list in which an item that does not read is left out rather than
/// failing the whole document.
fn lenient_list<'de, D, T>(de: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let value = Option::<Value>::deserialize(de)?;
    Ok(match value {
        Some(Value::Array(items)) => items
            .into_iter()
            .filter_map(|item| serde_json::from_value(item).ok())
            .collect(),
        _ => Vec::new(),
    })
}

/// A string, or a number or boolean written as one (`"default": 8080`).
fn lenient_string<'de, D>(de: D) -> Result<Option<String>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    Ok(match Option::<Value>::deserialize(de)? {
        Some(Value::String(s)) => Some(s),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(Value::Bool(b)) => Some(b.to_string()),
        _ => None,
    })
}
