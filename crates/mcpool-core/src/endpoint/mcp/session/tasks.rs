//! Tasks passed through (behaviour.md rule 16 and §4): a server that
//! answers an agent's call with a task is noted as the task's owner, the
//! agent is handed an id of mcpool's for it (`Hub::task_made`), and the
//! agent's `tasks/*` requests for that id go back to that server with the
//! server's own id. Both revisions: the 2026-07-28 extension (SEP-2663:
//! `tasks/get`, `tasks/update`, `tasks/cancel`, typed by rmcp) and
//! 2025-11-25's (`tasks/get`, `tasks/result`, `tasks/list`,
//! `tasks/cancel` of a session agent, which the endpoint hands over as
//! [`SESSION_PREFIX`] custom requests so their answers pass whole). An
//! agent reaches only the tasks it was handed: a session agent's are its
//! session's, and an id is a random one that cannot be guessed.

use std::sync::Arc;

use rmcp::model::{
    CallToolResult, CancelTaskParams, ClientRequest, CustomRequest, CustomResult, ErrorData as McpError, GetTaskParams,
    GetTaskResult, Request, ServerResult, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{json, Value};

use super::forward::Forwarder;
use super::routing::Routes;
use super::unexpected;
use crate::hub::{Scope, TaskRoute};
use crate::supervisor::Supervisor;

/// What the endpoint puts before a session agent's 2025-11-25 `tasks/*`
/// method (request_check.rs), so rmcp hands it over as it came.
pub const SESSION_PREFIX: &str = "io.mcpool/session/";

/// A session's `tasks/*` requests, each to the server that made the task.
pub(super) struct Tasks<'a> {
    pub routes: Routes<'a>,
    pub forwarder: Forwarder<'a>,
}

/// The agent session a request comes from, as tasks are kept by it.
fn asker(forwarder: &Forwarder<'_>) -> Option<u64> {
    Some(forwarder.agent_id()).filter(|id| *id != u64::MAX)
}

