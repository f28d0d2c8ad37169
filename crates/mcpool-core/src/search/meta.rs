//! The meta-tools of every aggregated endpoint: `mcpool__search_tools`,
//! whose description tells what the servers behind it offer, and
//! `mcpool__call_tool`; and a search's answer, as text for the model and
//! as `structuredContent` (behaviour.md rule 19).

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use serde::Serialize;
use serde_json::{json, Value};

use super::compact::{compact_schema, one_line, signature};

pub const SEARCH_TOOL: &str = "mcpool__search_tools";
pub const CALL_TOOL: &str = "mcpool__call_tool";
pub const RUN_SCRIPT: &str = "mcpool__run_script";
/// `limit` when the agent gives none, and its largest value.
pub const DEFAULT_LIMIT: usize = 5;
pub const MAX_LIMIT: usize = 20;
/// Longest one-line description in a search answer.
const DESCRIPTION_CHARS: usize = 160;
/// Longest server summary in the search tool's description, and how many
/// servers it names.
const SUMMARY_CHARS: usize = 70;
const SERVERS_NAMED: usize = 40;

pub fn is_meta(name: &str) -> bool {
    name == SEARCH_TOOL || name == CALL_TOOL || name == RUN_SCRIPT
}

/// What one server offers, for the search tool's description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSummary {
    pub name: String,
    pub summary: String,
    pub tools: usize,
}

/// A server's one-line summary: its instructions' or its own description's
/// first sentence, else a few of its tools' names.
pub fn summarize(about: Option<&str>, tool_names: &[&str]) -> String {
    if let Some(about) = about.map(str::trim).filter(|a| !a.is_empty()) {
        return one_line(about, SUMMARY_CHARS);
    }
    let shown: Vec<&str> = tool_names.iter().take(4).copied().collect();
    let more = if tool_names.len() > shown.len() { ", …" } else { "" };
    one_line(&format!("{}{more}", shown.join(", ")), SUMMARY_CHARS)
}

fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

/// `mcpool__search_tools`, described from the servers the endpoint serves.
pub fn search_tool(servers: &[ServerSummary]) -> Tool {
    let total: usize = servers.iter().map(|s| s.tools).sum();
    let mut named: Vec<String> = servers
        .iter()
        .filter(|s| s.tools > 0)
        .take(SERVERS_NAMED)
        .map(|s| format!("{} ({})", s.name, s.summary))
        .collect();
    let with_tools = servers.iter().filter(|s| s.tools > 0).count();
    if with_tools > SERVERS_NAMED {
        named.push(format!("and {} more", with_tools - SERVERS_NAMED));
    }
    let servers_text = if named.is_empty() {
        "No server offers tools yet.".to_string()
    } else {
        format!("Servers: {}.", named.join("; "))
    };
    let description = format!(
        "Find the right tool among the {total} tools of the MCP servers behind mcpool; most are not in your tool list. \
         Search once for each step of your task, and say what you want done in plain words, a verb and what it acts on \
         (for example \"take a screenshot of the page\", then \"save the page as a PDF\"), not the whole task at once. \
         You get the tools that fit, each with its server, one line on what it does and its arguments, or word that \
         nothing fits; call one by its name if your tool list now has it, else through mcpool__call_tool. \
         {servers_text}"
    );
    let mut tool = Tool::new(
        SEARCH_TOOL,
        description,
        schema(json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "One step of your task: what you want done, in plain words"},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "How many tools to return (default 5)"},
                "server": {"type": "string", "description": "Only this server's tools"}
            },
            "required": ["query"]
        })),
    );
    tool.annotations = Some(ToolAnnotations::new().read_only(true).open_world(false));
    tool
}

/// `mcpool__call_tool`.
pub fn call_tool() -> Tool {
    Tool::new(
        CALL_TOOL,
        "Call a tool of a server behind mcpool by the name mcpool__search_tools gave, with its arguments.",
        schema(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The tool's name as mcpool__search_tools gave it"},
                "arguments": {"type": "object", "description": "The tool's arguments"}
            },
            "required": ["name"]
        })),
    )
}

