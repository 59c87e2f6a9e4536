//! Expression rules (`kind = "expr"`): the cost of one rule evaluated over the ~10 KB
//! `selfhelp-response` reply of the `check` bench — rules of the shapes contract authors write
//! (one match, one match per item, a macro over every item, a sum), and the built-in contract's
//! own expression rules, whose sum is what they add to its 10 KB check.

use bridle_bench::valid_reply;
use bridle_core::expr::{ExprInputs, ExprRule};
use bridle_core::rules::DeclaredRule;
use bridle_core::{Context, Contracts};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use std::hint::black_box;

// The allocator the `bridle` binary ships with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// (label, path, expression): each true on the bench reply.
const RULES: [(&str, &str, &str); 5] = [
    (
        "one_match_compare",
        "/progress",
        "!has(this.percentage) || this.percentage <= 100",
    ),
    (
        "per_item",
        "/content/text_blocks/*",
        "size(this.content) > 0 && this.type != 'image'",
    ),
    (
        "macro_over_items",
        "",
        "this.content.text_blocks.all(b, b.content != '')",
    ),
    (
        "sum_over_items",
        "",
        "this.content.text_blocks.map(b, size(b.content)).sum() > 0",
    ),
    (
        "context_lookup",
        "/content/form/fields/*",
        "!has(context.page) || this.id != context.page",
    ),
];

fn bench(c: &mut Criterion) {
    let reply = valid_reply(10_000);
    let blocks = reply["content"]["text_blocks"]
        .as_array()
        .map_or(0, Vec::len);
    eprintln!(
        "10KB reply: {} B, {blocks} text blocks",
        reply.to_string().len()
    );
    let context = Context::new().with("page", "settings");
    let inputs = ExprInputs::new(&reply, &context);
    let mut group = c.benchmark_group("expr_rule_10KB");
    for (label, path, expr) in RULES {
        let rule = ExprRule::compile(label, path, expr, None).expect("compiles");
        let mut out = Vec::new();
        rule.check(&inputs, &mut out);
        assert!(out.is_empty(), "{label}: {out:?}");
        group.bench_function(BenchmarkId::from_parameter(label), |b| {
            b.iter(|| {
                let mut out = Vec::new();
                rule.check(black_box(&inputs), &mut out);
                out
            });
        });
    }
    let contracts = Contracts::builtin().expect("built-in contracts");
    let contract = contracts
        .get("selfhelp-response")
        .expect("selfhelp-response");
    let builtin: Vec<&DeclaredRule> = contract
        .rules()
        .iter()
        .filter(|rule| matches!(rule, DeclaredRule::Expr(_)))
        .collect();
    assert_eq!(builtin.len(), 2);
    group.bench_function(BenchmarkId::from_parameter("selfhelp_response_both"), |b| {
        b.iter(|| {
            let mut out = Vec::new();
            for rule in &builtin {
                rule.check_in(black_box(&inputs), &mut out);
            }
            out
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
