//! What a tool asks of the client: sampling, and elicitation both on a
//! session (a request to the client) and on 2026-07-28 (an
//! `InputRequiredResult` answered in a second round).

// Sampling is deprecated by SEP-2577 but is exactly what the tests exercise
// over the legacy (initialize) lifecycle.
#![allow(deprecated)]

use rmcp::{
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, CreateMessageRequestParams, ElicitRequest,
        ElicitRequestParams, InputRequest, InputRequiredResult, SamplingMessage,
    },
    service::RequestContext,
    ErrorData as McpError, RoleServer,
};
use serde_json::{json, Value};

use crate::tools::{failure, marked, stateless, text, to_json};

pub(crate) async fn sample(context: &RequestContext<RoleServer>, prompt: String) -> Result<CallToolResult, McpError> {
    let mut params = CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], 256);
    params.meta = Some(marked("sampling"));
    Ok(match context.peer.create_message(params).await {
        Ok(result) => {
            let answer = result
                .message
                .content
                .iter()
                .filter_map(|block| block.as_text())
                .map(|content| content.text.as_str())
                .collect::<Vec<_>>()
                .join("");
            text(answer)
        }
        Err(error) => failure(format!("sampling failed: {error}")),
    })
}

/// `elicit` on 2026-07-28, where a server cannot send requests: the first
/// round answers `InputRequiredResult` with the elicitation (key `answer`)
/// and `requestState` `faulty-elicit`; the next round (with the client's
/// answer and that state) returns the answer as `elicit` does on a
/// session. A client that did not declare elicitation is refused with
/// -32021 (unless `ignore_capabilities`). `None` on a session revision.
pub fn elicit_by_input_required(
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
    ignore_capabilities: bool,
) -> Option<Result<CallToolResponse, McpError>> {
    if !stateless(context) {
        return None;
    }
    let declared = context.client_capabilities().is_some_and(|c| c.elicitation.is_some());
    if !declared && !ignore_capabilities {
        let mut needed = rmcp::model::ClientCapabilities::default();
        needed.elicitation = Some(Default::default());
        return Some(Err(McpError::missing_required_client_capability(needed)));
    }
    let answer = request.input_responses.as_ref().and_then(|r| r.get("answer"));
    if let Some(answer) = answer {
        if request.request_state.as_deref() != Some(ELICIT_STATE) {
            return Some(Err(McpError::invalid_params("elicit: requestState is missing", None)));
        }
        return Some(Ok(CallToolResponse::Complete(text(to_json(answer)))));
    }
    let message = request
        .arguments
        .as_ref()
        .and_then(|a| a.get("message"))
        .and_then(Value::as_str)
        .unwrap_or("?");
    let asked = match elicitation_params(message.to_string()) {
        Ok(params) => InputRequest::Elicitation(ElicitRequest::new(params)),
        Err(e) => return Some(Err(e)),
    };
    let input = InputRequiredResult::new(
        Some([("answer".to_string(), asked)].into_iter().collect()),
        Some(ELICIT_STATE.to_string()),
    );
    Some(Ok(CallToolResponse::InputRequired(input)))
}

const ELICIT_STATE: &str = "faulty-elicit";

fn elicitation_params(message: String) -> Result<ElicitRequestParams, McpError> {
    let params = json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": { "answer": { "type": "string", "title": "Answer" } },
            "required": ["answer"],
        },
    });
    serde_json::from_value(params).map_err(|error| McpError::internal_error(format!("elicit schema: {error}"), None))
}

pub(crate) async fn elicit(context: &RequestContext<RoleServer>, message: String) -> Result<CallToolResult, McpError> {
    let params = elicitation_params(message)?;
    Ok(match context.peer.create_elicitation(params).await {
        Ok(result) => text(to_json(&result)),
        Err(error) => failure(format!("elicitation failed: {error}")),
    })
}
