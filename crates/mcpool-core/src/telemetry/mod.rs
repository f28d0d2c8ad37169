//! Metrics and traces in the formats monitoring tools read: Prometheus text at `GET /metrics`, OpenTelemetry over OTLP/HTTP.

pub mod metrics;
pub mod otel;
pub mod scrape;
pub mod trace_context;

pub use metrics::Metrics;
pub use otel::RequestSpan;
