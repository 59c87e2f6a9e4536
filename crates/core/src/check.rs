//! The check pipeline of a JSON contract: `raw → size/emptiness → parse (or repair, then parse)
//! → coercions → schema → rules →` [`Checked`].
//!
//! Text that already parses is never repaired. A reply cut off mid-value is reported as
//! `truncated`, never silently completed; text with no JSON in it is `not_json`; JSON that
//! breaks, or closes and goes on, is `parse`, with the line and column of the reply and a quote
//! of the text there (never a part of it taken for the whole); two answers are `ambiguous`.

use crate::context::Context;
use crate::contract::{Checked, Contract};
use crate::repair::repair;
use crate::report::Violation;
use crate::rule::Rule;
use crate::schema::cut;
use serde_json::Value;

/// Characters of raw text quoted around a parse error.
const PARSE_QUOTE_CHARS: usize = 60;

pub(crate) fn check(contract: &Contract, raw: &str, context: &Context) -> Checked {
    if let Some(xml) = &contract.xml {
        return check_xml(contract, xml, raw, context);
    }
    if let Some(markers) = &contract.markers {
        return check_markers(contract, markers, raw, context);
    }
    if contract.kind == crate::Kind::Text {
        return check_text(contract, raw, context);
    }
    if let Some(rejected) = precheck(contract, raw) {
        return rejected;
    }
    let (value, repairs) = match serde_json::from_str::<Value>(raw) {
        Ok(value) => (value, Vec::new()),
        Err(_) => {
            let repaired = repair(raw, contract.schema.root_hint());
            if let Some(truncation) = repaired.truncated {
                return Checked::rejected(
                    Violation::new(truncation.path, Rule::Truncated, truncation.message)
                        .with_found(tail(raw)),
                    repaired.repairs,
                );
            }
            if let Some(broken) = repaired.broken {
                return Checked::rejected(broken_violation(broken), repaired.repairs);
            }
            if let Some(ambiguity) = repaired.ambiguous {
                return Checked::rejected(
                    Violation::new("", Rule::Ambiguous, ambiguity.message)
                        .with_found(ambiguity.found),
                    repaired.repairs,
                );
            }
            if !repaired.found_json {
                return Checked::rejected(
                    Violation::new(
                        "",
                        Rule::NotJson,
                        "the reply contains no JSON value; send only the JSON",
                    )
                    .with_found(cut(raw.trim(), PARSE_QUOTE_CHARS)),
                    repaired.repairs,
                );
            }
            match serde_json::from_str::<Value>(&repaired.text) {
                Ok(value) => (value, repaired.repairs),
                Err(e) => {
                    return Checked::rejected(
                        parse_violation(&repaired.text, &e),
                        repaired.repairs,
                    );
                }
            }
        }
    };
    finish(contract, value, Vec::new(), repairs, context)
}

/// The `xml` kind: the same steps with the XML reader as the parse step.
fn check_xml(
    contract: &Contract,
    xml: &crate::contract::XmlSpec,
    raw: &str,
    context: &Context,
) -> Checked {
    if let Some(rejected) = precheck(contract, raw) {
        return rejected;
    }
    let read = crate::xml::read(raw, &xml.root, &xml.shape);
    let (repairs, violations) = (read.repairs, read.violations);
    let Some(value) = read.value else {
        return Checked {
            value: None,
            violations,
            repairs,
        };
    };
    finish(contract, value, violations, repairs, context)
}

/// The `markers` kind: the same steps with the marker reader as the parse step.
fn check_markers(
    contract: &Contract,
    markers: &crate::markers::MarkerSpec,
    raw: &str,
    context: &Context,
) -> Checked {
    if let Some(rejected) = precheck(contract, raw) {
        return rejected;
    }
    let read = crate::markers::read(raw, markers, context);
    let (value, repairs, mut violations) = (read.value, read.repairs, read.violations);
    let says_nothing = ["suggested_values", "suggested_actions", "payload"]
        .iter()
        .all(|key| value[*key].is_null())
        && value["message"].as_str().is_some_and(str::is_empty);
    if says_nothing && violations.is_empty() {
        violations.push(Violation::new(
            "",
            Rule::Empty,
            "the reply has no message and no marker section",
        ));
    }
    finish(contract, value, violations, repairs, context)
}

