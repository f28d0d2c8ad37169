//! `mcpool__run_script` (code mode) on an aggregated endpoint: the agent's
//! script runs in `crate::script` with the tools this endpoint lists to
//! it as `tools`, and each call it makes goes the way of a direct call
//! (`Calls::call_as`: profile, tool control, admission, the recent calls,
//! the activity log, naming the run as its parent). The run is one
//! activity entry of its own (server `mcpool`, tool `run_script`), its
//! outcome `ok` or the error code in lower case.

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorCode, ErrorData as McpError, JsonObject,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;

use super::calls::Calls;
use super::record;
use super::{no_profile, refused};
use crate::activity::Kind;
use crate::calls::{Outcome, Recording};
use crate::endpoint::mcp::builtin::BUILTIN_SERVER;
use crate::script::{self, Answer, Report};
use crate::search::{meta, ListingMode};

type Call<'s> = Pin<Box<dyn Future<Output = Answer> + Send + 's>>;

impl Calls<'_> {
    pub(super) async fn run_script(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let mut recording = Recording::start(self.routes.pool.recent_calls());
        recording.target(BUILTIN_SERVER, "run_script");
        let pending = record::Pending::now(&context);
        let (code, limits) = match script::parse_args(request.arguments.as_ref()) {
            Ok(parsed) => parsed,
            Err(sentence) => {
                recording.finish(Outcome::Refused);
                return Ok(refused(sentence));
            }
        };
        // What this endpoint lists to this agent in `all` mode: a profile's
        // tools, less the disabled and held-back ones.
        let profile = self.routes.profile_name();
        let listed = self
            .routes
            .pool
            .listed(profile, Some(ListingMode::All), &|_| false)
            .ok_or_else(|| no_profile(profile.unwrap_or_default()))?;
        let names: Vec<String> = listed
            .tools
            .iter()
            .map(|t| t.name.to_string())
            .filter(|n| !meta::is_meta(n))
            .collect();
        let key = run_key();
        let servers = Mutex::new(BTreeSet::new());
        let report = script::run(code.clone(), names, limits, |name, arguments| {
            self.inner_call(name, arguments, &context, &key, &servers)
        })
        .await;
        let result = answer(&report);
        let ok = report.outcome.is_ok();
        self.note_run(pending, key, &code, &report, &result, &servers);
        recording.finish(if ok { Outcome::Ok } else { Outcome::ToolError });
        Ok(CallToolResponse::Complete(result))
    }

    /// One call a script made, as a direct call that names the run.
    fn inner_call<'s>(
        &'s self,
        name: String,
        arguments: JsonObject,
        context: &'s RequestContext<RoleServer>,
        key: &'s str,
        servers: &'s Mutex<BTreeSet<String>>,
    ) -> Call<'s> {
        Box::pin(async move {
            if meta::is_meta(&name) {
                return Answer::NotAllowed(format!("{name} cannot be called from a script."));
            }
            if let Some((sup, _)) = self.routes.route_tool(&name) {
                crate::sync::lock(servers).insert(sup.name().to_string());
            }
            let mut inner = CallToolRequestParams::new(name.clone());
            inner.arguments = Some(arguments);
            let (result, outcome) = self.call_as(inner, context.clone(), Some(key)).await;
            answer_of(&name, result, outcome)
        })
    }

    /// The run's activity entry. Its code and result are kept only when
    /// every server it called keeps arguments (`logArguments`): the result
    /// may quote theirs.
    fn note_run(
        &self,
        pending: record::Pending,
        key: String,
        code: &str,
        report: &Report,
        result: &CallToolResult,
        servers: &Mutex<BTreeSet<String>>,
    ) {
        let pool = self.routes.pool;
        let keep = crate::sync::lock(servers)
            .iter()
            .all(|s| pool.server(s).is_some_and(|s| s.log_arguments()));
        let structured = result.structured_content.clone().unwrap_or(Value::Null);
        let text = structured.to_string();
        let bytes = Some(text.len() as u64);
        let kept = keep.then(|| {
            let arguments = serde_json::json!({"code": code}).to_string();
            (Some(record::kept_text(&arguments)), Some(record::kept_text(&text)))
        });
        // The engine's message may quote the script's data: only the code
        // unless the run is kept.
        let error = report.outcome.as_ref().err().map(|f| match keep {
            true => format!("{}: {}", f.code.as_str(), f.message),
            false => f.code.as_str().to_string(),
        });
        let mut entry = pending.entry(
            Kind::Tool,
            BUILTIN_SERVER,
            "run_script",
            &report.outcome_word(),
            error,
            bytes,
            kept,
        );
        entry.run = Some(key);
        pool.activity().record(entry);
    }
}

/// What the agent gets: the outcome in a line of text and as `structuredContent`.
fn answer(report: &Report) -> CallToolResult {
    let structured = report.structured();
    let text = match &report.outcome {
        Ok(value) => {
            let logs = if report.logs.is_empty() {
                String::new()
            } else {
                format!("\nLogs:\n{}", report.logs.join("\n"))
            };
            format!("{value}{logs}")
        }
        Err(f) => {
            let line = f.line.map(|l| format!(" (line {l})")).unwrap_or_default();
            format!("{}{line}: {}", f.code.as_str(), f.message)
        }
    };
    let mut result = if report.outcome.is_ok() {
        CallToolResult::success(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::error(vec![ContentBlock::text(text)])
    };
    result.structured_content = Some(structured);
    result
}

/// A call's result as the script sees it.
fn answer_of(name: &str, result: Result<CallToolResponse, McpError>, outcome: Outcome) -> Answer {
    match result {
        Ok(CallToolResponse::Complete(r)) => {
            let text = r
                .content
                .iter()
                .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
                .collect::<Vec<_>>()
                .join("\n");
            if outcome == Outcome::Refused {
                Answer::NotAllowed(text)
            } else if r.is_error == Some(true) {
                Answer::ToolError(if text.is_empty() {
                    format!("{name} answered with an error")
                } else {
                    text
                })
            } else if let Some(structured) = r.structured_content {
                Answer::Value(structured)
            } else if text.is_empty() && !r.content.is_empty() {
                Answer::Value(serde_json::to_value(&r.content).unwrap_or(Value::Null))
            } else {
                Answer::Value(Value::String(text))
            }
        }
        Ok(_) => Answer::ToolError(format!(
            "{name} answered with a task or a request for input; call it directly."
        )),
        Err(e) if e.code == ErrorCode::INVALID_PARAMS && e.message.starts_with("mcpool has no tool named") => {
            Answer::NotAllowed(format!(
                "{} A script can call the tools this endpoint lists.",
                e.message
            ))
        }
        Err(e) => Answer::ToolError(e.message.to_string()),
    }
}

/// A key no other run of this process has: the activity log links the
/// run's calls to it.
fn run_key() -> String {
    format!("{:032x}", rand::random::<u128>())
}
