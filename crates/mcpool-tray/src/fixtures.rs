//! Snapshots for tests, built by hand.

use mcpool_core::lifecycle::Status;
use mcpool_core::supervisor::{ServerSnapshot, ToolSnapshot, ToolState};

pub fn server(name: &str, status: Status, tools: usize) -> ServerSnapshot {
    let state = match status {
        Status::Connected => Some(ToolState::Live),
        Status::Failed => Some(ToolState::Kept),
        Status::Pending => Some(ToolState::Cached),
        Status::NeedsAuth | Status::Disabled => None,
    };
    let tools: Vec<ToolSnapshot> = match state {
        Some(state) => (0..tools)
            .map(|i| ToolSnapshot {
                name: format!("tool{i}"),
                state,
                enabled: true,
                tokens: 50,
                approved: None,
                current: None,
                scan: None,
                findings: Vec::new(),
            })
            .collect(),
        None => Vec::new(),
    };
    ServerSnapshot {
        name: name.to_string(),
        status,
        error: None,
        cause: None,
        transport: "stdio",
        protocol: None,
        tool_count: tools.len(),
        tool_tokens: tools.len() * 50,
        tools,
        connecting: status == Status::Pending,
        retry_in_ms: None,
        retry_at: None,
        last_connected: None,
        stderr_tail: Vec::new(),
        waiting_for_network: false,
        auth: None,
        tool_warnings: Vec::new(),
        held_back: Vec::new(),
        sandbox: None,
        extensions: Vec::new(),
    }
}

pub fn failed(name: &str, tools: usize, error: &str) -> ServerSnapshot {
    ServerSnapshot {
        error: Some(error.to_string()),
        ..server(name, Status::Failed, tools)
    }
}

/// A connected server signed in with OAuth.
pub fn signed_in(name: &str, tools: usize) -> ServerSnapshot {
    ServerSnapshot {
        auth: Some(mcpool_core::oauth::AuthSnapshot {
            signed_in: true,
            issuer: Some("https://auth.example.com".into()),
            expires_at: None,
            token: Some(mcpool_core::oauth::TokenState::Fresh),
            refreshing: false,
            login: mcpool_core::oauth::LoginState::Succeeded,
            login_error: None,
            stored: true,
        }),
        ..server(name, Status::Connected, tools)
    }
}
