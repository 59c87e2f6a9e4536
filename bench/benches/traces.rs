//! What a turn's spans cost the gateway's request thread: the span tree of a one-attempt turn
//! as the gateway builds it (`bridle_engine::providers::traces::TraceSpan`: the request's
//! server span, the turn's, the attempt's client span with the GenAI attributes, the opening's
//! and the attempt's store writes; the request, turn and attempt in force while their futures
//! are polled), around futures that yield as a model call and a store write do. Measured with
//! traces off (no tracer installed: no span is built) and on (the gateway's batch processor,
//! exporting to an exporter that drops each batch, so what is measured is building and ending
//! spans, not the export, which runs on the processor's own thread), each span sampled, and
//! with a caller's unsampled trace (spans that keep nothing).

use bridle_engine::providers::traces::{self, TraceSpan};
use criterion::{Criterion, criterion_group, criterion_main};
use opentelemetry::KeyValue;
use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, TraceContextExt as _, TraceFlags, TraceId, TraceState,
};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{BatchSpanProcessor, SdkTracerProvider, SpanData, SpanExporter};
use std::hint::black_box;

// The allocator the `bridle` binary ships with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Drops what it is given.
#[derive(Debug)]
struct Dropped;

impl SpanExporter for Dropped {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        drop(black_box(batch));
        Ok(())
    }
}

/// A future that is polled `polls` times before it is ready, as a model call or a store write
/// waiting on I/O is.
async fn polled(polls: usize) {
    for _ in 0..polls {
        tokio::task::yield_now().await;
    }
}

/// One request with a one-attempt turn, its spans begun under `parent`.
async fn turn(parent: &opentelemetry::Context) {
    let request = TraceSpan::start_under(
        parent,
        "POST /v1/chat/completions",
        SpanKind::Server,
        || {
            vec![
                KeyValue::new("http.request.method", "POST"),
                KeyValue::new("http.route", "/v1/chat/completions"),
            ]
        },
    );
    request
        .run(async {
            let turn = TraceSpan::start("bridle.turn", SpanKind::Internal, || {
                vec![
                    KeyValue::new("bridle.contract", "selfhelp-response".to_owned()),
                    KeyValue::new("bridle.model", "openai".to_owned()),
                ]
            });
            turn.run(async {
                let opening = write("user");
                let attempt = TraceSpan::start("chat gpt-4o-mini", SpanKind::Client, || {
                    vec![
                        KeyValue::new("gen_ai.operation.name", "chat"),
                        KeyValue::new("gen_ai.system", "openai"),
                        KeyValue::new("gen_ai.provider.name", "openai"),
                        KeyValue::new("gen_ai.request.model", "gpt-4o-mini".to_owned()),
                        KeyValue::new("bridle.model", "openai".to_owned()),
                        KeyValue::new("bridle.attempt.number", 1_i64),
                    ]
                });
                attempt
                    .run(async {
                        let span = TraceSpan::current();
                        span.set_with(|| KeyValue::new("server.address", "127.0.0.1".to_owned()));
                        span.set_with(|| KeyValue::new("server.port", 8080_i64));
                        polled(4).await;
                        span.set_with(|| KeyValue::new("http.response.status_code", 200_i64));
                        span.set_with(|| {
                            KeyValue::new("gen_ai.response.model", "gpt-4o-mini".to_owned())
                        });
                        span.set_with(|| KeyValue::new("gen_ai.usage.input_tokens", 812_i64));
                        span.set_with(|| KeyValue::new("gen_ai.usage.output_tokens", 390_i64));
                        span.set_with(|| KeyValue::new("bridle.attempt.outcome", "valid"));
                        span.set_with(|| KeyValue::new("bridle.repairs", 0_i64));
                        span.set_with(|| KeyValue::new("bridle.violations", 0_i64));
                        let record = write("attempt");
                        polled(2).await;
                        record.end();
                    })
                    .await;
                attempt.end();
                opening.end();
            })
            .await;
            turn.set_with(|| KeyValue::new("bridle.turn.outcome", "valid"));
            turn.set_with(|| KeyValue::new("bridle.turn.attempts", 1_i64));
            turn.end();
        })
        .await;
    request.set_with(|| KeyValue::new("http.response.status_code", 200_i64));
    request.end();
}

/// A store write's span, begun.
fn write(record: &'static str) -> TraceSpan {
    TraceSpan::start("bridle.store.write", SpanKind::Internal, || {
        vec![
            KeyValue::new("db.system.name", "sqlite"),
            KeyValue::new("db.operation.name", "insert"),
            KeyValue::new("db.collection.name", "messages"),
            KeyValue::new("bridle.record", record),
        ]
    })
}

/// A caller's trace that it did not sample (`traceparent` flags `00`).
fn unsampled_caller() -> opentelemetry::Context {
    let caller = SpanContext::new(
        TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap_or(TraceId::INVALID),
        SpanId::from_hex("00f067aa0ba902b7").unwrap_or(SpanId::INVALID),
        TraceFlags::default(),
        true,
        TraceState::default(),
    );
    opentelemetry::Context::new().with_remote_span_context(caller)
}

fn bench_traces(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap_or_else(|e| panic!("a runtime: {e}"));
    let none = opentelemetry::Context::new();
    let mut group = c.benchmark_group("traces/turn");
    // Off first: once a tracer is installed it is the process's.
    group.bench_function("off", |b| b.iter(|| runtime.block_on(turn(&none))));
    let provider = SdkTracerProvider::builder()
        .with_span_processor(BatchSpanProcessor::builder(Dropped).build())
        .build();
    traces::install(&provider);
    group.bench_function("on", |b| b.iter(|| runtime.block_on(turn(&none))));
    let unsampled = unsampled_caller();
    group.bench_function("on_unsampled_caller", |b| {
        b.iter(|| runtime.block_on(turn(&unsampled)));
    });
    group.finish();
    let _ = provider.shutdown();
}

criterion_group!(benches, bench_traces);
criterion_main!(benches);