/// `mcpool__run_script` (code mode).
pub fn run_script_tool() -> Tool {
    Tool::new(
        RUN_SCRIPT,
        "Run JavaScript over the tools behind mcpool in one call, instead of one call per step. `code` is the body \
         of an async function; its `return` value is the result. Inside, `await tools.<name>(args)` calls a tool by \
         the name mcpool__search_tools gives (`tools.call(name, args)` takes any name) and resolves to the tool's \
         structuredContent, else its text; a tool error throws (its `code` is TOOL_ERROR or TOOL_NOT_ALLOWED). \
         mcpool__search_tools gives each tool's TypeScript `signature`. `console.log` is kept and returned. \
         Promise.all runs up to 8 calls at once; at most 200 calls and 64 MiB per run. There is no fetch, \
         require, process, file system or timer. The answer: {ok: true, value, logs, calls} or \
         {ok: false, error: {code, message, line}}.",
        schema(json!({
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "JavaScript: the body of an async function, e.g. `const r = await tools.github__search_issues({q: 'bug'}); return r.items.length;`"},
                "timeoutMs": {"type": "integer", "minimum": 1, "maximum": crate::script::MAX_TIMEOUT_MS, "description": "Wall time for the whole run (default 30000, at most 300000)"}
            },
            "required": ["code"]
        })),
    )
}

/// One tool a search found, as the agent and the API see it.
#[derive(Debug, Clone, Serialize)]
pub struct Found {
    /// The public name: what `tools/call` and `mcpool__call_tool` take.
    pub name: String,
    pub server: String,
    /// The server's status (`connected`, `failed`, …).
    pub status: String,
    pub description: String,
    #[serde(rename = "inputSchema")]
    pub input_schema: Value,
    /// Its TypeScript declaration for `mcpool__run_script`.
    pub signature: String,
}

impl Found {
    pub fn new(name: String, server: String, status: String, tool: &Tool) -> Self {
        let name_for_signature = name.clone();
        Found {
            name,
            server,
            status,
            description: one_line(tool.description.as_deref().unwrap_or_default(), DESCRIPTION_CHARS),
            input_schema: compact_schema(&tool.input_schema),
            signature: crate::script::signature::signature(
                &name_for_signature,
                &tool.input_schema,
                tool.output_schema.as_deref(),
            ),
        }
    }
}

/// Where the agent finds the tools it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// Added to the session's tool list (it was told `list_changed`).
    Listed,
    /// Through `mcpool__call_tool` only.
    CallTool,
}

/// A search's answer: one line per tool in the text, the same as JSON in
/// `structuredContent.tools`. `asked`: how many tools the agent asked for
/// (fewer found means no other tool fits well).
/// `unserved`: the service the request names that nothing in reach is
/// (`services.rs`), when that is why nothing fits.
pub fn answer(
    query: &str,
    found: &[Found],
    asked: usize,
    delivery: Delivery,
    unserved: Option<&str>,
) -> CallToolResult {
    let text = if found.is_empty() {
        let why = match unserved {
            Some(service) => format!(" No server behind mcpool is {service}, and no tool mentions it."),
            None => " Ask for one step at a time, in other words for what you want done.".to_string(),
        };
        format!(
            "No tool fits \"{query}\".{why} To see which servers are connected, call mcpool__status \
             (through mcpool__call_tool {{\"name\": \"mcpool__status\"}} when your tool list lacks it)."
        )
    } else {
        let how = match delivery {
            Delivery::Listed => "They are now in your tool list: call them by name (or through mcpool__call_tool).",
            Delivery::CallTool => "Call one with mcpool__call_tool {\"name\": ..., \"arguments\": {...}}.",
        };
        let order = if found.len() < asked {
            "no other tool fits well"
        } else {
            "best first"
        };
        let mut text = format!(
            "{} tool{} for \"{query}\" ({order}). {how} Arguments marked * are required. For another step of your task, search again.\n",
            found.len(),
            if found.len() == 1 { "" } else { "s" }
        );
        let empty = JsonObject::new();
        for f in found {
            let args = signature(match &f.input_schema {
                Value::Object(m) => m,
                _ => &empty,
            });
            text.push_str(&format!("- {} [{}, {}]: {}", f.name, f.server, f.status, f.description));
            if !args.is_empty() {
                text.push_str(&format!(" Args: {args}"));
            }
            // What a script's call resolves to, when the tool says (its
            // whole `signature` is in `structuredContent`).
            if let Some(returns) = returns(&f.signature) {
                text.push_str(&format!(" Returns: {returns}"));
            }
            text.push('\n');
        }
        text
    };
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(json!({"tools": found}));
    result
}

