//! MCP registries: searching them (the official registry API), reading a server.json, and turning it into a config entry.

mod build;
pub mod client;
pub mod plan;
pub mod runtime;
pub mod server_json;
pub mod view;

pub use client::{Found, RegistryClient, RegistryError, Searched};
pub use plan::{apply, choices, form, label, suggested_name, Choice, Filled, Form, PlanError, Target, Variable};
pub use runtime::{runtime_for, Runtime};
pub use server_json::ServerJson;

/// Searched when the config names no `registries`.
pub const OFFICIAL: &str = "https://registry.modelcontextprotocol.io";

/// The registries a config names, else the official one.
pub fn bases(configured: Option<&[String]>) -> Vec<String> {
    match configured {
        Some(list) => list.to_vec(),
        None => vec![OFFICIAL.to_string()],
    }
}

#[cfg(test)]
mod tests;
