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
//! What the value's **own closing bracket** proves is held until the text after it shows how
//! the complete check will read the reply ([`After`], the repair's own reader): more members
//! or items (`{"a": 1}, "b": 2}`) make it refuse the reply as `parse`, and the reader then
//! aborts with that very violation (whatever the schema; the same words, place and quote); a
//! second value makes it refuse the reply as `ambiguous` or take the first, so the held
//! violations are dropped (the complete check decides); prose releases them. A reply that ends
//! right after its value is judged by the complete check alone.
//!
//! # Exceptions
//!
//! Once the value has started, the complete check never takes another value in its place (a
//! broken one is refused as `parse`), so an abort is a rejection the complete check makes too
//! — except for a **duplicate key**: `serde_json` keeps the last of two members with the same
//! key, so a later duplicate can replace a member found wrong earlier, and the reply may pass.
//! The complete check names a different violation than the abort when a continuation **breaks
//! the started JSON** after the abort (an unbalanced bracket, a member name missing: `parse`
//! at the break), or when a **second answer of the same shape** follows in the prose
//! (`Option A: {…} Option B: {…}`: `ambiguous`).

mod check;
mod partial;
mod scan;
mod schema;
mod start;

use crate::contract::Contract;
use crate::repair::RootHint;
use crate::repair::follow::{After, Follow};
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
    /// Once the value closed: the reader of what follows it, until that is decided.
    after: Option<After>,
    /// What the text after the value decided (nothing more is judged then).
    decided: bool,
    /// Violations proven when the value closed, held until what follows it is known.
    held: Option<Vec<Violation>>,
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
            after: None,
            decided: false,
            held: None,
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
        let scanned = match &mut self.checker {
            Some(checker) => scanner.scan(raw, checker.as_mut()),
            None => scanner.scan(raw, &mut ()),
        };
        let Status::Done { end } = scanner.status() else {
            return scanned;
        };
        // The value closed. What its close proved waits for what follows it: more members
        // (then the complete check refuses the reply as `parse`, and so does this), or a
        // second value (then it may refuse it as `ambiguous`).
        if let Err(proven) = scanned {
            self.held = Some(proven);
        }
        if self.decided {
            return Ok(());
        }
        let follow = self
            .after
            .get_or_insert_with(|| After::new(end))
            .read(raw.as_bytes(), false);
        let Some(follow) = follow else {
            return Ok(());
        };
        self.decided = true;
        match follow {
            Follow::MoreMembers { .. } => Err(vec![closed_early(raw, end - 1)]),
            Follow::Prose => self.held.take().map_or(Ok(()), Err),
            Follow::End | Follow::SecondValue { .. } => {
                self.held = None;
                Ok(())
            }
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

/// The `parse` violation of a value that closes at byte `closer` of `raw` while more of its
/// document follows: the complete check's own words (positions counted after a byte order
/// mark, which the complete check drops).
fn closed_early(raw: &str, closer: usize) -> Violation {
    let bom = if raw.starts_with('\u{feff}') { 3 } else { 0 };
    let text = raw.get(bom..).unwrap_or(raw);
    let broken = crate::repair::Broken::closed_early(text, closer.saturating_sub(bom));
    crate::check::broken_violation(broken)
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
            ("{\"n\": 1.5, \"kind\": \"a\"}", Some((10, "/n", "type"))),
            ("{\"n\": 2.0, \"kind\": \"a\"}", None),
            (
                "{\"tag\": \"u\", \"kind\": \"a\"}",
                Some((12, "/tag", "const")),
            ),
            (
                "{\"list\": [\"x\", 3, \"y\"]}",
                Some((17, "/list/1", "type")),
            ),
            ("{\"other\": 1}", Some((9, "", "additionalProperties"))),
            ("{\"kind\": \"a\", \"n\": 1,}", None),
            ("[1, 2]", None),
            ("Sure: {\"kind\": \"c\"}", None),
            ("{\"kind\": \"c\" // oops\n}", None),
            // What the root's own closing bracket proves waits for what follows it: prose
            // releases it; a reply that ends there is left to the complete check.
            ("{\"n\": 1}\n\nThanks!", Some((11, "", "required"))),
            ("{\"n\": 1}", None),
            ("{\"tag\": \"u\"} ok", Some((14, "/tag", "const"))),
            // More members after it: the complete check's `parse`, whatever the schema says.
            ("{\"n\": 1}, \"kind\": \"a\"}", Some((11, "", "parse"))),
            ("[1, 2], [3]]", Some((9, "", "parse"))),
            // A second value after it: the complete check decides.
            ("{\"n\": 1}\n{\"kind\": \"a\"}", None),
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
        let (_, abort) = run(&c, "{\"s\": 5, \"t\": 1}", 1);
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
