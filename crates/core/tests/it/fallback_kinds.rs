//! The fallbacks of `table-chat`, `question-cards` and `topic-analysis`: valid replies of their
//! contract made of what the failed attempts had for the user — the last text without markers,
//! payload or cards; the latest `<response>` with a minimal analysis — and the manifest checks
//! of `[fallback] kind = "last_text"`.

use bridle_core::{Context, Contract, Contracts};
use serde_json::{Value, json};
use std::sync::Arc;

fn builtin(name: &str) -> Arc<Contract> {
    Contracts::builtin().unwrap().get(name).unwrap()
}

/// The value an attempt left (invalid or not), as the turn loop keeps it.
fn attempt(contract: &Contract, raw: &str, context: &Context) -> Value {
    contract.check(raw, context).value.unwrap()
}

const SENTENCE: &str =
    "Sorry, I could not put a proper answer together just now. Please try again.";

#[test]
fn table_chat_falls_back_to_the_last_text_without_markers_or_payload() {
    let contract = builtin("table-chat");
    let context = Context::new().with("page", "table_view");
    // The proposal's JSON is broken: the attempt is invalid, its text readable.
    let first = attempt(
        &contract,
        "First try.\n\nSUGGESTED_VALUES: [{\"label\": \"All\", \"value\": \"all\"}]",
        &context,
    );
    let last_raw = "I can add the three rows you asked for.\n\nDATA_PROPOSAL:\n{\"operations\": [{\"action\": \"add\", \"data\": 5}\n\nTell me if anything is missing.";
    assert!(!contract.check(last_raw, &context).is_valid());
    let last = attempt(&contract, last_raw, &context);
    let reply = contract.fallback(&[&first, &last]).unwrap();
    assert!(contract.validate(&reply).is_empty(), "{reply}");
    let message = reply["message"].as_str().unwrap();
    assert!(message.starts_with("I can add the three rows"), "{message}");
    assert!(
        !message.contains("DATA_PROPOSAL") && !message.contains("operations"),
        "{message}"
    );
    assert_eq!(reply["payload"], Value::Null);
    assert_eq!(reply["suggested_values"], Value::Null);
    assert_eq!(reply["suggested_actions"], Value::Null);
}

#[test]
fn table_chat_without_any_text_falls_back_to_a_sentence() {
    let contract = builtin("table-chat");
    let only_markers = attempt(
        &contract,
        "SUGGESTED_VALUES: [{\"label\": \"\", \"value\": \"\"}]",
        &Context::new(),
    );
    for attempts in [vec![], vec![&only_markers], vec![&json!({"message": 3})]] {
        let reply = contract.fallback(&attempts).unwrap();
        assert!(contract.validate(&reply).is_empty(), "{reply}");
        assert_eq!(reply["message"], SENTENCE);
        assert_eq!(reply["payload"], Value::Null);
    }
}

#[test]
fn question_cards_fall_back_to_the_plain_text_without_cards() {
    let contract = builtin("question-cards");
    let context = Context::new().with("mode", "discovery");
    let raw = "Thanks.\n\nWho should be able to add items?\n\n(A) Only me\n(B) Everyone in the flat\n(C) Everyone, plus guests";
    let value = attempt(&contract, raw, &context);
    assert_eq!(value["question_cards"].as_array().unwrap().len(), 1);
    let reply = contract.fallback(&[&value]).unwrap();
    assert!(contract.validate(&reply).is_empty(), "{reply}");
    assert_eq!(reply["question_cards"], json!([]));
    let message = reply["message"].as_str().unwrap();
    for part in [
        "Thanks.",
        "Who should be able to add items?",
        "Only me",
        "Everyone in the flat",
    ] {
        assert!(message.contains(part), "{part:?} missing from {message}");
    }
    assert_eq!(contract.fallback(&[]).unwrap()["message"], SENTENCE);
}

#[test]
fn topic_analysis_falls_back_to_a_minimal_analysis_with_the_latest_response() {
    let contract = builtin("topic-analysis");
    let template = contract.fallback(&[]).unwrap();
    assert!(contract.validate(&template).is_empty(), "{template}");
    assert_eq!(template["analysis"]["summaryUpdate"], "");
    assert!(template["analysis"].get("subject").is_none(), "{template}");
    // An attempt whose analysis breaks the contract (a keyword confidence of 7) but whose
    // answer reads.
    let broken = attempt(
        &contract,
        "<llmResponse><response>Try a fixed bedtime.</response><analysis><subject name=\"sleep\" description=\"Sleep\" isNew=\"true\"><keyword term=\"bed\" confidence=\"7\"/></subject><summaryUpdate>x</summaryUpdate></analysis></llmResponse>",
        &Context::new(),
    );
    let reply = contract.fallback(&[&broken]).unwrap();
    assert!(contract.validate(&reply).is_empty(), "{reply}");
    assert_eq!(reply["response"], "Try a fixed bedtime.");
    assert_eq!(reply["analysis"], template["analysis"]);
    // An empty answer is not carried.
    let empty = json!({"response": "", "analysis": {"summaryUpdate": "x"}});
    assert_eq!(contract.fallback(&[&empty]).unwrap(), template);
}

#[test]
fn the_topic_fallback_changes_no_running_state() {
    let contract = builtin("topic-analysis");
    let state = contract
        .next_state(&json!({}), &contract.example().unwrap().clone())
        .unwrap();
    let reply = contract.fallback(&[]).unwrap();
    // Even were it applied, a fallback adds no subject, keyword or summary.
    let after = contract.next_state(&state, &reply).unwrap();
    for key in ["active_subjects", "recent_keywords", "summary"] {
        assert_eq!(after["topic"][key], state["topic"][key], "{key}");
    }
}

fn load(kind: &str, extra: &str, fallback: &str) -> Result<Arc<Contract>, String> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("manifest.toml"),
        format!("name = \"x\"\nversion = \"1.0.0\"\nkind = \"{kind}\"\nschema = \"s.json\"\n{extra}\n[fallback]\n{fallback}\n"),
    )
    .unwrap();
    std::fs::write(dir.path().join("s.json"), r#"{"type": "object"}"#).unwrap();
    std::fs::write(dir.path().join("f.json"), r#"{"message": "sorry"}"#).unwrap();
    let mut contracts = Contracts::new();
    contracts.load_dir(dir.path()).map_err(|e| e.to_string())?;
    Ok(contracts.get("x").unwrap())
}

#[test]
fn a_last_text_fallback_is_checked_at_load() {
    let ok = load("text", "", "kind = \"last_text\"\nsentence = \"Sorry.\"").unwrap();
    assert_eq!(ok.fallback(&[]).unwrap(), json!({"message": "Sorry."}));
    for (kind, fallback, expected) in [
        (
            "json",
            "kind = \"last_text\"\nsentence = \"Sorry.\"",
            "markers and text contracts only",
        ),
        ("text", "kind = \"last_text\"", "needs sentence"),
        (
            "text",
            "kind = \"last_text\"\nsentence = \"  \"",
            "must not be empty",
        ),
        (
            "text",
            "kind = \"last_text\"\nsentence = \"a\"\nreply = \"f.json\"",
            "no reply",
        ),
        (
            "json",
            "reply = \"f.json\"\nsentence = \"a\"",
            "no sentence",
        ),
        (
            "json",
            "kind = \"newest\"\nsentence = \"a\"",
            "unknown variant",
        ),
    ] {
        let message = load(kind, "", fallback).unwrap_err();
        assert!(message.contains(expected), "{fallback}: {message}");
    }
}
