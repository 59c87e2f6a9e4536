//! Tests of [`MockModel`]: named contracts, feedback that fixes (or does not fix) each content
//! fault, transport faults and retries, scripts, plain text, native and prompt schemas, forced
//! tools, determinism.

use super::*;
use crate::request::{FEEDBACK_PREFIX, MockMessage, Role};
use crate::script::Script;
use bridle_core::Contracts;

fn selfhelp() -> Arc<Contract> {
    Contracts::builtin()
        .unwrap()
        .get("selfhelp-response")
        .unwrap()
}

fn model(config: MockConfig) -> MockModel {
    MockModel::new(config).unwrap()
}

fn faulty(fault: Fault, seed: u64) -> MockModel {
    model(
        MockConfig::new()
            .with_seed(seed)
            .with_fault_rate(1.0)
            .with_faults(vec![fault]),
    )
}

/// The request of attempt `1 + retries.len()`: system, user, then each bad reply and its
/// feedback.
fn request(system: &str, user: &str, retries: &[(String, String)]) -> MockRequest {
    let mut messages = vec![
        MockMessage::new(Role::System, system),
        MockMessage::new(Role::User, user),
    ];
    for (reply, feedback) in retries {
        messages.push(MockMessage::new(Role::Assistant, reply.clone()));
        messages.push(MockMessage::new(Role::User, feedback.clone()));
    }
    MockRequest::new("mock-test", messages)
}

fn text(reply: &MockReply) -> &str {
    match reply {
        MockReply::Text { content, .. } => content,
        other => panic!("not text: {other:?}"),
    }
}

fn system() -> String {
    selfhelp().instructions(&Context::new())
}

#[test]
fn a_named_contract_gets_valid_replies() {
    let contract = selfhelp();
    for seed in 0..20 {
        let mock = model(MockConfig::new().with_seed(seed));
        let reply = mock.respond(&request(&system(), &format!("question {seed}"), &[]));
        let checked = contract.check(text(&reply), &Context::new());
        assert!(checked.is_valid(), "seed {seed}: {:?}", checked.violations);
        assert_eq!(checked.value.unwrap()["metadata"]["model"], "mock-test");
        assert_eq!((reply.fault(), reply.info().attempt), (None, 1));
    }
}

#[test]
fn good_feedback_fixes_each_content_fault_and_bad_feedback_does_not() {
    let contract = selfhelp();
    let ctx = Context::new();
    for fault in [
        Fault::WrongKey,
        Fault::MissingRequired,
        Fault::WrongEnum,
        Fault::Truncate,
        Fault::PlainText,
    ] {
        for seed in 0..8 {
            let mock = faulty(fault, seed);
            let user = "I feel stressed at work.";
            let first = mock.respond(&request(&system(), user, &[]));
            assert_eq!(first.fault(), Some(fault), "{fault} seed {seed}");
            let target = first.info().target.clone().unwrap();
            let checked = contract.check(text(&first), &ctx);
            assert!(!checked.is_valid(), "{fault} seed {seed}");
            let good = contract.feedback(&checked);
            assert!(mentions(&good, &target), "{fault}: {target} not in {good}");

            let bad = format!(
                "{FEEDBACK_PREFIX} \"selfhelp-response\". Problems found: 1.\n1. at /nowhere (required): fix it.\n"
            );
            let repeated = mock.respond(&request(
                &system(),
                user,
                &[(text(&first).into(), bad.clone())],
            ));
            if target.is_empty() {
                // A whole-reply fault is fixed by any feedback.
                assert!(contract.check(text(&repeated), &ctx).is_valid(), "{fault}");
            } else {
                assert_eq!(repeated.fault(), Some(fault), "{fault} seed {seed}");
                assert_eq!(
                    text(&repeated),
                    text(&first),
                    "{fault}: the same mistake again"
                );
                assert_eq!(repeated.info().attempt, 2);
                // Still wrong after two bad feedbacks.
                let third = mock.respond(&request(
                    &system(),
                    user,
                    &[
                        (text(&first).into(), bad.clone()),
                        (text(&repeated).into(), bad),
                    ],
                ));
                assert_eq!((third.fault(), third.info().attempt), (Some(fault), 3));
            }

            let fixed = mock.respond(&request(&system(), user, &[(text(&first).into(), good)]));
            let checked = contract.check(text(&fixed), &ctx);
            assert!(
                checked.is_valid(),
                "{fault} seed {seed}: {:?}",
                checked.violations
            );
            assert_eq!((fixed.fault(), fixed.info().attempt), (None, 2));
        }
    }
}

