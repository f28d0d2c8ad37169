//! The engine against a hand-written host: answers come from a function of
//! the call, in the order the calls were started (or, for `Promise.all`,
//! in reverse), so every run is the same run.

use std::collections::VecDeque;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use super::engine::{self, Host};
use super::signature::signature;
use super::{Answer, Code, Limits, Report};

struct Fake {
    answer: fn(&str, &Map<String, Value>) -> Answer,
    started: VecDeque<(u64, String, Map<String, Value>)>,
    most_at_once: usize,
    reverse: bool,
}

impl Host for Fake {
    fn start(&mut self, id: u64, name: String, arguments: Map<String, Value>) {
        self.started.push_back((id, name, arguments));
        self.most_at_once = self.most_at_once.max(self.started.len());
    }

    fn next(&mut self, _deadline: Instant) -> Option<(u64, Answer)> {
        let (id, name, args) = if self.reverse {
            self.started.pop_back()?
        } else {
            self.started.pop_front()?
        };
        Some((id, (self.answer)(&name, &args)))
    }
}

fn echo(name: &str, args: &Map<String, Value>) -> Answer {
    match name {
        "s__fails" => Answer::ToolError("it broke".into()),
        "s__hidden" => Answer::NotAllowed("Tool 's__hidden' is disabled in mcpool.".into()),
        "s__text" => Answer::Value(json!("plain text")),
        _ => Answer::Value(json!({"tool": name, "args": args})),
    }
}

fn run_with(code: &str, limits: Limits, reverse: bool) -> (Report, usize) {
    let mut host = Fake {
        answer: echo,
        started: VecDeque::new(),
        most_at_once: 0,
        reverse,
    };
    let names = vec!["s__echo".to_string(), "s__fails".to_string(), "s__text".to_string()];
    let report = engine::run(code, &names, limits, Arc::new(AtomicBool::new(false)), &mut host);
    (report, host.most_at_once)
}

fn run(code: &str) -> Report {
    run_with(code, Limits::default(), false).0
}

fn code_of(report: &Report) -> Code {
    report.outcome.as_ref().expect_err("the run should fail").code
}

#[test]
fn a_script_returns_a_value_with_its_logs_and_calls() {
    let report = run("const a = await tools.s__echo({x: 1});\nconsole.log('got', a.args.x, {y: 2});\nreturn [a.tool, await tools.s__text()];");
    assert_eq!(report.outcome, Ok(json!(["s__echo", "plain text"])));
    assert_eq!(report.logs, vec!["got 1 {\"y\":2}".to_string()]);
    assert_eq!(report.calls, 2);
    let structured = report.structured();
    assert_eq!(structured["ok"], json!(true));
    assert_eq!(structured["calls"], json!(2));
}

#[test]
fn tools_call_reaches_any_name_and_undefined_is_null() {
    let report = run("await tools.call('other__tool', {a: [1]});\nreturn undefined;");
    assert_eq!(report.outcome, Ok(Value::Null));
    let report = run("return (await tools.call('other__tool', {a: [1]})).args;");
    assert_eq!(report.outcome, Ok(json!({"a": [1]})));
}

#[test]
fn a_syntax_error_names_its_line() {
    let report = run("const a = 1;\nconst = 2;");
    let f = report.outcome.expect_err("syntax");
    assert_eq!(f.code, Code::Syntax, "{f:?}");
    assert_eq!(f.line, Some(2), "{f:?}");
}

#[test]
fn a_thrown_error_is_a_runtime_error_with_its_line() {
    let report = run("const a = 1;\n\nnull.x;");
    let f = report.outcome.expect_err("runtime");
    assert_eq!(f.code, Code::Runtime, "{f:?}");
    assert!(f.message.starts_with("TypeError"), "{f:?}");
    assert_eq!(f.line, Some(3), "{f:?}");
    assert_eq!(code_of(&run("JSON.parse('{');")), Code::Runtime);
    assert_eq!(code_of(&run("throw 'words';")), Code::Runtime);
}

#[test]
fn a_tool_error_throws_and_can_be_caught() {
    let report = run("\nawait tools.s__fails({});");
    let f = report.outcome.expect_err("tool error");
    assert_eq!(
        (f.code, f.message.as_str(), f.line),
        (Code::ToolError, "it broke", Some(2))
    );
    let report = run("try { await tools.s__fails({}); } catch (e) { return e.code + ': ' + e.message; }");
    assert_eq!(report.outcome, Ok(json!("TOOL_ERROR: it broke")));
    assert_eq!(
        code_of(&run("await tools.call('s__hidden', {});")),
        Code::ToolNotAllowed
    );
}

