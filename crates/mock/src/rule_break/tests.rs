//! Tests of the rule faults: the reply still meets the schema, breaks exactly the family of rule
//! asked for, and the target is where Bridle's check reports it.

use super::*;
use crate::generate::{Hints, generate_valid};
use bridle_core::{Context, Contracts};
use std::collections::BTreeSet;
use std::sync::Arc;

fn contract(name: &str) -> Arc<Contract> {
    Contracts::builtin().unwrap().get(name).unwrap()
}

/// A generated value of `contract` with its value replaced by `value`.
fn generated(contract: &Contract, value: Value) -> Generated {
    let mut generated = generate_valid(contract, &Hints::default(), 1);
    generated.value = value;
    generated
}

fn example(contract: &Contract) -> Value {
    contract.example().unwrap().clone()
}

/// The rules Bridle's check reports for `broken`, after checking the schema still holds.
fn reported(contract: &Contract, broken: &Broken) -> Vec<(String, String)> {
    let value = broken.value.as_ref().unwrap();
    assert!(contract.schema().is_valid(value), "schema broken: {value}");
    let checked = contract.check(&broken.text, &Context::new());
    checked
        .violations
        .iter()
        .map(|v| (v.path.clone(), v.rule.as_str().to_owned()))
        .collect()
}

#[test]
fn broken_expr_breaks_an_expression_rule_where_the_check_reports_it() {
    let selfhelp = contract("selfhelp-response");
    let example = example(&selfhelp);
    assert!(selfhelp.validate(&example).is_empty());
    let generated = generated(&selfhelp, example);
    for seed in 0..16 {
        let broken = apply(&selfhelp, &generated, Fault::BrokenExpr, seed).unwrap();
        let reported = reported(&selfhelp, &broken);
        assert!(!reported.is_empty(), "seed {seed}: nothing broken");
        assert!(
            reported.iter().all(|(_, rule)| rule == "expr"),
            "seed {seed}: {reported:?}"
        );
        assert!(
            reported.iter().any(|(path, _)| *path == broken.target),
            "seed {seed}: target {} not among {reported:?}",
            broken.target
        );
    }
}

#[test]
fn broken_rule_breaks_the_fixed_kinds_and_each_breakable_rule_gets_its_turn() {
    let selfhelp = contract("selfhelp-response");
    let generated = generated(&selfhelp, example(&selfhelp));
    let mut kinds = BTreeSet::new();
    for seed in 0..40 {
        let broken = apply(&selfhelp, &generated, Fault::BrokenRule, seed).unwrap();
        let reported = reported(&selfhelp, &broken);
        assert!(!reported.is_empty(), "seed {seed}: nothing broken");
        for (_, rule) in &reported {
            assert!(
                ["unique", "less_than", "implies"].contains(&rule.as_str()),
                "seed {seed}: {reported:?}"
            );
        }
        assert!(reported.iter().any(|(path, _)| *path == broken.target));
        kinds.extend(reported.into_iter().map(|(_, rule)| rule));
    }
    assert_eq!(
        kinds,
        BTreeSet::from(["implies".into(), "less_than".into(), "unique".into()])
    );
}

#[test]
fn nothing_is_broken_where_no_rule_of_the_family_can_be() {
    let selfhelp = contract("selfhelp-response");
    let mut without_progress = example(&selfhelp);
    without_progress.as_object_mut().unwrap().remove("progress");
    let generated_without = generated(&selfhelp, without_progress);
    assert_eq!(
        apply(&selfhelp, &generated_without, Fault::BrokenExpr, 3),
        None
    );
    // Not a rule fault.
    let generated = generated(&selfhelp, example(&selfhelp));
    assert_eq!(apply(&selfhelp, &generated, Fault::WrongKey, 3), None);
    // A contract that is not JSON.
    let cards = contract("question-cards");
    let card_value = generate_valid(&cards, &Hints::default(), 1);
    assert_eq!(apply(&cards, &card_value, Fault::BrokenRule, 3), None);
}

#[test]
fn generated_replies_with_progress_topics_can_have_their_expression_rules_broken() {
    let selfhelp = contract("selfhelp-response");
    let mut broken = 0;
    let mut with_topics = 0;
    for seed in 0..60 {
        let generated = generate_valid(&selfhelp, &Hints::default(), seed);
        let topics = |key: &str| generated.value["progress"][key].as_array().map(Vec::len);
        let (Some(covered), Some(remaining)) =
            (topics("topics_covered"), topics("topics_remaining"))
        else {
            continue;
        };
        if covered + remaining == 0 {
            continue;
        }
        with_topics += 1;
        if let Some(fault) = apply(&selfhelp, &generated, Fault::BrokenExpr, seed) {
            assert!(reported(&selfhelp, &fault).iter().all(|(_, r)| r == "expr"));
            broken += 1;
        }
    }
    assert!(with_topics > 0);
    assert_eq!(
        broken, with_topics,
        "every reply with both topic lists, not both empty, can be broken"
    );
}
