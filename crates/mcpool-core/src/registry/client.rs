//! The registry client: `GET {base}/v0/servers?search=` on every configured
//! registry at once (merged in config order, one name listed once, a
//! registry that fails named in the errors without hiding the others) and
//! `GET {base}/v0/servers/{name}/versions/{version}` for one server.

use std::time::Duration;

use super::server_json::{Listed, ServerJson, ServerList};

/// How long one registry request may take.
pub const TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    #[error("the registry address {registry} is not a valid URL")]
    BadUrl { registry: String },
    #[error("the registry {registry} could not be reached: {reason}")]
    Unreachable { registry: String, reason: String },
    #[error("the registry {registry} did not answer within {} s", TIMEOUT.as_secs())]
    TimedOut { registry: String },
    #[error("the registry {registry} answered HTTP {status}")]
    Status { registry: String, status: u16 },
    #[error("the registry {registry} answered with something that is not {what}: {reason}")]
    Invalid {
        registry: String,
        what: &'static str,
        reason: String,
    },
    #[error("no registry has '{name}' at version {version} (asked: {registries})")]
    NotFound {
        name: String,
        version: String,
        registries: String,
    },
}

impl RegistryError {
    /// The registry the error is about (none for [`RegistryError::NotFound`]).
    pub fn registry(&self) -> Option<&str> {
        match self {
            RegistryError::BadUrl { registry }
            | RegistryError::Unreachable { registry, .. }
            | RegistryError::TimedOut { registry }
            | RegistryError::Status { registry, .. }
            | RegistryError::Invalid { registry, .. } => Some(registry),
            RegistryError::NotFound { .. } => None,
        }
    }
}

/// A server one registry listed.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// The base URL of the registry that listed it.
    pub registry: String,
    pub server: ServerJson,
}

/// A search across registries: what was found and which registries failed.
#[derive(Debug, Clone, Default)]
pub struct Searched {
    pub servers: Vec<Found>,
    pub errors: Vec<RegistryError>,
    /// How many registries were asked.
    pub asked: usize,
}

impl Searched {
    /// Every registry asked failed (none answered).
    pub fn offline(&self) -> bool {
        self.asked > 0 && self.errors.len() >= self.asked
    }

    /// The failures as one sentence, if any.
    pub fn error_sentence(&self) -> Option<String> {
        if self.errors.is_empty() {
            return None;
        }
        let parts: Vec<String> = self.errors.iter().map(ToString::to_string).collect();
        Some(parts.join("; "))
    }
}

#[derive(Clone)]
pub struct RegistryClient {
    http: reqwest::Client,
}

impl Default for RegistryClient {
    fn default() -> Self {
        Self::new()
    }
}

impl RegistryClient {
    pub fn new() -> Self {
        let http = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .connect_timeout(TIMEOUT)
            .user_agent(concat!("mcpool/", env!("CARGO_PKG_VERSION")))
            .build()
            // Building fails only when the TLS backend cannot start; the
            // default client then fails the same way on use.
            .unwrap_or_default();
        RegistryClient { http }
    }

    /// Searches every registry in `bases` at once (the latest version of
    /// each server, at most `limit` in all): in the order of `bases`, a name
    /// a registry earlier in the list had is left out.
    pub async fn search(&self, bases: &[String], query: &str, limit: usize) -> Searched {
        let answers = futures::future::join_all(bases.iter().map(|b| self.search_one(b, query, limit))).await;
        let mut searched = Searched {
            asked: bases.len(),
            ..Searched::default()
        };
        let mut seen = std::collections::BTreeSet::new();
        for (base, answer) in bases.iter().zip(answers) {
            match answer {
                Ok(list) => {
                    for listed in list {
                        if listed.status() == Some("deleted") || !seen.insert(listed.server().name.clone()) {
                            continue;
                        }
                        searched.servers.push(Found {
                            registry: base.clone(),
                            server: listed.into_server(),
                        });
                    }
                }
                Err(e) => searched.errors.push(e),
            }
        }
        searched.servers.truncate(limit);
        searched
    }