/// The type a signature's call resolves to, unless `unknown`.
fn returns(signature: &str) -> Option<&str> {
    let (_, result) = signature.rsplit_once("): Promise<")?;
    let result = result.strip_suffix('>')?;
    (result != "unknown").then_some(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_search_tool_says_what_each_server_offers() {
        let servers = vec![
            ServerSummary {
                name: "github".into(),
                summary: summarize(Some("Work with GitHub issues and pull requests. More."), &[]),
                tools: 26,
            },
            ServerSummary {
                name: "time".into(),
                summary: summarize(None, &["get_current_time", "convert_time"]),
                tools: 2,
            },
            ServerSummary {
                name: "down".into(),
                summary: String::new(),
                tools: 0,
            },
        ];
        let tool = search_tool(&servers);
        let d = tool.description.as_deref().unwrap_or_default();
        assert!(d.contains("among the 28 tools"), "{d}");
        assert!(d.contains("Search once for each step of your task"), "{d}");
        assert!(d.contains("github (Work with GitHub issues and pull requests.)"), "{d}");
        assert!(d.contains("time (get_current_time, convert_time)"), "{d}");
        assert!(!d.contains("down ("), "{d}");
        assert_eq!(
            search_tool(&[])
                .description
                .as_deref()
                .map(|d| d.contains("No server offers tools yet.")),
            Some(true)
        );
    }

    #[test]
    fn an_answer_is_text_and_structured_content() {
        let tool = Tool::new(
            "echo",
            "Echo the message back.\nMore lines.",
            schema(json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]})),
        );
        let found = vec![Found::new("s__echo".into(), "s".into(), "connected".into(), &tool)];
        let result = answer("say it back", &found, 5, Delivery::CallTool, None);
        let text = result.content[0].as_text().expect("a text block").text.clone();
        assert!(
            text.starts_with("1 tool for \"say it back\" (no other tool fits well)."),
            "{text}"
        );
        let all = answer("say it back", &found, 1, Delivery::CallTool, None);
        let all_text = all.content[0].as_text().expect("a text block").text.clone();
        assert!(
            all_text.starts_with("1 tool for \"say it back\" (best first)."),
            "{all_text}"
        );
        assert!(
            text.contains("- s__echo [s, connected]: Echo the message back. Args: message*: string"),
            "{text}"
        );
        assert!(text.contains("mcpool__call_tool"), "{text}");
        let tools = &result.structured_content.as_ref().unwrap()["tools"];
        assert_eq!(tools[0]["name"], "s__echo");
        assert_eq!(tools[0]["inputSchema"]["required"], json!(["message"]));
        assert!(text.contains("For another step of your task, search again."), "{text}");
        let none = answer("nothing", &[], 5, Delivery::Listed, None);
        let none_text = none.content[0].as_text().expect("a text block").text.clone();
        assert!(none_text.starts_with("No tool fits \"nothing\"."), "{none_text}");
        assert_eq!(none.structured_content, Some(json!({"tools": []})));
        assert!(
            none_text.contains("mcpool__call_tool {\"name\": \"mcpool__status\"}"),
            "{none_text}"
        );
        let jira = answer("create a Jira ticket", &[], 5, Delivery::Listed, Some("Jira"));
        let jira_text = jira.content[0].as_text().expect("a text block").text.clone();
        assert!(
            jira_text.starts_with("No tool fits \"create a Jira ticket\". No server behind mcpool is Jira"),
            "{jira_text}"
        );
    }

    #[test]
    fn a_line_says_what_a_call_returns_when_the_tool_says() {
        assert_eq!(
            returns("tools.a__b(args: {}): Promise<{ n: number }>"),
            Some("{ n: number }")
        );
        assert_eq!(returns("tools.a__b(args: {}): Promise<unknown>"), None);
    }
}
