//! Feedback quality (issue 33, part 5): one reply per violation kind, through every contract
//! kind, and the retry message each gets. Each message must name what was expected in words a
//! model can act on — the place (a JSON pointer, or line and column for text that does not
//! parse), what was wanted there and a quote of what was found — and the whole set is a
//! snapshot, reviewed when it changes.

use crate::{fixture_dir, selfhelp};
use bridle_core::cards::TOOL_NAME;
use bridle_core::{Context, Contract, Contracts, ToolCall};
use serde_json::json;
use std::fmt::Write as _;
use std::sync::Arc;

/// A schema with one keyword of each kind a model commonly breaks.
fn person() -> Contract {
    Contract::from_schema(
        "person",
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "required": ["name", "age"],
            "additionalProperties": false,
            "properties": {
                "kind": {"const": "person"},
                "name": {"type": "string", "minLength": 2, "maxLength": 12},
                "age": {"type": "integer", "minimum": 0, "maximum": 130},
                "email": {"type": "string", "format": "email"},
                "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{3}$"},
                "mood": {"enum": ["calm", "tense"]},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                          "maxItems": 2, "uniqueItems": true},
                "step": {"type": "number", "multipleOf": 0.5, "exclusiveMinimum": 0},
                "contact": {"oneOf": [
                    {"type": "object", "required": ["phone"], "properties": {"phone": {"type": "string"}}},
                    {"type": "object", "required": ["mail"], "properties": {"mail": {"type": "string"}}}
                ]}
            }
        }),
    )
    .unwrap()
}

fn builtin(name: &str) -> Arc<Contract> {
    Contracts::builtin().unwrap().get(name).unwrap()
}

