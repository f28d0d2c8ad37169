//! One run in QuickJS: a runtime of its own, limits set before the first
//! instruction, `tools` and `console` as the only host objects, and a loop
//! that runs the script's jobs, starts its calls (at most
//! [`Limits::parallel`] at once, [`Limits::calls`] in all) and settles each
//! call's promise with its [`Answer`]. Blocking: run it on a thread of its
//! own (`driver.rs`).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use rquickjs::context::EvalOptions;
use rquickjs::promise::PromiseState;
use rquickjs::{Context, Ctx, Function, Runtime, Value as JsValue};
use serde_json::{Map, Value};

use super::{Answer, Code, Failure, Limits, Report};

/// The engine's way out: where a run's tool calls go and come back from.
pub trait Host {
    /// Starts a call; never blocks.
    fn start(&mut self, id: u64, name: String, arguments: Map<String, Value>);
    /// One started call's answer, waiting at most until `deadline`; `None`
    /// when the deadline passed (or the run's owner is gone).
    fn next(&mut self, deadline: Instant) -> Option<(u64, Answer)>;
}

/// The engine's own stack, below the thread's (`driver.rs`): deep recursion
/// is a `RangeError`, not a crash.
const STACK: usize = 1024 * 1024;
/// The most `console.log` keeps per run, in bytes.
const LOG_BYTES: usize = 64 * 1024;
/// The script's file name in stacks; its first line is the wrapper's.
const FILE: &str = "script";

/// The host's side of `tools` and `console`, shared with the functions
/// handed to the script.
#[derive(Default)]
struct Shared {
    /// Calls the script made, not yet started: (id, name, JSON arguments).
    queued: VecDeque<(u64, String, String)>,
    made: usize,
    logs: Vec<String>,
    log_bytes: usize,
}

const PRELUDE: &str = r#"(function (send, log, names) {
  "use strict";
  const pending = new Map();
  function call(name, args) {
    if (typeof name !== "string") throw new TypeError("tools.call(name, args): name must be a tool's name");
    if (args === undefined || args === null) args = {};
    if (typeof args !== "object" || Array.isArray(args)) throw new TypeError("the arguments of " + name + " must be an object");
    const site = new Error("");
    const id = send(name, JSON.stringify(args));
    if (id < 0) {
      const e = new Error("this run made too many tool calls");
      e.code = "TOO_MANY_CALLS";
      throw e;
    }
    return new Promise((resolve, reject) => pending.set(id, { resolve, reject, site }));
  }
  const tools = {};
  for (const n of names) tools[n] = (args) => call(n, args);
  tools.call = call;
  Object.freeze(tools);
  const show = (v) => {
    if (typeof v === "string") return v;
    try { const s = JSON.stringify(v); return s === undefined ? String(v) : s; } catch (_) { return String(v); }
  };
  const out = (...a) => log(a.map(show).join(" "));
  globalThis.tools = tools;
  globalThis.console = Object.freeze({ log: out, info: out, warn: out, error: out, debug: out });
  return function settle(id, ok, payload, code) {
    const p = pending.get(id);
    if (!p) return;
    pending.delete(id);
    if (ok) { p.resolve(JSON.parse(payload)); return; }
    const e = new Error(payload);
    e.code = code;
    e.stack = p.site.stack;
    p.reject(e);
  };
})"#;

/// Runs `code` (the body of an async function) with `names` as `tools`.
/// `stop` ends the run from outside (its owner gave up on it).
pub fn run(code: &str, names: &[String], limits: Limits, stop: Arc<AtomicBool>, host: &mut dyn Host) -> Report {
    let start = Instant::now();
    let deadline = start + limits.timeout;
    let shared = Rc::new(RefCell::new(Shared::default()));
    let tripped: Rc<Cell<Option<Code>>> = Rc::default();
    let mut memory = 0;
    let outcome = match Runtime::new() {
        Ok(rt) => {
            rt.set_memory_limit(limits.memory);
            rt.set_max_stack_size(STACK);
            let trip = tripped.clone();
            let stopped = stop.clone();
            rt.set_interrupt_handler(Some(Box::new(move || {
                trip.get().is_some() || stopped.load(Ordering::Relaxed) || Instant::now() >= deadline
            })));
            let outcome = match Context::full(&rt) {
                Ok(context) => {
                    let outcome = context.with(|ctx| {
                        let mut run = Run {
                            ctx: &ctx,
                            shared: &shared,
                            tripped: &tripped,
                            stop: &stop,
                            limits,
                            deadline,
                            host,
                        };
                        run.go(code, names)
                    });
                    // While the context lives: what the run still holds.
                    memory = u64::try_from(rt.memory_usage().malloc_size).unwrap_or(0);
                    outcome
                }
                Err(e) => Err(failure(
                    Code::Runtime,
                    format!("the script engine could not start: {e}"),
                    None,
                )),
            };
            outcome
        }
        Err(e) => Err(failure(
            Code::Runtime,
            format!("the script engine could not start: {e}"),
            None,
        )),
    };
    let shared = shared.take();
    Report {
        outcome,
        logs: shared.logs,
        calls: shared.made,
        elapsed: start.elapsed(),
        memory,
    }
}

