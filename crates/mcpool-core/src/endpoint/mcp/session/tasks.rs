//! Tasks passed through (behaviour.md rule 16 and §4): a server that
//! answers an agent's call with a task is noted as the task's owner, the
//! agent is handed an id of mcpool's for it (`Hub::task_made`), and the
//! agent's `tasks/*` requests for that id go back to that server with the
//! server's own id. Both revisions: the 2026-07-28 extension (SEP-2663:
//! `tasks/get`, `tasks/update`, `tasks/cancel`, typed by rmcp) and
//! 2025-11-25's (`tasks/get`, `tasks/result`, `tasks/list`,
//! `tasks/cancel` of a session agent, which the endpoint hands over as
//! [`SESSION_PREFIX`] custom requests so their answers pass whole). Across
//! revisions they are bridged: a 2025-11-25 server's task reaches a
//! 2026-07-28 agent as the extension's (its `tasks/get` answered from the
//! server's `tasks/get` and `tasks/result`), and a 2026-07-28 server's
//! reaches a session agent that asked with `task` the 2025-11-25 way (its
//! `tasks/result` waits on the server's `tasks/get`). An agent reaches
//! only the tasks it was handed: a session agent's are its session's, and
//! an id is a random one that cannot be guessed.

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
use crate::hub::{Bridge, Scope, TaskRoute};
use crate::supervisor::Supervisor;

/// How long a session agent's `tasks/result` of a 2026-07-28 server's task
/// waits for the task to end.
const RESULT_WAIT: std::time::Duration = std::time::Duration::from_secs(300);

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

