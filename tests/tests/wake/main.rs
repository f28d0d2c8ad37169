//! behaviour.md rules 11 and 12 against the real binary: sleep and wake through a
//! fake logind on a private bus, a real network gap between two network
//! namespaces the test makes, and keepalive pings of an idle connection.

mod keepalive;
mod logind;
mod network_gap;

use serde_json::Value;

/// Whether `/api/servers` shows `server` with its tools, all kept.
fn tools_kept(server: &Value) -> bool {
    let tools = server["tools"].as_array().cloned().unwrap_or_default();
    !tools.is_empty() && tools.iter().all(|t| t["state"] == "kept")
}

fn error_of(server: &Value) -> String {
    server["error"].as_str().unwrap_or_default().to_string()
}
