//! The fallback reply: valid, and never dropping or downgrading the safety assessment any
//! attempt made.

use crate::selfhelp;
use bridle_core::{Context, Contracts};
use serde_json::{Value, json};

fn safety(level: Value, safe: bool, intervene: bool, concerns: Value) -> Value {
    json!({"safety": {"is_safe": safe, "danger_level": level, "detected_concerns": concerns, "requires_intervention": intervene, "safety_message": "We care about you."}})
}

#[test]
fn with_no_readable_attempt_the_fallback_is_the_template() {
    let contract = selfhelp();
    let reply = contract.fallback(&[]).unwrap();
    assert!(contract.validate(&reply).is_empty());
    assert_eq!(reply["content"]["text_blocks"][0]["type"], "error");
    assert_eq!(reply["safety"]["danger_level"], Value::Null);
}

#[test]
fn the_most_severe_assessment_is_carried_whatever_its_position() {
    let contract = selfhelp();
    let warning = safety(json!("warning"), true, false, json!(["self_harm"]));
    let emergency = safety(json!("emergency"), false, true, json!(["suicide"]));
    for attempts in [vec![&warning, &emergency], vec![&emergency, &warning]] {
        let reply = contract.fallback(&attempts).unwrap();
        assert!(contract.validate(&reply).is_empty(), "{reply}");
        assert_eq!(reply["safety"]["danger_level"], "emergency");
        assert_eq!(reply["safety"]["detected_concerns"], json!(["suicide"]));
        assert_eq!(reply["safety"]["requires_intervention"], true);
    }
}

#[test]
fn a_malformed_assessment_still_raises_the_level_and_what_it_implies() {
    let contract = selfhelp();
    // An invalid attempt: concerns as a string, is_safe wrongly true.
    let broken = safety(json!("critical"), true, false, json!("suicide"));
    let reply = contract.fallback(&[&broken]).unwrap();
    assert!(contract.validate(&reply).is_empty(), "{reply}");
    assert_eq!(reply["safety"]["danger_level"], "critical");
    assert_eq!(reply["safety"]["is_safe"], false);
    assert_eq!(reply["safety"]["requires_intervention"], true);
}

#[test]
fn attempts_without_safety_leave_the_template() {
    let contract = selfhelp();
    let reply = contract
        .fallback(&[&json!({"type": "nonsense"}), &json!([1, 2])])
        .unwrap();
    assert_eq!(reply, contract.fallback(&[]).unwrap());
}

#[test]
fn ad_hoc_schemas_have_no_fallback() {
    let contract = bridle_core::Contract::from_schema("x", json!({"type": "object"})).unwrap();
    assert!(contract.fallback(&[]).is_none());
    assert!(
        Contracts::builtin()
            .unwrap()
            .get("selfhelp-response")
            .unwrap()
            .has_fallback()
    );
    let _ = Context::new();
}

#[test]
fn a_fallback_reply_that_breaks_the_contract_is_a_load_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("manifest.toml"),
        "name = \"x\"\nversion = \"1.0.0\"\nkind = \"json\"\nschema = \"s.json\"\n[fallback]\nreply = \"f.json\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("s.json"),
        r#"{"type": "object", "required": ["a"]}"#,
    )
    .unwrap();
    std::fs::write(dir.path().join("f.json"), r#"{"b": 1}"#).unwrap();
    let message = Contracts::new()
        .load_dir(dir.path())
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("fallback reply does not meet"),
        "{message}"
    );
}