#[test]
fn repairable_faults_pass_the_check_with_repairs() {
    let contract = selfhelp();
    for fault in [Fault::Fence, Fault::Prose, Fault::TrailingComma] {
        let reply = faulty(fault, 1).respond(&request(&system(), "hi", &[]));
        let checked = contract.check(text(&reply), &Context::new());
        assert!(checked.is_valid() && !checked.repairs.is_empty(), "{fault}");
        assert_eq!(reply.info().target.as_deref(), Some(""));
    }
}

#[test]
fn transport_faults_answer_instead_and_a_retry_draws_again() {
    let mock = faulty(
        Fault::Http429 {
            retry_after_secs: 3,
        },
        5,
    );
    let req = request(&system(), "hello", &[]);
    let first = mock.respond(&req);
    assert!(matches!(
        first,
        MockReply::Http {
            status: 429,
            retry_after: Some(3),
            ..
        }
    ));
    // fault_rate 1 draws the 429 again on every identical retry; with a mix of content and
    // transport faults, retries eventually get an answer.
    let mixed = model(
        MockConfig::new()
            .with_seed(2)
            .with_fault_rate(0.9)
            .with_faults(vec![Fault::Http500, Fault::WrongKey]),
    );
    let answered = (0..40).any(|_| mixed.respond(&req).status() == 200);
    assert!(answered);
    let broken = faulty(Fault::BrokenStream, 1);
    assert_eq!(broken.respond(&req).status(), 500);
    let mut streamed = req.clone();
    streamed.stream = true;
    assert!(matches!(
        broken.respond(&streamed),
        MockReply::BrokenStream { .. }
    ));
    let slow = faulty(Fault::Slow { ms: 40 }, 1).respond(&req);
    assert_eq!(slow.info().delay, Duration::from_millis(40));
    assert!(contract_valid(text(&slow)));
}

fn contract_valid(text: &str) -> bool {
    selfhelp().check(text, &Context::new()).is_valid()
}

#[test]
fn a_script_is_consumed_turn_by_turn() {
    let script = Script::from_json(
        r#"{"turns": [
            {"attempts": [{"fault": {"kind": "wrong_key"}}, {"valid": true}]},
            {"attempts": [{"reply": "literal text"}]},
            {"attempts": [{"fault": {"kind": "http429", "retry_after_secs": 1}}, {"fault": {"kind": "missing_required"}}]}
        ]}"#,
    )
    .unwrap();
    let mock = model(MockConfig::new().with_script(script).with_fault_rate(1.0));
    let t1 = mock.respond(&request(&system(), "one", &[]));
    assert_eq!(t1.fault(), Some(Fault::WrongKey));
    // Any feedback: the script says valid.
    let feedback = format!("{FEEDBACK_PREFIX} \"x\".");
    let t1b = mock.respond(&request(&system(), "one", &[(text(&t1).into(), feedback)]));
    assert_eq!(t1b.fault(), None);
    assert!(contract_valid(text(&t1b)));
    let t2 = mock.respond(&request(&system(), "two", &[]));
    assert_eq!(text(&t2), "literal text");
    let t3 = mock.respond(&request(&system(), "three", &[]));
    assert_eq!(t3.status(), 429);
    // The retry after a 429 is the same turn's next entry, not a new turn.
    let t3b = mock.respond(&request(&system(), "three", &[]));
    assert_eq!(t3b.fault(), Some(Fault::MissingRequired));
    // Past the end of the script: valid.
    let t4 = mock.respond(&request(&system(), "four", &[]));
    assert_eq!(t4.fault(), None);
    assert!(contract_valid(text(&t4)));
    mock.reset();
    assert_eq!(
        mock.respond(&request(&system(), "one", &[])).fault(),
        Some(Fault::WrongKey)
    );
}

#[test]
fn without_a_schema_the_reply_is_conversation() {
    let mock = faulty(Fault::WrongKey, 3);
    let reply = mock.respond(&request("You are friendly.", "Hi there", &[]));
    let content = text(&reply);
    assert!(serde_json::from_str::<Value>(content).is_err());
    assert!(content.ends_with('.'));
    assert_eq!(reply.fault(), None);
}

