//! [`Violation`] and [`Repair`]: what a check reports about a reply, as data.
//!
//! A violation says where a reply breaks its contract (a JSON pointer into the value), which rule
//! it breaks and, in words, how. A repair says what Bridle changed in the raw text (or, for a
//! declared coercion, in the parsed value) so that it could be read at all. Both serialise to the
//! small objects the CLI prints and the store keeps.

use serde::{Deserialize, Serialize};

/// One way a reply breaks its contract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// JSON pointer into the value (`""` is the whole reply, `/content/suggestions/0` one item).
    pub path: String,
    /// Short rule name: a JSON Schema keyword (`required`, `enum`, …), a declared rule's kind
    /// (`unique`, `less_than`, `implies`), or a parse-stage rule (`parse`, `truncated`, `ambiguous`, `not_json`, `empty`).
    pub rule: String,
    /// What is wrong, in words a model (and a person) can act on.
    pub message: String,
    /// A short quote of the offending fragment (the value found, or the raw text around a parse
    /// error). Used by the retry feedback; not part of the printed report.
    #[serde(skip)]
    pub found: Option<String>,
}

impl Violation {
    /// A violation without a quoted fragment.
    pub fn new(
        path: impl Into<String>,
        rule: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            path: path.into(),
            rule: rule.into(),
            message: message.into(),
            found: None,
        }
    }

    /// Attaches the quoted fragment that the feedback shows the model.
    #[must_use]
    pub fn with_found(mut self, found: impl Into<String>) -> Self {
        self.found = Some(found.into());
        self
    }
}

/// One named change Bridle made so that a reply could be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repair {
    /// Repair kind: `code_fence`, `surrounding_prose`, `trailing_comma`, `comment`,
    /// `python_literal`, `single_quote`, `smart_quote`, `raw_newline`, `missing_comma`,
    /// `unclosed_bracket`, …, or a declared coercion's kind (`wrap_string`, `rename_key`).
    pub kind: String,
    /// Where the change was made, for changes to the parsed value (coercions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// How many times this kind of change was made.
    pub count: u32,
    /// What was changed, in words.
    pub message: String,
}

impl Repair {
    /// A repair of the raw text, applied `count` times.
    pub fn text(kind: impl Into<String>, count: u32, message: impl Into<String>) -> Self {
        Self {
            kind: kind.into(),
            path: None,
            count,
            message: message.into(),
        }
    }

    /// A change to the parsed value at `path` (a declared coercion).
    pub fn at(
        kind: impl Into<String>,
        path: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            kind: kind.into(),
            path: Some(path.into()),
            count: 1,
            message: message.into(),
        }
    }
}
