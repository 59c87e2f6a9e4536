//! The corpus of replies whose JSON breaks inside, closes early and goes on, or is followed by a
//! second value (`bench/compare/repair/fragments.txt`, issue 33 "never a fragment"), through the
//! complete check and the streaming check: each is refused as `parse` or `ambiguous`, never
//! accepted as a part of what the model wrote. The cut-off and no-JSON replies of
//! `must-not-repair.txt` are never accepted either.

use crate::selfhelp;
use bridle_core::{Context, Contract, StreamCheck, Violation};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;

// The bench's own reader of the corpus format, so the test and the comparison read the same.
#[allow(dead_code)]
#[path = "../../../../bench/compare/bridle_cases.rs"]
mod corpus;

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../bench/compare/repair")
}

/// `(name, contract, input)` of every case of `file`.
fn cases(file: &str) -> Vec<(String, Arc<Contract>, String)> {
    let any = Arc::new(Contract::from_schema("any", json!({})).unwrap());
    let cases = corpus::load_file(&corpus_dir(), file, "reject");
    assert!(!cases.is_empty(), "{file} has no cases");
    cases
        .into_iter()
        .map(|case| {
            let contract = match case["contract"].as_str() {
                Some("any") => any.clone(),
                Some("selfhelp-response") => selfhelp(),
                other => panic!("{file}: unknown contract {other:?}"),
            };
            let name = case["name"].as_str().unwrap().to_owned();
            (name, contract, case["input"].as_str().unwrap().to_owned())
        })
        .collect()
}

/// The violations a gateway ends with when it streams `text` in deltas of `size` characters:
/// the stream's abort, or else the complete check of the whole reply.
fn streamed(contract: &Contract, text: &str, size: usize) -> Vec<Violation> {
    let ctx = Context::new();
    let mut check = StreamCheck::new(contract, &ctx);
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    for delta in chars.chunks(size) {
        let delta: String = delta.iter().collect();
        if let Err(abort) = check.push(&delta, &mut out) {
            return abort.violations;
        }
    }
    let checked = contract.check(check.raw(), &ctx);
    assert!(!checked.is_valid(), "{text:?}: the stream ended accepted");
    checked.violations
}

fn refused_as_unreadable(violations: &[Violation]) -> bool {
    violations
        .iter()
        .any(|v| matches!(v.rule.as_str(), "parse" | "ambiguous"))
}

#[test]
fn every_fragment_case_is_refused_as_parse_or_ambiguous_complete_and_streamed() {
    let ctx = Context::new();
    let cases = cases("fragments.txt");
    assert!(cases.len() >= 30, "{} cases", cases.len());
    for (name, contract, input) in &cases {
        let checked = contract.check(input, &ctx);
        assert!(!checked.is_valid(), "{name}: accepted {:?}", checked.value);
        assert!(
            refused_as_unreadable(&checked.violations),
            "{name}: {:?}",
            checked.violations
        );
        // Every violation quotes the place, so the retry can say what to fix.
        for v in checked
            .violations
            .iter()
            .filter(|v| v.rule.as_str() == "parse")
        {
            assert!(v.message.contains("line "), "{name}: {v:?}");
            let quoted = v.found.as_deref().is_some_and(|f| f.contains("⟨here⟩"));
            assert!(quoted, "{name}: {v:?}");
        }
        for size in [1, 3, 64] {
            let violations = streamed(contract, input, size);
            assert!(
                refused_as_unreadable(&violations),
                "{name}, deltas of {size}: {violations:?}"
            );
        }
    }
}

#[test]
fn no_case_the_corpus_must_not_repair_is_accepted_complete_or_streamed() {
    let ctx = Context::new();
    for (name, contract, input) in cases("must-not-repair.txt") {
        let checked = contract.check(&input, &ctx);
        assert!(!checked.is_valid(), "{name}: accepted {:?}", checked.value);
        for size in [1, 7] {
            // `streamed` asserts the complete check at the end refused it as well.
            assert!(!streamed(&contract, &input, size).is_empty(), "{name}");
        }
    }
}

/// The reader is the one the comparison uses: every fragment case is a `reject` case of the
/// corpus it writes, so each tool is judged on them.
#[test]
fn the_comparison_reads_the_fragment_cases_as_must_not_accept() {
    let all = corpus::load(&corpus_dir());
    let fragments = corpus::load_file(&corpus_dir(), "fragments.txt", "reject");
    for case in &fragments {
        assert!(all.contains(case), "{}", case["name"]);
        assert_eq!(case["expected"], Value::Null);
    }
}
