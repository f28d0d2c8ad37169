//! The test registry: `GET /v0/servers?search=` (a substring of name or
//! description) and `GET /v0/servers/{name}/versions/{version}` over the
//! fixtures of tests/registry/, in the official API's answer shapes.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::extract::{Path as UrlPath, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use mcpool_tests::repo_root;
use serde_json::{json, Value};

/// A registry on 127.0.0.1:0 speaking `GET /v0/servers?search=` (substring
/// of name or description) and `GET /v0/servers/{name}/versions/{version}`.
pub struct TestRegistry {
    pub url: String,
    /// The query strings of the list requests it got.
    pub queries: Arc<Mutex<Vec<String>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

#[derive(Clone)]
struct Served {
    docs: Arc<Vec<Value>>,
    queries: Arc<Mutex<Vec<String>>>,
}

fn fixtures() -> anyhow::Result<Vec<Value>> {
    let dir = repo_root().join("tests/registry");
    let mut docs = Vec::new();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    for p in paths {
        docs.push(serde_json::from_str(&std::fs::read_to_string(&p)?)?);
    }
    Ok(docs)
}

fn wrapped(doc: &Value) -> Value {
    json!({
        "server": doc,
        "_meta": {"io.modelcontextprotocol.registry/official": {
            "status": "active", "isLatest": true,
            "publishedAt": "2025-10-01T00:00:00Z", "updatedAt": "2025-10-01T00:00:00Z"
        }}
    })
}

async fn list(
    State(s): State<Served>,
    Query(q): Query<std::collections::BTreeMap<String, String>>,
    uri: axum::http::Uri,
) -> Response {
    s.queries
        .lock()
        .map(|mut v| v.push(uri.query().unwrap_or_default().to_string()))
        .ok();
    let needle = q.get("search").cloned().unwrap_or_default().to_lowercase();
    let limit: usize = q.get("limit").and_then(|l| l.parse().ok()).unwrap_or(30);
    let servers: Vec<Value> = s
        .docs
        .iter()
        .filter(|d| {
            let text = format!("{} {}", d["name"], d["description"]).to_lowercase();
            text.contains(&needle)
        })
        .take(limit)
        .map(wrapped)
        .collect();
    let count = servers.len();
    Json(json!({"servers": servers, "metadata": {"count": count}})).into_response()
}

async fn version(State(s): State<Served>, UrlPath((name, version)): UrlPath<(String, String)>) -> Response {
    match s
        .docs
        .iter()
        .find(|d| d["name"] == name && (version == "latest" || d["version"] == version))
    {
        Some(doc) => Json(wrapped(doc)).into_response(),
        None => (StatusCode::NOT_FOUND, Json(json!({"error": "Server not found"}))).into_response(),
    }
}

impl TestRegistry {
    pub async fn start() -> anyhow::Result<Self> {
        let queries = Arc::new(Mutex::new(Vec::new()));
        let served = Served {
            docs: Arc::new(fixtures()?),
            queries: queries.clone(),
        };
        let app = Router::new()
            .route("/v0/servers", get(list))
            .route("/v0/servers/{name}/versions/{version}", get(version))
            .with_state(served);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(TestRegistry {
            url,
            queries,
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// Closes the listener and every connection: the registry is gone.
    pub async fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}