/// `(label, rule expected among the violations, words the feedback must hold, feedback)`.
type Row = (&'static str, &'static str, Vec<&'static str>, String);

fn rows() -> Vec<Row> {
    let person = person();
    let ctx = Context::new();
    let json = |raw: &str| person.feedback(&person.check(raw, &ctx));
    let mut rows: Vec<Row> = vec![
        (
            "parse: closed early",
            "parse",
            vec!["line 1, column 15", "⟨here⟩", "one JSON document"],
            json(r#"{"name": "Ada"}, "age": 36}"#),
        ),
        (
            "parse: broken inside",
            "parse",
            vec!["line 2, column", "expected", "⟨here⟩"],
            json("{\"name\": \"Ada\",\n  \"age\" 36}"),
        ),
        (
            "ambiguous",
            "ambiguous",
            vec!["line 2, column 1", "exactly one JSON value"],
            json("{\"name\": \"Ada\", \"age\": 36}\n{\"name\": \"Bob\", \"age\": 40}"),
        ),
        (
            "truncated",
            "truncated",
            vec!["/name", "cut off"],
            json(r#"{"age": 36, "name": "Ad"#),
        ),
        (
            "not_json",
            "not_json",
            vec!["JSON"],
            json("I would rather not say."),
        ),
        ("empty", "empty", vec!["empty"], json("  ")),
        (
            "type",
            "type",
            vec!["/age", "integer", "\"36\""],
            json(r#"{"name": "Ada", "age": "36"}"#),
        ),
        (
            "required",
            "required",
            vec!["\"age\""],
            json(r#"{"name": "Ada"}"#),
        ),
        (
            "additionalProperties",
            "additionalProperties",
            vec!["\"nick\""],
            json(r#"{"name": "Ada", "age": 36, "nick": "A"}"#),
        ),
        (
            "const",
            "const",
            vec!["/kind", "\"person\""],
            json(r#"{"kind": "robot", "name": "Ada", "age": 36}"#),
        ),
        (
            "enum",
            "enum",
            vec!["/mood", "\"calm\"", "\"tense\"", "\"angry\""],
            json(r#"{"name": "Ada", "age": 36, "mood": "angry"}"#),
        ),
        (
            "minimum",
            "minimum",
            vec!["/age", "0"],
            json(r#"{"name": "Ada", "age": -1}"#),
        ),
        (
            "maximum",
            "maximum",
            vec!["/age", "130"],
            json(r#"{"name": "Ada", "age": 200}"#),
        ),
        (
            "minLength",
            "minLength",
            vec!["/name", "2"],
            json(r#"{"name": "A", "age": 36}"#),
        ),
        (
            "maxLength",
            "maxLength",
            vec!["/name", "12"],
            json(r#"{"name": "Ada Augusta Byron", "age": 36}"#),
        ),
        (
            "format",
            "format",
            vec!["/email", "email"],
            json(r#"{"name": "Ada", "age": 36, "email": "ada at home"}"#),
        ),
        (
            "pattern",
            "pattern",
            vec!["/code", "^[A-Z]{3}-[0-9]{3}$", "\"ab-12\""],
            json(r#"{"name": "Ada", "age": 36, "code": "ab-12"}"#),
        ),
        (
            "minItems",
            "minItems",
            vec!["/tags", "1"],
            json(r#"{"name": "Ada", "age": 36, "tags": []}"#),
        ),
        (
            "maxItems",
            "maxItems",
            vec!["/tags", "2"],
            json(r#"{"name": "Ada", "age": 36, "tags": ["a", "b", "c"]}"#),
        ),
        (
            "uniqueItems",
            "uniqueItems",
            vec!["/tags"],
            json(r#"{"name": "Ada", "age": 36, "tags": ["a", "a"]}"#),
        ),
        (
            "multipleOf",
            "multipleOf",
            vec!["/step", "multiple of 0.5", "0.7"],
            json(r#"{"name": "Ada", "age": 36, "step": 0.7}"#),
        ),
        (
            "exclusiveMinimum",
            "exclusiveMinimum",
            vec!["/step", "0"],
            json(r#"{"name": "Ada", "age": 36, "step": 0}"#),
        ),
        (
            "oneOf",
            "oneOf",
            vec!["/contact"],
            json(r#"{"name": "Ada", "age": 36, "contact": {"fax": "1"}}"#),
        ),
    ];
    // The declared rules of the built-in selfhelp contract.
    let selfhelp = selfhelp();
    for (label, file, rule, words) in [
        (
            "rule unique",
            "duplicate_field_ids",
            "unique",
            vec!["unique"],
        ),
        (
            "rule less_than",
            "scale_min_greater_than_max",
            "less_than",
            vec!["min", "max"],
        ),
        (
            "rule implies",
            "critical_but_is_safe",
            "implies",
            vec!["is_safe"],
        ),
    ] {
        let raw =
            std::fs::read_to_string(fixture_dir("selfhelp/rules").join(format!("{file}.json")))
                .unwrap();
        rows.push((
            label,
            rule,
            words,
            selfhelp.feedback(&selfhelp.check(&raw, &ctx)),
        ));
    }
    // XML.
    let topic = builtin("topic-analysis");
    let xml = |raw: &str| topic.feedback(&topic.check(raw, &ctx));
    let good = std::fs::read_to_string(
        fixture_dir("../../../../contracts/topic-analysis").join("example.xml"),
    )
    .unwrap();
    rows.extend([
        (
            "not_xml",
            "not_xml",
            vec!["<llmResponse>"],
            xml("Sleep is important."),
        ),
        (
            "xml_syntax",
            "xml_syntax",
            vec!["line 2, column", "</response>", "⟨here⟩"],
            xml(&good.replace("</response>", "</respons>")),
        ),
        (
            "another root element",
            "not_xml",
            vec!["<llmResponse>"],
            xml("<answer><response>Hi</response></answer>"),
        ),
        (
            "xml truncated",
            "truncated",
            vec!["cut off"],
            xml(&good[..good.find("screen-free").unwrap()]),
        ),
        (
            "xml schema",
            "type",
            vec!["confidence"],
            xml(&good.replace("confidence=\"0.92\"", "confidence=\"high\"")),
        ),
    ]);
    // Markers.
    let table = builtin("table-chat");
    let page = Context::new().with("page", "table_view");
    let markers = |raw: &str| table.feedback(&table.check(raw, &page));
    rows.extend([
        ("marker_json", "marker_json", vec!["DATA_PROPOSAL", "JSON"],
         markers("Adding one.\nDATA_PROPOSAL: {operations: add}")),
        ("payload_unavailable", "payload_unavailable", vec!["DATA_PROPOSAL"],
         table.feedback(&table.check(
             "Adding rows.\nDATA_PROPOSAL: {\"operations\": [{\"action\": \"delete\", \"row_id\": 3}]}",
             &Context::new().with("page", "tables_list")))),
        ("unknown_action", "unknown_action", vec!["launch_rocket", "close_chat", "given \"client\""],
         markers("Done.\nSUGGESTED_ACTIONS: [{\"label\": \"Go\", \"action\": \"launch_rocket\"}]")),
        ("payload schema", "required", vec!["/payload/data"],
         markers("Deleting.\nDATA_PROPOSAL: {\"operations\": [{\"action\": \"delete\"}]}")),
    ]);
    // Question cards: a tool call with bad arguments, and a tool that was not offered.
    let cards = builtin("question-cards");
    let discovery = Context::new()
        .with("mode", "discovery")
        .with("turn_id", "t-1");
    let call = |name: &str, args| ToolCall::new(name, args);
    rows.extend([
        (
            "card arguments",
            "required",
            vec![TOOL_NAME, "question"],
            cards.feedback(&cards.check_reply(
                "Let me ask.",
                &[call(
                    TOOL_NAME,
                    json!({"options": [{"label": "A"}, {"label": "B"}]}),
                )],
                &discovery,
            )),
        ),
        (
            "unknown_tool",
            "unknown_tool",
            vec!["delete_everything"],
            cards.feedback(&cards.check_reply(
                "Let me ask.",
                &[call("delete_everything", json!({}))],
                &discovery,
            )),
        ),
    ]);
    rows
}

#[test]
fn every_violation_kind_gets_feedback_that_names_what_was_expected() {
    let mut all = String::new();
    let mut missing = Vec::new();
    for (label, rule, words, feedback) in rows() {
        if !feedback.contains(&format!("({rule}): ")) {
            missing.push(format!("{label}: no {rule} violation"));
        }
        for word in words {
            if !feedback.contains(word) {
                missing.push(format!("{label}: {word:?} not named"));
            }
        }
        let _ = writeln!(all, "==== {label}\n{feedback}\n");
    }
    assert!(missing.is_empty(), "{missing:#?}\n{all}");
    insta::assert_snapshot!(all);
}
