//! [`Violation`] and [`Repair`]: what a check reports about a reply, as data.
//!
//! A violation says where a reply breaks its contract (a JSON pointer into the value), which rule
//! it breaks and, in words, how. A repair says what Bridle changed in the raw text (or, for a
//! declared coercion, in the parsed value) so that it could be read at all. Both serialise to the
//! small objects the CLI prints and the store keeps; the rule and the kind are enums
//! ([`Rule`], [`RepairKind`]) that serialise to their names.

use crate::repair_kind::RepairKind;
use crate::rule::Rule;
use serde::{Deserialize, Serialize};

/// One way a reply breaks its contract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// JSON pointer into the value (`""` is the whole reply, `/content/suggestions/0` one item).
    pub path: String,
    /// The rule broken, serialised as its short name: a JSON Schema keyword (`required`,
    /// `enum`, …), a declared rule's kind (`unique`, `less_than`, `implies`), or a parse-stage
    /// rule (`parse`, `truncated`, `ambiguous`, `not_json`, `empty`, …).
    pub rule: Rule,
    /// What is wrong, in words a model (and a person) can act on.
    pub message: String,
    /// A short quote of the offending fragment (the value found, or the raw text around a parse
    /// error). Used by the retry feedback; not part of the printed report.
    #[serde(skip)]
    pub found: Option<String>,
}

impl Violation {
    /// A violation without a quoted fragment.
    pub fn new(path: impl Into<String>, rule: Rule, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            rule,
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
    /// Repair kind, serialised as its name: `code_fence`, `surrounding_prose`, `trailing_comma`,
    /// `comment`, `python_literal`, `single_quote`, `smart_quote`, `raw_newline`,
    /// `missing_comma`, `unclosed_bracket`, …, or a declared coercion's kind (`wrap_string`,
    /// `rename_key`).
    pub kind: RepairKind,
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
    pub fn text(kind: RepairKind, count: u32, message: impl Into<String>) -> Self {
        Self {
            kind,
            path: None,
            count,
            message: message.into(),
        }
    }

    /// A change to the parsed value at `path` (a declared coercion).
    pub fn at(kind: RepairKind, path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            kind,
            path: Some(path.into()),
            count: 1,
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rule::SchemaKeyword;

    #[test]
    fn reports_serialise_as_before() {
        let violation = Violation::new("/a", Rule::Schema(SchemaKeyword::Enum), "a is wrong")
            .with_found("\"x\"");
        let text = serde_json::to_string(&violation).unwrap();
        assert_eq!(
            text,
            r#"{"path":"/a","rule":"enum","message":"a is wrong"}"#
        );
        let read: Violation = serde_json::from_str(&text).unwrap();
        assert_eq!(
            read,
            Violation {
                found: None,
                ..violation
            }
        );
        let repairs = [
            Repair::text(RepairKind::TrailingComma, 2, "removed 2 trailing commas"),
            Repair::at(RepairKind::WrapString, "/s/0", "wrapped"),
        ];
        let text = serde_json::to_string(&repairs).unwrap();
        assert_eq!(
            text,
            r#"[{"kind":"trailing_comma","count":2,"message":"removed 2 trailing commas"},{"kind":"wrap_string","path":"/s/0","count":1,"message":"wrapped"}]"#
        );
        assert_eq!(serde_json::from_str::<Vec<Repair>>(&text).unwrap(), repairs);
    }

    #[test]
    fn stored_reports_with_retired_names_still_read() {
        let text = r#"{"path":"","rule":"retired_rule","message":"m"}"#;
        let read: Violation = serde_json::from_str(text).unwrap();
        assert_eq!(read.rule.as_str(), "retired_rule");
        assert_eq!(serde_json::to_string(&read).unwrap(), text);
        let text = r#"{"kind":"retired_kind","count":1,"message":"m"}"#;
        let read: Repair = serde_json::from_str(text).unwrap();
        assert_eq!(read.kind.as_str(), "retired_kind");
        assert_eq!(serde_json::to_string(&read).unwrap(), text);
    }
}
