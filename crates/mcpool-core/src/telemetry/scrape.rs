//! How a scraper reads the metrics: `GET /metrics` on the endpoint (behind
//! its token) and the token-less listener of `--metrics-listen`.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use super::Metrics;

/// The Prometheus text format (0.0.4), which every scraper reads.
pub const TEXT_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A scrape's answer: OpenMetrics to a scraper that asks for it (Prometheus
/// itself does, in `Accept`), else the Prometheus text format.
pub fn answer(metrics: &Metrics, accept: Option<&str>) -> Response {
    let text = metrics.render();
    if accept.is_some_and(|a| a.contains("application/openmetrics-text")) {
        return ([(header::CONTENT_TYPE, super::metrics::CONTENT_TYPE)], text).into_response();
    }
    ([(header::CONTENT_TYPE, TEXT_CONTENT_TYPE)], prometheus_text(&text)).into_response()
}

/// OpenMetrics (what `prometheus-client` writes) as Prometheus text 0.0.4:
/// a counter's family is named with its `_total` suffix, and the `# UNIT`,
/// `# EOF` and counters' `_created` lines go. Samples, labels, histograms
/// and gauges read the same in both.
pub fn prometheus_text(openmetrics: &str) -> String {
    let counters: std::collections::BTreeSet<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let sample_name = line.split(['{', ' ']).next().unwrap_or("");
        if let Some(base) = sample_name.strip_suffix("_created") {
            if !line.starts_with('#') && counters.contains(base) {
                continue;
            }
        }
        let renamed = ["# TYPE ", "# HELP "].iter().find_map(|prefix| {
            let rest = line.strip_prefix(prefix)?;
            let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
            counters
                .contains(name)
                .then(|| format!("{prefix}{name}_total {tail}").trim_end().to_string())
        });
        out.push_str(renamed.as_deref().unwrap_or(line));
        out.push('\n');
    }
    out
}

/// The `--metrics-listen` listener's routes: `GET /metrics` and nothing
/// else, without a token. Its Host must be loopback unless `any_host`
/// (`--allow-non-loopback`), so a web page cannot read it through DNS
/// rebinding.
pub fn router(metrics: Arc<Metrics>, any_host: bool) -> Router {
    Router::new()
        .route("/metrics", get(scrape))
        .with_state((metrics, any_host))
}

async fn scrape(State((metrics, any_host)): State<(Arc<Metrics>, bool)>, request: Request) -> Response {
    let accept = request
        .headers()
        .get(header::ACCEPT)
        .and_then(|h| h.to_str().ok())
        .map(str::to_string);
    let host = request.headers().get(header::HOST).and_then(|h| h.to_str().ok());
    if !any_host && !host.is_none_or(crate::loopback::is_loopback_authority) {
        return (StatusCode::FORBIDDEN, "mcpool accepts only loopback Host names\n").into_response();
    }
    answer(&metrics, accept.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use tower::ServiceExt;

    async fn get_metrics(host: &str, any_host: bool) -> (StatusCode, String, String) {
        let app = router(Metrics::watch(&crate::pool::Pool::default()), any_host);
        let request = axum::http::Request::get("/metrics")
            .header("host", host)
            .header(
                "accept",
                "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5",
            )
            .body(Body::empty())
            .unwrap();
        let response = app.oneshot(request).await.unwrap();
        let status = response.status();
        let kind = response.headers()[header::CONTENT_TYPE].to_str().unwrap().to_string();
        let body = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap();
        (status, kind, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn the_listener_answers_loopback_hosts_only() {
        let (status, kind, body) = get_metrics("127.0.0.1:9464", false).await;
        assert_eq!(status, StatusCode::OK);
        assert!(kind.starts_with("application/openmetrics-text"), "{kind}");
        assert!(body.ends_with("# EOF\n"), "{body}");
        assert_eq!(get_metrics("evil.example", false).await.0, StatusCode::FORBIDDEN);
        assert_eq!(get_metrics("evil.example", true).await.0, StatusCode::OK);
    }

    #[test]
    fn openmetrics_reads_as_prometheus_text() {
        let om = "# HELP mcpool_tool_calls Tool calls.\n# TYPE mcpool_tool_calls counter\n\
                  mcpool_tool_calls_total{server=\"a\",tool=\"b\"} 3\nmcpool_tool_calls_created{server=\"a\"} 1.5\n\
                  # HELP mcpool_agent_sessions Sessions.\n# TYPE mcpool_agent_sessions gauge\nmcpool_agent_sessions 2\n\
                  # TYPE d_seconds histogram\n# UNIT d_seconds seconds\nd_seconds_bucket{le=\"+Inf\"} 1\nd_seconds_count 1\n# EOF\n";
        let text = prometheus_text(om);
        expect_test::expect![[r#"
            # HELP mcpool_tool_calls_total Tool calls.
            # TYPE mcpool_tool_calls_total counter
            mcpool_tool_calls_total{server="a",tool="b"} 3
            # HELP mcpool_agent_sessions Sessions.
            # TYPE mcpool_agent_sessions gauge
            mcpool_agent_sessions 2
            # TYPE d_seconds histogram
            d_seconds_bucket{le="+Inf"} 1
            d_seconds_count 1
        "#]]
        .assert_eq(&text);
    }
}
