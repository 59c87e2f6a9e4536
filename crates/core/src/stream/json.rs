//! [`JsonStream`]: the incremental reader of a `json` reply — its partial value, and the early
//! abort on violations no continuation can fix.
//!
//! The parts: [`Locate`] finds where the value the model started begins (the reply's start,
//! or its first code fence); [`Scanner`] reads it byte by byte as deltas arrive, following
//! strict JSON plus trailing commas and getting lost for good on anything else; [`Checker`]
//! hears what the scanner settles and proves violations against the contract's schema
//! ([`SchemaIndex`]); [`render`] builds the partial value from the reply's text on demand.
//!
//! # When the reader aborts
//!
//! Only on the value it follows, while not lost, when the schema's root type matches that
//! value's kind (otherwise the repair search would look further and might choose another
//! value), and only for a violation that every reply continuing this JSON has too: a settled
//! value of the wrong `type`, outside `enum` or unequal to `const`; a key that
//! `additionalProperties: false` forbids; an object closed without a `required` member.
//! Nothing is checked where the applicable subschema is not certain, nor at or below a
//! declared coercion's path.
//!
//! # Exceptions
//!
//! The complete check reads the reply with the repair search, which tries other places when
//! the started value cannot be read. So a continuation that **breaks the started JSON beyond
//! repair** (say, an unbalanced bracket, or a second value written after abandoning the
//! first) can make the search pick a different JSON value later in the text, and that value
//! may be valid although the stream aborted. The reader does not try to foresee this: a model
//! that wrote a wrong value into the JSON it started is not expected to abandon that JSON
//! and write a better one after it. (`tests/it/stream_json.rs` shows this case.)
//!
//! Likewise, a **duplicate key** is not foreseen: `serde_json` keeps the last of two members
//! with the same key, so a later duplicate could replace a member found wrong earlier.

mod check;
mod partial;
mod scan;
mod schema;
mod start;

use crate::contract::Contract;
use crate::repair::RootHint;
use crate::report::Violation;
use check::Checker;
use partial::render;
use scan::{Scanner, Status};
use schema::Draft;
pub(crate) use schema::SchemaIndex;
use start::{Found, Locate};

/// Where the reader is.
#[derive(Debug)]
enum Phase {
    /// Looking for where the value starts.
    Locating(Locate),
    /// Reading the value.
    Reading(Scanner),
    /// The reply starts no value the reader follows.
    Never,
}

/// The incremental reader of a `json` reply. See the module docs.
#[derive(Debug)]
pub(super) struct JsonStream {
    phase: Phase,
    /// The checks, until the root's kind is known to match the schema (then dropped when it
    /// does not).
    /// (Boxed: it is large, and most of the stream's size otherwise.)
    checker: Option<Box<Checker>>,
    hint: RootHint,
    /// The last partial value returned.
    last: super::LastShown,
}

impl JsonStream {
    pub(super) fn new(contract: &Contract) -> Self {
        let schema = &contract.schema;
        // Indexed once per contract, on its first streamed reply.
        let index = std::sync::Arc::clone(contract.stream_index.get_or_init(|| {
            std::sync::Arc::new(SchemaIndex::build(
                schema.raw(),
                Draft::from_name(schema.draft_name()),
            ))
        }));
        let coercions = contract
            .coercions
            .iter()
            .map(|c| c.path().clone())
            .collect();
        Self {
            phase: Phase::Locating(Locate::new()),
            checker: Checker::new(index, coercions).map(Box::new),
            hint: schema.root_hint(),
            last: super::LastShown::default(),
        }
    }

