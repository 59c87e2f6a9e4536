//! Streaming `markers` and `text` replies through [`StreamCheck`]: markers stripped live and
//! question-card text held back. Every test checks one property: whatever the reply and however
//! it is split into deltas, the emitted text equals the final value's `message` (whitespace
//! aside) — and at every step the text emitted so far begins that message, so nothing that is
//! not in it (a marker, its JSON, a card's question or options) is ever sent. The sections
//! emitted equal the final value's `suggested_values` / `suggested_actions` / `payload`.

use crate::fixture_dir;
use bridle_core::{Context, Contract, Contracts, Emit, StreamCheck};
use proptest::prelude::*;
use serde_json::{Value, json};
use std::fs;
use std::sync::Arc;

fn contract(name: &str) -> Arc<Contract> {
    Contracts::builtin().unwrap().get(name).unwrap()
}

fn table_view() -> Context {
    Context::new().with("page", "table_view")
}

fn discovery() -> Context {
    Context::new().with("mode", "discovery")
}

/// Whitespace runs collapsed, ends trimmed.
fn normalise(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What streaming `pieces` produced.
struct Streamed {
    text: String,
    sections: Vec<Emit>,
    /// Text emitted by `finish` alone.
    finished: String,
}

/// Streams `pieces`, asserting after every delta that the text so far begins the final
/// message.
fn stream(contract: &Contract, context: &Context, pieces: &[&str]) -> Streamed {
    let raw = pieces.concat();
    let checked = contract.check(&raw, context);
    let message = checked
        .value
        .as_ref()
        .and_then(|v| v["message"].as_str())
        .map(normalise);
    let mut check = StreamCheck::new(contract, context);
    let mut out = Streamed {
        text: String::new(),
        sections: Vec::new(),
        finished: String::new(),
    };
    let mut events = Vec::new();
    for piece in pieces {
        check.push(piece, &mut events).unwrap();
        for event in events.drain(..) {
            match event {
                Emit::Text(t) => out.text.push_str(&t),
                other => out.sections.push(other),
            }
        }
        if let Some(message) = &message {
            let so_far = normalise(&out.text);
            assert!(
                message.starts_with(&so_far),
                "{raw:?} split {pieces:?}: sent {so_far:?}, message {message:?}"
            );
        }
    }
    check.finish(&checked, &mut events);
    for event in events {
        match event {
            Emit::Text(t) => {
                out.finished.push_str(&t);
                out.text.push_str(&t);
            }
            other => out.sections.push(other),
        }
    }
    out
}

/// `raw` in two deltas cut at every char boundary, and one char per delta.
fn splits(raw: &str) -> Vec<Vec<&str>> {
    let mut out = vec![vec![raw]];
    for (at, _) in raw.char_indices().skip(1) {
        out.push(vec![&raw[..at], &raw[at..]]);
    }
    out.push(
        raw.char_indices()
            .map(|(i, c)| &raw[i..i + c.len_utf8()])
            .collect(),
    );
    out
}

/// `raw` cut at the char boundaries picked by `cuts` (taken modulo the boundary count).
fn cut<'a>(raw: &'a str, cuts: &[usize]) -> Vec<&'a str> {
    let bounds: Vec<usize> = raw.char_indices().map(|(i, _)| i).collect();
    let mut at: Vec<usize> = cuts
        .iter()
        .filter_map(|c| bounds.get(c % bounds.len().max(1)).copied())
        .collect();
    at.sort_unstable();
    at.dedup();
    let mut pieces = Vec::new();
    let mut from = 0;
    for a in at {
        pieces.push(&raw[from..a]);
        from = a;
    }
    pieces.push(&raw[from..]);
    pieces
}

/// The sections the final value has, as the stream emits them.
fn sections_of(value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if !value["payload"].is_null() {
        out.push(format!("{:?}", Emit::Payload(value["payload"].clone())));
    }
    for key in ["suggested_values", "suggested_actions"] {
        if !value[key].is_null() {
            out.push(format!(
                "{:?}",
                Emit::Suggestions(json!({ key: value[key] }))
            ));
        }
    }
    out.sort();
    out
}

fn sorted(events: &[Emit]) -> Vec<String> {
    let mut out: Vec<String> = events.iter().map(|e| format!("{e:?}")).collect();
    out.sort();
    out
}

