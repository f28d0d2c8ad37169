//! What to add to each agent so it uses mcpool, as `GET /api/connect` gives
//! it to the dashboard. The shapes match `mcpool connect CLIENT`.

use serde::Serialize;
use serde_json::json;

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Snippet {
    /// The `mcpool connect` name: `claude-code`, `cursor`, `vscode`, `opencode`.
    pub client: &'static str,
    pub label: &'static str,
    pub text: String,
}

/// Every client's snippet for the endpoint at `url` (`http://HOST:PORT/mcp`).
pub fn snippets(url: &str, token: &str) -> Vec<Snippet> {
    let bearer = format!("Bearer {token}");
    vec![
        Snippet {
            client: "claude-code",
            label: "Claude Code",
            text: format!(
                "# Run this once:\nclaude mcp add --transport http --scope user mcpool {url} --header \"Authorization: {bearer}\"\n"
            ),
        },
        Snippet {
            client: "cursor",
            label: "Cursor",
            text: format!(
                "// Add to ~/.cursor/mcp.json:\n{}\n",
                pretty(json!({"mcpServers": {"mcpool": {"url": url, "headers": {"Authorization": bearer}}}}))
            ),
        },
        Snippet {
            client: "vscode",
            label: "VS Code",
            text: format!(
                "// Add to .vscode/mcp.json (or your user mcp.json):\n{}\n",
                pretty(json!({"servers": {"mcpool": {"type": "http", "url": url, "headers": {"Authorization": bearer}}}}))
            ),
        },
        Snippet {
            client: "opencode",
            label: "opencode",
            text: format!(
                "// Add to opencode.json:\n{}\n",
                pretty(json!({
                    "$schema": "https://opencode.ai/config.json",
                    "mcp": {"mcpool": {"type": "remote", "url": url, "enabled": true, "headers": {"Authorization": bearer}}}
                }))
            ),
        },
    ]
}

fn pretty(v: serde_json::Value) -> String {
    serde_json::to_string_pretty(&v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_client_gets_url_and_header() {
        let all = snippets("http://127.0.0.1:7410/mcp", "T0K");
        let names: Vec<_> = all.iter().map(|s| s.client).collect();
        assert_eq!(names, ["claude-code", "cursor", "vscode", "opencode"]);
        for s in &all {
            assert!(s.text.contains("http://127.0.0.1:7410/mcp"), "{}", s.text);
            assert!(s.text.contains("Bearer T0K"), "{}", s.text);
        }
        let json_part: String = all[2].text.lines().skip(1).collect();
        let v: serde_json::Value = serde_json::from_str(&json_part).unwrap();
        assert_eq!(v["servers"]["mcpool"]["type"], "http");
    }
}
