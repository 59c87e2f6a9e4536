//! Property tests of question-card detection: it never panics, whatever the text; every card it
//! returns keeps the spec's limits, meets the schema and survives the trip through the tool form
//! unchanged; a reply without `?` has no cards; a well-formed question with options, in any of
//! the forms, comes back as exactly that card.

use crate::cards::assert_meets_schema;
use bridle_core::cards::{Category, Detection, MAX_LABEL_CHARS, detect, from_tool_call};
use proptest::prelude::*;
use serde_json::json;
use std::collections::HashSet;

const CATEGORIES: [Category; 3] = [
    Category::Discovery,
    Category::Clarification,
    Category::ModeSelection,
];

/// Text made of the pieces detection reacts to, in any order.
fn card_like() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("(A) ".to_owned()),
        Just("(B) ".to_owned()),
        Just("C) ".to_owned()),
        Just("1. ".to_owned()),
        Just("2) ".to_owned()),
        Just("- ".to_owned()),
        Just("**".to_owned()),
        Just("**Question:** ".to_owned()),
        Just("For example:".to_owned()),
        Just(" (recommended)".to_owned()),
        Just(" — ".to_owned()),
        Just(": ".to_owned()),
        Just("? ".to_owned()),
        Just(". ".to_owned()),
        Just("\n".to_owned()),
        Just("\n\n".to_owned()),
        Just("```\n".to_owned()),
        Just("## ".to_owned()),
        Just(", or ".to_owned()),
        "[a-zA-Zé€ ]{0,12}",
        any::<String>(),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

fn check_invariants(text: &str, detection: &Detection) -> Result<(), TestCaseError> {
    let mut question_ids = HashSet::new();
    for card in &detection.cards {
        prop_assert!((2..=6).contains(&card.options.len()), "{card:?}");
        prop_assert!(question_ids.insert(card.question_id.clone()), "repeated id");
        let option_ids: HashSet<&str> = card.options.iter().map(|o| o.id.as_str()).collect();
        prop_assert_eq!(option_ids.len(), card.options.len());
        for option in &card.options {
            prop_assert!(!option.label.is_empty());
            prop_assert!(option.label.chars().count() <= MAX_LABEL_CHARS);
            prop_assert!(
                option
                    .description
                    .as_ref()
                    .is_none_or(|d| d.chars().count() <= 500)
            );
        }
        prop_assert!(card.question_text.contains('?') || card.question_text.ends_with('…'));
        prop_assert!(card.question_text.chars().count() <= 1000);
        prop_assert!(
            card.rationale
                .as_ref()
                .is_none_or(|r| r.chars().count() <= 500)
        );
        prop_assert!(card.max_selections >= 1);
        prop_assert!(card.max_selections as usize <= card.options.len());
        let defaults = card.options.iter().filter(|o| o.is_default).count();
        prop_assert!(card.max_selections > 1 || defaults <= 1);
        prop_assert!(card.allow_free_text);
        // The same card as a present_question call comes back unchanged.
        let arguments = json!({
            "question": card.question_text,
            "rationale": card.rationale,
            "options": card.options.iter().map(|o| json!({
                "label": o.label, "description": o.description, "is_default": o.is_default
            })).collect::<Vec<_>>(),
            "max_selections": card.max_selections,
        });
        let index = card.metadata.as_ref().unwrap()["question_sequence"]
            .as_u64()
            .unwrap()
            - 1;
        let mut again = from_tool_call(&arguments, card.category, "seed", index as usize)
            .map_err(|v| TestCaseError::fail(format!("{v:?} for {arguments}")))?;
        again.metadata.clone_from(&card.metadata);
        prop_assert_eq!(&again, card);
    }
    prop_assert!(detection.message.len() <= text.len());
    if detection.cards.is_empty() {
        prop_assert_eq!(detection.message.as_str(), text.trim());
    }
    assert_meets_schema(detection);
    Ok(())
}

/// A label of plain words (no separators, no `and`/`or`, no markers).
fn words(min: usize, max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec("[b-z]{3,8}", min..=max).prop_map(|w| w.join(" "))
}

