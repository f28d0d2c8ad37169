//! `mcpool connect CLIENT`: what to add to an agent so it uses mcpool.

use std::net::SocketAddr;

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ClientKind {
    ClaudeCode,
    Cursor,
    Vscode,
    Opencode,
}

/// What to add to a client: `hint` says where (for stderr), `text` is the
/// snippet alone (for stdout), so `mcpool connect cursor > file` is valid JSON.
pub struct Snippet {
    pub hint: &'static str,
    pub text: String,
}

pub fn snippet(client: ClientKind, listen: SocketAddr, token: &str) -> Snippet {
    let url = format!("http://{listen}/mcp");
    let bearer = format!("Bearer {token}");
    let (hint, text) = match client {
        ClientKind::ClaudeCode => (
            "Run this once:",
            format!("claude mcp add --transport http --scope user mcpool {url} --header \"Authorization: {bearer}\""),
        ),
        ClientKind::Cursor => (
            "Add to ~/.cursor/mcp.json:",
            pretty(serde_json::json!({"mcpServers": {"mcpool": {"url": url, "headers": {"Authorization": bearer}}}})),
        ),
        ClientKind::Vscode => (
            "Add to .vscode/mcp.json (or your user mcp.json):",
            pretty(
                serde_json::json!({"servers": {"mcpool": {"type": "http", "url": url, "headers": {"Authorization": bearer}}}}),
            ),
        ),
        ClientKind::Opencode => (
            "Add to opencode.json:",
            pretty(serde_json::json!({
                "$schema": "https://opencode.ai/config.json",
                "mcp": {"mcpool": {"type": "remote", "url": url, "enabled": true, "headers": {"Authorization": bearer}}}
            })),
        ),
    };
    Snippet {
        hint,
        text: text + "\n",
    }
}

fn pretty(v: serde_json::Value) -> String {
    serde_json::to_string_pretty(&v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippets_carry_url_and_header() {
        let addr: SocketAddr = "127.0.0.1:7410".parse().unwrap();
        for kind in [
            ClientKind::ClaudeCode,
            ClientKind::Cursor,
            ClientKind::Vscode,
            ClientKind::Opencode,
        ] {
            let s = snippet(kind, addr, "T0K").text;
            assert!(s.contains("http://127.0.0.1:7410/mcp"), "{s}");
            assert!(s.contains("Bearer T0K"), "{s}");
        }
        let v: serde_json::Value = serde_json::from_str(&snippet(ClientKind::Vscode, addr, "T").text).unwrap();
        assert_eq!(v["servers"]["mcpool"]["type"], "http");
    }
}
