//! `/api/events` collected as text in the background, for tests that check
//! what the stream carried.

use std::sync::{Arc, Mutex};

use crate::Mcpool;

/// Collects `/api/events` in the background until dropped.
pub struct Events {
    seen: Arc<Mutex<String>>,
    task: tokio::task::JoinHandle<()>,
}

impl Events {
    pub async fn follow(pool: &Mcpool) -> anyhow::Result<Events> {
        let mut response = reqwest::Client::new()
            .get(pool.url("/api/events"))
            .bearer_auth(&pool.token)
            .send()
            .await?;
        anyhow::ensure!(response.status() == 200, "/api/events: {}", response.status());
        let seen = Arc::new(Mutex::new(String::new()));
        let sink = seen.clone();
        let task = tokio::spawn(async move {
            while let Ok(Some(chunk)) = response.chunk().await {
                if let Ok(mut s) = sink.lock() {
                    s.push_str(&String::from_utf8_lossy(&chunk));
                }
            }
        });
        Ok(Events { seen, task })
    }

    pub fn text(&self) -> String {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The data of every event named `name`, parsed as JSON.
    pub fn data_of(&self, name: &str) -> Vec<serde_json::Value> {
        let text = self.text();
        text.split("\n\n")
            .filter(|block| block.lines().any(|l| l == format!("event: {name}")))
            .filter_map(|block| {
                let data: Vec<&str> = block.lines().filter_map(|l| l.strip_prefix("data: ")).collect();
                serde_json::from_str(&data.join("\n")).ok()
            })
            .collect()
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        self.task.abort();
    }
}