struct Run<'a, 'js> {
    ctx: &'a Ctx<'js>,
    shared: &'a Rc<RefCell<Shared>>,
    tripped: &'a Rc<Cell<Option<Code>>>,
    stop: &'a AtomicBool,
    limits: Limits,
    deadline: Instant,
    host: &'a mut dyn Host,
}

impl<'js> Run<'_, 'js> {
    fn go(&mut self, code: &str, names: &[String]) -> Result<Value, Failure> {
        let settle = self.prelude(names).map_err(|e| self.failure_of(e))?;
        let wrapped = format!("(async function () {{\n{code}\n}})()");
        let mut options = EvalOptions::default();
        options.global = true;
        options.strict = false;
        options.filename = Some(FILE.into());
        let promise = self
            .ctx
            .eval_with_options::<JsValue, _>(wrapped, options)
            .map_err(|e| self.failure_in(e, true))?;
        let Some(promise) = promise.into_promise() else {
            return Err(failure(Code::Runtime, "the script did not start".into(), None));
        };
        let mut in_flight = 0usize;
        loop {
            while self.ctx.execute_pending_job() {}
            if let Some(f) = self.stopped() {
                return Err(f);
            }
            match promise.state() {
                PromiseState::Resolved => {
                    let value: JsValue = match promise.result::<JsValue>() {
                        Some(Ok(v)) => v,
                        _ => return Err(failure(Code::Runtime, "the script's result was lost".into(), None)),
                    };
                    return self.to_json(value);
                }
                PromiseState::Rejected => {
                    let _ = promise.result::<JsValue>();
                    return Err(self.failure_of(rquickjs::Error::Exception));
                }
                PromiseState::Pending => {}
            }
            in_flight += self.start_queued(in_flight);
            if in_flight == 0 {
                return Err(failure(
                    Code::Runtime,
                    "the script waits for something that never settles (no tool call is under way)".into(),
                    None,
                ));
            }
            let Some((id, answer)) = self.host.next(self.deadline) else {
                return Err(self.stopped().unwrap_or_else(|| timeout(self.limits)));
            };
            in_flight -= 1;
            let (ok, payload, code) = match answer {
                Answer::Value(v) => (true, v.to_string(), ""),
                Answer::ToolError(m) => (false, m, Code::ToolError.as_str()),
                Answer::NotAllowed(m) => (false, m, Code::ToolNotAllowed.as_str()),
            };
            if let Err(e) = settle.call::<_, ()>((id as f64, ok, payload, code)) {
                return Err(self.failure_of(e));
            }
        }
    }

    /// Defines `tools` and `console`; answers the function that settles a call.
    fn prelude(&self, names: &[String]) -> rquickjs::Result<Function<'js>> {
        let shared = self.shared.clone();
        let limit = self.limits.calls;
        let tripped = self.tripped.clone();
        let send = Function::new(self.ctx.clone(), move |name: String, args: String| -> f64 {
            let mut s = shared.borrow_mut();
            if s.made >= limit {
                tripped.set(Some(Code::TooManyCalls));
                return -1.0;
            }
            s.made += 1;
            let id = s.made as u64;
            s.queued.push_back((id, name, args));
            id as f64
        })?;
        let shared = self.shared.clone();
        let log = Function::new(self.ctx.clone(), move |line: String| {
            let mut s = shared.borrow_mut();
            if s.log_bytes >= LOG_BYTES {
                return;
            }
            s.log_bytes += line.len();
            if s.log_bytes >= LOG_BYTES {
                s.logs.push(format!(
                    "… (console.log keeps {LOG_BYTES} bytes of a run; the rest is left out)"
                ));
            } else {
                s.logs.push(line);
            }
        })?;
        let mut options = EvalOptions::default();
        options.global = true;
        options.strict = true;
        options.filename = Some("mcpool".into());
        let make: Function = self.ctx.eval_with_options(PRELUDE, options)?;
        make.call((send, log, names.to_vec()))
    }

    /// Starts queued calls while fewer than the limit are in flight;
    /// answers how many it started.
    fn start_queued(&mut self, in_flight: usize) -> usize {
        let mut started = 0;
        while in_flight + started < self.limits.parallel {
            let Some((id, name, args)) = self.shared.borrow_mut().queued.pop_front() else {
                break;
            };
            let arguments = match serde_json::from_str::<Value>(&args) {
                Ok(Value::Object(map)) => map,
                _ => Map::new(),
            };
            self.host.start(id, name, arguments);
            started += 1;
        }
        started
    }

    /// Why the run must end now, whatever the script does.
    fn stopped(&self) -> Option<Failure> {
        if let Some(code) = self.tripped.get() {
            let message = match code {
                Code::TooManyCalls => format!("the run made more than {} tool calls", self.limits.calls),
                _ => "the run was stopped".into(),
            };
            return Some(failure(code, message, None));
        }
        if self.stop.load(Ordering::Relaxed) {
            return Some(failure(Code::Runtime, "the run was abandoned".into(), None));
        }
        (Instant::now() >= self.deadline).then(|| timeout(self.limits))
    }

    fn to_json(&self, value: JsValue<'js>) -> Result<Value, Failure> {
        match self.ctx.json_stringify(value) {
            Ok(None) => Ok(Value::Null),
            Ok(Some(text)) => {
                let text = text.to_string().map_err(|e| self.failure_of(e))?;
                serde_json::from_str(&text)
                    .map_err(|e| failure(Code::Runtime, format!("the script's result is not JSON: {e}"), None))
            }
            Err(e) => {
                let f = self.failure_of(e);
                Err(Failure {
                    message: format!("the script's result cannot be sent as JSON: {}", f.message),
                    ..f
                })
            }
        }
    }

    /// The failure an engine error stands for: the pending exception read
    /// as the agent should see it.
    fn failure_of(&self, e: rquickjs::Error) -> Failure {
        self.failure_in(e, false)
    }

    fn failure_in(&self, e: rquickjs::Error, parsing: bool) -> Failure {
        if let Some(f) = self.stopped() {
            return f;
        }
        if !matches!(e, rquickjs::Error::Exception) {
            let message = e.to_string();
            let code = if message.contains("out of memory") || matches!(e, rquickjs::Error::Allocation) {
                Code::Memory
            } else {
                Code::Runtime
            };
            return failure(code, message, None);
        }
        let thrown = self.ctx.catch();
        let Some(obj) = thrown.as_object() else {
            if thrown.is_null() || thrown.is_undefined() {
                // What QuickJS throws when it could not even make the error.
                return failure(Code::Memory, "out of memory".into(), None);
            }
            let text = self
                .ctx
                .json_stringify(thrown)
                .ok()
                .flatten()
                .and_then(|s| s.to_string().ok())
                .unwrap_or_else(|| "a value".into());
            return failure(Code::Runtime, format!("the script threw {text}"), None);
        };
        let text = |k: &str| -> Option<String> { obj.get::<_, Option<String>>(k).ok().flatten() };
        let name = text("name").unwrap_or_default();
        let message = text("message").unwrap_or_default();
        let line = text("stack").as_deref().and_then(line_in_stack);
        let code = match text("code").as_deref().and_then(Code::parse) {
            Some(code) => code,
            // The body of an async function: whatever it throws rejects its
            // promise, so only the parser's error fails the eval itself.
            None if name == "SyntaxError" && parsing => Code::Syntax,
            // Out of memory, QuickJS may not even have the message's bytes
            // (seen on Windows): its own InternalErrors always have one.
            None if message.contains("out of memory") || (name == "InternalError" && message.is_empty()) => {
                Code::Memory
            }
            None => Code::Runtime,
        };
        let message = if code == Code::Memory && message.is_empty() {
            "out of memory".to_string()
        } else {
            message
        };
        let message = match (name.as_str(), code) {
            ("" | "Error", _) | (_, Code::ToolError | Code::ToolNotAllowed | Code::TooManyCalls) => message,
            _ => format!("{name}: {message}"),
        };
        failure(code, message, line)
    }
}

/// The script's line a stack names first (the wrapper's line taken off).
fn line_in_stack(stack: &str) -> Option<u32> {
    let marker = format!("{FILE}:");
    let mut rest = stack;
    while let Some(at) = rest.find(&marker) {
        let before = rest[..at].chars().last();
        let digits: String = rest[at + marker.len()..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        rest = &rest[at + marker.len()..];
        if matches!(before, Some('(' | ' ')) || before.is_none() {
            if let Ok(n) = digits.parse::<u32>() {
                return Some(n.saturating_sub(1).max(1));
            }
        }
    }
    None
}

fn timeout(limits: Limits) -> Failure {
    failure(
        Code::Timeout,
        format!("the run took longer than its {} ms", limits.timeout.as_millis()),
        None,
    )
}

fn failure(code: Code, message: String, line: Option<u32>) -> Failure {
    Failure { code, message, line }
}
