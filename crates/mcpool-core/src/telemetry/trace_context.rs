//! W3C Trace Context in an MCP request's `_meta` (`traceparent`,
//! `tracestate`, SEP-414), read and written by the OpenTelemetry SDK's
//! own propagator.

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::Context;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use serde_json::{Map, Value};

/// The keys a propagated context takes in `_meta`.
pub const KEYS: [&str; 2] = ["traceparent", "tracestate"];

struct Reader<'a>(&'a Map<String, Value>);

impl Extractor for Reader<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

struct Writer<'a>(&'a mut Map<String, Value>);

impl Injector for Writer<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_string(), Value::String(value));
    }
}

/// The remote parent a request's `_meta` names; an empty context (a new
/// trace) when it names none or a malformed one.
pub fn extract(meta: &Map<String, Value>) -> Context {
    TraceContextPropagator::new().extract(&Reader(meta))
}

/// Writes `cx`'s span as the `traceparent` (and `tracestate`) of `meta`,
/// replacing any the agent sent: the server's parent is mcpool's span.
pub fn inject(cx: &Context, meta: &mut Map<String, Value>) {
    for key in KEYS {
        meta.remove(key);
    }
    TraceContextPropagator::new().inject_context(cx, &mut Writer(meta));
    // The propagator writes an empty `tracestate` too; an absent one says the same.
    if meta.get("tracestate").and_then(Value::as_str) == Some("") {
        meta.remove("tracestate");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn meta(pairs: &[(&str, &str)]) -> Map<String, Value> {
        pairs.iter().map(|(k, v)| (k.to_string(), Value::from(*v))).collect()
    }

    #[test]
    fn an_agents_traceparent_and_tracestate_are_continued() {
        let cx = extract(&meta(&[("traceparent", PARENT), ("tracestate", "vendor=x")]));
        let span = cx.span();
        let sc = span.span_context();
        assert!(sc.is_valid() && sc.is_remote());
        assert_eq!(sc.trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(sc.span_id().to_string(), "00f067aa0ba902b7");
        assert!(sc.is_sampled());
        assert_eq!(sc.trace_state().get("vendor"), Some("x"));
    }

    #[test]
    fn a_missing_or_malformed_traceparent_starts_a_new_trace() {
        for bad in [
            meta(&[]),
            meta(&[("traceparent", "00-x")]),
            meta(&[("traceparent", "00-00000000000000000000000000000000-00f067aa0ba902b7-01")]),
            meta(&[("traceparent", "zz-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")]),
        ] {
            assert!(!extract(&bad).span().span_context().is_valid(), "{bad:?}");
        }
        let not_text: Map<String, Value> = [("traceparent".to_string(), serde_json::json!(7))]
            .into_iter()
            .collect();
        assert!(!extract(&not_text).span().span_context().is_valid());
    }

    #[test]
    fn the_upstream_gets_mcpools_span_in_place_of_the_agents() {
        let sc = SpanContext::new(
            TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
            SpanId::from_hex("1111111111111111").unwrap(),
            TraceFlags::SAMPLED,
            false,
            TraceState::default(),
        );
        let cx = Context::new().with_remote_span_context(sc);
        let mut upstream = meta(&[
            ("traceparent", PARENT),
            ("tracestate", "vendor=x"),
            ("progressToken", "7"),
        ]);
        inject(&cx, &mut upstream);
        assert_eq!(
            upstream["traceparent"],
            "00-4bf92f3577b34da6a3ce929d0e0e4736-1111111111111111-01"
        );
        assert!(!upstream.contains_key("tracestate"), "{upstream:?}");
        assert_eq!(upstream["progressToken"], "7");
    }
}