/// Every `"taskId": from` in `value` (a task, a list of them, a result's
/// `related-task`) as `"taskId": to`.
fn rename_task_ids(value: &mut Value, from: &str, to: &str) {
    match value {
        Value::Object(object) => {
            for (key, field) in object.iter_mut() {
                if key == "taskId" && field.as_str() == Some(from) {
                    *field = Value::String(to.to_string());
                } else {
                    rename_task_ids(field, from, to);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rename_task_ids(v, from, to)),
        _ => {}
    }
}

/// A call's result that is a 2025-11-25 task (`{"task": {…}}`, kept whole
/// by kept.rs): handed out under an id of mcpool's. Whether it was one.
pub(super) fn hand_out_2025_task(
    routes: &Routes<'_>,
    forwarder: &Forwarder<'_>,
    server: &str,
    result: &mut CallToolResult,
) -> bool {
    let whole = result
        .meta
        .as_mut()
        .and_then(|m| m.get_mut(crate::kept::KEY))
        .and_then(|k| k.get_mut(crate::kept::WHOLE));
    let Some(id) = whole
        .as_ref()
        .and_then(|w| w.get("task"))
        .and_then(|t| t.get("taskId"))
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        return false;
    };
    let public = routes.pool.hub().task_made(TaskRoute {
        server: server.to_string(),
        upstream: id.clone(),
        owner: asker(forwarder),
    });
    if let Some(whole) = whole {
        rename_task_ids(whole, &id, &public);
    }
    true
}

impl Tasks<'_> {
    /// Where the task the agent knows as `public` lives, if this endpoint
    /// can see it and this agent was handed it.
    fn route(&self, public: &str) -> Result<(Arc<Supervisor>, TaskRoute), McpError> {
        let unknown = || McpError::invalid_params(format!("mcpool knows no task '{public}'."), None);
        let route = self
            .routes
            .pool
            .hub()
            .task_route(public, asker(&self.forwarder))
            .ok_or_else(unknown)?;
        let in_reach = match self.routes.scope {
            Scope::One(name) => *name == route.server,
            _ => self.routes.in_scope(&route.server),
        };
        if !in_reach {
            return Err(unknown());
        }
        let sup = self.routes.pool.server(&route.server).ok_or_else(|| {
            McpError::invalid_request(
                format!("Server '{}' is no longer in the mcpool config.", route.server),
                None,
            )
        })?;
        Ok((sup, route))
    }

    pub async fn get(
        &self,
        mut request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let public = std::mem::take(&mut request.task_id);
        let (sup, route) = self.route(&public)?;
        request.task_id = route.upstream.clone();
        match self
            .forwarder
            .forward(&sup, ClientRequest::GetTaskRequest(Request::new(request)), &context)
            .await?
        {
            ServerResult::GetTaskResult(mut r) => {
                if r.task.task.task_id == route.upstream {
                    r.task.task.task_id = public;
                }
                Ok(r)
            }
            _ => Err(unexpected()),
        }
    }

    pub async fn update(
        &self,
        mut request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let (sup, route) = self.route(&request.task_id)?;
        request.task_id = route.upstream;
        self.forwarder
            .forward(&sup, ClientRequest::UpdateTaskRequest(Request::new(request)), &context)
            .await
            .map(|_| ())
    }

    pub async fn cancel(
        &self,
        mut request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let (sup, route) = self.route(&request.task_id)?;
        request.task_id = route.upstream;
        self.forwarder
            .forward(&sup, ClientRequest::CancelTaskRequest(Request::new(request)), &context)
            .await
            .map(|_| ())
    }

    /// A session agent's 2025-11-25 `tasks/get`, `tasks/result`,
    /// `tasks/cancel` or `tasks/list` (`method` without the prefix): the
    /// server's answer as it sent it, with mcpool's ids.
    pub async fn session_request(
        &self,
        method: &str,
        params: Option<Value>,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        if method == "tasks/list" {
            return self.list(context).await;
        }
        let mut params = params.unwrap_or_else(|| json!({}));
        let public = params
            .get("taskId")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| McpError::invalid_params(format!("{method} needs a taskId."), None))?;
        let (sup, route) = self.route(&public)?;
        params["taskId"] = Value::String(route.upstream.clone());
        let mut answer = self.forward_whole(&sup, method, params, &context).await?;
        rename_task_ids(&mut answer, &route.upstream, &public);
        Ok(CustomResult::new(answer))
    }

    /// `tasks/list`: the tasks this agent was handed, from each server that
    /// made one (the first page of each; servers list every task of
    /// mcpool's connection, so the others are left out).
    async fn list(&self, context: RequestContext<RoleServer>) -> Result<CustomResult, McpError> {
        let Some(owner) = asker(&self.forwarder) else {
            return Ok(CustomResult::new(json!({"tasks": []})));
        };
        let handed = self.routes.pool.hub().tasks_of(owner);
        let mut servers: Vec<&str> = handed.iter().map(|(_, r)| r.server.as_str()).collect();
        servers.sort_unstable();
        servers.dedup();
        let mut tasks = Vec::new();
        for server in servers {
            let Some(sup) = self.routes.pool.server(server).filter(|_| self.routes.in_scope(server)) else {
                continue;
            };
            let Ok(answer) = self.forward_whole(&sup, "tasks/list", json!({}), &context).await else {
                continue;
            };
            for mut task in answer["tasks"].as_array().cloned().unwrap_or_default() {
                let id = task["taskId"].as_str().unwrap_or_default().to_string();
                let mine = handed.iter().find(|(_, r)| r.server == server && r.upstream == id);
                if let Some((public, _)) = mine {
                    rename_task_ids(&mut task, &id, public);
                    tasks.push(task);
                }
            }
        }
        Ok(CustomResult::new(json!({"tasks": tasks})))
    }

    /// `method` with `params` to `sup`, and its answer whole (what rmcp's
    /// types would drop put back).
    async fn forward_whole(
        &self,
        sup: &Arc<Supervisor>,
        method: &str,
        params: Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<Value, McpError> {
        let request = ClientRequest::CustomRequest(CustomRequest::new(method.to_string(), Some(params)));
        let result = self.forwarder.forward(sup, request, context).await?;
        let mut answer = serde_json::to_value(result).map_err(|e| McpError::internal_error(e.to_string(), None))?;
        crate::kept::unfold(&mut answer);
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tasks_id_is_renamed_wherever_it_is_named() {
        let mut answer = json!({
            "tasks": [{"taskId": "s-1", "status": "working"}, {"taskId": "s-2"}],
            "content": [],
            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "s-1"}},
        });
        rename_task_ids(&mut answer, "s-1", "mcpool-task-x");
        assert_eq!(answer["tasks"][0]["taskId"], "mcpool-task-x");
        assert_eq!(answer["tasks"][1]["taskId"], "s-2");
        assert_eq!(
            answer["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
            "mcpool-task-x"
        );
    }
}
