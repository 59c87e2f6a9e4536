//! The trace context of the span in force ([`crate::traces::TraceSpan`]): the
//! `traceparent`/`tracestate` headers it puts on an upstream request ([`inject`]) and reads
//! from a caller's ([`extract`]), and whether spans may carry prompt and reply text
//! ([`capture_content`]).
//!
//! The headers are written and read by the process's OpenTelemetry propagator (the W3C one
//! once the gateway's telemetry is on; before that, none, so nothing is sent or read). Only the
//! two small header-map adapters the propagator needs are written here: the `opentelemetry`
//! API has them for `HashMap` only, and its HTTP crate would bring a second HTTP client.

use opentelemetry::propagation::{Extractor, Injector};
use opentelemetry::trace::TraceContextExt as _;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use std::sync::atomic::{AtomicBool, Ordering};

static CAPTURE_CONTENT: AtomicBool = AtomicBool::new(false);

/// Lets spans carry prompt and reply text (`[telemetry] capture_content`); off by default.
pub fn set_capture_content(on: bool) {
    CAPTURE_CONTENT.store(on, Ordering::Relaxed);
}

/// Whether spans may carry prompt and reply text.
pub fn capture_content() -> bool {
    CAPTURE_CONTENT.load(Ordering::Relaxed)
}

/// Writes the span in force's `traceparent` (and `tracestate`) into `headers`; nothing when no
/// trace is recorded.
pub fn inject(headers: &mut HeaderMap) {
    let context = opentelemetry::Context::current();
    if !context.has_active_span() {
        return;
    }
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.inject_context(&context, &mut HeaderInjector(headers));
    });
}

/// The caller's trace context, read from its `traceparent`/`tracestate` headers (an empty
/// context when it sent none, or none that reads).
pub fn extract(headers: &HeaderMap) -> opentelemetry::Context {
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.extract(&HeaderExtractor(headers))
    })
}

struct HeaderInjector<'h>(&'h mut HeaderMap);

impl Injector for HeaderInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(key.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}

struct HeaderExtractor<'h>(&'h HeaderMap);

/// Longest `tracestate` continued (W3C asks that at least 512 bytes be kept; a longer one is
/// dropped, so a caller cannot make every upstream request carry kilobytes).
const MAX_TRACESTATE_BYTES: usize = 512;

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        let value = self.0.get(key)?;
        if key.eq_ignore_ascii_case("tracestate") && value.len() > MAX_TRACESTATE_BYTES {
            return None;
        }
        value.to_str().ok()
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(HeaderName::as_str).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(
                *name,
                HeaderValue::from_str(value).unwrap_or(HeaderValue::from_static("")),
            );
        }
        map
    }

    #[test]
    fn a_callers_traceparent_is_read_and_a_long_tracestate_dropped() {
        opentelemetry::global::set_text_map_propagator(
            opentelemetry_sdk::propagation::TraceContextPropagator::new(),
        );
        let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let read = extract(&headers(&[
            ("traceparent", parent),
            ("tracestate", "a=1,b=2"),
        ]));
        let span = read.span();
        let context = span.span_context();
        assert!(context.is_valid());
        assert_eq!(
            context.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(context.trace_state().header(), "a=1,b=2");
        let long = format!("a={}", "x".repeat(MAX_TRACESTATE_BYTES));
        let read = extract(&headers(&[("traceparent", parent), ("tracestate", &long)]));
        assert!(read.span().span_context().is_valid());
        assert_eq!(read.span().span_context().trace_state().header(), "");
        let junk = extract(&headers(&[("traceparent", "00-zz-yy-01")]));
        assert!(!junk.span().span_context().is_valid());
        // Outside any span there is nothing to send upstream.
        let mut out = HeaderMap::new();
        inject(&mut out);
        assert!(out.get("traceparent").is_none());
    }
}
