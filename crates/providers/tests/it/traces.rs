//! Bridle's spans with a tracer installed (`bridle_providers::traces`): spans nest through
//! [`TraceSpan::run`], an upstream request over real HTTP carries the span in force as its
//! `traceparent` and the span records the endpoint and status, and a caller's unsampled trace
//! is followed — its spans keep nothing, yet the provider still hears of the trace.
//!
//! The tracer is the process's once installed, so everything that needs it is one test.

use bridle_mock::{MockConfig, MockServer};
use bridle_providers::trace_context;
use bridle_providers::traces::{self, TraceSpan};
use bridle_providers::{HttpSettings, OpenAi, OpenAiOptions, Provider};
use opentelemetry::trace::{SpanKind, Status};
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider, SpanData, SpanExporter};
use reqwest::header::{HeaderMap, HeaderValue};
use std::sync::{Arc, Mutex};

/// Keeps every span it is given.
#[derive(Debug, Clone, Default)]
struct Kept(Arc<Mutex<Vec<SpanData>>>);

impl SpanExporter for Kept {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0.lock().unwrap().extend(batch);
        Ok(())
    }
}

impl Kept {
    fn named(&self, name: &str) -> SpanData {
        let spans = self.0.lock().unwrap();
        let found: Vec<_> = spans.iter().filter(|s| s.name == name).cloned().collect();
        assert_eq!(found.len(), 1, "one span named {name}: {:?}", names(&spans));
        found.into_iter().next().unwrap()
    }

    fn count(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

fn names(spans: &[SpanData]) -> Vec<&str> {
    spans.iter().map(|s| s.name.as_ref()).collect()
}

fn attribute(span: &SpanData, key: &str) -> Option<Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.clone())
}

fn caller(flags: &str) -> opentelemetry::Context {
    let mut headers = HeaderMap::new();
    let parent = format!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-{flags}");
    headers.insert("traceparent", HeaderValue::from_str(&parent).unwrap());
    trace_context::extract(&headers)
}

#[tokio::test]
async fn spans_nest_reach_the_provider_and_follow_the_callers_sampling() {
    opentelemetry::global::set_text_map_propagator(
        opentelemetry_sdk::propagation::TraceContextPropagator::new(),
    );
    let kept = Kept::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(kept.clone())
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::AlwaysOn)))
        .build();
    assert!(!traces::enabled());
    assert!(traces::install(&provider));
    assert!(!traces::install(&provider), "the first tracer stays");
    let mock = MockServer::start(MockConfig::default()).await.unwrap();
    let settings = HttpSettings {
        base_url: format!("{}/v1", mock.url()),
        api_key: Some("sk-test".into()),
        timeout: std::time::Duration::from_secs(10),
        ..HttpSettings::default()
    };
    let openai = OpenAi::new(settings, OpenAiOptions::default()).unwrap();
    let request = bridle_providers::ChatRequest {
        model: "test-model".into(),
        messages: vec![bridle_providers::ChatMessage::new(
            bridle_providers::Role::User,
            "Hi",
        )],
        ..bridle_providers::ChatRequest::default()
    };

    // A sampled caller: the outer span continues its trace, the inner one is its child and is
    // the upstream call's parent.
    let outer = TraceSpan::start_under(&caller("01"), "outer", SpanKind::Server, Vec::new);
    let inner = outer
        .run(async {
            let inner = TraceSpan::start("chat test-model", SpanKind::Client, || {
                vec![KeyValue::new("gen_ai.request.model", "test-model")]
            });
            inner.run(openai.complete(&request)).await.unwrap();
            inner.end();
            inner
        })
        .await;
    assert!(
        TraceSpan::current().trace_id().is_none(),
        "nothing in force after run"
    );
    outer.fail();
    outer.end();
    let outer_data = kept.named("outer");
    let chat = kept.named("chat test-model");
    assert_eq!(
        outer_data.span_context.trace_id().to_string(),
        "4bf92f3577b34da6a3ce929d0e0e4736"
    );
    assert_eq!(outer_data.parent_span_id.to_string(), "00f067aa0ba902b7");
    assert_eq!(outer_data.span_kind, SpanKind::Server);
    assert_eq!(outer_data.status, Status::error(""));
    assert_eq!(chat.parent_span_id, outer_data.span_context.span_id());
    assert_eq!(chat.span_kind, SpanKind::Client);
    assert_eq!(
        inner.trace_id().unwrap(),
        "4bf92f3577b34da6a3ce929d0e0e4736"
    );
    assert_eq!(attribute(&chat, "server.address"), Some("127.0.0.1".into()));
    assert!(matches!(attribute(&chat, "server.port"), Some(Value::I64(p)) if p > 0));
    assert_eq!(
        attribute(&chat, "http.response.status_code"),
        Some(Value::I64(200))
    );
    let sent = mock.requests().pop().unwrap().traceparent.unwrap();
    assert_eq!(
        sent,
        format!(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-{}-01",
            chat.span_context.span_id()
        )
    );

    // An unsampled caller: nothing is kept, and the provider is told the trace is unsampled.
    let before = kept.count();
    let outer = TraceSpan::start_under(&caller("00"), "unsampled", SpanKind::Server, Vec::new);
    assert!(!outer.is_recording());
    outer
        .run(async {
            let inner = TraceSpan::start("chat", SpanKind::Client, Vec::new);
            assert!(!inner.is_recording());
            inner.set_with(|| unreachable!("not computed for a span that keeps nothing"));
            inner.run(openai.complete(&request)).await.unwrap();
        })
        .await;
    outer.end();
    assert_eq!(kept.count(), before);
    let sent = mock.requests().pop().unwrap().traceparent.unwrap();
    assert!(sent.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"));
    assert!(sent.ends_with("-00"), "{sent}");
    provider.shutdown().unwrap();
}
