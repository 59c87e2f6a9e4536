//! `Contract::check_reply` and `Contract::tools`: the `present_question` tool form of question
//! cards — offered only by a `text` contract with `[cards] tool = true` in the discovery and
//! clarification modes; each call a card after the detected ones; bad arguments and unknown
//! tools as violations that the feedback names; calls ignored where no tool is offered.

use bridle_core::cards::{TOOL_NAME, present_question_tool};
use bridle_core::{Context, Contract, Contracts, ToolCall};
use serde_json::{Value, json};
use std::sync::Arc;

fn contract(name: &str) -> Arc<Contract> {
    Contracts::builtin().unwrap().get(name).unwrap()
}

fn discovery() -> Context {
    Context::new()
        .with("mode", "discovery")
        .with("turn_id", "turn-7")
}

fn good_args() -> Value {
    json!({
        "question": "Who should be able to add items?",
        "rationale": "It decides whether we need accounts.",
        "options": [
            {"label": "Only me"},
            {"label": "Everyone in the flat", "is_default": true},
            {"label": "Everyone, plus guests"}
        ]
    })
}

fn call(args: Value) -> ToolCall {
    ToolCall::new(TOOL_NAME, args)
}

fn rules(violations: &[bridle_core::Violation]) -> Vec<String> {
    violations
        .iter()
        .map(|v| format!("{} {}", v.path, v.rule))
        .collect()
}

#[test]
fn the_tool_is_offered_only_in_card_modes_of_a_tool_contract() {
    let cards = contract("question-cards");
    assert_eq!(cards.tools(&discovery()), vec![present_question_tool()]);
    let clarification = Context::new().with("mode", " Clarification ");
    assert_eq!(cards.tools(&clarification).len(), 1);
    assert!(
        cards
            .tools(&Context::new().with("mode", "build"))
            .is_empty()
    );
    assert!(cards.tools(&Context::new()).is_empty());
    assert!(contract("selfhelp-response").tools(&discovery()).is_empty());
}

#[test]
fn a_call_with_empty_text_is_a_valid_card() {
    let cards = contract("question-cards");
    let checked = cards.check_reply("", &[call(good_args())], &discovery());
    assert!(checked.is_valid(), "{:?}", checked.violations);
    let value = checked.value.unwrap();
    assert_eq!(value["message"], "");
    let card = &value["question_cards"][0];
    assert_eq!(card["question_text"], "Who should be able to add items?");
    assert_eq!(card["category"], "discovery");
    assert_eq!(card["options"][1]["is_default"], true);
    assert_eq!(card["metadata"]["option_style"], "tool");
    // Deterministic from the turn id.
    let again = cards.check_reply("", &[call(good_args())], &discovery());
    assert_eq!(
        again.value.unwrap()["question_cards"][0]["question_id"],
        card["question_id"]
    );
    let other = cards.check_reply(
        "",
        &[call(good_args())],
        &discovery().with("turn_id", "turn-8"),
    );
    assert_ne!(
        other.value.unwrap()["question_cards"][0]["question_id"],
        card["question_id"]
    );
}

#[test]
fn called_cards_follow_the_detected_ones() {
    let cards = contract("question-cards");
    let text = "Good start.\n\nThe budget decides the scope. What is your budget?\n\n(A) Small\n(B) Medium\n(C) Large\n";
    let arguments = ToolCall::from_text(TOOL_NAME, &good_args().to_string());
    let checked = cards.check_reply(text, &[arguments], &discovery());
    assert!(checked.is_valid(), "{:?}", checked.violations);
    let value = checked.value.unwrap();
    let found = value["question_cards"].as_array().unwrap();
    assert_eq!(found.len(), 2);
    assert_eq!(found[0]["question_text"], "What is your budget?");
    assert_eq!(
        found[1]["question_text"],
        "Who should be able to add items?"
    );
    assert_eq!(found[1]["metadata"]["question_sequence"], 2);
    assert_ne!(found[0]["question_id"], found[1]["question_id"]);
    assert_eq!(value["message"], "Good start.");
}

#[test]
fn bad_arguments_are_violations_under_the_call_and_named_in_the_feedback() {
    let cards = contract("question-cards");
    let one_option = json!({"question": "Which?", "options": [{"label": "a"}]});
    let checked = cards.check_reply(
        "Let me ask.",
        &[call(good_args()), call(one_option)],
        &discovery(),
    );
    assert!(!checked.is_valid());
    assert_eq!(
        rules(&checked.violations),
        ["/tool_calls/1/arguments/options minItems"]
    );
    assert!(checked.violations[0].message.contains(TOOL_NAME));
    // The good call's card is still in the value.
    assert_eq!(
        checked.value.as_ref().unwrap()["question_cards"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let feedback = cards.feedback(&checked);
    assert!(
        feedback.contains("/tool_calls/1/arguments/options"),
        "{feedback}"
    );
    assert!(
        feedback.contains("Call the tool `present_question` again"),
        "{feedback}"
    );

    let missing = cards.check_reply("", &[call(json!({"options": ["a", "b"]}))], &discovery());
    assert_eq!(
        rules(&missing.violations),
        ["/tool_calls/0/arguments/question required"]
    );

    let not_json = ToolCall::from_text(TOOL_NAME, "{\"question\": \"Which?\", \"options\": [");
    assert_eq!(
        not_json.arguments,
        Value::String("{\"question\": \"Which?\", \"options\": [".into())
    );
    let checked = cards.check_reply("", &[not_json], &discovery());
    assert_eq!(
        rules(&checked.violations),
        ["/tool_calls/0/arguments parse"]
    );
}

#[test]
fn unknown_tools_are_violations_where_a_tool_is_offered() {
    let cards = contract("question-cards");
    let checked = cards.check_reply(
        "Some text.",
        &[ToolCall::new("delete_everything", json!({}))],
        &discovery(),
    );
    assert_eq!(rules(&checked.violations), ["/tool_calls/0 unknown_tool"]);
    assert!(checked.violations[0].message.contains("delete_everything"));
}

#[test]
fn calls_are_ignored_where_no_tool_is_offered() {
    let cards = contract("question-cards");
    let build = Context::new().with("mode", "build");
    let calls = [call(good_args())];
    assert_eq!(
        cards.check_reply("Plain text.", &calls, &build),
        cards.check("Plain text.", &build)
    );
    // Empty text with an ignored call is still an empty reply.
    assert_eq!(
        rules(&cards.check_reply("", &calls, &build).violations),
        [" empty"]
    );
    let selfhelp = contract("selfhelp-response");
    let raw = "{\"type\": \"response\"}";
    assert_eq!(
        selfhelp.check_reply(raw, &calls, &discovery()),
        selfhelp.check(raw, &discovery())
    );
    // No calls: the same as `check`, empty text included.
    assert_eq!(
        cards.check_reply("", &[], &discovery()),
        cards.check("", &discovery())
    );
}

#[test]
fn tool_calls_read_their_arguments_text() {
    assert_eq!(
        ToolCall::from_text("f", "{\"a\": 1}").arguments,
        json!({"a": 1})
    );
    assert_eq!(ToolCall::from_text("f", "  ").arguments, json!({}));
    assert_eq!(ToolCall::from_text("f", "nope").arguments, json!("nope"));
    assert_eq!(
        ToolCall::new("f", json!({"a": 1})).to_text(),
        "f({\"a\":1})"
    );
    assert_eq!(ToolCall::from_text("f", "nope").to_text(), "f(nope)");
}