/// Notes that `server` made the task `upstream` for this agent, handed to
/// it by way of `bridge`: the id the agent gets for it.
pub(super) fn hand_out(
    routes: &Routes<'_>,
    forwarder: &Forwarder<'_>,
    server: &str,
    upstream: String,
    bridge: Bridge,
) -> String {
    routes.pool.hub().task_made(TaskRoute {
        server: server.to_string(),
        upstream,
        owner: asker(forwarder),
        bridge,
    })
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

/// Whether a call should ask a 2025-11-25 server for a task on behalf of
/// a 2026-07-28 agent: the agent takes the tasks extension, and the
/// server (on a session revision) runs `tool` as a task (its
/// `tasks.requests.tools.call` capability, the tool's
/// `execution.taskSupport` `optional` or `required`).
pub(super) fn bridges_2025_task(
    context: &RequestContext<RoleServer>,
    sup: &Supervisor,
    tool: Option<&rmcp::model::Tool>,
) -> bool {
    let takes = super::speaks_2026(context)
        && context
            .client_capabilities()
            .and_then(|c| c.extensions)
            .is_some_and(|e| e.contains_key(rmcp::model::TASKS_EXTENSION_ID));
    let Some(info) = sup.info().filter(|i| i.protocol_version.has_initialize()) else {
        return false;
    };
    let offers = crate::kept::kept_capabilities(&info.capabilities)
        .and_then(|k| k.get("tasks"))
        .is_some_and(|t| t["requests"]["tools"]["call"].is_object());
    let support = tool
        .and_then(|t| t.meta.as_ref())
        .and_then(|m| m.get(crate::kept::KEY))
        .and_then(|k| k["execution"]["taskSupport"].as_str().map(str::to_string));
    takes && offers && matches!(support.as_deref(), Some("optional" | "required"))
}

/// Asks for a task on a call to a 2025-11-25 server: `task` in its params,
/// kept in its `_meta` until the server's wire (kept/).
pub(super) fn ask_2025_task(request: &mut rmcp::model::CallToolRequestParams) {
    let meta = request.meta.get_or_insert_with(Default::default);
    let kept = meta.entry(crate::kept::KEY).or_insert_with(|| json!({}));
    if let Some(kept) = kept.as_object_mut() {
        kept.insert("task".into(), json!({}));
    }
}

/// Whether a call asks for a task the 2025-11-25 way (`task`, kept in its
/// `_meta` by kept/).
pub(super) fn asks_2025_task(
    request: &rmcp::model::CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> bool {
    let asks =
        |meta: &rmcp::model::RequestMetaObject| meta.get(crate::kept::KEY).is_some_and(|k| k.get("task").is_some());
    request.meta.as_ref().is_some_and(asks) || asks(&context.meta)
}

/// The tasks extension's task (a `tasks/get` answer, or its seed state) as
/// a 2025-11-25 `Task`, under mcpool's id: the outcome left for
/// `tasks/result`, `ttlMs` and `pollIntervalMs` by their 2025-11-25 names.
fn as_session_task(mut task: Value, public: &str) -> Value {
    if let Some(task) = task.as_object_mut() {
        for gone in [
            "resultType",
            "result",
            "error",
            "inputRequests",
            "requestState",
            "_meta",
        ] {
            task.remove(gone);
        }
        task.insert("taskId".into(), json!(public));
        for (new, old) in [("ttlMs", "ttl"), ("pollIntervalMs", "pollInterval")] {
            if let Some(value) = task.remove(new) {
                task.insert(old.into(), value);
            }
        }
    }
    task
}

/// A 2026-07-28 server's task for a session agent that asked for it the
/// 2025-11-25 way: handed out under an id of mcpool's, as that revision's
/// `CreateTaskResult` (`{"task": {…}}`), carried whole to the agent in an
/// empty call result (kept/).
pub(super) fn hand_out_as_session_task(
    routes: &Routes<'_>,
    forwarder: &Forwarder<'_>,
    server: &str,
    created: rmcp::model::CreateTaskResult,
) -> CallToolResult {
    let public = hand_out(
        routes,
        forwarder,
        server,
        created.task.task_id.clone(),
        Bridge::AsSession,
    );
    let task = as_session_task(serde_json::to_value(&created.task).unwrap_or_default(), &public);
    let mut result = CallToolResult::success(Vec::new());
    result.is_error = None;
    let mut meta = rmcp::model::MetaObject::new();
    meta.insert(crate::kept::KEY.into(), json!({crate::kept::WHOLE: {"task": task}}));
    result.meta = Some(meta);
    result
}

/// A 2025-11-25 task's state (`tasks/get`, kept whole) as the tasks
/// extension's, for a 2026-07-28 agent: `ttl` and `pollInterval` in
/// milliseconds by their 2026-07-28 names, the outcome (`result`, `error`)
/// inlined, under mcpool's id.
fn as_detailed_task(mut state: Value, public: &str, outcome: Option<(&str, Value)>) -> Value {
    if let Some(state) = state.as_object_mut() {
        state.remove("_meta");
        state.insert("taskId".into(), json!(public));
        for (old, new) in [("ttl", "ttlMs"), ("pollInterval", "pollIntervalMs")] {
            if let Some(value) = state.remove(old) {
                state.insert(new.into(), value);
            }
        }
        state.entry("ttlMs").or_insert(Value::Null);
        // A 2026-07-28 agent answers a task's questions as rounds, which a
        // 2025-11-25 task cannot take: it waits as working.
        if state.get("status").and_then(Value::as_str) == Some("input_required") {
            state.insert("status".into(), json!("working"));
        }
        if let Some((field, value)) = outcome {
            state.insert(field.into(), value);
        }
        state.insert("resultType".into(), json!("complete"));
    }
    state
}

/// A call's result that is a 2025-11-25 task (`{"task": {…}}`, kept whole
/// by kept/): handed out under an id of mcpool's, and for a 2026-07-28
/// agent (`bridged`) as the tasks extension's `CreateTaskResult`.
pub(super) fn hand_out_2025_task(
    routes: &Routes<'_>,
    forwarder: &Forwarder<'_>,
    server: &str,
    result: &mut CallToolResult,
    bridged: bool,
) -> Option<rmcp::model::CreateTaskResult> {
    let whole = result
        .meta
        .as_mut()
        .and_then(|m| m.get_mut(crate::kept::KEY))
        .and_then(|k| k.get_mut(crate::kept::WHOLE));
    let id = whole
        .as_ref()
        .and_then(|w| w.get("task"))
        .and_then(|t| t.get("taskId"))
        .and_then(Value::as_str)
        .map(str::to_string)?;
    let bridge = if bridged { Bridge::AsExtension } else { Bridge::None };
    let public = hand_out(routes, forwarder, server, id.clone(), bridge);
    let whole = whole?;
    rename_task_ids(whole, &id, &public);
    if !bridged {
        return None;
    }
    let mut task = as_detailed_task(whole["task"].take(), &public, None);
    task["resultType"] = json!("task");
    match serde_json::from_value(task) {
        Ok(created) => Some(created),
        Err(e) => {
            tracing::warn!(
                server,
                "a 2025-11-25 task could not be handed out as the tasks extension's: {e}"
            );
            None
        }
    }
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
        if route.bridge == Bridge::AsExtension {
            return self.get_bridged(&sup, &route, &public, &context).await;
        }
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
        if route.bridge == Bridge::AsExtension {
            return Err(McpError::invalid_params(
                "The task's server (on 2025-11-25) takes no input for its tasks this way.",
                None,
            ));
        }
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
        if route.bridge == Bridge::AsExtension {
            let params = json!({"taskId": route.upstream});
            return self
                .forward_whole(&sup, "tasks/cancel", params, &context)
                .await
                .map(|_| ());
        }
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
        if route.bridge == Bridge::AsSession {
            return self.session_bridged(method, &sup, &route, &public, &context).await;
        }
        params["taskId"] = Value::String(route.upstream.clone());
        let mut answer = self.forward_whole(&sup, method, params, &context).await?;
        rename_task_ids(&mut answer, &route.upstream, &public);
        Ok(CustomResult::new(answer))
    }

    /// A session agent's 2025-11-25 `tasks/get`, `tasks/result` or
    /// `tasks/cancel` of a 2026-07-28 server's task: answered from the
    /// server's `tasks/get` (and `tasks/cancel`); `tasks/result` waits for
    /// the task to end, polling as the server asks.
    async fn session_bridged(
        &self,
        method: &str,
        sup: &Arc<Supervisor>,
        route: &TaskRoute,
        public: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        let params = json!({"taskId": route.upstream});
        if method == "tasks/cancel" {
            self.forward_whole(sup, "tasks/cancel", params.clone(), context).await?;
        }
        let deadline = tokio::time::Instant::now() + RESULT_WAIT;
        loop {
            let state = self.forward_whole(sup, "tasks/get", params.clone(), context).await?;
            let status = state
                .get("status")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            if method != "tasks/result" {
                return Ok(CustomResult::new(as_session_task(state, public)));
            }
            match status.as_str() {
                "completed" => {
                    let mut result = state.get("result").cloned().unwrap_or_else(|| json!({"content": []}));
                    result["_meta"]["io.modelcontextprotocol/related-task"] = json!({"taskId": public});
                    return Ok(CustomResult::new(result));
                }
                "failed" => {
                    let error = &state["error"];
                    let message = error["message"].as_str().unwrap_or("the task failed").to_string();
                    let code = error["code"].as_i64().unwrap_or(-32603) as i32;
                    return Err(McpError::new(rmcp::model::ErrorCode(code), message, None));
                }
                "cancelled" => {
                    return Err(McpError::invalid_request(
                        format!("The task '{public}' was cancelled."),
                        None,
                    ));
                }
                _ => {}
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(McpError::internal_error(
                    format!("The task '{public}' did not end within {} s.", RESULT_WAIT.as_secs()),
                    None,
                ));
            }
            let every = state
                .get("pollIntervalMs")
                .and_then(Value::as_u64)
                .unwrap_or(200)
                .clamp(50, 5000);
            tokio::time::sleep(std::time::Duration::from_millis(every)).await;
        }
    }

    /// `tasks/list`: the tasks this agent was handed, from each server that
    /// made one (the first page of each; servers list every task of
    /// mcpool's connection, so the others are left out).
    async fn list(&self, context: RequestContext<RoleServer>) -> Result<CustomResult, McpError> {
        let Some(owner) = asker(&self.forwarder) else {
            return Ok(CustomResult::new(json!({"tasks": []})));
        };
        let handed = self.routes.pool.hub().tasks_of(owner);
        let mut tasks = Vec::new();
        // A 2026-07-28 server's (it has no `tasks/list`), one by one.
        for (public, route) in handed.iter().filter(|(_, r)| r.bridge == Bridge::AsSession) {
            let Some(sup) = self
                .routes
                .pool
                .server(&route.server)
                .filter(|_| self.routes.in_scope(&route.server))
            else {
                continue;
            };
            let params = json!({"taskId": route.upstream});
            if let Ok(state) = self.forward_whole(&sup, "tasks/get", params, &context).await {
                tasks.push(as_session_task(state, public));
            }
        }
        let handed: Vec<_> = handed
            .into_iter()
            .filter(|(_, r)| r.bridge != Bridge::AsSession)
            .collect();
        let mut servers: Vec<&str> = handed.iter().map(|(_, r)| r.server.as_str()).collect();
        servers.sort_unstable();
        servers.dedup();
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

    /// A 2026-07-28 agent's `tasks/get` of a 2025-11-25 server's task: its
    /// state, and once it ended its outcome (`tasks/result`), as the tasks
    /// extension's detailed task.
    async fn get_bridged(
        &self,
        sup: &Arc<Supervisor>,
        route: &TaskRoute,
        public: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let params = json!({"taskId": route.upstream});
        let state = self.forward_whole(sup, "tasks/get", params.clone(), context).await?;
        let outcome = match state.get("status").and_then(Value::as_str) {
            Some("completed") => Some((
                "result",
                self.forward_whole(sup, "tasks/result", params, context).await?,
            )),
            Some("failed") => match self.forward_whole(sup, "tasks/result", params, context).await {
                Ok(result) => Some(("result", result)),
                Err(e) => Some(("error", json!({"code": e.code.0, "message": e.message}))),
            },
            _ => None,
        };
        let mut detailed = as_detailed_task(state, public, outcome);
        rename_task_ids(&mut detailed, &route.upstream, public);
        serde_json::from_value(detailed).map_err(|e| {
            McpError::internal_error(
                format!("The server's task could not be read as this revision's: {e}"),
                None,
            )
        })
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
