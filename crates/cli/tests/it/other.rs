//! `bridle repair`, `bridle prompt`, `bridle contracts`, `--contracts DIR`.

use crate::{bridle, core_fixture, fixture, json_out};
use predicates::str::contains;

#[test]
fn repair_prints_the_repaired_json_and_lists_repairs_on_stderr() {
    let output = bridle()
        .arg("repair")
        .write_stdin("Sure!\n```json\n{'a': True, 'b': [1, 2,],}\n```\nBye")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        json_out(&output),
        serde_json::json!({"a": true, "b": [1, 2]})
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    for kind in [
        "code_fence",
        "surrounding_prose",
        "single_quote",
        "python_literal",
        "trailing_comma",
    ] {
        assert!(stderr.contains(kind), "{kind} missing in {stderr}");
    }
}

#[test]
fn repair_leaves_text_that_parses_unchanged() {
    bridle()
        .arg("repair")
        .write_stdin("  {\"z\": 1,   \"a\": [true]}\n")
        .assert()
        .code(0)
        .stdout("{\"z\": 1,   \"a\": [true]}\n");
}

#[test]
fn repair_with_a_contract_applies_its_coercions() {
    let output = bridle()
        .args(["repair", "--contract", "selfhelp-response"])
        .write_stdin(r#"{"content": {"suggestions": ["Yes", "No"]}}"#)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        json_out(&output)["content"]["suggestions"][1],
        serde_json::json!({"text": "No"})
    );
}

#[test]
fn repair_refuses_a_truncated_reply_with_exit_1() {
    bridle()
        .arg("repair")
        .arg(core_fixture("selfhelp/raw/truncated_in_text_block.txt"))
        .assert()
        .code(1)
        .stderr(contains("truncated"));
}

#[test]
fn prompt_prints_schema_rules_and_example() {
    bridle()
        .args(["prompt", "--contract", "selfhelp-response"])
        .assert()
        .code(0)
        .stdout(contains("JSON Schema (draft-07)"))
        .stdout(contains("Rules the schema cannot express"))
        .stdout(contains("Example of a valid reply"));
}

#[test]
fn contracts_lists_builtins_and_added_directories() {
    bridle()
        .arg("contracts")
        .assert()
        .code(0)
        .stdout(contains("selfhelp-response"));
    let output = bridle()
        .args(["contracts", "--json", "--contracts"])
        .arg(fixture("contracts"))
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let names: Vec<String> = json_out(&output)
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        names.contains(&"selfhelp-response".to_owned())
            && names.contains(&"ticket-triage".to_owned()),
        "{names:?}"
    );
}

#[test]
fn an_added_contract_checks_replies() {
    bridle()
        .args(["check", "--contracts"])
        .arg(fixture("contracts"))
        .args(["--contract", "ticket-triage", "--json"])
        .write_stdin(r#"{"priority": "p1", "team": "billing", "tags": ["a", "a"]}"#)
        .assert()
        .code(1)
        .stdout(contains("\"unique\""));
}

#[test]
fn a_broken_contracts_directory_exits_2() {
    bridle()
        .args(["contracts", "--contracts", "/no/such/dir"])
        .assert()
        .code(2);
}
