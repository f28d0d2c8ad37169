//! `mcpool connect CLIENT`: what to add to an agent so it uses mcpool.

use std::net::SocketAddr;

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ClientKind {
    ClaudeCode,
    Cursor,
    Vscode,
    Opencode,
}

pub fn snippet(client: ClientKind, listen: SocketAddr, token: &str) -> String {
    let url = format!("http://{listen}/mcp");
    match client {
        ClientKind::ClaudeCode => format!(
            "# Run this once:\nclaude mcp add --transport http --scope user mcpool {url} --header \"Authorization: Bearer {token}\"\n"
        ),
        ClientKind::Cursor => format!(
            "// Add to ~/.cursor/mcp.json:\n{}\n",
            pretty(serde_json::json!({"mcpServers": {"mcpool": {"url": url, "headers": {"Authorization": format!("Bearer {token}")}}}}))
        ),
        ClientKind::Vscode => format!(
            "// Add to .vscode/mcp.json (or your user mcp.json):\n{}\n",
            pretty(serde_json::json!({"servers": {"mcpool": {"type": "http", "url": url, "headers": {"Authorization": format!("Bearer {token}")}}}}))
        ),
        ClientKind::Opencode => format!(
            "// Add to opencode.json:\n{}\n",
            pretty(serde_json::json!({
                "$schema": "https://opencode.ai/config.json",
                "mcp": {"mcpool": {"type": "remote", "url": url, "enabled": true, "headers": {"Authorization": format!("Bearer {token}")}}}
            }))
        ),
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
            let s = snippet(kind, addr, "T0K");
            assert!(s.contains("http://127.0.0.1:7410/mcp"), "{s}");
            assert!(s.contains("Bearer T0K"), "{s}");
        }
        let json_part: String = snippet(ClientKind::Vscode, addr, "T").lines().skip(1).collect();
        let v: serde_json::Value = serde_json::from_str(&json_part).unwrap();
        assert_eq!(v["servers"]["mcpool"]["type"], "http");
    }
}
