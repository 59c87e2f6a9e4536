//! [`Draft`]: a card's parts as found (in text or in a tool call) before they become a
//! [`QuestionCard`] — where the limits, option ids, the single default of a single-choice card,
//! `max_selections`, metadata and the deterministic question id are settled.

use super::normalise::{Choice, plain, selection_limit, truncate};
use super::{
    Category, FREE_TEXT_PLACEHOLDER, MAX_OPTIONS, MAX_QUESTION_CHARS, MAX_RATIONALE_CHARS,
    QuestionCard, QuestionOption,
};
use serde_json::json;
use sha2::{Digest, Sha256};

/// A card before ids and limits.
#[derive(Debug, Clone)]
pub(super) struct Draft {
    pub question: String,
    pub rationale: Option<String>,
    pub options: Vec<Choice>,
    /// Set by the tool form; detection leaves it to the phrases in `hints`.
    pub max_selections: Option<u32>,
    /// Text that may say how many options to pick (question, lead-in, rationale).
    pub hints: String,
    /// `lettered`, `numbered`, `inline`, `header` or `tool`.
    pub style: &'static str,
}

impl Draft {
    /// The card, as the `index`-th (0-based) of its reply.
    pub fn into_card(self, category: Category, seed: &str, index: usize) -> QuestionCard {
        let question = truncate(plain(&self.question), MAX_QUESTION_CHARS);
        let rationale = self
            .rationale
            .map(|r| truncate(plain(&r), MAX_RATIONALE_CHARS))
            .filter(|r| !r.is_empty());
        let count = u32::try_from(self.options.len().clamp(1, MAX_OPTIONS)).unwrap_or(1);
        let max_selections = self
            .max_selections
            .or_else(|| selection_limit(&self.hints, self.options.len()))
            .unwrap_or(1)
            .clamp(1, count);
        let mut default_seen = false;
        let options = self
            .options
            .into_iter()
            .enumerate()
            .map(|(i, choice)| {
                let is_default = choice.is_default && (max_selections > 1 || !default_seen);
                default_seen |= is_default;
                QuestionOption {
                    id: format!("opt_{}", i + 1),
                    label: choice.label,
                    description: choice.description,
                    is_default,
                }
            })
            .collect();
        QuestionCard {
            question_id: question_id(seed, index, &question),
            question_text: question,
            rationale,
            category,
            options,
            allow_free_text: true,
            free_text_placeholder: Some(FREE_TEXT_PLACEHOLDER.to_owned()),
            max_selections,
            metadata: Some(json!({
                "question_sequence": index + 1,
                "option_style": self.style,
                "phase": category,
            })),
        }
    }
}

/// `q_` and the first 16 hex digits of SHA-256 over the seed, the card index and the question.
pub(super) fn question_id(seed: &str, index: usize, question: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::new()
        .chain_update(seed.as_bytes())
        .chain_update([0])
        .chain_update((index as u64).to_le_bytes())
        .chain_update(question.as_bytes())
        .finalize();
    let mut id = String::with_capacity(18);
    id.push_str("q_");
    for byte in digest.iter().take(8) {
        id.push(char::from(HEX[usize::from(byte >> 4)]));
        id.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice(label: &str, is_default: bool) -> Choice {
        Choice {
            label: label.into(),
            description: None,
            is_default,
        }
    }

    fn draft(options: Vec<Choice>, hints: &str) -> Draft {
        Draft {
            question: "Which?".into(),
            rationale: Some("  ".into()),
            options,
            max_selections: None,
            hints: hints.into(),
            style: "lettered",
        }
    }

    #[test]
    fn ids_are_deterministic_and_distinct() {
        let a = question_id("conv-1:3", 0, "Which?");
        assert_eq!(a, question_id("conv-1:3", 0, "Which?"));
        assert_eq!(a.len(), 18);
        assert!(a.starts_with("q_"));
        assert!(a[2..].chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, question_id("conv-1:3", 1, "Which?"));
        assert_ne!(a, question_id("conv-1:4", 0, "Which?"));
        assert_ne!(a, question_id("conv-1:3", 0, "Which one?"));
    }

    #[test]
    fn one_default_for_a_single_choice() {
        let card = draft(vec![choice("a", true), choice("b", true)], "").into_card(
            Category::Discovery,
            "s",
            0,
        );
        let defaults: Vec<bool> = card.options.iter().map(|o| o.is_default).collect();
        assert_eq!(defaults, [true, false]);
        assert_eq!(card.max_selections, 1);
        assert_eq!(card.rationale, None, "blank rationale dropped");
        assert_eq!(card.options[1].id, "opt_2");
        let card = draft(
            vec![choice("a", true), choice("b", true)],
            "select all that apply",
        )
        .into_card(Category::Discovery, "s", 0);
        assert_eq!(card.max_selections, 2);
        assert!(card.options.iter().all(|o| o.is_default));
    }
}
