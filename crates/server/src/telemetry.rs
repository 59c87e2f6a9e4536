//! OpenTelemetry traces: [`TelemetrySettings`] (`[telemetry]` of `bridle.toml`, with the
//! standard `OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_PROTOCOL` and `OTEL_SERVICE_NAME`
//! under it), [`Telemetry`] (the tracer provider: spans batched and exported over OTLP,
//! HTTP/protobuf or gRPC; flushed by [`Telemetry::shutdown`] when the server stops) and
//! [`request_span`], the server span of each HTTP request, continuing the caller's W3C
//! `traceparent`.
//!
//! Off unless an endpoint is configured. Then [`Telemetry::start`] installs the tracer every
//! span of Bridle's is built with ([`bridle_engine::providers::traces`]: the request, the turn,
//! its attempts, store writes, safety notifications); the log is a separate thing, its lines do
//! not change.

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use bridle_core::ConfigError;
use bridle_engine::providers::trace_context;
use bridle_engine::providers::traces::{self, TraceSpan};
use opentelemetry::KeyValue;
use opentelemetry::trace::SpanKind;
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, Sampler, SdkTracerProvider,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// Longest endpoint URL and service name accepted.
const MAX_ENDPOINT_CHARS: usize = 2048;
const MAX_SERVICE_NAME_CHARS: usize = 255;
/// How long one export may take, and how long the stop waits for the last one.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// Spans waiting for export at most (more are dropped, never held up): two full batches.
const MAX_QUEUED_SPANS: usize = 2 * EXPORT_BATCH_SPANS;
/// Spans an export carries at most: a large batch, so that a busy gateway makes few exports
/// (each one an HTTP request or gRPC call of the exporter's thread).
const EXPORT_BATCH_SPANS: usize = 2048;
/// How long a span waits for the next export at most (an export starts sooner when a batch is
/// full).
const EXPORT_EVERY: Duration = Duration::from_secs(1);

/// How spans travel to the collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OtlpProtocol {
    /// OTLP/HTTP with protobuf bodies, to `{endpoint}/v1/traces` (usually port 4318).
    Http,
    /// OTLP/gRPC (usually port 4317).
    Grpc,
}

/// `[telemetry]`: where traces go. Its raw form is itself (every key defaulted, unknown keys
/// refused); [`TelemetrySettings::load`] fills in the environment's values and checks them.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetrySettings {
    /// The collector's base URL (`http://collector:4318`); none: traces off. Default
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub otlp_endpoint: Option<String>,
    /// `http` (protobuf) or `grpc`. Default from `OTEL_EXPORTER_OTLP_PROTOCOL` (`grpc`,
    /// `http/protobuf`), else `http`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<OtlpProtocol>,
    /// `service.name` of the spans. Default `OTEL_SERVICE_NAME`, else `bridle`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
    /// The share of new traces recorded, 0 to 1 (a caller's sampled flag is followed).
    pub sample_ratio: f64,
    /// Put prompt and reply text into the attempts' spans (`gen_ai.input.messages`,
    /// `gen_ai.output.messages`). Off: spans carry counts, names and tokens only.
    pub capture_content: bool,
    /// The URL of a trace in the operator's trace UI, with `{trace_id}` where the trace id (32
    /// lowercase hex digits) goes (`https://jaeger.example/trace/{trace_id}`): the admin console
    /// then links each turn that has a trace id to its trace. `None`: no links.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_url_template: Option<String>,
}

impl Default for TelemetrySettings {
    fn default() -> Self {
        Self {
            otlp_endpoint: None,
            protocol: None,
            service_name: None,
            sample_ratio: 1.0,
            capture_content: false,
            trace_url_template: None,
        }
    }
}

impl TelemetrySettings {
    /// The link to the trace `trace_id` (32 lowercase hex digits, so nothing to escape), when a
    /// template is configured.
    pub fn trace_url(&self, trace_id: &str) -> Option<String> {
        self.trace_url_template.as_deref().map(|template| {
            template.replace(crate::settings::telemetry::TRACE_ID_PLACEHOLDER, trace_id)
        })
    }

    /// The settings with the environment's values under the file's, every key checked; errors
    /// name the key relative to the section.
    pub fn load(mut self, env: &BTreeMap<String, String>) -> Result<Self, ConfigError> {
        let from_env = |name: &str| env.get(name).filter(|v| !v.trim().is_empty()).cloned();
        if self.otlp_endpoint.is_none() {
            self.otlp_endpoint = from_env("OTEL_EXPORTER_OTLP_ENDPOINT");
        }
        if self.service_name.is_none() {
            self.service_name = from_env("OTEL_SERVICE_NAME");
        }
        if self.protocol.is_none() {
            self.protocol = match from_env("OTEL_EXPORTER_OTLP_PROTOCOL").as_deref() {
                None => None,
                Some("grpc") => Some(OtlpProtocol::Grpc),
                Some("http/protobuf") => Some(OtlpProtocol::Http),
                Some(other) => {
                    return Err(ConfigError::new(
                        "protocol",
                        format!(
                            "OTEL_EXPORTER_OTLP_PROTOCOL must be grpc or http/protobuf, not {:?}",
                            other.chars().take(40).collect::<String>()
                        ),
                    ));
                }
            };
        }
        if let Some(endpoint) = &self.otlp_endpoint {
            check_endpoint(endpoint)?;
        }
        if let Some(name) = &self.service_name
            && (name.trim().is_empty() || name.chars().count() > MAX_SERVICE_NAME_CHARS)
        {
            return Err(ConfigError::new(
                "service_name",
                format!("must be 1 to {MAX_SERVICE_NAME_CHARS} characters"),
            ));
        }
        if let Some(template) = &self.trace_url_template {
            crate::settings::telemetry::check_trace_url_template(template)?;
        }
        if !(0.0..=1.0).contains(&self.sample_ratio) {
            return Err(ConfigError::new(
                "sample_ratio",
                format!("must be between 0 and 1, not {}", self.sample_ratio),
            ));
        }
        Ok(self)
    }

