//! What a 2026-07-28 server is told of the agent behind a request
//! ([`told_capabilities`]): each request says what its client can do, and
//! a session agent's 2025-11-25 `task` becomes the tasks extension there.

use rmcp::model::{ClientRequest, GetMeta, RequestMetaObject};
use rmcp::service::{RequestContext, RoleServer};

use super::forward::agent_takes_input_requests;

/// What a 2026-07-28 server is told the client of this request can do:
/// mcpool's own capabilities, with the questions only the agent can answer
/// (sampling, elicitation, roots) as a 2026-07-28 agent declared them. A
/// server that needs one the agent lacks then refuses with -32021 itself,
/// rather than asking what no one will answer. A session agent's questions
/// are bridged (bridge.rs), and an agent that cannot answer gets one
/// sentence there. Extensions are the agent's, whatever its revision: the
/// MCP Apps UI, tasks (endpoint/session/tasks.rs), a vendor's, so the server
/// serves the agent as it would directly, and an agent without them gets
/// none. `None`: the connection's own capabilities say it all.
///
/// `task`: a session agent asked for a task the 2025-11-25 way
/// ([`take_session_task`]); the server is told it takes the tasks
/// extension.
pub(super) fn told_capabilities(agent: Option<&RequestContext<RoleServer>>, task: bool) -> Option<RequestMetaObject> {
    let agent = agent?;
    let mut declared = match agent.client_capabilities() {
        Some(declared) => declared,
        None if task => Default::default(),
        None => return None,
    };
    if task {
        declared
            .extensions
            .get_or_insert_with(Default::default)
            .entry(rmcp::model::TASKS_EXTENSION_ID.to_string())
            .or_default();
    }
    let stateless = agent_takes_input_requests(Some(agent));
    if !stateless && declared.extensions.as_ref().is_none_or(|e| e.is_empty()) {
        return None;
    }
    let mut told = crate::upstream::handler::client_config().capabilities;
    if stateless {
        told.sampling = declared.sampling;
        told.elicitation = declared.elicitation;
        told.roots = declared.roots;
    }
    told.extensions = declared.extensions.filter(|e| !e.is_empty());
    let mut meta = RequestMetaObject::new();
    meta.set_client_capabilities(told);
    Some(meta)
}

/// Whether `request` is one of a task's own (`tasks/get`, `tasks/cancel`…).
pub(super) fn of_a_task(request: &ClientRequest) -> bool {
    match request {
        ClientRequest::GetTaskRequest(_)
        | ClientRequest::CancelTaskRequest(_)
        | ClientRequest::UpdateTaskRequest(_) => true,
        ClientRequest::CustomRequest(r) => r.method.starts_with("tasks/"),
        _ => false,
    }
}

/// Takes a session agent's 2025-11-25 `task` off a call to a 2026-07-28
/// server (kept in its `_meta` by kept/), where the tasks extension
/// asks for it instead. Whether the call had one.
pub(super) fn take_session_task(request: &mut ClientRequest) -> bool {
    if !matches!(request, ClientRequest::CallToolRequest(_)) {
        return false;
    }
    let meta = request.get_meta_mut();
    let Some(kept) = meta.get_mut(crate::kept::KEY).and_then(|k| k.as_object_mut()) else {
        return false;
    };
    let asked = kept.remove("task").is_some();
    if kept.keys().all(|k| k == "_meta") {
        meta.remove(crate::kept::KEY);
    }
    asked
}
