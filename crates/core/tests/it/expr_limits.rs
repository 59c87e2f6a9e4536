//! The bound of expression rules on hostile input: expressions of at most 1,000 characters over
//! a reply of 256 KiB, each built to take as long or as much memory as it can (nested macros,
//! string building, big lists, deep comparisons). Each must end with the rule's step-budget
//! violation; the time each took is printed (`--nocapture`), never asserted (see bench/README.md
//! for the measured worst case).

use bridle_core::expr::{ExprInputs, ExprRule, MAX_EXPR_CHARS};
use bridle_core::{Context, Rule};
use serde_json::{Value, json};
use std::time::Instant;

/// A 256 KiB reply: 12,000 small objects, 20,000 numbers and a 60,000-character string.
fn big_reply() -> Value {
    let items: Vec<Value> = (0..12_000)
        .map(|i| json!({"id": format!("i{i}"), "p": i % 7}))
        .collect();
    let reply = json!({"s": "x".repeat(60_000), "items": items, "n": vec![0; 20_000]});
    assert!(
        reply.to_string().len() >= 256 * 1024,
        "{}",
        reply.to_string().len()
    );
    reply
}

fn worst_cases() -> Vec<String> {
    let repeat = |unit: &str, joiner: &str, n: usize| vec![unit; n].join(joiner);
    vec![
        "reply.items.all(a, reply.items.all(b, a.p < 10))".into(),
        "reply.items.all(a, reply.items.exists(b, reply.items.exists(c, a == c && b == c)))".into(),
        "reply.n.all(a, reply.n.all(b, reply.n.all(c, reply.n.all(d, true))))".into(),
        format!(
            "reply.n.all(a, {} != '')",
            repeat("((reply.s + reply.s) + (reply.s + reply.s))", " + ", 8)
        ),
        "reply.n.all(a, reply == reply)".into(),
        "reply.n.map(a, reply.items).map(l, l.size()).size() > 0".into(),
        format!("[{}].size() > 0", repeat("reply.s + reply.s", ",", 50)),
        "reply.n.map(a, reply.n.map(b, reply.n)).size() > 0".into(),
        format!(
            "({}).all(x, x.id.size() > 0)",
            repeat(
                "((reply.items + reply.items) + (reply.items + reply.items))",
                " + ",
                8
            )
        ),
        "reply.items.exists(x, x in reply.items && !(x in reply.items))".into(),
        "reply.n.all(x, reply.s.startsWith(reply.s) && reply.s.endsWith(reply.s))".into(),
        "reply.items.all(x, x.id in reply.items.map(y, y.id))".into(),
        "reply.n.map(a, {'k': reply.s, 'l': reply.items}).filter(m, m.l == reply.items).size() > 0"
            .into(),
        format!(
            "reply.n.all(a, {})",
            repeat(
                "(!reply.s.contains('y') && !reply.s.contains('z'))",
                " && ",
                12
            )
        ),
    ]
}

#[test]
fn every_worst_case_ends_at_the_step_budget() {
    let reply = big_reply();
    let context = Context::new();
    let mut slowest = (0.0, String::new());
    for (i, expr) in worst_cases().into_iter().enumerate() {
        assert!(expr.chars().count() <= MAX_EXPR_CHARS, "{expr}");
        let rule = ExprRule::compile(&format!("worst-{i}"), "", &expr, None)
            .unwrap_or_else(|e| panic!("{expr}: {e}"));
        let started = Instant::now();
        let mut out = Vec::new();
        rule.check(&ExprInputs::new(&reply, &context), &mut out);
        let took = started.elapsed().as_secs_f64() * 1000.0;
        eprintln!("{took:>9.1} ms  {}", &expr[..expr.len().min(90)]);
        if took > slowest.0 {
            slowest = (took, expr.clone());
        }
        assert_eq!(out.len(), 1, "{expr}: {out:?}");
        assert_eq!(out[0].rule, Rule::Expr);
        assert!(
            out[0].message.contains("needs more than 100000 steps"),
            "{expr}: {}",
            out[0].message
        );
    }
    eprintln!("slowest: {:.1} ms for {}", slowest.0, slowest.1);
}

#[test]
fn one_budget_covers_all_the_matches_of_a_rule() {
    let reply = big_reply();
    let rule = ExprRule::compile(
        "per-item",
        "/items/*",
        "this.p >= 0 && this.id.size() > 0",
        None,
    )
    .unwrap();
    let mut out = Vec::new();
    rule.check(&ExprInputs::new(&reply, &Context::new()), &mut out);
    assert!(out.is_empty(), "cheap per match: {out:?}");
    let costly = ExprRule::compile("per-item", "/items/*", "reply.n.all(x, x == 0)", None).unwrap();
    let mut out = Vec::new();
    costly.check(&ExprInputs::new(&reply, &Context::new()), &mut out);
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(out[0].message.contains("needs more than 100000 steps"));
}

#[test]
fn a_rule_reports_at_most_twenty_violations() {
    let reply = big_reply();
    let rule = ExprRule::compile("never", "/items/*", "this.p > 100", None).unwrap();
    let mut out = Vec::new();
    rule.check(&ExprInputs::new(&reply, &Context::new()), &mut out);
    assert_eq!(out.len(), 20);
}
