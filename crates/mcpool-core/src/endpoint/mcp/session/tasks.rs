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

use super::forward::Forwarder;
use super::routing::Routes;
use super::unexpected;
use crate::hub::Scope;
use crate::supervisor::Supervisor;

/// A session's `tasks/*` requests, each to the server that made the task.
pub(super) struct Tasks<'a> {
    pub routes: Routes<'a>,
    pub forwarder: Forwarder<'a>,
}

impl Tasks<'_> {
    /// The server that made `task_id`, if this endpoint can see it.
    fn owner(&self, task_id: &str) -> Result<Arc<Supervisor>, McpError> {
        if let Scope::One(_) = self.routes.scope {
            return self.routes.single();
        }
        let unknown = || McpError::invalid_params(format!("mcpool knows no task '{task_id}'."), None);
        let server = self.routes.pool.hub().task_server(task_id).ok_or_else(unknown)?;
        if !self.routes.in_scope(&server) {
            return Err(unknown());
        }
        self.routes.pool.server(&server).ok_or_else(|| {
            McpError::invalid_request(format!("Server '{server}' is no longer in the mcpool config."), None)
        })
    }

    pub async fn get(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let sup = self.owner(&request.task_id)?;
        match self
            .forwarder
            .forward(&sup, ClientRequest::GetTaskRequest(Request::new(request)), &context)
            .await?
        {
            ServerResult::GetTaskResult(r) => Ok(r),
            _ => Err(unexpected()),
        }
    }

    pub async fn update(&self, request: UpdateTaskParams, context: RequestContext<RoleServer>) -> Result<(), McpError> {
        let sup = self.owner(&request.task_id)?;
        self.forwarder
            .forward(&sup, ClientRequest::UpdateTaskRequest(Request::new(request)), &context)
            .await
            .map(|_| ())
    }

    pub async fn cancel(&self, request: CancelTaskParams, context: RequestContext<RoleServer>) -> Result<(), McpError> {
        let sup = self.owner(&request.task_id)?;
        self.forwarder
            .forward(&sup, ClientRequest::CancelTaskRequest(Request::new(request)), &context)
            .await
            .map(|_| ())
    }
}