    /// One registry's answer to a search.
    pub async fn search_one(&self, base: &str, query: &str, limit: usize) -> Result<Vec<Listed>, RegistryError> {
        let mut url = endpoint(base, &["v0", "servers"])?;
        url.query_pairs_mut()
            .append_pair("search", query)
            .append_pair("limit", &limit.to_string())
            .append_pair("version", "latest");
        let body = self.get(base, url).await?.ok_or_else(|| RegistryError::Status {
            registry: base.to_string(),
            status: 404,
        })?;
        let list: ServerList = serde_json::from_str(&body).map_err(|e| RegistryError::Invalid {
            registry: base.to_string(),
            what: "a server list",
            reason: e.to_string(),
        })?;
        let mut servers = list.servers;
        servers.truncate(limit);
        Ok(servers)
    }

    /// `name` at `version` (`latest` when `None`) from the first registry
    /// of `bases` that has it, with that registry's base URL.
    pub async fn server(&self, bases: &[String], name: &str, version: Option<&str>) -> Result<Found, RegistryError> {
        let version = version.unwrap_or("latest");
        let mut failure = None;
        for base in bases {
            match self.server_one(base, name, version).await {
                Ok(Some(server)) => {
                    return Ok(Found {
                        registry: base.clone(),
                        server,
                    })
                }
                Ok(None) => {}
                Err(e) => {
                    failure.get_or_insert(e);
                }
            }
        }
        Err(failure.unwrap_or_else(|| RegistryError::NotFound {
            name: name.to_string(),
            version: version.to_string(),
            registries: bases.join(", "),
        }))
    }

    async fn server_one(&self, base: &str, name: &str, version: &str) -> Result<Option<ServerJson>, RegistryError> {
        let url = endpoint(base, &["v0", "servers", name, "versions", version])?;
        let Some(body) = self.get(base, url).await? else {
            return Ok(None);
        };
        let listed: Listed = serde_json::from_str(&body).map_err(|e| RegistryError::Invalid {
            registry: base.to_string(),
            what: "a server",
            reason: e.to_string(),
        })?;
        Ok(Some(listed.into_server()))
    }

    /// The body of a 2xx answer; `None` for a 404.
    async fn get(&self, base: &str, url: url::Url) -> Result<Option<String>, RegistryError> {
        let registry = base.to_string();
        let failed = |e: reqwest::Error| {
            if e.is_timeout() {
                RegistryError::TimedOut {
                    registry: registry.clone(),
                }
            } else {
                RegistryError::Unreachable {
                    registry: registry.clone(),
                    reason: crate::error_text::brief(&innermost(&e)),
                }
            }
        };
        let response = self
            .http
            .get(url)
            .header("Accept", "application/json")
            .send()
            .await
            .map_err(failed)?;
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(RegistryError::Status {
                registry: base.to_string(),
                status: status.as_u16(),
            });
        }
        response.text().await.map(Some).map_err(failed)
    }
}

/// `base` with `segments` appended, each percent-encoded as one segment (a
/// server name's `/` becomes `%2F`).
pub(crate) fn endpoint(base: &str, segments: &[&str]) -> Result<url::Url, RegistryError> {
    let bad = || RegistryError::BadUrl {
        registry: base.to_string(),
    };
    let mut url = url::Url::parse(base).map_err(|_| bad())?;
    {
        let mut path = url.path_segments_mut().map_err(|_| bad())?;
        path.pop_if_empty();
        for s in segments {
            path.push(s);
        }
    }
    Ok(url)
}

/// The last cause of an error chain: the one that says what happened
/// (connection refused, no such host).
fn innermost(e: &(dyn std::error::Error + 'static)) -> String {
    let mut last: &dyn std::error::Error = e;
    while let Some(next) = last.source() {
        last = next;
    }
    last.to_string()
}
