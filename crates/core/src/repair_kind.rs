//! [`RepairKind`]: what kind of change a [`Repair`](crate::Repair) made, one variant per kind
//! Bridle makes — to the raw text (the lenient JSON repair, the XML and marker readers) or to the
//! parsed value (declared coercions, the XML reader leaving out what the contract does not know).
//!
//! It serialises to the names reports have always carried (`code_fence`, `trailing_comma`, …);
//! any other name read back (a row another build stored) becomes [`RepairKind::Unknown`] and is
//! written back unchanged.

use crate::names::names;

names! {
    /// What kind of change a repair made.
    pub enum RepairKind {
        /// Removed a byte order mark at the start of the reply.
        Bom = "bom",
        /// Took the JSON or XML out of a code fence.
        CodeFence = "code_fence",
        /// Dropped the text around the JSON or XML.
        SurroundingProse = "surrounding_prose",
        /// Removed comments from the JSON.
        Comment = "comment",
        /// Removed commas before a closing bracket.
        TrailingComma = "trailing_comma",
        /// Removed commas with nothing before them (`[,1]`, `[1,,2]`).
        ExtraComma = "extra_comma",
        /// Inserted commas missing between members or items.
        MissingComma = "missing_comma",
        /// Replaced `True`/`False`/`None`/`undefined` with JSON literals.
        PythonLiteral = "python_literal",
        /// Replaced `NaN`/`Infinity` with `null`.
        NonFiniteNumber = "non_finite_number",
        /// Turned single-quoted strings into JSON strings.
        SingleQuote = "single_quote",
        /// Turned curly-quoted strings into JSON strings.
        SmartQuote = "smart_quote",
        /// Escaped raw line breaks inside strings.
        RawNewline = "raw_newline",
        /// Escaped raw control characters inside strings.
        ControlCharacter = "control_character",
        /// Quoted bare keys.
        UnquotedKey = "unquoted_key",
        /// Fixed invalid backslash escapes.
        InvalidEscape = "invalid_escape",
        /// Escaped quotes left unescaped inside strings.
        UnescapedQuote = "unescaped_quote",
        /// Closed brackets left open (a mismatched closer, or the reply's end).
        UnclosedBracket = "unclosed_bracket",
        /// The XML reader left out an element the contract does not know.
        IgnoredElement = "ignored_element",
        /// The XML reader left out an attribute the contract does not know.
        IgnoredAttribute = "ignored_attribute",
        /// The XML reader left out text inside an element that takes none.
        IgnoredText = "ignored_text",
        /// The markers reader dropped suggestions given with a proposal.
        SuggestionsWithProposal = "suggestions_with_proposal",
        /// The markers reader dropped a second payload.
        ExtraPayload = "extra_payload",
        /// The markers reader dropped a repeated marker section.
        DuplicateMarker = "duplicate_marker",
        /// The markers reader turned plain-string suggestions into `{label, value}` objects.
        PlainSuggestion = "plain_suggestion",
        /// The markers reader gave actions without a handler the `client` one.
        DefaultHandler = "default_handler",
        /// A declared `wrap_string` coercion wrapped a string in an object.
        WrapString = "wrap_string",
        /// A declared `rename_key` coercion renamed a member.
        RenameKey = "rename_key",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn every_kind_round_trips_through_serde_as_its_name() {
        for kind in RepairKind::all() {
            let json = serde_json::to_value(&kind).unwrap();
            assert_eq!(json, Value::String(kind.as_str().to_owned()));
            assert_eq!(serde_json::from_value::<RepairKind>(json).unwrap(), kind);
            assert_eq!(kind.to_string(), kind.as_str());
            assert_eq!(RepairKind::from_name(kind.as_str()), kind);
        }
    }

    #[test]
    fn an_unknown_kind_is_kept_as_read() {
        for name in ["retired_kind", "", "CodeFence"] {
            let kind: RepairKind = serde_json::from_value(json!(name)).unwrap();
            assert!(matches!(&kind, RepairKind::Unknown(unknown) if unknown.as_str() == name));
            assert_eq!(serde_json::to_value(&kind).unwrap(), json!(name));
        }
        assert!(serde_json::from_value::<RepairKind>(json!(null)).is_err());
    }

    #[test]
    fn the_repair_kind_names_are_these() {
        let names: Vec<String> = RepairKind::all().map(|k| k.as_str().to_owned()).collect();
        assert_eq!(
            names,
            [
                "bom",
                "code_fence",
                "surrounding_prose",
                "comment",
                "trailing_comma",
                "extra_comma",
                "missing_comma",
                "python_literal",
                "non_finite_number",
                "single_quote",
                "smart_quote",
                "raw_newline",
                "control_character",
                "unquoted_key",
                "invalid_escape",
                "unescaped_quote",
                "unclosed_bracket",
                "ignored_element",
                "ignored_attribute",
                "ignored_text",
                "suggestions_with_proposal",
                "extra_payload",
                "duplicate_marker",
                "plain_suggestion",
                "default_handler",
                "wrap_string",
                "rename_key",
            ]
        );
    }
}
