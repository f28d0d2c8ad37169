//! From a server.json to an add form and back: which way of running it to
//! use (a package or a remote), the config entry it becomes with a
//! `{variable}` for each value the user gives, the variables themselves,
//! and [`apply`], which fills them in and keeps secret values out of the
//! entry (they go to `secret_env` / `secret_headers` for the keyring).

use std::collections::BTreeMap;

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::config::Entry;

use super::build::{Builder, Field, Seg, Shape, Template};
use super::server_json::{Package, Remote, ServerJson};

/// Which way of running a server the form is for.
/// Serialised as `package:N` / `remote:N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Package(usize),
    Remote(usize),
}

/// Where a variable's value ends up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    Env,
    Header,
    Arg,
    Url,
}

/// One value the user is asked for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Variable {
    pub name: String,
    pub description: Option<String>,
    pub required: bool,
    pub secret: bool,
    pub default: Option<String>,
    pub target: Target,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<String>,
}

/// What the dashboard and `mcpool registry add` build an add form from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Form {
    /// The registry's name for it (`io.github.user/weather`).
    pub name: String,
    pub version: Option<String>,
    /// A local name for it: the name's last segment, sanitised.
    pub suggested_name: String,
    /// `local` or `remote`.
    pub kind: &'static str,
    /// `npm`, `pypi`, `oci`, `nuget`, or the remote's `streamable-http` / `sse`.
    pub registry_type: String,
    pub choice: Choice,
    /// The entry with `{NAME}` where each variable's value goes (secret
    /// env and headers included, for display; [`apply`] keeps them out).
    pub entry: Map<String, Value>,
    pub variables: Vec<Variable>,
    #[serde(skip)]
    shape: Shape,
}

/// The entry to write and the secrets to store beside it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filled {
    pub entry: Map<String, Value>,
    pub secret_env: BTreeMap<String, String>,
    pub secret_headers: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("'{server}' has no package or remote that mcpool can run{offers}")]
    NothingToRun { server: String, offers: String },
    #[error("'{server}' has no {what}")]
    NoSuchChoice { server: String, what: String },
    #[error("'{server}': {registry_type} packages are not supported (mcpool runs npm, PyPI, OCI and NuGet packages and remote servers)")]
    Unsupported { server: String, registry_type: String },
    #[error("'{server}': its package runs over {transport}, not stdio; use one of its remotes or add it by hand")]
    NotStdio { server: String, transport: String },
    #[error("'{server}': the variable '{variable}' is secret but goes into {place}, and mcpool keeps secrets only in environment variables and headers; add this server by hand")]
    SecretOutsideKeyring {
        server: String,
        variable: String,
        place: &'static str,
    },
    #[error("'{server}' needs a value for {}: {}", if names.len() == 1 { "this required variable" } else { "these required variables" }, names.join(", "))]
    Missing { server: String, names: Vec<String> },
    #[error("'{variable}' must be one of {}; '{value}' is not", choices.join(", "))]
    NotAChoice {
        variable: String,
        value: String,
        choices: Vec<String>,
    },
}

/// Package types mcpool knows how to run.
pub(super) const RUNNABLE: &[&str] = &["npm", "pypi", "oci", "nuget"];

pub(super) fn runnable_package(p: &Package) -> bool {
    RUNNABLE.contains(&p.registry_type.as_str())
        && p.transport
            .as_ref()
            .is_none_or(|t| t.kind.is_empty() || t.kind == "stdio")
}

pub(super) fn remote_kind(r: &Remote) -> Option<&'static str> {
    match r.kind.as_str() {
        "streamable-http" | "streamable" | "http" => Some("http"),
        "sse" => Some("sse"),
        _ => None,
    }
}

/// Every way of running `server` that mcpool supports: packages first (in
/// the document's order), then remotes.
pub fn choices(server: &ServerJson) -> Vec<Choice> {
    let packages = server
        .packages
        .iter()
        .enumerate()
        .filter(|(_, p)| runnable_package(p))
        .map(|(i, _)| Choice::Package(i));
    let remotes = server
        .remotes
        .iter()
        .enumerate()
        .filter(|(_, r)| remote_kind(r).is_some() && !r.url.is_empty())
        .map(|(i, _)| Choice::Remote(i));
    packages.chain(remotes).collect()
}

/// A name for the server in mcpool's config: the last segment of its
/// registry name with anything but `[A-Za-z0-9_-]` made `-`.
pub fn suggested_name(registry_name: &str) -> String {
    let last = registry_name.rsplit('/').next().unwrap_or(registry_name);
    let cleaned: String = last
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let trimmed = cleaned.trim_matches('-');
    if trimmed.is_empty() {
        "server".to_string()
    } else {
        trimmed.to_string()
    }
}

/// The `i`th of `server`'s packages or remotes (`what`), or the error that
/// names the one it lacks.
fn nth<'a, T>(server: &ServerJson, items: &'a [T], i: usize, what: &str) -> Result<&'a T, PlanError> {
    items.get(i).ok_or_else(|| PlanError::NoSuchChoice {
        server: server.name.clone(),
        what: format!("{what} number {}", i + 1),
    })
}