#[test]
fn native_and_prompt_schemas_are_met() {
    let schema = json!({"$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
        "required": ["answer", "confidence"], "additionalProperties": false,
        "properties": {"answer": {"type": "string"}, "confidence": {"type": "number", "minimum": 0, "maximum": 1}}});
    let contract = Contract::from_schema("s", schema.clone()).unwrap();
    let mock = model(MockConfig::new().with_seed(4));
    let mut native = request("Answer in JSON.", "why?", &[]);
    native.format = ReplyFormat::JsonSchema {
        schema: schema.clone(),
    };
    assert!(
        contract
            .check(text(&mock.respond(&native)), &Context::new())
            .is_valid()
    );
    let prompt = contract.instructions(&Context::new());
    let in_prompt = mock.respond(&request(&prompt, "why?", &[]));
    assert!(contract.check(text(&in_prompt), &Context::new()).is_valid());
    let mut object = request("Answer in JSON.", "why?", &[]);
    object.format = ReplyFormat::JsonObject;
    let value: Value = serde_json::from_str(text(&mock.respond(&object))).unwrap();
    assert!(value["message"].is_string());
}

#[test]
fn a_hostile_native_schema_is_answered_within_the_byte_budget() {
    let mock = model(MockConfig::new().with_seed(4));
    for schema in [
        json!({"type": "array", "minItems": 1000, "items": {"type": "string", "minLength": 65536}}),
        json!({"not": {}}),
    ] {
        let mut hostile = request("Answer in JSON.", "why?", &[]);
        hostile.format = ReplyFormat::JsonSchema {
            schema: schema.clone(),
        };
        let reply = mock.respond(&hostile);
        let size = text(&reply).len();
        assert!(size <= crate::MAX_REPLY_BYTES, "{schema}: {size} bytes");
    }
}

#[test]
fn a_forced_tool_gets_its_input_and_only_structural_faults() {
    let schema = selfhelp().schema().raw().clone();
    for fault in [Fault::Fence, Fault::Truncate, Fault::WrongEnum] {
        let mock = faulty(fault, 8);
        let mut req = request("Use the tool.", "hello", &[]);
        req.format = ReplyFormat::Tool {
            name: "reply".into(),
            schema: schema.clone(),
        };
        let MockReply::ToolCall {
            name,
            input,
            fault: got,
            ..
        } = mock.respond(&req)
        else {
            panic!("not a tool call");
        };
        assert_eq!(name, "reply");
        assert!(got.is_some_and(|f| f.is_structural()), "{fault} → {got:?}");
        assert!(!selfhelp().validate(&input).is_empty());
    }
    let mut req = request("Use the tool.", "hello", &[]);
    req.format = ReplyFormat::Tool {
        name: "reply".into(),
        schema,
    };
    let MockReply::ToolCall { input, fault, .. } = model(MockConfig::new()).respond(&req) else {
        panic!("not a tool call");
    };
    assert_eq!(fault, None);
    // The tool schema alone, without the contract's declared rules.
    assert!(selfhelp().schema().is_valid(&input));
}

#[test]
fn replies_are_deterministic_per_seed() {
    let req = request(&system(), "same question", &[]);
    let a = model(MockConfig::new().with_seed(9).with_fault_rate(0.5)).respond(&req);
    let b = model(MockConfig::new().with_seed(9).with_fault_rate(0.5)).respond(&req);
    let c = model(MockConfig::new().with_seed(10).with_fault_rate(0.5)).respond(&req);
    assert_eq!(a, b);
    assert_ne!(a.info().id, "");
    assert_ne!(a, c);
}

#[test]
fn mentions_needs_the_whole_pointer() {
    assert!(mentions(
        "at /content/suggestions/1 (required)",
        "/content/suggestions/1"
    ));
    assert!(mentions(
        "at /content/suggestions/1/text",
        "/content/suggestions/1"
    ));
    assert!(!mentions(
        "at /content/suggestions/10 (required)",
        "/content/suggestions/1"
    ));
    assert!(!mentions("at /content/form", "/content/form/fields/0"));
    assert!(mentions("anything", ""));
}

#[test]
fn malformed_and_empty_requests_still_get_answers() {
    let mock = model(MockConfig::new().with_fault_rate(1.0));
    let empty = MockRequest::new("", vec![]);
    assert_eq!(mock.respond(&empty).info().attempt, 1);
    let mut odd = request(
        "Reply with a single JSON value that meets the contract \"nope",
        "x",
        &[],
    );
    odd.format = ReplyFormat::JsonSchema {
        schema: json!({"type": 12}),
    };
    let _ = mock.respond(&odd);
    odd.format = ReplyFormat::Tool {
        name: "t".into(),
        schema: json!({"type": "integer"}),
    };
    let _ = mock.respond(&odd);
}

fn cards_contract() -> Arc<Contract> {
    Contracts::builtin().unwrap().get("question-cards").unwrap()
}