    /// Scans `raw[from..]` (the new delta; `raw` is the whole reply so far). `Err` holds the
    /// violations the reply so far proves, whatever follows.
    pub(super) fn feed(&mut self, raw: &str, _from: usize) -> Result<(), Vec<Violation>> {
        if let Phase::Locating(locate) = &mut self.phase {
            match locate.scan(raw) {
                Found::Pending => return Ok(()),
                Found::Never => {
                    self.phase = Phase::Never;
                    self.checker = None;
                    return Ok(());
                }
                Found::At(start) => {
                    let root = raw.as_bytes().get(start).copied();
                    let matches = match self.hint {
                        RootHint::Any => true,
                        RootHint::Object => root == Some(b'{'),
                        RootHint::Array => root == Some(b'['),
                    };
                    if !matches {
                        self.checker = None;
                    }
                    self.phase = Phase::Reading(Scanner::new(start));
                }
            }
        }
        let Phase::Reading(scanner) = &mut self.phase else {
            return Ok(());
        };
        match &mut self.checker {
            Some(checker) => scanner.scan(raw, checker.as_mut()),
            None => scanner.scan(raw, &mut ()),
        }
    }

    /// The value so far as compact JSON text, when it changed since the last call.
    pub(super) fn partial(&mut self, raw: &str) -> Option<String> {
        let Phase::Reading(scanner) = &mut self.phase else {
            return None;
        };
        let end = match scanner.status() {
            // Up to where it got lost, once (nothing is read after it).
            Status::Lost { at } => at,
            Status::Done { end } => end,
            Status::Reading => raw.len(),
        };
        if !scanner.take_dirty() {
            return None;
        }
        let text = render(raw, scanner.start(), end)?;
        self.last.is_new(&text).then_some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn contract(schema: serde_json::Value) -> Contract {
        Contract::from_schema("t", schema).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Feeds `text` in pieces of `step` characters; returns each partial value (after each
    /// piece) and the abort, as `(bytes read, path, rule)`.
    fn run(
        contract: &Contract,
        text: &str,
        step: usize,
    ) -> (Vec<String>, Option<(usize, String, String)>) {
        let mut stream = JsonStream::new(contract);
        let mut raw = String::new();
        let mut partials = Vec::new();
        let chars: Vec<char> = text.chars().collect();
        for piece in chars.chunks(step.max(1)) {
            let from = raw.len();
            raw.extend(piece);
            let fed = stream.feed(&raw, from);
            partials.extend(stream.partial(&raw));
            if let Err(proven) = fed {
                let v = &proven[0];
                return (
                    partials,
                    Some((raw.len(), v.path.clone(), v.rule.to_string())),
                );
            }
        }
        (partials, None)
    }

    #[test]
    fn partials_follow_the_started_value() {
        let open = contract(json!({}));
        for (text, last) in [
            (
                "{\"a\": [1, 2,], \"b\": \"x\"}",
                Some("{\"a\":[1,2],\"b\":\"x\"}"),
            ),
            ("```json\n{\"a\": 1,}\n```\nDone.", Some("{\"a\":1}")),
            ("Here:\n```\n[true, null]\n```", Some("[true,null]")),
            ("{\"a\": 1} {\"b\": 2}", Some("{\"a\":1}")),
            ("Sure: {\"a\": 1}", None),
            ("plain text", None),
            ("{\"a\": 1, // note\n \"b\": 2}", Some("{\"a\":1}")),
            ("{\"a\": \"x\", 'b': 2}", Some("{\"a\":\"x\"}")),
        ] {
            for step in [1, 4, 1000] {
                let (partials, abort) = run(&open, text, step);
                assert_eq!(abort, None, "{text:?}");
                assert_eq!(
                    partials.last().map(String::as_str),
                    last,
                    "{text:?} step {step}"
                );
            }
        }
    }

    #[test]
    fn partials_change_only_when_the_value_does() {
        let open = contract(json!({}));
        let mut stream = JsonStream::new(&open);
        let mut raw = String::new();
        let mut seen = Vec::new();
        for piece in [
            "{", "\"a\"", ": ", "\"x", "y", "\"", ",", " ", "\"b\":", " 1", "}",
        ] {
            let from = raw.len();
            raw.push_str(piece);
            assert!(stream.feed(&raw, from).is_ok());
            seen.push(stream.partial(&raw));
        }
        let want = [
            Some("{}"),
            None,
            None,
            Some("{\"a\":\"x\"}"),
            Some("{\"a\":\"xy\"}"),
            None,
            None,
            None,
            None,
            Some("{\"a\":\"xy\",\"b\":1}"),
            None,
        ];
        let want: Vec<Option<String>> = want.iter().map(|w| w.map(str::to_owned)).collect();
        assert_eq!(seen, want);
    }

    #[test]
    fn aborts_come_as_soon_as_the_value_is_settled() {
        let schema = contract(json!({
            "type": "object",
            "required": ["kind"],
            "additionalProperties": false,
            "properties": {
                "kind": {"enum": ["a", "b"]},
                "n": {"type": "integer"},
                "tag": {"const": "t"},
                "list": {"type": "array", "items": {"type": "string"}}
            }
        }));
        for (text, want) in [
            ("{\"kind\": \"c\", \"n\": 1}", Some((13, "/kind", "enum"))),
            ("{\"n\": 1.5}", Some((10, "/n", "type"))),
            ("{\"n\": 2.0, \"kind\": \"a\"}", None),
            ("{\"tag\": \"u\"}", Some((12, "/tag", "const"))),
            (
                "{\"list\": [\"x\", 3, \"y\"]}",
                Some((17, "/list/1", "type")),
            ),
            ("{\"other\": 1}", Some((9, "", "additionalProperties"))),
            ("{\"n\": 1}", Some((8, "", "required"))),
            ("{\"kind\": \"a\", \"n\": 1,}", None),
            ("[1, 2]", None),
            ("Sure: {\"kind\": \"c\"}", None),
            ("{\"kind\": \"c\" // oops\n}", None),
        ] {
            for step in [1, 1000] {
                // Where it aborts is checked with one-character deltas.
                let at = |n: usize| if step == 1 { n } else { 0 };
                let (_, abort) = run(&schema, text, step);
                let got = abort.map(|(n, path, rule)| (at(n), path, rule));
                let want = want.map(|(n, path, rule)| (at(n), path.to_owned(), rule.to_owned()));
                assert_eq!(got, want, "{text:?} step {step}");
            }
        }
    }

    #[test]
    fn coerced_places_are_not_checked() {
        let mut c = contract(json!({
            "type": "object",
            "properties": {"s": {"type": "array", "items": {"type": "object", "required": ["text"]}}}
        }));
        c.coercions.push(crate::coerce::Coercion::WrapString {
            path: crate::pointer::PathPattern::absolute("/s/*").unwrap_or_else(|e| panic!("{e}")),
            key: "text".into(),
        });
        let (_, abort) = run(&c, "{\"s\": [\"plain\", {\"text\": \"x\"}, {}]}", 1);
        assert_eq!(abort, None);
        let (_, abort) = run(&c, "{\"s\": 5}", 1);
        assert_eq!(abort.map(|a| a.2), Some("type".to_owned()));

        let mut c = contract(json!({
            "type": "object",
            "properties": {"s": {"type": "array", "items": {
                "type": "object", "required": ["text"], "additionalProperties": false,
                "properties": {"text": {"type": "string"}}
            }}}
        }));
        c.coercions.push(crate::coerce::Coercion::RenameKey {
            path: crate::pointer::PathPattern::absolute("/s/*").unwrap_or_else(|e| panic!("{e}")),
            from: "label".into(),
            to: "text".into(),
        });
        let text = "{\"s\": [{\"label\": \"x\"}]}";
        assert_eq!(run(&c, text, 1).1, None);
        assert!(c.check(text, &crate::Context::new()).is_valid());
        // Beside the coerced place, checks go on.
        let (_, abort) = run(&c, "{\"s\": [{\"label\": \"x\"}, 3]}", 1);
        assert_eq!(
            abort.map(|a| (a.1, a.2)),
            None,
            "items are coerced places too"
        );
        let (_, abort) = run(&c, "{\"s\": {}}", 1);
        assert_eq!(
            abort.map(|a| (a.1, a.2)),
            Some(("/s".to_owned(), "type".to_owned()))
        );
    }
}
