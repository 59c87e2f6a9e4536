//! `detect` of question cards over discovery-mode replies of ~1, 10 and 100 KB: `reply` has
//! prose with a card about every 1.5 KB (six in 10 KB), `dense` a card after every paragraph;
//! both cycle through the detected forms. Hostile texts of 100 KB show the scan stays linear.

use bridle_bench::{card_text, card_text_dense, hostile_card_texts};
use bridle_core::cards::{Category, detect};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

// The allocator the `bridle` binary ships with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("cards_detect");
    for (label, size) in [("1KB", 1_000), ("10KB", 10_000), ("100KB", 100_000)] {
        for (variant, text) in [("reply", card_text(size)), ("dense", card_text_dense(size))] {
            let cards = detect(&text, Category::Discovery, "bench").cards.len();
            eprintln!("{variant} {label}: {} B, {cards} cards", text.len());
            assert!(cards >= 1, "the reply has questions");
            group.throughput(Throughput::Bytes(text.len() as u64));
            group.bench_with_input(BenchmarkId::new(variant, label), &text, |b, text| {
                b.iter(|| detect(black_box(text), Category::Discovery, "bench"));
            });
        }
    }
    for (name, text) in hostile_card_texts(100_000) {
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(BenchmarkId::new("hostile_100KB", name), &text, |b, text| {
            b.iter(|| detect(black_box(text), Category::Discovery, "bench"));
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
