//! Which server a name or URI belongs to, and what a session may see.

use std::sync::Arc;

use rmcp::model::ErrorData as McpError;

use crate::hub::Scope;
use crate::pool::Pool;
use crate::supervisor::Supervisor;

/// A session's view of the pool through its scope: the servers it sees and
/// where a public name or URI leads.
#[derive(Clone, Copy)]
pub(super) struct Routes<'a> {
    pub pool: &'a Pool,
    pub scope: &'a Scope,
}

impl<'a> Routes<'a> {
    /// The one server of a `/servers/NAME/mcp` session.
    pub fn single(&self) -> Result<Arc<Supervisor>, McpError> {
        let Scope::One(name) = self.scope else {
            return Err(McpError::internal_error("not a per-server session", None));
        };
        self.pool.server(name).ok_or_else(|| {
            McpError::invalid_request(format!("Server '{name}' is no longer in the mcpool config."), None)
        })
    }

    /// The profile of a `/profiles/NAME/mcp` session.
    pub fn profile_name(&self) -> Option<&'a str> {
        match self.scope {
            Scope::Profile(name) => Some(name),
            _ => None,
        }
    }

    /// Whether this session sees the prompts and resources of `server`.
    pub fn in_scope(&self, server: &str) -> bool {
        match self.scope {
            Scope::All => true,
            Scope::One(name) => name == server,
            Scope::Profile(name) => self
                .pool
                .tool_control()
                .profile(name)
                .is_some_and(|p| p.includes_server(server)),
        }
    }

    /// The server and upstream name behind a public tool name. A name whose
    /// tools are not listed right now (a disconnected or signed-out server)
    /// still reaches its server by prefix, so the agent hears why.
    pub fn route_tool(&self, public: &str) -> Option<(Arc<Supervisor>, String)> {
        let view = self.pool.tool_view();
        if let Some((server, tool)) = view.names.resolve(public) {
            return self.pool.server(server).map(|s| (s, tool.to_string()));
        }
        let (server, tool) = public.split_once(crate::names::SEPARATOR)?;
        let sup = self
            .pool
            .servers()
            .into_iter()
            .find(|s| crate::names::sanitize(s.name()) == server)?;
        Some((sup, tool.to_string()))
    }

    /// The server of the prompt `public` (its name on `/mcp`) in scope, and
    /// the prompt's own name there.
    pub fn route_prompt(&self, public: &str) -> Result<(Arc<Supervisor>, String), McpError> {
        let view = self.pool.prompt_view();
        let found = view.names.resolve(public).filter(|(s, _)| self.in_scope(s));
        let Some((server, prompt)) = found else {
            return Err(McpError::invalid_params(
                format!("mcpool has no prompt named '{public}'."),
                None,
            ));
        };
        let sup = self
            .pool
            .server(server)
            .ok_or_else(|| McpError::invalid_params("unknown prompt", None))?;
        Ok((sup, prompt.to_string()))
    }

    /// The server a resource URI belongs to: the one listing it, else the
    /// one whose template's fixed prefix matches it.
    pub fn owner_of_uri(&self, uri: &str) -> Result<Arc<Supervisor>, McpError> {
        if let Scope::One(_) = self.scope {
            return self.single();
        }
        let servers: Vec<Arc<Supervisor>> = self
            .pool
            .servers()
            .into_iter()
            .filter(|s| self.in_scope(s.name()))
            .collect();
        if let Some(sup) = servers
            .iter()
            .find(|s| s.lists().resources.iter().any(|r| r.uri == uri))
        {
            return Ok(sup.clone());
        }
        let best = servers
            .iter()
            .filter_map(|s| {
                let longest = s
                    .lists()
                    .templates
                    .iter()
                    .map(|t| t.uri_template.split('{').next().unwrap_or("").to_string())
                    .filter(|prefix| !prefix.is_empty() && uri.starts_with(prefix.as_str()))
                    .map(|p| p.len())
                    .max();
                longest.map(|l| (l, s.clone()))
            })
            .max_by_key(|(l, _)| *l);
        match best {
            Some((_, sup)) => Ok(sup),
            None => Err(McpError::resource_not_found(
                format!("No server in mcpool offers the resource '{uri}'."),
                None,
            )),
        }
    }
}
