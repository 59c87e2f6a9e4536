//! The retry feedback built from a failed check: each violation with its path, rule, what was
//! expected and a short quote of what was found, then one line on how to answer.
//!
//! Bounded: at most [`MAX_ITEMS`] violations and [`MAX_CHARS`] characters, whatever the size of
//! the reply or the number of violations, so a retry prompt never grows with the reply (the rest
//! is counted by rule). Deterministic: the same check gives the same text.

use crate::contract::{Checked, Contract, Kind};
use crate::schema::{cut, display_pointer};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Most violations listed one by one.
pub const MAX_ITEMS: usize = 8;
/// Upper bound of the whole feedback text, in characters.
pub const MAX_CHARS: usize = 2000;
const MESSAGE_CHARS: usize = 220;
const FOUND_CHARS: usize = 90;
const PATH_CHARS: usize = 90;

pub(crate) fn render(contract: &Contract, checked: &Checked) -> String {
    if checked.violations.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "Your previous reply did not meet the contract \"{}\". Problems found: {}.\n",
        contract.name,
        checked.violations.len()
    );
    let closing = closing_lines(contract, checked);
    let mut listed = 0;
    for (index, violation) in checked.violations.iter().enumerate() {
        if listed == MAX_ITEMS {
            break;
        }
        let message = cut(&violation.message, MESSAGE_CHARS);
        let mut item = format!(
            "{}. at {} ({}): {}",
            index + 1,
            cut(display_pointer(&violation.path), PATH_CHARS),
            violation.rule,
            message
        );
        if let Some(found) = &violation.found {
            let found = cut(found, FOUND_CHARS);
            if !message.contains(found.trim_end_matches('…')) {
                let _ = write!(item, ". Found: {found}");
            }
        }
        item.push('\n');
        if out.chars().count() + item.chars().count() + closing.chars().count() + 80 > MAX_CHARS {
            break;
        }
        out.push_str(&item);
        listed += 1;
    }
    let rest = &checked.violations[listed..];
    if !rest.is_empty() {
        let mut by_rule: BTreeMap<&str, usize> = BTreeMap::new();
        for v in rest {
            *by_rule.entry(v.rule.as_str()).or_default() += 1;
        }
        let counts: Vec<String> = by_rule
            .iter()
            .map(|(rule, n)| format!("{rule} ×{n}"))
            .collect();
        let _ = writeln!(
            out,
            "… and {} more ({}).",
            rest.len(),
            cut(&counts.join(", "), 120)
        );
    }
    out.push_str(&closing);
    out
}

fn closing_lines(contract: &Contract, checked: &Checked) -> String {
    let mut out = String::new();
    // What was repaired, in words ("took the JSON out of a code fence"): a model acts on that,
    // not on the kind's name.
    let text_repairs: Vec<&str> = checked
        .repairs
        .iter()
        .filter(|r| r.path.is_none())
        .map(|r| r.message.as_str())
        .collect();
    if !text_repairs.is_empty() {
        let _ = writeln!(
            out,
            "Your reply also needed repairs ({}); {}.",
            cut(&text_repairs.join("; "), 200),
            match contract.kind {
                Kind::Xml => "send one plain, well-formed XML document",
                Kind::Markers => "write each marker's JSON plainly and validly",
                Kind::Json => "send plain, valid JSON",
                Kind::Text => "send plain text",
            }
        );
    }
    let tool_prefix = format!("{}/", crate::tool_call::TOOL_CALLS_PATH);
    if checked
        .violations
        .iter()
        .any(|v| v.path.starts_with(&tool_prefix))
    {
        let _ = writeln!(
            out,
            "Call the tool `{}` again with corrected arguments (the paths above point into the calls of your reply, counted from 0).",
            crate::cards::TOOL_NAME
        );
    }
    out.push_str(match contract.kind {
        Kind::Xml => "Send the complete corrected XML document again, and only the XML.",
        Kind::Markers => {
            "Send the whole reply again: your message, then each marker on its own line followed by its complete, valid JSON."
        }
        Kind::Json => "Send the complete corrected JSON again, and only the JSON.",
        Kind::Text => "Send the whole reply again.",
    });
    out
}