/// The marker of option `i` (0-based) in `style`.
fn marker(style: usize, i: usize) -> String {
    let letter = char::from(b'A' + i as u8);
    let n = i + 1;
    match style {
        0 => format!("({letter})"),
        1 => format!("{letter})"),
        2 => format!("{letter}."),
        3 => format!("{n}."),
        4 => format!("{n})"),
        5 => format!("- ({letter})"),
        6 => format!("**{letter})**"),
        _ => format!("* {n}."),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn detect_never_panics_and_keeps_the_limits(text in any::<String>()) {
        for category in CATEGORIES {
            let detection = detect(&text, category, "seed");
            check_invariants(&text, &detection)?;
        }
    }

    #[test]
    fn card_like_text_keeps_the_limits(text in card_like()) {
        let detection = detect(&text, Category::Discovery, "seed");
        check_invariants(&text, &detection)?;
        prop_assert_eq!(&detection, &detect(&text, Category::Discovery, "seed"), "deterministic");
    }

    #[test]
    fn no_question_mark_no_cards(text in card_like().prop_map(|t| t.replace('?', ""))) {
        let detection = detect(&text, Category::Discovery, "seed");
        prop_assert!(detection.cards.is_empty());
        prop_assert_eq!(detection.message, text.trim());
    }

    #[test]
    fn a_well_formed_question_comes_back_as_its_card(
        intro in words(0, 6),
        question in words(1, 12),
        labels in prop::collection::vec(words(1, 5), 2..=6),
        style in 0usize..8,
        blank in any::<bool>(),
        outro in words(0, 6),
    ) {
        let mut text = String::new();
        if !intro.is_empty() {
            text.push_str(&format!("{intro}.\n\n"));
        }
        text.push_str(&format!("{question}?\n"));
        if blank {
            text.push('\n');
        }
        for (i, label) in labels.iter().enumerate() {
            text.push_str(&format!("{} {label}\n", marker(style, i)));
        }
        if !outro.is_empty() {
            text.push_str(&format!("\n{outro}.\n"));
        }
        let detection = detect(&text, Category::Discovery, "seed");
        prop_assert_eq!(detection.cards.len(), 1, "{}", text);
        let card = &detection.cards[0];
        prop_assert_eq!(&card.question_text, &format!("{question}?"));
        let got: Vec<&str> = card.options.iter().map(|o| o.label.as_str()).collect();
        prop_assert_eq!(got, labels.iter().map(String::as_str).collect::<Vec<_>>());
        let kept: Vec<String> = [&intro, &outro]
            .into_iter()
            .filter(|w| !w.is_empty())
            .map(|w| format!("{w}."))
            .collect();
        prop_assert_eq!(detection.message, kept.join("\n\n"));
    }

    #[test]
    fn inline_options_come_back_as_their_card(
        question in words(1, 10),
        labels in prop::collection::vec(words(1, 4), 2..=6),
        inside in any::<bool>(),
    ) {
        let listed: Vec<String> = labels
            .iter()
            .enumerate()
            .map(|(i, l)| format!("({}) {l}", i + 1))
            .collect();
        let text = if inside {
            format!("{question}: {}?", listed.join(", "))
        } else {
            format!("{question}? {}.", listed.join(", "))
        };
        let detection = detect(&text, Category::Clarification, "seed");
        prop_assert_eq!(detection.cards.len(), 1, "{}", text);
        let card = &detection.cards[0];
        prop_assert_eq!(&card.question_text, &format!("{question}?"));
        let got: Vec<&str> = card.options.iter().map(|o| o.label.as_str()).collect();
        prop_assert_eq!(got, labels.iter().map(String::as_str).collect::<Vec<_>>());
        prop_assert_eq!(detection.message, "");
    }

    #[test]
    fn question_ids_are_unique_within_a_reply(
        questions in prop::collection::vec(words(1, 3), 1..6),
    ) {
        // The same question asked several times still gets distinct ids.
        let text: String = questions
            .iter()
            .chain(questions.iter())
            .map(|q| format!("{q}?\n1. yes\n2. no\n\n"))
            .collect();
        let detection = detect(&text, Category::Discovery, "seed");
        prop_assert_eq!(detection.cards.len(), questions.len() * 2);
        let ids: HashSet<&str> = detection.cards.iter().map(|c| c.question_id.as_str()).collect();
        prop_assert_eq!(ids.len(), detection.cards.len());
    }
}