#[test]
fn an_endless_loop_is_a_timeout() {
    let limits = Limits {
        timeout: Duration::from_millis(200),
        ..Limits::default()
    };
    let (report, _) = run_with("while (true) {}", limits, false);
    assert_eq!(code_of(&report), Code::Timeout);
    let (report, _) = run_with("try { for (;;) {} } catch (e) { return 'caught'; }", limits, false);
    assert_eq!(code_of(&report), Code::Timeout);
}

#[test]
fn a_memory_bomb_is_memory() {
    let limits = Limits {
        memory: 16 * 1024 * 1024,
        ..Limits::default()
    };
    let (report, _) = run_with(
        "const a = []; for (;;) a.push('x'.repeat(1024) + a.length);",
        limits,
        false,
    );
    assert_eq!(code_of(&report), Code::Memory, "{:?}", report.outcome);
}

#[test]
fn calls_past_the_limit_end_the_run() {
    let limits = Limits {
        calls: 5,
        ..Limits::default()
    };
    let (report, _) = run_with(
        "for (let i = 0; i < 10; i++) { try { await tools.s__echo({i}); } catch (e) {} }",
        limits,
        false,
    );
    assert_eq!(code_of(&report), Code::TooManyCalls);
    assert_eq!(report.calls, 5);
}

#[test]
fn promise_all_runs_at_most_the_parallel_limit_at_once() {
    let code = "const r = await Promise.all(Array.from({length: 20}, (_, i) => tools.s__echo({i})));\nreturn r.map(x => x.args.i);";
    let (report, most) = run_with(code, Limits::default(), true);
    assert_eq!(report.outcome, Ok(json!((0..20).collect::<Vec<_>>())));
    assert_eq!(most, 8);
}

#[test]
fn the_script_sees_no_host_but_tools_and_console() {
    let report = run("return ['require','process','fetch','setTimeout','setInterval','std','os','print','XMLHttpRequest'].map(n => typeof globalThis[n]);");
    assert_eq!(report.outcome, Ok(json!(vec!["undefined"; 9])));
}

#[test]
fn endless_recursion_is_a_runtime_error_not_a_crash() {
    let report = run("function f(n) { return f(n + 1) + 1; }\nreturn f(0);");
    let f = report.outcome.expect_err("stack");
    assert_eq!(f.code, Code::Runtime, "{f:?}");
    assert!(f.message.contains("stack"), "{f:?}");
}

#[test]
fn a_promise_that_never_settles_ends_the_run() {
    assert_eq!(code_of(&run("await new Promise(() => {});")), Code::Runtime);
}

#[test]
fn a_result_that_is_not_json_is_a_runtime_error() {
    assert_eq!(code_of(&run("const a = {}; a.a = a; return a;")), Code::Runtime);
}

#[test]
fn signatures_say_what_typescript_can_and_unknown_otherwise() {
    let input = json!({
        "type": "object",
        "properties": {
            "q": {"type": "string"},
            "n": {"type": "integer", "minimum": 1},
            "mode": {"enum": ["a", "b"]},
            "tags": {"type": "array", "items": {"type": ["string", "null"]}},
            "ref": {"$ref": "#/defs/x"},
            "odd-key": {"anyOf": [{"type": "boolean"}, {"type": "null"}]}
        },
        "required": ["q"]
    });
    let output = json!({"type": "object", "properties": {"hits": {"type": "array", "items": {"allOf": []}}}, "required": ["hits"], "additionalProperties": false});
    let s = signature("s__find", input.as_object().expect("object"), output.as_object());
    assert_eq!(
        s,
        "tools.s__find(args: { q: string; n?: number; mode?: \"a\" | \"b\"; tags?: (string | null)[]; ref?: unknown; \"odd-key\"?: boolean | null }): Promise<{ hits: unknown[] }>"
    );
    let empty = json!({"type": "object"});
    assert_eq!(
        signature("s__x", empty.as_object().expect("object"), None),
        "tools.s__x(args: { [key: string]: unknown }): Promise<unknown>"
    );
}
