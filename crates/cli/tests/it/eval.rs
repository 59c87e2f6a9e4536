//! `bridle eval`.

use crate::{bridle, core_fixture, json_out};
use predicates::str::contains;
use std::fmt::Write as _;

fn jsonl() -> tempfile::NamedTempFile {
    let valid = std::fs::read_to_string(core_fixture("selfhelp/valid/minimal.json")).unwrap();
    let compact: serde_json::Value = serde_json::from_str(&valid).unwrap();
    let fenced = format!(
        "```json\n{}\n```",
        serde_json::to_string_pretty(&compact).unwrap()
    );
    let invalid = std::fs::read_to_string(core_fixture(
        "selfhelp/invalid/danger_level_not_in_enum.json",
    ))
    .unwrap();
    let invalid: serde_json::Value = serde_json::from_str(&invalid).unwrap();
    let mut text = String::new();
    let _ = writeln!(text, "{compact}");
    let _ = writeln!(text, "{}", serde_json::Value::String(fenced));
    let _ = writeln!(text);
    let _ = writeln!(text, "{invalid}");
    let _ = writeln!(text, "not json at all");
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), text).unwrap();
    file
}

#[test]
fn eval_summarises_valid_repaired_and_invalid() {
    let file = jsonl();
    let output = bridle()
        .args(["eval", "--json", "--contract", "selfhelp-response"])
        .arg(file.path())
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let v = json_out(&output);
    assert_eq!(v["total"], 4);
    assert_eq!(v["valid"], 1);
    assert_eq!(v["repaired"], 1);
    assert_eq!(v["invalid"], 2);
    assert_eq!(v["invalid_lines"], serde_json::json!([4, 5]));
    let rules: Vec<&str> = v["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rule"].as_str().unwrap())
        .collect();
    assert!(
        rules.contains(&"enum") && rules.contains(&"not_json"),
        "{rules:?}"
    );
    assert_eq!(v["repairs"][0]["kind"], "code_fence");
}

#[test]
fn eval_prints_a_readable_summary() {
    let file = jsonl();
    bridle()
        .args(["eval", "--contract", "selfhelp-response"])
        .arg(file.path())
        .assert()
        .code(1)
        .stdout(contains("4 replies"))
        .stdout(contains("repaired"))
        .stdout(contains("most violated rules"));
}

#[test]
fn eval_reads_replies_from_a_field_and_exits_0_when_all_are_valid() {
    let valid = std::fs::read_to_string(core_fixture("selfhelp/valid/minimal.json")).unwrap();
    let line = serde_json::json!({"id": 1, "content": valid}).to_string();
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), format!("{line}\n{line}\n")).unwrap();
    let output = bridle()
        .args([
            "eval",
            "--json",
            "--field",
            "content",
            "--contract",
            "selfhelp-response",
        ])
        .arg(file.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(json_out(&output)["valid"], 2);
}

#[test]
fn eval_of_a_missing_file_exits_2() {
    bridle()
        .args(["eval", "--contract", "selfhelp-response", "/no/such.jsonl"])
        .assert()
        .code(2);
}
