//! `/metrics`: Prometheus text (OpenMetrics) of the gateway's HTTP series — requests by route
//! template, method and status, request latency, requests in flight, rate-limit rejections —
//! followed by the engine's series (turns, attempts, repairs, violations, upstream calls,
//! tokens, safety actions; see `bridle_engine::metrics`).
//!
//! Every label comes from a fixed, small set, so the number of series stays bounded whatever
//! clients send: routes are labelled by their template (`/v1/conversations/{id}/messages`),
//! never by the concrete path (`unmatched` for none), methods by their standard name or
//! `other` (a method is any token a client writes: 4 KB junk methods once grew `/metrics` to
//! hundreds of megabytes), statuses are numbers HTTP defines.

use crate::AppState;
use crate::limits::LimitKind;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::{encode_eof, encode_registry};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::time::Instant;

/// The content type of OpenMetrics text, which Prometheus scrapes.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: &'static str,
    route: String,
    status: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: &'static str,
    route: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LimitLabels {
    limit: &'static str,
}

fn latency_buckets() -> Histogram {
    // 0.1 ms … ~105 s: gateway overhead is sub-millisecond, model calls take seconds.
    Histogram::new(exponential_buckets(0.0001, 2.0, 21))
}

/// The gateway's HTTP series.
#[derive(Debug)]
pub struct HttpMetrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    duration: Family<RouteLabels, Histogram, fn() -> Histogram>,
    in_flight: Gauge,
    rejections: Family<LimitLabels, Counter>,
}

impl Default for HttpMetrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "bridle_http_requests",
            "HTTP requests answered, by method, route template and status",
            requests.clone(),
        );
        let duration = Family::new_with_constructor(latency_buckets as fn() -> Histogram);
        registry.register(
            "bridle_http_request_duration_seconds",
            "Time to answer an HTTP request (for a stream: until the response head), by method and route template",
            duration.clone(),
        );
        let in_flight = Gauge::default();
        registry.register(
            "bridle_http_requests_in_flight",
            "HTTP requests being answered now",
            in_flight.clone(),
        );
        let rejections = Family::<LimitLabels, Counter>::default();
        registry.register(
            "bridle_rate_limit_rejections",
            "Requests refused with 429, by limit (requests_per_minute, concurrent_conversations)",
            rejections.clone(),
        );
        Self {
            registry,
            requests,
            duration,
            in_flight,
            rejections,
        }
    }
}

impl HttpMetrics {
    /// Counts a request refused by `limit`.
    pub fn rate_limited(&self, limit: LimitKind) {
        let limit = match limit {
            LimitKind::RequestsPerMinute => "requests_per_minute",
            LimitKind::ConcurrentConversations => "concurrent_conversations",
        };
        self.rejections.get_or_create(&LimitLabels { limit }).inc();
    }
}

struct InFlight<'a>(&'a Gauge);

impl<'a> InFlight<'a> {
    fn enter(gauge: &'a Gauge) -> Self {
        gauge.inc();
        Self(gauge)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// The label of `method`: its name when it is one of HTTP's standard methods, else `other`.
pub fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::OPTIONS => "OPTIONS",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "other",
    }
}

/// Middleware: counts and times every routed request.
pub async fn track(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let method = method_label(request.method());
    let metrics = &state.metrics;
    // Decremented on drop too: a client that goes away cancels this future.
    let in_flight = InFlight::enter(&metrics.in_flight);
    let started = Instant::now();
    let response = next.run(request).await;
    drop(in_flight);
    metrics
        .duration
        .get_or_create(&RouteLabels {
            method,
            route: route.clone(),
        })
        .observe(started.elapsed().as_secs_f64());
    metrics
        .requests
        .get_or_create(&RequestLabels {
            method,
            route,
            status: response.status().as_u16(),
        })
        .inc();
    response
}

/// `GET /metrics`.
pub async fn metrics(State(state): State<AppState>) -> Response {
    let mut text = String::with_capacity(16 * 1024);
    let encoded = encode_registry(&mut text, &state.metrics.registry)
        .and_then(|()| encode_registry(&mut text, state.engine.metrics().registry()))
        .and_then(|()| encode_eof(&mut text));
    if let Err(error) = encoded {
        return crate::ApiError::Internal(format!("metrics could not be encoded: {error}"))
            .into_response();
    }
    let mut response = text.into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    response
}
