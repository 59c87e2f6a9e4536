//! `check` of `selfhelp-response` replies of ~1 KB, 10 KB and 100 KB: valid, invalid, and
//! needing repair; plus plain `serde_json` parsing of the same text as the floor.

use bridle_bench::{invalid_reply, needs_repair, valid_reply};
use bridle_core::{Context, Contracts};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

// The allocator the `bridle` binary ships with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn bench(c: &mut Criterion) {
    let contracts = Contracts::builtin().expect("built-in contracts");
    let contract = contracts
        .get("selfhelp-response")
        .expect("selfhelp-response");
    let ctx = Context::new();
    for (label, size) in [("1KB", 1_000), ("10KB", 10_000), ("100KB", 100_000)] {
        let valid = valid_reply(size).to_string();
        let invalid = invalid_reply(size).to_string();
        let repair = needs_repair(size);
        eprintln!(
            "{label}: valid {} B, invalid {} B, needs-repair {} B",
            valid.len(),
            invalid.len(),
            repair.len()
        );
        assert!(contract.check(&valid, &ctx).is_valid());
        assert!(!contract.check(&invalid, &ctx).is_valid());
        assert!(contract.check(&repair, &ctx).is_valid());

        let mut group = c.benchmark_group("check");
        group.throughput(Throughput::Bytes(valid.len() as u64));
        group.bench_with_input(BenchmarkId::new("valid", label), &valid, |b, raw| {
            b.iter(|| contract.check(black_box(raw), &ctx));
        });
        group.bench_with_input(BenchmarkId::new("invalid", label), &invalid, |b, raw| {
            b.iter(|| contract.check(black_box(raw), &ctx));
        });
        group.bench_with_input(BenchmarkId::new("repair", label), &repair, |b, raw| {
            b.iter(|| contract.check(black_box(raw), &ctx));
        });
        group.bench_with_input(
            BenchmarkId::new("serde_json_parse_only", label),
            &valid,
            |b, raw| {
                b.iter(|| serde_json::from_str::<serde_json::Value>(black_box(raw)));
            },
        );
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