/// The add form for `server` run as `choice` (by default the first of
/// [`choices`]).
pub fn form(server: &ServerJson, choice: Option<Choice>) -> Result<Form, PlanError> {
    let choice = match choice {
        Some(c) => c,
        None => match choices(server).first() {
            Some(c) => *c,
            None => return Err(nothing_to_run(server)),
        },
    };
    let mut b = Builder::new(&server.name);
    let (shape, kind, registry_type) = match choice {
        Choice::Package(i) => {
            let p = nth(server, &server.packages, i, "package")?;
            (b.package(p)?, "local", p.registry_type.clone())
        }
        Choice::Remote(i) => {
            let r = nth(server, &server.remotes, i, "remote")?;
            (b.remote(r)?, "remote", r.kind.clone())
        }
    };
    let entry = render(&shape, &|name| Some(format!("{{{name}}}")), true).entry;
    Ok(Form {
        name: server.name.clone(),
        version: server.version().map(str::to_string),
        suggested_name: suggested_name(&server.name),
        kind,
        registry_type,
        choice,
        entry,
        variables: b.variables,
        shape,
    })
}

fn nothing_to_run(server: &ServerJson) -> PlanError {
    let mut offered: Vec<String> = server.packages.iter().map(|p| p.registry_type.clone()).collect();
    offered.extend(server.remotes.iter().map(|r| format!("{} remote", r.kind)));
    offered.retain(|o| !o.trim().is_empty());
    PlanError::NothingToRun {
        server: server.name.clone(),
        offers: if offered.is_empty() {
            String::new()
        } else {
            format!(" (it offers: {})", offered.join(", "))
        },
    }
}

/// Fills the form with `answers` (by variable name; a blank answer counts as
/// none); a variable without an answer takes its default. Every required
/// variable left without a value is named in one error.
pub fn apply(form: &Form, answers: &BTreeMap<String, String>) -> Result<Filled, PlanError> {
    let mut values: BTreeMap<&str, String> = BTreeMap::new();
    let mut missing = Vec::new();
    for v in &form.variables {
        let given = answers.get(&v.name).filter(|a| !a.is_empty());
        if let (Some(value), false) = (given, v.choices.is_empty()) {
            if !v.choices.contains(value) {
                return Err(PlanError::NotAChoice {
                    variable: v.name.clone(),
                    value: value.clone(),
                    choices: v.choices.clone(),
                });
            }
        }
        match given.cloned().or_else(|| v.default.clone().filter(|d| !d.is_empty())) {
            Some(value) => {
                values.insert(&v.name, value);
            }
            None if v.required => missing.push(v.name.clone()),
            None => {}
        }
    }
    if !missing.is_empty() {
        return Err(PlanError::Missing {
            server: form.suggested_name.clone(),
            names: missing,
        });
    }
    Ok(render(&form.shape, &|name| values.get(name).cloned(), false))
}

/// The value of a template, or `None` when a variable in it has no value.
fn fill(t: &Template, value: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let mut out = String::new();
    for seg in t {
        match seg {
            Seg::Lit(s) => out.push_str(s),
            Seg::Var(v) => out.push_str(&value(v)?),
        }
    }
    Some(out)
}

/// The entry for `shape`; with `display`, secret fields stay in the entry
/// (as their `{NAME}` placeholders) instead of moving to the secret maps.
fn render(shape: &Shape, value: &dyn Fn(&str) -> Option<String>, display: bool) -> Filled {
    let mut secret_env = BTreeMap::new();
    let mut secret_headers = BTreeMap::new();
    let fields = |list: &[Field], secrets: &mut BTreeMap<String, String>| {
        let mut map = IndexMap::new();
        for f in list {
            if let Some(v) = fill(&f.value, value) {
                if f.secret && !display {
                    secrets.insert(f.name.clone(), v);
                } else {
                    map.insert(f.name.clone(), v);
                }
            }
        }
        (!map.is_empty()).then_some(map)
    };
    let entry = match shape {
        Shape::Local { command, args, env } => {
            let mut list = Vec::new();
            for group in args {
                if group.when.iter().any(|v| value(v).is_none()) {
                    continue;
                }
                if let Some(switch) = &group.switch {
                    if !display && value(switch).as_deref() != Some("true") {
                        continue;
                    }
                }
                let parts: Option<Vec<String>> = group.args.iter().map(|t| fill(t, value)).collect();
                list.extend(parts.into_iter().flatten());
            }
            Entry {
                command: Some(command.clone()),
                args: Some(list),
                env: fields(env, &mut secret_env),
                ..Entry::default()
            }
        }
        Shape::Remote { kind, url, headers } => Entry {
            kind: Some(kind.to_string()),
            url: Some(fill(url, value).unwrap_or_default()),
            headers: fields(headers, &mut secret_headers),
            ..Entry::default()
        },
    };
    Filled {
        entry: entry.to_map(),
        secret_env,
        secret_headers,
    }
}

/// How a choice reads in a list: `npm @scope/pkg 1.2.3`, `sse https://…`.
pub fn label(server: &ServerJson, choice: Choice) -> String {
    match choice {
        Choice::Package(i) => server.packages.get(i).map_or_else(String::new, |p| {
            let version = p.version.as_deref().map(|v| format!(" {v}")).unwrap_or_default();
            format!("{} {}{version}", p.registry_type, p.identifier)
        }),
        Choice::Remote(i) => server
            .remotes
            .get(i)
            .map_or_else(String::new, |r| format!("{} {}", r.kind, r.url)),
    }
}

impl Choice {
    /// `package:N` or `remote:N` (0-based), as the API and CLI take it.
    pub fn parse(text: &str) -> Option<Choice> {
        let (kind, index) = text.split_once(':')?;
        let index = index.parse().ok()?;
        match kind {
            "package" => Some(Choice::Package(index)),
            "remote" => Some(Choice::Remote(index)),
            _ => None,
        }
    }
}

impl Serialize for Choice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl std::fmt::Display for Choice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Choice::Package(i) => write!(f, "package:{i}"),
            Choice::Remote(i) => write!(f, "remote:{i}"),
        }
    }
}
