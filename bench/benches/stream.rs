//! A reply streamed through `StreamCheck` as the engine does: a 5,306-token reply (≈ 4
//! characters a token) delivered in 4-character deltas, each pushed and every event it emits
//! SSE-encoded (`event: NAME\ndata: JSON\n\n` into a reused buffer, from `TurnEvent::name` and
//! `TurnEvent::data`), then the complete check and `finish` (the text held back released).
//!
//! - `json` (`selfhelp-response`): pushing emits nothing; the value so far is shown by
//!   `partial()`, which the engine throttles to one per 100 ms — at 50 tokens/s, 5 tokens ≈ 5
//!   deltas: `partials5` asks for it after every 5th delta, `no_partials` never.
//! - `markers` (`table-chat`, page `table_view`): a long Markdown message with a
//!   `**DATA_PROPOSAL:**`: `text_delta` and `payload` events as they are settled.
//! - `text` (`question-cards`, mode `discovery`): prose with question cards; the text from
//!   where a question may start is held back until `finish`.
//!
//! Variants: `new` (`StreamCheck::new` alone), `push_only` (push, emitted events dropped),
//! `stream` (push + SSE + partials: what happens while the reply streams in), `end` (the
//! complete check + `finish` + SSE, once the reply is in), `total` (both: one attempt's whole
//! streaming cost) and `sse_only` (the SSE encoding alone of the events one attempt sends,
//! collected beforehand).
//! The log-log slope over 10³–10⁵ deltas and the peak memory are measured by the examples
//! `stream_slope` and `stream_memory`.

use bridle_bench::{STREAM_KINDS, Wire, deltas, stream_case, stream_deltas, stream_end};
use bridle_core::{Context, Contract, Contracts, Emit, StreamCheck};
use bridle_engine::TurnEvent;
use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;

// The allocator the `bridle` binary ships with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The reply of the target: 5,306 tokens.
const TOKENS: usize = 5_306;
/// Characters per token, and per delta.
const CHARS: usize = 4;
/// 100 ms (the engine's partial throttle) at 50 tokens/s: 5 tokens, 5 deltas.
const PARTIAL_EVERY: usize = 5;

fn bench(c: &mut Criterion) {
    let contracts = Contracts::builtin().expect("built-in contracts");
    let mut group = c.benchmark_group("stream");
    group.sample_size(30);
    group.measurement_time(Duration::from_secs(4));
    for (kind, ..) in STREAM_KINDS {
        let (name, ctx, reply) = stream_case(kind, TOKENS * CHARS).expect("a stream kind");
        let contract = contracts.get(name).expect("built-in contract");
        let contract = contract.as_ref();
        let pieces = deltas(&reply, CHARS);
        let partials: &[(&str, Option<usize>)] = if kind == "json" {
            &[("partials5", Some(PARTIAL_EVERY)), ("no_partials", None)]
        } else {
            &[("", None)]
        };

        // One run, to check the reply and show what the stream sends.
        for &(label, every) in partials {
            let (mut buf, mut wire) = (String::new(), Wire::default());
            let mut check = stream_deltas(contract, &ctx, &pieces, every, &mut buf, &mut wire)
                .expect("no early abort");
            let checked = stream_end(contract, &ctx, &mut check, &mut buf, &mut wire);
            assert!(checked.is_valid(), "{kind}: {:?}", checked.violations);
            eprintln!(
                "{kind} {label}: {} B, {} chars, {} deltas; {} SSE events ({} partial), {} SSE bytes",
                reply.len(),
                reply.chars().count(),
                pieces.len(),
                wire.events,
                wire.partials,
                wire.bytes
            );
        }

        group.throughput(Throughput::Elements(pieces.len() as u64));
        group.bench_function(BenchmarkId::new(kind, "push_only"), |b| {
            b.iter(|| {
                let mut check = StreamCheck::new(contract, &ctx);
                let mut emitted: Vec<Emit> = Vec::new();
                for delta in &pieces {
                    check
                        .push(black_box(delta), &mut emitted)
                        .expect("no early abort");
                    emitted.clear();
                }
                check
            });
        });
        // What a fresh check costs before any delta (for `json`: the schema index).
        group.bench_function(BenchmarkId::new(kind, "new"), |b| {
            b.iter(|| StreamCheck::new(black_box(contract), &ctx));
        });
        for &(label, every) in partials {
            let id = |variant: &str| {
                let variant = if label.is_empty() {
                    variant.to_owned()
                } else {
                    format!("{variant}_{label}")
                };
                BenchmarkId::new(kind, variant)
            };
            group.bench_function(id("stream"), |b| {
                b.iter(|| {
                    let (mut buf, mut wire) = (String::new(), Wire::default());
                    let check = stream_deltas(
                        contract,
                        &ctx,
                        black_box(&pieces),
                        every,
                        &mut buf,
                        &mut wire,
                    );
                    (check, wire)
                });
            });
            group.bench_function(id("total"), |b| {
                b.iter(|| {
                    let (mut buf, mut wire) = (String::new(), Wire::default());
                    let mut check = stream_deltas(
                        contract,
                        &ctx,
                        black_box(&pieces),
                        every,
                        &mut buf,
                        &mut wire,
                    )
                    .expect("no early abort");
                    let checked = stream_end(contract, &ctx, &mut check, &mut buf, &mut wire);
                    (checked, wire)
                });
            });
        }
        // The SSE encoding alone: the events one streamed attempt sends (with the partials of
        // the first variant), collected once, encoded into the reused buffer.
        let events = collect_events(contract, &ctx, &pieces, partials[0].1);
        group.bench_function(BenchmarkId::new(kind, "sse_only"), |b| {
            let (mut buf, mut wire) = (String::new(), Wire::default());
            b.iter(|| {
                for event in &events {
                    wire.send(black_box(event), &mut buf);
                }
            });
        });
        // The end alone: each iteration gets a check that has seen the whole reply.
        group.bench_function(BenchmarkId::new(kind, "end"), |b| {
            b.iter_batched(
                || {
                    let (mut buf, mut wire) = (String::new(), Wire::default());
                    let check = stream_deltas(contract, &ctx, &pieces, None, &mut buf, &mut wire)
                        .expect("no early abort");
                    (check, buf, wire)
                },
                |(mut check, mut buf, mut wire)| {
                    let checked = stream_end(contract, &ctx, &mut check, &mut buf, &mut wire);
                    (checked, check, wire)
                },
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}

/// The events a streamed attempt of `pieces` sends, in order (the stream's, then the end's).
fn collect_events(
    contract: &Contract,
    ctx: &Context,
    pieces: &[&str],
    every: Option<usize>,
) -> Vec<TurnEvent> {
    let mut check = StreamCheck::new(contract, ctx);
    let (mut emitted, mut events) = (Vec::new(), Vec::new());
    for (i, delta) in pieces.iter().enumerate() {
        check.push(delta, &mut emitted).expect("no early abort");
        events.extend(emitted.drain(..).map(TurnEvent::from_emit));
        if every.is_some_and(|n| i % n == 0)
            && let Some(value) = check.partial()
        {
            events.push(TurnEvent::Partial { attempt: 1, value });
        }
    }
    let checked = contract.check(check.raw(), ctx);
    check.finish(&checked, &mut emitted);
    events.extend(emitted.into_iter().map(TurnEvent::from_emit));
    events
}

criterion_group!(benches, bench);
criterion_main!(benches);