/// A question-cards request in `mode`, offering the `present_question` tool when `offered`.
fn cards_request(mode: &str, offered: bool, retries: &[(String, String)]) -> MockRequest {
    let contract = cards_contract();
    let context = Context::new().with("mode", mode);
    let mut request = request(
        &contract.instructions(&context),
        "I want an app for my flat",
        retries,
    );
    if offered {
        let tool = bridle_core::cards::present_question_tool();
        request.tools = vec![crate::request::MockTool {
            name: tool["function"]["name"].as_str().unwrap().to_owned(),
            parameters: tool["function"]["parameters"].clone(),
        }];
    }
    request
}

fn calls(reply: &MockReply) -> Vec<bridle_core::ToolCall> {
    match reply {
        MockReply::Text { calls, .. } => calls
            .iter()
            .map(|c| bridle_core::ToolCall::new(c.name.clone(), c.arguments.clone()))
            .collect(),
        other => panic!("not text: {other:?}"),
    }
}

#[test]
fn an_offered_present_question_tool_is_called_in_card_modes_only() {
    let contract = cards_contract();
    let discovery = Context::new().with("mode", "discovery");
    for seed in 0..10 {
        let mock = model(MockConfig::new().with_seed(seed));
        let reply = mock.respond(&cards_request("discovery", true, &[]));
        let made = calls(&reply);
        assert_eq!(made.len(), 1, "seed {seed}");
        assert_eq!(made[0].name, "present_question");
        let checked = contract.check_reply(text(&reply), &made, &discovery);
        assert!(checked.is_valid(), "seed {seed}: {:?}", checked.violations);
        let value = checked.value.unwrap();
        let card = &value["question_cards"][0];
        assert!(card["question_text"].as_str().unwrap().ends_with('?'));
        assert_eq!(card["options"].as_array().unwrap().len(), 3);
        assert_eq!(card["options"][1]["is_default"], true);
        assert!(card["rationale"].is_string());
        // Deterministic.
        let again = model(MockConfig::new().with_seed(seed)).respond(&cards_request(
            "discovery",
            true,
            &[],
        ));
        assert_eq!(again, reply);
    }
    let mock = model(MockConfig::new().with_seed(3));
    // Not offered: the question is written as text.
    assert!(calls(&mock.respond(&cards_request("discovery", false, &[]))).is_empty());
    // Not a card mode: no question at all.
    assert!(calls(&mock.respond(&cards_request("build", true, &[]))).is_empty());
}

#[test]
fn structural_faults_break_the_call_and_naming_them_fixes_it() {
    let contract = cards_contract();
    let discovery = Context::new().with("mode", "discovery");
    for fault in [Fault::MissingRequired, Fault::WrongKey] {
        for seed in 0..6 {
            let mock = faulty(fault, seed);
            let first = mock.respond(&cards_request("discovery", true, &[]));
            assert_eq!(first.fault(), Some(fault), "{fault} seed {seed}");
            let target = first.info().target.clone().unwrap();
            assert!(target.starts_with("/tool_calls/0/arguments"), "{target}");
            let checked = contract.check_reply(text(&first), &calls(&first), &discovery);
            assert!(!checked.is_valid(), "{fault} seed {seed}");
            let good = contract.feedback(&checked);
            assert!(mentions(&good, &target), "{fault}: {target} not in {good}");
            let shown = format!("{}\n\n{}", text(&first), calls(&first)[0].to_text());
            let fixed = mock.respond(&cards_request("discovery", true, &[(shown, good)]));
            let checked = contract.check_reply(text(&fixed), &calls(&fixed), &discovery);
            assert!(
                checked.is_valid(),
                "{fault} seed {seed}: {:?}",
                checked.violations
            );
        }
    }
    // Faults with nothing to break in a call leave it valid.
    let first = faulty(Fault::Fence, 1).respond(&cards_request("discovery", true, &[]));
    assert_eq!(first.fault(), None);
    assert_eq!(calls(&first).len(), 1);
}

#[test]
fn another_loops_validation_report_names_pydantic_locations() {
    let report = "Recall the function correctly, fix the errors\n1 validation error for Reply\nsafety.danger_level\n  Input should be 'warning' [type=literal_error]";
    assert!(mentions(report, "/safety/danger_level"));
    assert!(mentions(report, "/safety"), "something inside the target");
    assert!(mentions(report, ""));
    assert!(!mentions(report, "/safety/danger"));
    assert!(!mentions(report, "/content"));
    // A pointer written in prose is not a location line.
    assert!(!mentions(
        "see safety.danger_level above, validation error",
        "/safety/danger_level"
    ));
}