/// Streams `raw` split every way, asserting the text is the message, the sections are the
/// value's, and none of `never` (marker text, JSON) is ever emitted.
fn assert_markers_stream(raw: &str, never: &[&str]) {
    let contract = contract("table-chat");
    let context = table_view();
    let checked = contract.check(raw, &context);
    assert!(checked.is_valid(), "{raw:?}: {:?}", checked.violations);
    let value = checked.value.unwrap();
    let message = normalise(value["message"].as_str().unwrap());
    for pieces in splits(raw) {
        let got = stream(&contract, &context, &pieces);
        assert_eq!(normalise(&got.text), message, "{raw:?} split {pieces:?}");
        assert_eq!(
            sorted(&got.sections),
            sections_of(&value),
            "{raw:?} split {pieces:?}"
        );
        for bad in never {
            assert!(
                !got.text.contains(bad),
                "{bad:?} sent for {raw:?} split {pieces:?}"
            );
        }
    }
}

#[test]
fn markers_split_at_every_position() {
    let values = "[{\"label\": \"Add rows\", \"value\": \"add rows\"}, \"plain\"]";
    let actions = "[{\"label\": \"Filters\", \"action\": \"open_filters\"}]";
    let payload = "{\"operations\": [{\"action\": \"update\", \"row_id\": 5, \"changes\": {\"Note\": \"a } ] \\\" {\"}}]}";
    let cases = [
        format!("Here you go.\nSUGGESTED_VALUES: {values}"),
        format!("Here you go.\n**SUGGESTED_VALUES:** {values}\nAnything else?"),
        format!("Here you go.\n**SUGGESTED_ACTIONS**: {actions}"),
        format!("Here you go.\n## SUGGESTED_VALUES:\n{values}"),
        format!("Here you go.\nSUGGESTED_VALUES:\n```json\n{values}\n```\nBye."),
        format!("Here you go.\n```\nSUGGESTED_VALUES: {values}\n```\nBye."),
        format!("Here you go.\nSUGGESTED_VALUES:\n{values}\nSUGGESTED_ACTIONS:\n{actions}"),
        format!("Proposed change:\nDATA_PROPOSAL: {payload}\nApply it when it looks right."),
        "Voilà — ✓ é 🎉 **SUGGESTED_VALUES:** [\"é 🎉\"] ✓ fin 🎉".to_owned(),
    ];
    for raw in &cases {
        assert_markers_stream(
            raw,
            &["SUGGESTED", "DATA_PROPOSAL", "label", "operations", "```"],
        );
    }
}

#[test]
fn markers_fixtures_split_at_every_position() {
    for (name, page) in [
        ("data_rows.txt", "table_view"),
        ("suggestions_mixed.txt", "table_view"),
        ("update_with_fence.txt", "table_edit"),
    ] {
        let raw = fs::read_to_string(fixture_dir("markers").join(name)).unwrap();
        let contract = contract("table-chat");
        let context = Context::new().with("page", page);
        let value = contract.check(&raw, &context).value.unwrap();
        let message = normalise(value["message"].as_str().unwrap());
        for pieces in splits(&raw) {
            let got = stream(&contract, &context, &pieces);
            assert_eq!(normalise(&got.text), message, "{name} split {pieces:?}");
            assert_eq!(sorted(&got.sections), sections_of(&value), "{name}");
        }
    }
}

#[test]
fn text_that_only_looks_like_a_marker_is_released() {
    let contract = contract("table-chat");
    for raw in [
        "Not markers: SUGGESTED_VALUESX: [1] and MY_SUGGESTED_VALUES: [2].",
        "The SUGGESTED_VALUES list is empty today",
        "Ends with a name SUGGESTED_VALUES",
        "Ends with stars and hashes **\n##",
        "Ends inside a fence line\n```py",
    ] {
        let message = normalise(
            contract.check(raw, &table_view()).value.unwrap()["message"]
                .as_str()
                .unwrap(),
        );
        assert_eq!(message, normalise(raw), "the complete check keeps it all");
        for pieces in splits(raw) {
            let got = stream(&contract, &table_view(), &pieces);
            assert_eq!(normalise(&got.text), message, "{raw:?} split {pieces:?}");
            assert!(got.sections.is_empty());
        }
    }
}

