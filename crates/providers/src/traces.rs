//! Bridle's spans, built with the OpenTelemetry SDK directly: [`TraceSpan`], a span begun
//! under the span in force (or under a caller's trace), and [`install`], which gives the
//! process the tracer the gateway's telemetry exports through.
//!
//! The span in force is OpenTelemetry's own current context: [`TraceSpan::run`] makes a span
//! current while a future is polled (a thread-local push and pop each poll), so the spans begun
//! inside it — the turn's inside the request's, an attempt's inside the turn's — are its
//! children, and the upstream request carries its `traceparent`
//! ([`crate::trace_context::inject`]). With no tracer installed (telemetry off) a span is
//! nothing: no span is built, no future is wrapped, and the attributes are never computed.
//!
//! Written on the SDK rather than through `tracing` spans and the `tracing-opentelemetry`
//! bridge: the bridge builds a `tracing` span in the subscriber's registry beside every
//! OpenTelemetry span, converts each field on record, and runs every layer's enter and exit
//! hooks at each poll of each instrumented future — most of what traces cost the gateway
//! (bench/README.md, issue 34) — and it builds every span before the sampler decides, so
//! `sample_ratio` saved nothing. Here a span the sampler drops is a non-recording one: its
//! context still travels (so the provider sees the caller's sampling decision), its attributes
//! are not kept.

use futures::future::Either;
use opentelemetry::trace::{
    FutureExt as _, SpanKind, Status, TraceContextExt as _, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use std::borrow::Cow;
use std::sync::OnceLock;

/// The tracer every span is built with, once the gateway's telemetry is on.
static TRACER: OnceLock<SdkTracer> = OnceLock::new();

/// The name spans give their instrumentation scope.
const SCOPE: &str = "bridle";

/// Makes `provider` the one the process's spans are built with (the first call wins: a
/// process runs one gateway); whether it was installed.
pub fn install(provider: &SdkTracerProvider) -> bool {
    TRACER.set(provider.tracer(SCOPE)).is_ok()
}

/// Whether spans are built at all (a tracer is installed).
pub fn enabled() -> bool {
    TRACER.get().is_some()
}

/// One span of Bridle's, with the context it is current in; nothing when traces are off.
///
/// Cloning shares the span. It ends at [`TraceSpan::end`], or else when its last clone is
/// dropped.
#[derive(Debug, Clone, Default)]
pub struct TraceSpan(Option<Context>);

impl TraceSpan {
    /// No span (traces off).
    pub const fn none() -> Self {
        Self(None)
    }

    /// Begins a span named `name`, of `kind`, with `attributes`, as a child of the span in
    /// force (a root when there is none).
    pub fn start(
        name: impl Into<Cow<'static, str>>,
        kind: SpanKind,
        attributes: impl FnOnce() -> Vec<KeyValue>,
    ) -> Self {
        if !enabled() {
            return Self::none();
        }
        Context::map_current(|parent| Self::start_under(parent, name, kind, attributes))
    }

    /// Begins a span as [`TraceSpan::start`] does, as a child of `parent`'s span (a caller's
    /// trace, say).
    pub fn start_under(
        parent: &Context,
        name: impl Into<Cow<'static, str>>,
        kind: SpanKind,
        attributes: impl FnOnce() -> Vec<KeyValue>,
    ) -> Self {
        let Some(tracer) = TRACER.get() else {
            return Self::none();
        };
        let span = tracer
            .span_builder(name)
            .with_kind(kind)
            .with_attributes(attributes())
            .start_with_context(tracer, parent);
        Self(Some(parent.with_span(span)))
    }

    /// The span in force, when there is one of Bridle's (inside [`TraceSpan::run`]).
    pub fn current() -> Self {
        if !enabled() {
            return Self::none();
        }
        Context::map_current(|context| context.has_active_span().then(|| context.clone()))
            .map_or_else(Self::none, |context| Self(Some(context)))
    }

    /// Whether the span keeps what is recorded on it (traces on and the trace sampled).
    pub fn is_recording(&self) -> bool {
        self.0.as_ref().is_some_and(|c| c.span().is_recording())
    }

    /// Sets `attribute` on the span.
    pub fn set(&self, attribute: KeyValue) {
        if let Some(context) = &self.0 {
            context.span().set_attribute(attribute);
        }
    }

    /// Sets the attribute `make` gives, built only when the span records.
    pub fn set_with(&self, make: impl FnOnce() -> KeyValue) {
        if self.is_recording() {
            self.set(make());
        }
    }

    /// Marks the span failed (status `ERROR`).
    pub fn fail(&self) {
        if let Some(context) = &self.0 {
            context.span().set_status(Status::error(""));
        }
    }

    /// Ends the span now.
    pub fn end(&self) {
        if let Some(context) = &self.0 {
            context.span().end();
        }
    }

    /// The span's trace id, as 32 lowercase hex digits.
    pub fn trace_id(&self) -> Option<String> {
        let context = self.0.as_ref()?;
        let span = context.span();
        let span_context = span.span_context();
        span_context
            .is_valid()
            .then(|| span_context.trace_id().to_string())
    }

    /// Runs `future` with this span in force (as it is, when there is no span).
    pub fn run<F: Future>(&self, future: F) -> impl Future<Output = F::Output> + use<F> {
        match &self.0 {
            Some(context) => Either::Left(future.with_context(context.clone())),
            None => Either::Right(future),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // With no tracer installed (this test binary never installs one), spans are nothing and
    // cost nothing: not built, not current, nothing recorded.
    #[tokio::test]
    async fn with_traces_off_a_span_is_nothing() {
        let span = TraceSpan::start("x", SpanKind::Internal, || {
            unreachable!("attributes are not computed with traces off")
        });
        assert!(!span.is_recording());
        assert_eq!(span.trace_id(), None);
        span.set_with(|| unreachable!("nothing is recorded"));
        let inner = span.run(async { TraceSpan::current().trace_id() }).await;
        assert_eq!(inner, None);
        span.end();
    }
}
