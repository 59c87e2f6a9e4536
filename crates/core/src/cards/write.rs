//! [`write`]: a `question-cards` value back to the text a model writes — the message, then
//! each card as its rationale, its question and lettered options — which [`super::detect`]
//! reads back to the same cards. Used to send valid replies back as history and by the mock.

use super::QuestionCard;
use serde_json::Value;
use std::fmt::Write as _;

/// The reply text for `value` (`{message, question_cards}`); cards that do not read are left out.
pub fn write(value: &Value) -> String {
    let mut out = value
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim()
        .to_owned();
    let cards = value
        .get("question_cards")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    for card in cards {
        let Ok(card) = serde_json::from_value::<QuestionCard>(card.clone()) else {
            continue;
        };
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        if let Some(rationale) = card.rationale.as_deref().filter(|r| !r.is_empty()) {
            out.push_str(rationale.trim());
            out.push(' ');
        }
        out.push_str(card.question_text.trim());
        out.push_str("\n\n");
        for (i, option) in card.options.iter().enumerate() {
            let letter = char::from(b'A' + u8::try_from(i % 26).unwrap_or(0));
            let _ = write!(out, "({letter}) {}", option.label.trim());
            if let Some(description) = option.description.as_deref().filter(|d| !d.is_empty()) {
                let _ = write!(out, " — {}", description.trim());
            }
            if option.is_default {
                out.push_str(" (recommended)");
            }
            out.push('\n');
        }
        while out.ends_with('\n') {
            out.pop();
        }
    }
    out
}
