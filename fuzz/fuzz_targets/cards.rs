//! Fuzz target: question-card detection on arbitrary UTF-8, in every category. Never panics;
//! every card keeps the spec's limits (2–6 options with distinct ids, labels ≤ 200 characters,
//! one default in a single choice); ids are distinct; text without `?` has no cards; the same
//! input gives the same result; a tool call rebuilt from a card gives the same card back.

#![no_main]

use bridle_core::cards::{Category, MAX_LABEL_CHARS, detect, from_tool_call};
use libfuzzer_sys::fuzz_target;
use serde_json::json;
use std::collections::HashSet;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for category in [
        Category::Discovery,
        Category::Clarification,
        Category::ModeSelection,
    ] {
        let detection = detect(text, category, "fuzz");
        assert_eq!(detection, detect(text, category, "fuzz"), "deterministic");
        assert!(detection.message.len() <= text.len());
        if !text.contains('?') {
            assert!(detection.cards.is_empty());
        }
        if detection.cards.is_empty() {
            assert_eq!(detection.message, text.trim());
        }
        let mut question_ids = HashSet::new();
        for (index, card) in detection.cards.iter().enumerate() {
            assert!(
                question_ids.insert(card.question_id.as_str()),
                "question ids repeat"
            );
            assert!((2..=6).contains(&card.options.len()));
            assert_eq!(card.category, category);
            let option_ids: HashSet<&str> = card.options.iter().map(|o| o.id.as_str()).collect();
            assert_eq!(option_ids.len(), card.options.len());
            for option in &card.options {
                assert!(!option.label.is_empty());
                assert!(option.label.chars().count() <= MAX_LABEL_CHARS);
                assert!(
                    option
                        .description
                        .as_ref()
                        .is_none_or(|d| d.chars().count() <= 500)
                );
            }
            assert!(card.question_text.chars().count() <= 1000);
            assert!(
                card.rationale
                    .as_ref()
                    .is_none_or(|r| r.chars().count() <= 500)
            );
            assert!((1..=card.options.len() as u32).contains(&card.max_selections));
            let defaults = card.options.iter().filter(|o| o.is_default).count();
            assert!(card.max_selections > 1 || defaults <= 1);

            // The same card through the tool form.
            let arguments = json!({
                "question": card.question_text,
                "rationale": card.rationale,
                "options": card.options.iter().map(|o| json!({
                    "label": o.label, "description": o.description, "is_default": o.is_default
                })).collect::<Vec<_>>(),
                "max_selections": card.max_selections,
            });
            let mut again = from_tool_call(&arguments, category, "fuzz", index)
                .expect("a detected card is a valid tool call");
            again.metadata.clone_from(&card.metadata);
            assert_eq!(&again, card, "the tool form keeps a detected card as it is");
        }
    }
});
