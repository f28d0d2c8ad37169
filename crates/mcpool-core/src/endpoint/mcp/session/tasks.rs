//! Tasks (SEP-2663) passed through (behaviour.md rule 16): a server that
//! answers a 2026-07-28 agent's call with a task is noted as the task's
//! owner, and `tasks/get`, `tasks/update` and `tasks/cancel` for that id go
//! back to it. The agent's own tasks capability is what the server is told
//! (supervisor/forward.rs), so only agents that take tasks are given any.

use std::sync::Arc;

use rmcp::model::{
    CancelTaskParams, ClientRequest, ErrorData as McpError, GetTaskParams, GetTaskResult, Request, ServerResult,
    UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};

use super::{unexpected, AgentSession};
use crate::hub::Scope;
use crate::supervisor::Supervisor;

impl AgentSession {
    /// The server that made `task_id`, if this endpoint can see it.
    fn task_owner(&self, task_id: &str) -> Result<Arc<Supervisor>, McpError> {
        if let Scope::One(_) = self.scope {
            return self.single();
        }
        let unknown = || McpError::invalid_params(format!("mcpool knows no task '{task_id}'."), None);
        let server = self.pool.hub().task_server(task_id).ok_or_else(unknown)?;
        if !self.in_scope(&server) {
            return Err(unknown());
        }
        self.pool.server(&server).ok_or_else(|| {
            McpError::invalid_request(format!("Server '{server}' is no longer in the mcpool config."), None)
        })
    }

    pub(super) async fn task_get(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let sup = self.task_owner(&request.task_id)?;
        match self
            .forward(&sup, ClientRequest::GetTaskRequest(Request::new(request)), &context)
            .await?
        {
            ServerResult::GetTaskResult(r) => Ok(r),
            _ => Err(unexpected()),
        }
    }

    pub(super) async fn task_update(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let sup = self.task_owner(&request.task_id)?;
        self.forward(&sup, ClientRequest::UpdateTaskRequest(Request::new(request)), &context)
            .await
            .map(|_| ())
    }

    pub(super) async fn task_cancel(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let sup = self.task_owner(&request.task_id)?;
        self.forward(&sup, ClientRequest::CancelTaskRequest(Request::new(request)), &context)
            .await
            .map(|_| ())
    }
}