/// The `text` kind: the reply is the message; question cards are found in it when the
/// contract has `[cards]` and the context's mode asks for them.
fn check_text(contract: &Contract, raw: &str, context: &Context) -> Checked {
    if let Some(rejected) = precheck(contract, raw) {
        return rejected;
    }
    let value = crate::text::read(raw, contract.cards.is_some(), context);
    finish(contract, value, Vec::new(), Vec::new(), context)
}

/// The steps every kind starts with: a reply over the size limit, or blank, is rejected unread.
pub(crate) fn precheck(contract: &Contract, raw: &str) -> Option<Checked> {
    if raw.len() > contract.limits.max_bytes {
        return Some(Checked::rejected(
            too_large(raw.len() as u64, contract.limits.max_bytes),
            Vec::new(),
        ));
    }
    if raw.trim().is_empty() {
        return Some(Checked::rejected(
            Violation::new("", Rule::Empty, "the reply is empty"),
            Vec::new(),
        ));
    }
    None
}

/// The steps every kind ends with, once its parse step made a value: declared coercions, then
/// the schema and rules; `violations` and `repairs` are the parse step's own.
pub(crate) fn finish(
    contract: &Contract,
    mut value: Value,
    mut violations: Vec<Violation>,
    mut repairs: Vec<crate::report::Repair>,
    context: &Context,
) -> Checked {
    for coercion in &contract.coercions {
        coercion.apply(&mut value, &mut repairs);
    }
    violations.extend(contract.validate_in(&value, context));
    Checked {
        value: Some(value),
        violations,
        repairs,
    }
}

pub(crate) fn too_large(size: u64, limit: usize) -> Violation {
    Violation::new(
        "",
        Rule::TooLarge,
        format!("the reply is {size} bytes; the contract accepts at most {limit} bytes"),
    )
}

/// The `parse` violation of a reply whose JSON started but cannot be read whole.
pub(crate) fn broken_violation(broken: crate::repair::Broken) -> Violation {
    Violation::new("", Rule::Parse, broken.message).with_found(broken.found)
}

fn parse_violation(text: &str, error: &serde_json::Error) -> Violation {
    let (line, column) = (error.line(), error.column());
    let detail = error.to_string();
    let message = if detail.contains("recursion limit") {
        format!("the JSON nests deeper than 128 levels (line {line}, column {column})")
    } else {
        format!("the reply is not valid JSON even after repair: {detail}")
    };
    Violation::new("", Rule::Parse, message).with_found(around(text, line, column))
}

/// The text around 1-based `line`/`column` (a byte column, as serde_json counts).
fn around(text: &str, line: usize, column: usize) -> String {
    let Some(row) = text.split('\n').nth(line.saturating_sub(1)) else {
        return String::new();
    };
    let mut at = column.saturating_sub(1).min(row.len());
    while !row.is_char_boundary(at) {
        at -= 1;
    }
    let before: String = {
        let chars: Vec<char> = row[..at]
            .chars()
            .rev()
            .take(PARSE_QUOTE_CHARS / 2)
            .collect();
        chars.into_iter().rev().collect()
    };
    let after: String = row[at..].chars().take(PARSE_QUOTE_CHARS / 2).collect();
    format!("{before}⟨here⟩{after}")
}

/// The last characters of a cut-off reply.
fn tail(raw: &str) -> String {
    let trimmed = raw.trim_end();
    let chars: Vec<char> = trimmed.chars().rev().take(PARSE_QUOTE_CHARS).collect();
    let mut out: String = chars.into_iter().rev().collect();
    if out.len() < trimmed.len() {
        out.insert(0, '…');
    }
    out
}
