//! Tasks (SEP-2663, the `io.modelcontextprotocol/tasks` extension) on
//! 2026-07-28: `echo` answers a client that declared the extension with a
//! task instead of its result. `tasks/get` then finds the task completed
//! with the echo's result (or cancelled, after `tasks/cancel`); an unknown
//! task id is -32602.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use rmcp::model::{
    CallToolResponse, CallToolResult, CreateTaskResult, DetailedTask, GetTaskResult, JsonObject, Task, TaskPayload,
    TaskStatus,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};

/// The tasks made so far: id → the result, or `None` once cancelled.
#[derive(Debug, Default)]
pub struct Tasks(Mutex<HashMap<String, Option<JsonObject>>>);

/// When every task was made and last changed (the tests do not read it).
const AT: &str = "2026-07-28T00:00:00Z";

impl Tasks {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Option<JsonObject>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `result` as a task, when the request's client declared tasks.
    pub fn maybe_task(
        &self,
        context: &RequestContext<RoleServer>,
        result: &CallToolResult,
    ) -> Option<CallToolResponse> {
        if !context.client_capabilities().is_some_and(|c| c.supports_tasks()) {
            return None;
        }
        let object = match serde_json::to_value(result) {
            Ok(serde_json::Value::Object(o)) => o,
            _ => return None,
        };
        let mut tasks = self.lock();
        let id = format!("faulty-task-{}", tasks.len() + 1);
        tasks.insert(id.clone(), Some(object));
        let task = Task::new(id, TaskStatus::Working, AT, AT);
        Some(CallToolResponse::Task(CreateTaskResult::new(task)))
    }

    pub fn get(&self, id: &str) -> Result<GetTaskResult, McpError> {
        let tasks = self.lock();
        let Some(state) = tasks.get(id) else {
            return Err(McpError::invalid_params(format!("no task {id}"), None));
        };
        let task = Task::new(id, TaskStatus::Completed, AT, AT);
        let payload = match state {
            Some(result) => TaskPayload::Completed { result: result.clone() },
            None => TaskPayload::Cancelled,
        };
        Ok(GetTaskResult::new(DetailedTask::new(task, payload)))
    }

    pub fn cancel(&self, id: &str) -> Result<(), McpError> {
        match self.lock().get_mut(id) {
            Some(state) => {
                *state = None;
                Ok(())
            }
            None => Err(McpError::invalid_params(format!("no task {id}"), None)),
        }
    }
}
