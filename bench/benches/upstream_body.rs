//! Encoding the upstream request body of a turn under `selfhelp-response` (its ~10 KB of
//! instructions as the system message): `serde_json::to_vec`, as `reqwest`'s `json` does it,
//! against the providers' [`BodyEncoder`], which escapes a long text once and writes it from
//! there on every later attempt.

use bridle_core::{Context, Contracts};
use bridle_engine::providers::body::BodyEncoder;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use std::hint::black_box;

// The allocator the `bridle` binary ships with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn bench(c: &mut Criterion) {
    let registry = Contracts::builtin().expect("the built-in contracts load");
    let contract = registry
        .get("selfhelp-response")
        .expect("selfhelp-response is built in");
    let system = contract.instructions(&Context::default());
    let body = json!({
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": "I keep procrastinating, any tips?"},
        ],
        "stream": false,
    });
    let encoder = BodyEncoder::default();
    let plain = serde_json::to_vec(&body).expect("a value serialises");
    assert_eq!(encoder.encode(&body).expect("encodes"), plain);
    eprintln!("upstream body: {} B", plain.len());
    let mut group = c.benchmark_group("upstream_body");
    group.throughput(Throughput::Bytes(plain.len() as u64));
    group.bench_function("serde_json_to_vec", |b| {
        b.iter(|| serde_json::to_vec(black_box(&body)))
    });
    group.bench_function("body_encoder", |b| {
        b.iter(|| encoder.encode(black_box(&body)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
