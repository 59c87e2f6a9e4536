//! `check` of `table-chat` (`markers` kind) replies of ~1 KB, 10 KB and 100 KB: finding the
//! markers, balanced extraction, JSON parse, the payload's schema and the message tidy-up —
//! the whole pipeline the engine runs on a marker reply.

use bridle_bench::marker_reply;
use bridle_core::{Context, Contracts};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

// The allocator the `bridle` binary ships with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn bench(c: &mut Criterion) {
    let contracts = Contracts::builtin().expect("built-in contracts");
    let contract = contracts.get("table-chat").expect("table-chat");
    let ctx = Context::new().with("page", "table_view");
    let mut group = c.benchmark_group("markers_check");
    for (label, size) in [("1KB", 1_000), ("10KB", 10_000), ("100KB", 100_000)] {
        let reply = marker_reply(size);
        eprintln!("{label}: {} B", reply.len());
        let checked = contract.check(&reply, &ctx);
        assert!(checked.is_valid(), "{:?}", checked.violations);
        group.throughput(Throughput::Bytes(reply.len() as u64));
        group.bench_with_input(BenchmarkId::new("valid", label), &reply, |b, raw| {
            b.iter(|| contract.check(black_box(raw), &ctx));
        });
        // The read alone (sections, JSON parse, message), to see where the time goes.
        let spec = contract.markers().expect("a markers contract");
        group.bench_with_input(BenchmarkId::new("read_only", label), &reply, |b, raw| {
            b.iter(|| bridle_core::markers::read(black_box(raw), spec, &ctx));
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
