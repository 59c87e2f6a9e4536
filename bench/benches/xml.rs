//! `check` of `topic-analysis` (`xml` kind) replies of ~1 KB, 10 KB and 100 KB: the safe read
//! into JSON, then schema validation — the whole pipeline the engine runs on an XML reply.

use bridle_bench::topic_reply;
use bridle_core::{Context, Contracts};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

// The allocator the `bridle` binary ships with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn bench(c: &mut Criterion) {
    let contracts = Contracts::builtin().expect("built-in contracts");
    let contract = contracts.get("topic-analysis").expect("topic-analysis");
    let ctx = Context::new();
    let mut group = c.benchmark_group("xml_check");
    for (label, size) in [("1KB", 1_000), ("10KB", 10_000), ("100KB", 100_000)] {
        let reply = topic_reply(size);
        eprintln!("{label}: {} B", reply.len());
        let checked = contract.check(&reply, &ctx);
        assert!(checked.is_valid(), "{:?}", checked.violations);
        group.throughput(Throughput::Bytes(reply.len() as u64));
        group.bench_with_input(BenchmarkId::new("valid", label), &reply, |b, raw| {
            b.iter(|| contract.check(black_box(raw), &ctx));
        });
        // The read alone (no schema validation), to see where the time goes.
        let shape = bridle_core::xml::Shape::of(contract.schema().raw());
        group.bench_with_input(BenchmarkId::new("read_only", label), &reply, |b, raw| {
            b.iter(|| bridle_core::xml::read(black_box(raw), "llmResponse", &shape));
        });
        // Validation alone (schema and rules) of the value the read gives.
        let value = checked.value.clone().expect("a read value");
        group.bench_with_input(
            BenchmarkId::new("validate_only", label),
            &value,
            |b, value| {
                b.iter(|| contract.validate(black_box(value)));
            },
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
