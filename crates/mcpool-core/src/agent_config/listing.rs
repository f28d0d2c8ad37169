//! The tool listing each client gets from `mcpool connect` (README, "Which
//! clients get which listing"): the URL's `?toolListing=` and the stdio
//! bridge's `--tool-listing`.

use super::{Client, Connection};
use crate::search::ListingMode;

impl Connection {
    /// This connection with the tool listing `mode`: the URL's
    /// `?toolListing=` and the stdio bridge's `--tool-listing`.
    pub fn with_listing(&self, mode: ListingMode) -> Connection {
        let mut conn = self.clone();
        let base = conn
            .url
            .split_once('?')
            .map_or(conn.url.as_str(), |(b, _)| b)
            .to_string();
        conn.url = format!("{base}?{}={}", crate::search::listing::URL_PARAM, mode.as_str());
        if let Some(i) = conn.stdio.iter().position(|a| a == "--tool-listing") {
            conn.stdio.drain(i..(i + 2).min(conn.stdio.len()));
        }
        conn.stdio
            .extend(["--tool-listing".to_string(), mode.as_str().to_string()]);
        conn
    }
}

impl Client {
    /// The tool listing `mcpool connect` gives this client by default
    /// (README, "Which clients get which listing"): every tool to the clients that defer and
    /// search tools themselves (Claude Code's tool search, opencode's,
    /// Cursor's dynamic context discovery), so tools are not deferred
    /// twice; `auto` to the others: every tool while the listing fits its
    /// budget (agents often never call a search tool), search past it.
    pub fn default_listing(self) -> ListingMode {
        match self {
            Client::ClaudeCode | Client::OpenCode | Client::Cursor => ListingMode::All,
            Client::ClaudeDesktop | Client::VsCode | Client::Gemini | Client::Codex => ListingMode::Auto,
        }
    }
}