#[test]
fn a_validation_report_is_feedback_only_after_a_reply() {
    let request = |messages: Vec<MockMessage>| MockRequest::new("m", messages);
    let report = "1 validation error for Reply\nsafety.danger_level\n  Field required";
    let after_reply = request(vec![
        MockMessage::new(Role::User, "I can't sleep."),
        MockMessage::new(Role::Assistant, "{}"),
        MockMessage::new(Role::User, report),
    ]);
    let talk = crate::request::Conversation::read(&after_reply);
    assert_eq!((talk.feedback.len(), talk.user_turns), (1, 1));
    // The same words as a user's own first message are a question, not feedback.
    let first = request(vec![MockMessage::new(Role::User, report)]);
    let talk = crate::request::Conversation::read(&first);
    assert_eq!((talk.feedback.len(), talk.user_turns), (0, 1));
}

#[test]
fn a_validation_report_naming_the_location_fixes_the_fault() {
    let contract = selfhelp();
    let ctx = Context::new();
    for seed in 0..8 {
        let mock = faulty(Fault::MissingRequired, seed);
        let user = "I feel stressed at work.";
        let first = mock.respond(&request(&system(), user, &[]));
        let target = first.info().target.clone().unwrap();
        let location = target.trim_start_matches('/').replace('/', ".");
        let report = |loc: &str| {
            format!(
                "Recall the function correctly, fix the errors\n1 validation error for Reply\n{loc}\n  Field required [type=missing]"
            )
        };
        let fixed = mock.respond(&request(
            &system(),
            user,
            &[(text(&first).into(), report(&location))],
        ));
        assert!(
            contract.check(text(&fixed), &ctx).is_valid(),
            "seed {seed}: {target}"
        );
        let elsewhere = mock.respond(&request(
            &system(),
            user,
            &[(text(&first).into(), report("nowhere.at_all"))],
        ));
        assert_eq!(
            elsewhere.fault(),
            Some(Fault::MissingRequired),
            "seed {seed}"
        );
    }
}

#[test]
fn a_validation_report_on_a_valid_reply_gets_a_fresh_one() {
    // Rules the mock was never told (another loop's own validators): it writes a new reply,
    // as a model trying again would, instead of the same one for ever.
    let mock = model(MockConfig::new().with_seed(3));
    let user = "I feel stressed at work.";
    let first = mock.respond(&request(&system(), user, &[]));
    let report = "1 validation error for Reply\nsafety\n  Value error, a rule it did not know";
    let second = mock.respond(&request(
        &system(),
        user,
        &[(text(&first).into(), report.into())],
    ));
    assert_eq!(second.info().attempt, 2);
    assert_ne!(text(&second), text(&first));
    let checked = selfhelp().check(text(&second), &Context::new());
    assert!(checked.is_valid(), "{:?}", checked.violations);
}

/// The safety object and first text block of the reply to `user` from a mock with `config`.
fn assessed(config: MockConfig, user: &str) -> Value {
    let reply = model(config).respond(&request(&system(), user, &[]));
    let value: Value = serde_json::from_str(text(&reply)).unwrap();
    assert!(selfhelp().validate(&value).is_empty(), "{value}");
    value
}

#[test]
fn ordinary_messages_are_assessed_safe_whatever_the_seed() {
    // The issue's measure: ten turns of "message N" (one was blocked as an emergency).
    for seed in 0..40 {
        let value = assessed(
            MockConfig::new().with_seed(seed),
            &format!("message {seed}"),
        );
        assert_eq!(value["safety"]["danger_level"], Value::Null, "{value}");
        assert_eq!(value["safety"]["is_safe"], true);
        assert_eq!(value["safety"]["detected_concerns"], json!([]));
    }
}

#[test]
fn the_assessment_follows_crisis_and_worry_words() {
    for (user, level) in [
        ("I want to end my life tonight", "emergency"),
        ("Ich will mich verletzen", "critical"),
        ("I'm so anxious before my exams", "warning"),
    ] {
        for seed in 0..5 {
            let value = assessed(MockConfig::new().with_seed(seed), user);
            assert_eq!(value["safety"]["danger_level"], level, "{user}: {value}");
        }
    }
}

#[test]
fn random_safety_draws_every_level_and_the_reply_echoes_the_topic() {
    let mut levels = std::collections::BTreeSet::new();
    for seed in 0..200 {
        let mut config = MockConfig::new().with_seed(seed);
        config.safety = crate::safety::SafetyMode::Random;
        let value = assessed(config, "message");
        levels.insert(value["safety"]["danger_level"].to_string());
    }
    assert_eq!(levels.len(), 4, "{levels:?}");
    let value = assessed(MockConfig::new(), "How can I sleep better before exams?");
    let first = value["content"]["text_blocks"][0]["content"]
        .as_str()
        .unwrap();
    assert!(first.starts_with("On sleep and exams: "), "{first}");
}
