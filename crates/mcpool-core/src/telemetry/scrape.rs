//! How a scraper reads the metrics: `GET /metrics` on the endpoint (behind
//! its token) and the token-less listener of `--metrics-listen`.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use super::Metrics;

/// A scrape's answer.
pub fn answer(metrics: &Metrics) -> Response {
    ([(header::CONTENT_TYPE, super::metrics::CONTENT_TYPE)], metrics.render()).into_response()
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
    let host = request.headers().get(header::HOST).and_then(|h| h.to_str().ok());
    if !any_host && !host.is_none_or(crate::endpoint::is_loopback_authority) {
        return (StatusCode::FORBIDDEN, "mcpool accepts only loopback Host names\n").into_response();
    }
    answer(&metrics)
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
}
