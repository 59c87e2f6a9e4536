//! Fixture-driven tests: `valid/` replies pass, `invalid/` and `rules/` replies report at least
//! the `<pointer> <rule>` lines of their `.expect` file, `raw/` model outputs get the repairs and
//! verdicts their `.expect` names.

use crate::{fixture_dir, selfhelp};
use bridle_core::{Checked, Context};
use std::fs;
use std::path::{Path, PathBuf};

fn files(sub: &str, ext: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(fixture_dir(sub))
        .expect("fixture dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no fixtures in {sub}");
    out
}

fn expect_lines(path: &Path) -> Vec<String> {
    fs::read_to_string(path.with_extension("expect"))
        .expect(".expect file")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

fn pairs(checked: &Checked) -> Vec<String> {
    checked
        .violations
        .iter()
        .map(|v| format!("{} {}", v.path, v.rule))
        .collect()
}

#[test]
fn every_valid_fixture_meets_the_contract_without_repairs() {
    let contract = selfhelp();
    for path in files("selfhelp/valid", "json") {
        let raw = fs::read_to_string(&path).unwrap();
        let checked = contract.check(&raw, &Context::new());
        assert!(
            checked.is_valid(),
            "{}: {:#?}",
            path.display(),
            checked.violations
        );
        assert!(
            checked.repairs.is_empty(),
            "{}: {:?}",
            path.display(),
            checked.repairs
        );
    }
}

#[test]
fn every_invalid_fixture_reports_its_expected_violations() {
    check_expectations("selfhelp/invalid");
}

#[test]
fn every_rule_fixture_passes_the_schema_but_breaks_its_declared_rule() {
    let contract = selfhelp();
    for path in files("selfhelp/rules", "json") {
        let value: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        assert!(
            contract.schema().is_valid(&value),
            "{} should pass the schema",
            path.display()
        );
    }
    check_expectations("selfhelp/rules");
}

fn check_expectations(sub: &str) {
    let contract = selfhelp();
    for path in files(sub, "json") {
        let raw = fs::read_to_string(&path).unwrap();
        let checked = contract.check(&raw, &Context::new());
        assert!(!checked.is_valid(), "{} should be invalid", path.display());
        let got = pairs(&checked);
        for line in expect_lines(&path) {
            assert!(
                got.contains(&line),
                "{}: expected `{line}` among {got:#?}",
                path.display()
            );
        }
        for v in &checked.violations {
            assert!(!v.message.is_empty(), "{}: empty message", path.display());
        }
        assert!(!contract.feedback(&checked).is_empty());
    }
}

#[test]
fn every_raw_fixture_gets_its_repairs_and_verdict() {
    let contract = selfhelp();
    for path in files("selfhelp/raw", "txt") {
        let raw = fs::read(&path).unwrap();
        let checked = contract.check_bytes(&raw, &Context::new());
        let lines = expect_lines(&path);
        let (verdict, rest) = lines.split_first().expect("verdict line");
        assert_eq!(
            checked.is_valid(),
            verdict == "valid",
            "{}: {checked:#?}",
            path.display()
        );
        let kinds: Vec<&str> = checked.repairs.iter().map(|r| r.kind.as_str()).collect();
        let mut wanted_kinds = Vec::new();
        for line in rest {
            if let Some(kind) = line.strip_prefix("repair ") {
                wanted_kinds.push(kind.to_owned());
                assert!(
                    kinds.contains(&kind),
                    "{}: expected repair {kind} among {kinds:?}",
                    path.display()
                );
            } else if let Some(v) = line.strip_prefix("violation ") {
                let got = pairs(&checked);
                assert!(
                    got.iter().any(|g| g == v),
                    "{}: expected violation `{v}` among {got:?}",
                    path.display()
                );
            } else {
                panic!("{}: bad expect line {line}", path.display());
            }
        }
        if verdict == "valid" && wanted_kinds.is_empty() {
            assert!(
                kinds.is_empty(),
                "{}: unexpected repairs {kinds:?}",
                path.display()
            );
        }
    }
}

#[test]
fn suggestions_as_plain_strings_are_coerced_and_reported() {
    let contract = selfhelp();
    let mut value: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(fixture_dir("selfhelp/valid").join("minimal.json")).unwrap(),
    )
    .unwrap();
    value["content"]["suggestions"] = serde_json::json!(["Tell me more", {"text": "Stop"}]);
    let checked = contract.check(&value.to_string(), &Context::new());
    assert!(checked.is_valid(), "{:#?}", checked.violations);
    let v = checked.value.as_ref().unwrap();
    assert_eq!(
        v["content"]["suggestions"][0],
        serde_json::json!({"text": "Tell me more"})
    );
    assert_eq!(checked.repairs.len(), 1);
    assert_eq!(checked.repairs[0].kind.as_str(), "wrap_string");
    assert_eq!(
        checked.repairs[0].path.as_deref(),
        Some("/content/suggestions/0")
    );
}

#[test]
fn a_label_instead_of_text_is_not_coerced_but_reported_for_retry() {
    let contract = selfhelp();
    let mut value: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(fixture_dir("selfhelp/valid").join("minimal.json")).unwrap(),
    )
    .unwrap();
    value["content"]["suggestions"] = serde_json::json!([{"label": "Yes"}]);
    let checked = contract.check(&value.to_string(), &Context::new());
    assert!(!checked.is_valid());
    let feedback = contract.feedback(&checked);
    assert!(feedback.contains("/content/suggestions/0"), "{feedback}");
    assert!(feedback.contains("\"text\""), "{feedback}");
}

#[test]
fn hostile_inputs_are_violations_not_panics() {
    let contract = selfhelp();
    let ctx = Context::new();
    let deep = "[".repeat(100_000);
    let deep_obj = "{\"a\":".repeat(100_000);
    let closed_deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("whitespace", b"  \n\t ".to_vec()),
        ("binary", (0u8..=255).cycle().take(4096).collect()),
        ("nul bytes", vec![0u8; 1000]),
        ("invalid utf-8", vec![b'{', 0xff, 0xfe, b'}']),
        ("deep arrays", deep.into_bytes()),
        ("deep objects", deep_obj.into_bytes()),
        ("closed deep arrays", closed_deep.into_bytes()),
    ];
    for (name, bytes) in cases {
        let checked = contract.check_bytes(&bytes, &ctx);
        assert!(!checked.is_valid(), "{name}");
        assert!(!checked.violations.is_empty(), "{name}");
        let feedback = contract.feedback(&checked);
        assert!(
            feedback.chars().count() <= bridle_core::MAX_FEEDBACK_CHARS,
            "{name}"
        );
    }
    let rules = |b: &[u8]| {
        contract
            .check_bytes(b, &ctx)
            .violations
            .iter()
            .map(|v| v.rule.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(rules(b""), vec!["empty"]);
    assert_eq!(rules(&[b'{', 0xff, b'}']), vec!["encoding"]);
    assert_eq!(
        rules(format!("{}{}", "[".repeat(200), "]".repeat(200)).as_bytes()),
        vec!["parse"]
    );
}

#[test]
fn an_oversize_reply_is_rejected_by_size() {
    let contract = selfhelp();
    let big = "x".repeat(contract.limits().max_bytes + 1);
    let checked = contract.check(&big, &Context::new());
    assert_eq!(checked.violations[0].rule.as_str(), "too_large");
    assert_eq!(
        contract.too_large(100 * 1024 * 1024).violations[0]
            .rule
            .as_str(),
        "too_large"
    );
}
