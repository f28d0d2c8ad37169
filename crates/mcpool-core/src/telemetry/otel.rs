//! OpenTelemetry traces and metrics over OTLP/HTTP (protobuf), on only when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or its `_TRACES_`/`_METRICS_` form) is set.
//!
//! A span per agent request (`tools/call {tool}`, `prompts/get {prompt}`,
//! `resources/read`, the names of the OTel MCP semantic conventions), the
//! child of the `traceparent` the agent sent in `_meta`, and a CLIENT child
//! span per upstream request, whose `traceparent` goes to the server in the
//! request's `_meta`. Export is batched on the SDK's own threads, off the
//! request path; [`flush`] at shutdown sends what is left. Off, nothing is
//! installed and [`RequestSpan::start`] returns `None` after one load.

use std::sync::OnceLock;
use std::time::SystemTime;

use opentelemetry::metrics::{Counter, Histogram, MeterProvider as _};
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer as _, TracerProvider as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use opentelemetry_sdk::Resource;

use super::trace_context;

/// What mcpool's spans and instruments are named under.
const SCOPE: &str = "mcpool";

/// The installed SDK, once per process (the tray app may start the
/// service again; it keeps exporting through the same providers).
static OTEL: OnceLock<Otel> = OnceLock::new();

struct Otel {
    traces: Option<(SdkTracerProvider, SdkTracer)>,
    meters: Option<(SdkMeterProvider, Instruments)>,
}

/// The OTLP twins of the Prometheus counters (`metrics.rs`), with the same
/// capped labels.
struct Instruments {
    calls: Counter<u64>,
    errors: Counter<u64>,
    durations: Histogram<f64>,
    reconnects: Counter<u64>,
}

#[derive(Debug, thiserror::Error)]
#[error("OpenTelemetry export could not be set up ({signal}): {error}")]
pub struct OtelError {
    signal: &'static str,
    error: String,
}

/// How an exporter for `signal` that could not be built is told.
fn build_failed<E: std::fmt::Display>(signal: &'static str) -> impl FnOnce(E) -> OtelError {
    move |e| OtelError {
        signal,
        error: e.to_string(),
    }
}

/// Whether `name` is set to something (the SDK's own reading of its variables).
fn set(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty())
}

/// Installs the SDK if the standard `OTEL_*` variables ask for it; what
/// else they say (headers, timeouts, the export interval, the service
/// name) is read by the SDK itself. Unlike every other setting this is not
/// a `ServiceOptions` field: the variables are the OpenTelemetry contract
/// every tool follows. Returns whether traces are on.
pub fn start() -> Result<bool, OtelError> {
    if let Some(otel) = OTEL.get() {
        return Ok(otel.traces.is_some());
    }
    let disabled = std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.eq_ignore_ascii_case("true"));
    let any = set("OTEL_EXPORTER_OTLP_ENDPOINT");
    let want_traces = !disabled && (any || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"));
    let want_metrics = !disabled && (any || set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"));
    if !want_traces && !want_metrics {
        return Ok(false);
    }
    let resource = if set("OTEL_SERVICE_NAME") {
        Resource::builder().build()
    } else {
        Resource::builder().with_service_name(SCOPE).build()
    };
    let traces = if want_traces {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .build()
            .map_err(build_failed("traces"))?;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource.clone())
            .build();
        let tracer = provider.tracer(SCOPE);
        Some((provider, tracer))
    } else {
        None
    };
    let meters = if want_metrics {
        let exporter = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .build()
            .map_err(build_failed("metrics"))?;
        let provider = SdkMeterProvider::builder()
            .with_periodic_exporter(exporter)
            .with_resource(resource)
            .build();
        let meter = provider.meter(SCOPE);
        let instruments = Instruments {
            calls: meter
                .u64_counter("mcpool.tool.calls")
                .with_description("Tool calls agents made, by server, tool and outcome")
                .build(),
            errors: meter
                .u64_counter("mcpool.tool.call.errors")
                .with_description("Tool calls that failed")
                .build(),
            durations: meter
                .f64_histogram("mcpool.tool.call.duration")
                .with_unit("s")
                .with_description("How long tool calls took")
                .with_boundaries(super::metrics::DURATION_BUCKETS.to_vec())
                .build(),
            reconnects: meter
                .u64_counter("mcpool.reconnects")
                .with_description("Connection attempts after the first, by cause")
                .build(),
        };
        Some((provider, instruments))
    } else {
        None
    };
    let on = traces.is_some();
    // A second start racing this one keeps the first SDK; this one's
    // providers are dropped unused.
    let _ = OTEL.set(Otel { traces, meters });
    tracing::info!(
        "OpenTelemetry export on (traces: {on}, metrics: {})",
        OTEL.get().is_some_and(|o| o.meters.is_some())
    );
    Ok(on)
}

/// Sends what is batched and waits for it (blocking: call from
/// `spawn_blocking`). Errors are logged: a collector that went away never
/// holds up the shutdown for longer than the SDK's export timeout.
pub fn flush() {
    let Some(otel) = OTEL.get() else { return };
    if let Some((provider, _)) = &otel.traces {
        if let Err(e) = provider.force_flush() {
            tracing::warn!("OpenTelemetry spans could not be sent: {e}");
        }
    }
    if let Some((provider, _)) = &otel.meters {
        if let Err(e) = provider.force_flush() {
            tracing::warn!("OpenTelemetry metrics could not be sent: {e}");
        }
    }
}

fn tracer() -> Option<&'static SdkTracer> {
    OTEL.get()?.traces.as_ref().map(|(_, t)| t)
}

fn instruments() -> Option<&'static Instruments> {
    OTEL.get()?.meters.as_ref().map(|(_, i)| i)
}