    /// Whether traces are exported.
    pub fn enabled(&self) -> bool {
        self.otlp_endpoint.is_some()
    }
}

fn check_endpoint(endpoint: &str) -> Result<(), ConfigError> {
    let fail = |why: &str| Err(ConfigError::new("otlp_endpoint", why.to_owned()));
    if endpoint.chars().count() > MAX_ENDPOINT_CHARS {
        return fail("is longer than 2048 characters");
    }
    match reqwest::Url::parse(endpoint) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host_str().is_some() => Ok(()),
        _ => fail("must be an http:// or https:// URL with a host"),
    }
}

/// Why traces could not be started.
#[derive(Debug, thiserror::Error)]
#[error("telemetry: {0}")]
pub struct TelemetryError(String);

/// The tracer provider exporting Bridle's spans.
#[derive(Debug)]
pub struct Telemetry {
    provider: SdkTracerProvider,
}

impl Telemetry {
    /// Starts exporting, when `settings` name an endpoint (`None` otherwise). gRPC needs to be
    /// started within the Tokio runtime that then serves (its connection runs there).
    pub fn start(settings: &TelemetrySettings) -> Result<Option<Self>, TelemetryError> {
        let Some(endpoint) = &settings.otlp_endpoint else {
            return Ok(None);
        };
        let exporter = match settings.protocol.unwrap_or(OtlpProtocol::Http) {
            OtlpProtocol::Http => {
                // The batch processor exports on a thread of its own: a blocking client.
                let client = reqwest::blocking::Client::builder()
                    .timeout(EXPORT_TIMEOUT)
                    .build()
                    .map_err(|e| TelemetryError(format!("the OTLP HTTP client: {e}")))?;
                opentelemetry_otlp::SpanExporter::builder()
                    .with_http()
                    .with_http_client(client)
                    .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                    .with_endpoint(format!("{}/v1/traces", endpoint.trim_end_matches('/')))
                    .with_timeout(EXPORT_TIMEOUT)
                    .build()
            }
            OtlpProtocol::Grpc => opentelemetry_otlp::SpanExporter::builder()
                .with_tonic()
                .with_endpoint(endpoint.clone())
                .with_timeout(EXPORT_TIMEOUT)
                .build(),
        }
        .map_err(|e| TelemetryError(format!("the OTLP exporter: {e}")))?;
        let batch = BatchConfigBuilder::default()
            .with_max_queue_size(MAX_QUEUED_SPANS)
            .with_max_export_batch_size(EXPORT_BATCH_SPANS)
            .with_scheduled_delay(EXPORT_EVERY)
            .build();
        let processor = BatchSpanProcessor::builder(exporter)
            .with_batch_config(batch)
            .build();
        let service = settings
            .service_name
            .clone()
            .unwrap_or_else(|| "bridle".into());
        let resource = opentelemetry_sdk::Resource::builder()
            .with_service_name(service)
            .build();
        let sampler =
            Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(settings.sample_ratio)));
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_sampler(sampler)
            .with_resource(resource)
            .build();
        opentelemetry::global::set_text_map_propagator(
            opentelemetry_sdk::propagation::TraceContextPropagator::new(),
        );
        trace_context::set_capture_content(settings.capture_content);
        if !traces::install(&provider) {
            return Err(TelemetryError(
                "traces were already started in this process".into(),
            ));
        }
        Ok(Some(Self { provider }))
    }

    /// Exports what is still queued and stops; call it outside the async runtime, while the
    /// runtime still exists (a gRPC export runs on it).
    pub fn shutdown(self) {
        if let Err(error) = self.provider.shutdown_with_timeout(EXPORT_TIMEOUT) {
            tracing::warn!(%error, "the last spans could not be exported");
        }
    }
}

/// Middleware: the server span of one request (`{method} {route}`, kind server, the route
/// template and the response status), a child of the caller's `traceparent` when it sends one.
pub async fn request_span(request: Request, next: Next) -> Response {
    if !traces::enabled() {
        return next.run(request).await;
    }
    let method = crate::metrics::method_label(request.method());
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", MatchedPath::as_str)
        .to_owned();
    let parent = trace_context::extract(request.headers());
    let span = TraceSpan::start_under(
        &parent,
        format!("{method} {route}"),
        SpanKind::Server,
        || {
            vec![
                KeyValue::new("http.request.method", method),
                KeyValue::new("http.route", route),
            ]
        },
    );
    // A request that came without a trace of its own is stored (and logged) under the one
    // begun here, so that the admin console links its turns to it.
    let ids = request
        .extensions()
        .get::<crate::request_id::RequestIds>()
        .filter(|ids| ids.trace_id.is_none())
        .cloned()
        .and_then(|mut ids| {
            ids.trace_id = Some(span.trace_id()?);
            Some(ids)
        });
    let response = match ids {
        Some(ids) => {
            let mut request = request;
            request.extensions_mut().insert(ids.clone());
            span.run(crate::request_id::with_trace(ids, next.run(request)))
                .await
        }
        None => span.run(next.run(request)).await,
    };
    let status = response.status().as_u16();
    span.set(KeyValue::new(
        "http.response.status_code",
        i64::from(status),
    ));
    if status >= 500 {
        span.fail();
    }
    span.end();
    response
}
