//! Code mode (behaviour.md "code mode"): an agent's JavaScript run over the
//! endpoint's tools in an embedded QuickJS, one runtime per run.
//!
//! The engine is a guest with a contract: `engine.rs` builds a runtime whose
//! memory limit, interrupt handler (wall time, the run's end) and call
//! limits are set before the first instruction, and hands the script
//! exactly `tools` and `console`. It knows nothing of MCP or tokio: a tool
//! call leaves it through [`Host`] and comes back as an [`Answer`].
//! `driver.rs` is the async side: the engine on a thread of its own, its
//! calls made by a closure the endpoint gives (the same path as a direct
//! call), at most [`Limits::parallel`] at once. `signature.rs` writes a
//! tool's TypeScript declaration from its schemas.

mod driver;
mod engine;
pub mod signature;

#[cfg(test)]
mod tests;

use std::time::Duration;

use serde_json::{json, Value};

pub use driver::run;
pub use engine::Host;

/// The default and the most a run may take, in milliseconds.
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;
pub const MAX_TIMEOUT_MS: u64 = 300_000;

/// What one run may use. Set before the first instruction runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The engine's heap, in bytes.
    pub memory: usize,
    /// Wall time from the start of the run.
    pub timeout: Duration,
    /// Tool calls in all.
    pub calls: usize,
    /// Tool calls in flight at once; more wait their turn.
    pub parallel: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory: 64 * 1024 * 1024,
            timeout: Duration::from_millis(DEFAULT_TIMEOUT_MS),
            calls: 200,
            parallel: 8,
        }
    }
}

/// Why a run failed, as the agent reads it in `error.code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    Syntax,
    Runtime,
    Timeout,
    Memory,
    TooManyCalls,
    ToolNotAllowed,
    ToolError,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Syntax => "SYNTAX_ERROR",
            Code::Runtime => "RUNTIME_ERROR",
            Code::Timeout => "TIMEOUT",
            Code::Memory => "MEMORY",
            Code::TooManyCalls => "TOO_MANY_CALLS",
            Code::ToolNotAllowed => "TOOL_NOT_ALLOWED",
            Code::ToolError => "TOOL_ERROR",
        }
    }

    fn parse(s: &str) -> Option<Code> {
        [
            Code::Syntax,
            Code::Runtime,
            Code::Timeout,
            Code::Memory,
            Code::TooManyCalls,
            Code::ToolNotAllowed,
            Code::ToolError,
        ]
        .into_iter()
        .find(|c| c.as_str() == s)
    }
}

/// A failed run: its code, the engine's (or mcpool's) sentence and the
/// script's line it happened on, when known (1 = the first line of `code`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub code: Code,
    pub message: String,
    pub line: Option<u32>,
}

/// How a tool call the script made came back.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// `structuredContent`, else the text.
    Value(Value),
    /// The tool answered with an error (`isError`), or could not be reached.
    ToolError(String),
    /// Not a tool this endpoint lists to this agent.
    NotAllowed(String),
}

/// What a run came to.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub outcome: Result<Value, Failure>,
    /// `console.log` lines, in order.
    pub logs: Vec<String>,
    /// Tool calls made (started).
    pub calls: usize,
    /// How long it ran.
    pub elapsed: Duration,
    /// The engine's heap when the run ended (its context and what the
    /// script left reachable), in bytes: QuickJS's own count.
    pub memory: u64,
}

impl Report {
    /// The `structuredContent` the agent gets.
    pub fn structured(&self) -> Value {
        match &self.outcome {
            Ok(value) => json!({"ok": true, "value": value, "logs": self.logs, "calls": self.calls}),
            Err(f) => json!({
                "ok": false,
                "error": {"code": f.code.as_str(), "message": f.message, "line": f.line},
                "logs": self.logs,
                "calls": self.calls,
            }),
        }
    }

    /// The outcome word of the activity log and the metrics: `ok`, or the
    /// code in lower case (`tool_not_allowed`, ...).
    pub fn outcome_word(&self) -> String {
        match &self.outcome {
            Ok(_) => "ok".into(),
            Err(f) => f.code.as_str().to_ascii_lowercase(),
        }
    }
}

/// The arguments of `mcpool__run_script`, or the sentence why not.
pub fn parse_args(arguments: Option<&serde_json::Map<String, Value>>) -> Result<(String, Limits), String> {
    let get = |k: &str| arguments.and_then(|a| a.get(k)).filter(|v| !v.is_null());
    let code = match get("code") {
        Some(Value::String(c)) if !c.trim().is_empty() => c.clone(),
        _ => {
            return Err(
                "mcpool__run_script needs the argument 'code': JavaScript, the body of an async function whose `return` is the result.".into(),
            )
        }
    };
    let mut limits = Limits::default();
    if let Some(v) = get("timeoutMs") {
        let ms = v
            .as_u64()
            .or_else(|| v.as_f64().filter(|f| f.fract() == 0.0 && *f >= 1.0).map(|f| f as u64))
            .filter(|ms| *ms >= 1)
            .ok_or_else(|| {
                format!(
                    "mcpool__run_script: 'timeoutMs' must be a whole number of milliseconds, 1 to {MAX_TIMEOUT_MS}."
                )
            })?;
        limits.timeout = Duration::from_millis(ms.min(MAX_TIMEOUT_MS));
    }
    Ok((code, limits))
}
