//! Question cards (spec/04): a [`QuestionCard`] is a question with 2–6 selectable options that a
//! client shows as buttons (plus a free-text box) instead of plain text.
//!
//! Two ways lead to a card. [`detect()`] reads a finished reply and turns the question+options
//! patterns models write — lettered `(A)` / `A)` / `A.`, numbered `1.` / `1)`, inline
//! "… (A) x, (B) y, or (C) z", and a `**Question:**` header — into cards, returning the rest of
//! the reply as [`Detection::message`]. The structured way is the [`present_question_tool`] the
//! model may call; [`from_tool_call`] turns its arguments into a card. Both go through the same
//! normalisation (label/description split, default markers, length limits, ids). Cards belong to
//! the discovery, clarification and mode-selection modes only: callers gate on
//! [`Category::from_mode`].

mod build;
mod detect;
mod doc;
mod inline;
pub(crate) mod lines;
mod normalise;
mod sentences;
mod tool;
mod write;

pub use detect::detect;
pub(crate) use detect::spans;
pub use tool::{TOOL_NAME, from_tool_call, present_question_tool};
pub use write::write;

use serde::{Deserialize, Serialize};

/// Fewest options a card has.
pub const MIN_OPTIONS: usize = 2;
/// Most options a card has.
pub const MAX_OPTIONS: usize = 6;
/// Longest option label, in characters (longer ones are cut and end with `…`).
pub const MAX_LABEL_CHARS: usize = 200;
/// Longest option description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 500;
/// Longest question text, in characters.
pub const MAX_QUESTION_CHARS: usize = 1000;
/// Longest rationale, in characters.
pub const MAX_RATIONALE_CHARS: usize = 500;
/// The placeholder of every card's free-text input.
pub const FREE_TEXT_PLACEHOLDER: &str = "Or type your own answer...";

/// Why a question is asked: `discovery`, `clarification` or `mode_selection`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Finding out what the user wants (discovery mode).
    Discovery,
    /// Resolving an ambiguity in what the user said (clarification mode).
    Clarification,
    /// Choosing how the conversation continues.
    ModeSelection,
}

impl Category {
    /// The category for a conversation mode: `Some` only for `"discovery"`,
    /// `"clarification"` and `"mode_selection"` (an application asking the user how the
    /// conversation goes on); case-insensitive, surrounding whitespace ignored. Cards are only
    /// produced in those modes.
    pub fn from_mode(mode: &str) -> Option<Category> {
        let mode = mode.trim();
        [
            Category::Discovery,
            Category::Clarification,
            Category::ModeSelection,
        ]
        .into_iter()
        .find(|category| mode.eq_ignore_ascii_case(category.as_str()))
    }

    /// The serialised name (`discovery`, `clarification`, `mode_selection`).
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Discovery => "discovery",
            Category::Clarification => "clarification",
            Category::ModeSelection => "mode_selection",
        }
    }
}

/// One selectable answer of a card.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionOption {
    /// `opt_1`, `opt_2`, … in the order the options were written.
    pub id: String,
    /// The button text (at most [`MAX_LABEL_CHARS`] characters).
    pub label: String,
    /// A subtitle or tooltip (at most [`MAX_DESCRIPTION_CHARS`] characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The suggested option (marked `(recommended)` / `(default)` in text).
    #[serde(default)]
    pub is_default: bool,
}

/// A question with options, as the `question_card` event carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionCard {
    /// `q_` and 16 hex digits, deterministic for (seed, card index, question text).
    pub question_id: String,
    /// The question (at most [`MAX_QUESTION_CHARS`] characters).
    pub question_text: String,
    /// Why the question matters (at most [`MAX_RATIONALE_CHARS`] characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rationale: Option<String>,
    /// The conversation mode the card belongs to.
    pub category: Category,
    /// 2–6 options.
    pub options: Vec<QuestionOption>,
    /// Whether the client shows a free-text input (always true).
    pub allow_free_text: bool,
    /// The free-text input's placeholder.
    #[serde(default)]
    pub free_text_placeholder: Option<String>,
    /// How many options may be selected: 1 (single choice) up to the number of options.
    #[serde(default = "one")]
    pub max_selections: u32,
    /// Tracking data: `question_sequence` (1-based), `option_style` (`lettered`, `numbered`,
    /// `inline`, `header` or `tool`) and `phase` (the card's category: the mode it was asked in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Value>,
}

fn one() -> u32 {
    1
}

/// A reply split into what stays text and the cards found in it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Detection {
    /// The reply without the cards' questions, rationales, lead-ins and options (trimmed; blank
    /// line runs collapsed). Without cards: the reply, trimmed.
    pub message: String,
    /// The cards, in the order they appear.
    pub cards: Vec<QuestionCard>,
}