#[test]
fn a_truncated_section_sends_nothing_of_itself() {
    let contract = contract("table-chat");
    for raw in [
        "Almost done.\nSUGGESTED_VALUES: [{\"label\": \"A\", \"value\": \"a\"}, {\"label\": \"B",
        "Almost done.\nDATA_PROPOSAL:\n```json\n{\"operations\": [",
        "Almost done.\nSUGGESTED_VALUES: ```json",
    ] {
        let checked = contract.check(raw, &table_view());
        assert!(!checked.is_valid(), "{raw:?} is cut off");
        for pieces in splits(raw) {
            let got = stream(&contract, &table_view(), &pieces);
            assert_eq!(
                normalise(&got.text),
                "Almost done.",
                "{raw:?} split {pieces:?}"
            );
            assert!(got.finished.trim().is_empty(), "{:?}", got.finished);
            assert!(got.sections.is_empty(), "{:?}", got.sections);
        }
    }
}

fn card_fixtures() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = fs::read_dir(fixture_dir("cards"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, fs::read_to_string(&p).unwrap())
        })
        .collect();
    out.sort();
    out
}

fn assert_cards_stream(name: &str, raw: &str, pieces: &[&str]) {
    let contract = contract("question-cards");
    let value = contract.check(raw, &discovery()).value.unwrap();
    let got = stream(&contract, &discovery(), pieces);
    assert_eq!(
        normalise(&got.text),
        normalise(value["message"].as_str().unwrap()),
        "{name} split {pieces:?}"
    );
    assert!(got.sections.is_empty());
    for card in value["question_cards"].as_array().unwrap() {
        for option in card["options"].as_array().unwrap() {
            let label = option["label"].as_str().unwrap();
            if !value["message"].as_str().unwrap().contains(label) {
                assert!(!got.text.contains(label), "{name}: option {label:?} sent");
            }
        }
    }
}

#[test]
fn card_fixtures_split_in_two_everywhere_and_char_by_char() {
    let fixtures = card_fixtures();
    assert!(fixtures.len() >= 20);
    for (name, raw) in &fixtures {
        for pieces in splits(raw) {
            assert_cards_stream(name, raw, &pieces);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn card_fixtures_under_random_splits(cuts in prop::collection::vec(0usize..4000, 0..24)) {
        for (name, raw) in card_fixtures() {
            assert_cards_stream(&name, &raw, &cut(&raw, &cuts));
        }
    }

    #[test]
    fn marker_fixtures_under_random_splits(cuts in prop::collection::vec(0usize..4000, 0..24)) {
        let contract = contract("table-chat");
        for name in ["data_rows.txt", "suggestions_mixed.txt"] {
            let raw = fs::read_to_string(fixture_dir("markers").join(name)).unwrap();
            let value = contract.check(&raw, &table_view()).value.unwrap();
            let got = stream(&contract, &table_view(), &cut(&raw, &cuts));
            prop_assert_eq!(normalise(&got.text), normalise(value["message"].as_str().unwrap()));
            prop_assert_eq!(sorted(&got.sections), sections_of(&value));
        }
    }
}

#[test]
fn a_question_without_options_is_released_by_finish() {
    let contract = contract("question-cards");
    let raw = "Intro.\n\nWhat do you think? I am curious.";
    let mut check = StreamCheck::new(&contract, &discovery());
    let mut events = Vec::new();
    check.push(raw, &mut events).unwrap();
    assert_eq!(events, [Emit::Text("Intro.".into())]);
    let checked = contract.check(raw, &discovery());
    events.clear();
    check.finish(&checked, &mut events);
    assert_eq!(
        events,
        [Emit::Text("\n\nWhat do you think? I am curious.".into())]
    );
    for pieces in splits(raw) {
        let got = stream(&contract, &discovery(), &pieces);
        assert_eq!(normalise(&got.text), normalise(raw));
    }
}

#[test]
fn cards_are_held_back_but_the_text_around_them_is_not_lost() {
    let contract = contract("question-cards");
    let raw = fs::read_to_string(fixture_dir("cards").join("several_questions.txt")).unwrap();
    let value = contract.check(&raw, &discovery()).value.unwrap();
    assert_eq!(value["question_cards"].as_array().unwrap().len(), 3);
    let lines: Vec<&str> = raw.split_inclusive('\n').collect();
    let got = stream(&contract, &discovery(), &lines);
    assert_eq!(
        normalise(&got.text),
        normalise(value["message"].as_str().unwrap())
    );
    for never in [
        "How many members",
        "Fewer than 5",
        "Online",
        "every two weeks",
    ] {
        assert!(!got.text.contains(never), "{never:?} sent");
    }
}