/// Counts a finished tool call (the metrics watcher's twin).
pub fn tool_call(server: &str, tool: &str, outcome: &str, seconds: f64) {
    let Some(i) = instruments() else { return };
    let labels = [
        KeyValue::new("server", server.to_string()),
        KeyValue::new("tool", tool.to_string()),
    ];
    let mut with_outcome = labels.to_vec();
    with_outcome.push(KeyValue::new("outcome", outcome.to_string()));
    i.calls.add(1, &with_outcome);
    if super::metrics::is_error(outcome) {
        i.errors.add(1, &labels);
    }
    i.durations.record(seconds, &labels);
}

/// Counts a connection attempt after the first.
pub fn reconnect(server: &str, cause: &str) {
    let Some(i) = instruments() else { return };
    i.reconnects.add(
        1,
        &[
            KeyValue::new("server", server.to_string()),
            KeyValue::new("cause", cause.to_string()),
        ],
    );
}

/// The span of one agent request (kind SERVER).
pub struct RequestSpan {
    cx: Context,
    method: &'static str,
}

impl RequestSpan {
    /// Begins the span of an agent's `method` request (`tools/call`, ...),
    /// continuing the `traceparent` (and `tracestate`) of its `_meta`;
    /// `None` when traces are off.
    pub fn start(
        method: &'static str,
        target: Option<&str>,
        session: Option<&str>,
        meta: &serde_json::Map<String, serde_json::Value>,
        at: SystemTime,
    ) -> Option<RequestSpan> {
        let tracer = tracer()?;
        let parent = trace_context::extract(meta);
        let mut attributes = vec![KeyValue::new("mcp.method.name", method)];
        if let Some(session) = session {
            attributes.push(KeyValue::new("mcp.session.id", session.to_string()));
        }
        let span = tracer
            .span_builder(span_name(method, target))
            .with_kind(SpanKind::Server)
            .with_start_time(at)
            .with_attributes(attributes)
            .start_with_context(tracer, &parent);
        Some(RequestSpan {
            cx: parent.with_span(span),
            method,
        })
    }

    /// The W3C trace id (32 hex digits), for the activity log.
    pub fn trace_id(&self) -> String {
        self.cx.span().span_context().trace_id().to_string()
    }

    /// Names the server (and the tool or prompt as it knows it) once routed.
    pub fn routed(&self, server: &str, target: Option<&str>) {
        let span = self.cx.span();
        span.set_attribute(KeyValue::new("mcpool.server", server.to_string()));
        if let Some(target) = target {
            span.update_name(span_name(self.method, Some(target)));
            span.set_attributes(target_attributes(self.method, target));
        }
    }

    /// A CLIENT child span for the request to `server`, whose
    /// `traceparent` is written into `meta` (the upstream request's `_meta`).
    pub fn upstream(
        &self,
        server: &str,
        target: Option<&str>,
        meta: &mut serde_json::Map<String, serde_json::Value>,
    ) -> Option<UpstreamSpan> {
        let tracer = tracer()?;
        let mut attributes = vec![
            KeyValue::new("mcp.method.name", self.method),
            KeyValue::new("mcpool.server", server.to_string()),
        ];
        if let Some(target) = target {
            attributes.extend(target_attributes(self.method, target));
        }
        let span = tracer
            .span_builder(span_name(self.method, target))
            .with_kind(SpanKind::Client)
            .with_attributes(attributes)
            .start_with_context(tracer, &self.cx);
        let cx = self.cx.with_span(span);
        trace_context::inject(&cx, meta);
        Some(UpstreamSpan { cx })
    }

    /// Ends the span with the request's outcome word (`calls::Outcome`).
    pub fn end(self, outcome: &str) {
        finish(&self.cx, outcome);
    }
}

/// The span of one request to a server (kind CLIENT).
pub struct UpstreamSpan {
    cx: Context,
}

impl UpstreamSpan {
    pub fn end(self, outcome: &str) {
        finish(&self.cx, outcome);
    }
}

fn finish(cx: &Context, outcome: &str) {
    let span = cx.span();
    span.set_attribute(KeyValue::new("mcpool.outcome", outcome.to_string()));
    if outcome != "ok" && outcome != "task" && outcome != "input_required" {
        span.set_attribute(KeyValue::new("error.type", outcome.to_string()));
        span.set_status(Status::error(outcome.to_string()));
    }
    span.end();
}

/// `tools/call read_file`; a resource's URI stays out of the name (it may
/// carry what the user typed).
fn span_name(method: &str, target: Option<&str>) -> String {
    match target {
        Some(t) if method != "resources/read" => format!("{method} {t}"),
        _ => method.to_string(),
    }
}

fn target_attributes(method: &str, target: &str) -> Vec<KeyValue> {
    match method {
        "tools/call" => vec![
            KeyValue::new("gen_ai.tool.name", target.to_string()),
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
        ],
        "prompts/get" => vec![KeyValue::new("gen_ai.prompt.name", target.to_string())],
        "resources/read" => vec![KeyValue::new(
            "mcp.resource.uri",
            crate::secrets::redact_resolved(target),
        )],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn span_names_follow_the_mcp_conventions_without_uris() {
        assert_eq!(span_name("tools/call", Some("echo")), "tools/call echo");
        assert_eq!(span_name("prompts/get", Some("p")), "prompts/get p");
        assert_eq!(span_name("resources/read", Some("file:///x")), "resources/read");
        assert_eq!(span_name("tools/call", None), "tools/call");
    }

    #[test]
    fn off_builds_no_span() {
        // No test in this binary starts the SDK.
        let meta = serde_json::Map::new();
        assert!(RequestSpan::start("tools/call", Some("x"), None, &meta, SystemTime::now()).is_none());
    }
}
