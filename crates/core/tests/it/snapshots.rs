//! Snapshots of what models read: the prompt instructions and the retry feedback. Both must be
//! deterministic and the feedback bounded.

use crate::{fixture_dir, selfhelp};
use bridle_core::{Context, MAX_FEEDBACK_CHARS};
use std::fs;

#[test]
fn selfhelp_instructions() {
    let contract = selfhelp();
    let text = contract.instructions(&Context::new());
    assert_eq!(
        text,
        contract.instructions(&Context::new()),
        "deterministic"
    );
    insta::assert_snapshot!(text);
}

#[test]
fn feedback_for_a_fenced_reply_with_wrong_suggestion_keys() {
    let contract = selfhelp();
    let mut value: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(fixture_dir("selfhelp/valid").join("minimal.json")).unwrap(),
    )
    .unwrap();
    value["content"]["suggestions"] = serde_json::json!([{"label": "Yes"}, {"text": "No"}]);
    value["safety"]["danger_level"] = serde_json::json!("high");
    let raw = format!(
        "Here you go:\n```json\n{}\n```",
        serde_json::to_string_pretty(&value).unwrap()
    );
    let checked = contract.check(&raw, &Context::new());
    insta::assert_snapshot!(contract.feedback(&checked));
}

#[test]
fn feedback_for_a_truncated_reply() {
    let contract = selfhelp();
    let raw = r#"{"type": "response", "safety": {"is_safe": true, "danger_level": null, "detected_concerns": [], "requires_intervention": false}, "content": {"text_blocks": [{"type": "text", "content": "Breathing slowly helps because"#;
    let checked = contract.check(raw, &Context::new());
    insta::assert_snapshot!(contract.feedback(&checked));
}

#[test]
fn feedback_stays_bounded_however_many_violations() {
    let contract = selfhelp();
    let blocks: Vec<serde_json::Value> =
        (0..5000).map(|i| serde_json::json!({"type": "banner", "content": format!("block {i} {}", "x".repeat(200))})).collect();
    let raw = serde_json::json!({"type": "reply", "content": {"text_blocks": blocks}}).to_string();
    let checked = contract.check(&raw, &Context::new());
    assert!(checked.violations.len() > 20);
    let feedback = contract.feedback(&checked);
    assert!(
        feedback.chars().count() <= MAX_FEEDBACK_CHARS,
        "{} chars",
        feedback.chars().count()
    );
    assert!(feedback.contains("more ("), "{feedback}");
    let small = contract.check(r#"{"type": "reply"}"#, &Context::new());
    assert!(contract.feedback(&small).chars().count() <= MAX_FEEDBACK_CHARS);
}

#[test]
fn feedback_is_empty_for_a_valid_reply() {
    let contract = selfhelp();
    let raw = fs::read_to_string(fixture_dir("selfhelp/valid").join("minimal.json")).unwrap();
    let checked = contract.check(&raw, &Context::new());
    assert!(checked.is_valid());
    assert_eq!(contract.feedback(&checked), "");
}
