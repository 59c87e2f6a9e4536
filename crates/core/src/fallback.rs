//! [`Fallback`]: the reply a contract gives when the attempts run out — a valid reply of the
//! contract saying the answer could not be produced ([`FallbackReply::Template`]), or the last
//! attempt's text for the user without anything structured ([`FallbackReply::LastText`]: no
//! marker sections, payload or question cards) — and the parts it carries over from the
//! attempts so that nothing important is dropped (for `selfhelp-response`: the most severe
//! safety assessment any attempt made; a fallback never downgrades safety).

use crate::contract::Kind;
use crate::pointer::PathPattern;
use crate::rules::{Condition, DeclaredRule};
use serde_json::{Value, json};

/// A part of an attempt's value copied into the fallback.
#[derive(Debug, Clone, PartialEq)]
pub struct Carry {
    /// Where the part is (the same place in the fallback).
    pub path: String,
    /// The value that ranks candidates (e.g. `/safety/danger_level`).
    pub rank: Option<String>,
    /// Rank order, lowest first; values not listed rank below all listed ones.
    pub order: Vec<Value>,
}

/// Where a fallback's reply comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum FallbackReply {
    /// A fixed reply (valid against the contract, checked at load).
    Template(Value),
    /// The text the last readable attempt had for the user, as a reply with nothing else:
    /// `markers` contracts its message with every marker section cut out and no suggestions,
    /// actions or payload; `text` contracts its whole text (cards written back as plain
    /// questions and options) and no cards. `sentence` when no attempt's text can be read.
    LastText {
        /// The reply's text when no attempt left any.
        sentence: String,
    },
}

/// A contract's fallback reply and what it carries over.
#[derive(Debug, Clone, PartialEq)]
pub struct Fallback {
    /// The reply, or where it comes from.
    pub reply: FallbackReply,
    /// Parts copied from attempts.
    pub carry: Vec<Carry>,
}

impl Carry {
    fn rank_of(&self, value: &Value) -> usize {
        let Some(rank) = &self.rank else { return 0 };
        value
            .pointer(rank)
            .and_then(|v| self.order.iter().position(|o| o == v))
            .map_or(0, |i| i + 1)
    }
}

impl Fallback {
    /// The fallback reply built from `base` (the template, or the reply made of the last
    /// text) and `attempts` (the parsed values of every attempt that could be read, in order).
    /// `valid` says whether a candidate reply meets the contract.
    pub(crate) fn build(
        &self,
        base: Value,
        attempts: &[&Value],
        rules: &[DeclaredRule],
        valid: impl Fn(&Value) -> bool,
    ) -> Value {
        let mut reply = base;
        for carry in &self.carry {
            let mut candidates: Vec<&Value> = attempts
                .iter()
                .copied()
                .filter(|a| a.pointer(&carry.path).is_some())
                .collect();
            // Most severe first; among equals, the latest attempt.
            candidates.reverse();
            candidates.sort_by_key(|a| std::cmp::Reverse(carry.rank_of(a)));
            let Some(most_severe) = candidates.first().copied() else {
                continue;
            };
            let mut placed = false;
            for candidate in &candidates {
                if carry.rank_of(candidate) < carry.rank_of(most_severe) {
                    break;
                }
                let mut trial = reply.clone();
                if set(
                    &mut trial,
                    &carry.path,
                    candidate
                        .pointer(&carry.path)
                        .cloned()
                        .unwrap_or(Value::Null),
                ) && valid(&trial)
                {
                    reply = trial;
                    placed = true;
                    break;
                }
            }
            if !placed {
                // No attempt's part fits as a whole: keep the template's part but raise its rank
                // to the most severe one seen, with whatever the contract's rules then demand.
                if let (Some(rank), Some(level)) = (
                    &carry.rank,
                    carry.rank.as_ref().and_then(|r| most_severe.pointer(r)),
                ) {
                    let mut trial = reply.clone();
                    if set(&mut trial, rank, level.clone()) {
                        apply_demands(&mut trial, rules);
                        if valid(&trial) {
                            reply = trial;
                        }
                    }
                }
            }
        }
        reply
    }
}

/// Sets each `implies` consequence that demands one exact value, where its condition holds.
fn apply_demands(value: &mut Value, rules: &[DeclaredRule]) {
    for rule in rules {
        if let DeclaredRule::Implies {
            scope: None,
            when_path,
            when,
            then_path,
            then: Condition::Equals(wanted),
            ..
        } = rule
            && when.holds(value.pointer(when_path.as_str()))
        {
            set(value, then_path.as_str(), wanted.clone());
        }
    }
}

/// Replaces (or adds, in an existing parent object) the value at `pointer`.
fn set(root: &mut Value, pointer: &str, new: Value) -> bool {
    if let Some(slot) = root.pointer_mut(pointer) {
        *slot = new;
        return true;
    }
    let Some((parent, key)) = pointer.rsplit_once('/') else {
        return false;
    };
    let key = key.replace("~1", "/").replace("~0", "~");
    match root.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.insert(key, new);
            true
        }
        _ => false,
    }
}

/// Checks that a carry path names one place (no wildcard).
pub(crate) fn check_path(path: &str) -> Result<(), String> {
    let pattern = PathPattern::absolute(path).map_err(|e| e.to_string())?;
    if pattern.as_str().split('/').any(|s| s == "*") {
        return Err(format!(
            "fallback carry path {path:?} must name one place (no '*')"
        ));
    }
    Ok(())
}

/// The text `value` — an attempt's value of a contract of `kind` — has for the user, with
/// nothing structured left in it; `None` when it has none (or the kind has no text).
pub(crate) fn plain_text(
    value: &Value,
    kind: Kind,
    markers: Option<&crate::markers::MarkerSpec>,
) -> Option<String> {
    let text = match (kind, markers) {
        (Kind::Markers, Some(spec)) => {
            let message = value.get("message").and_then(Value::as_str)?;
            // Read again: a marker the attempt's reader left in its message (one inside a
            // section it could not cut) is cut out now.
            let read = crate::markers::read(message, spec, &crate::Context::new());
            read.value
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or(message)
                .to_owned()
        }
        (Kind::Text, _) => crate::cards::write(value),
        _ => return None,
    };
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// `text` as the whole reply of a contract of `kind` (`cards`: a `text` contract with question
/// cards): the message and nothing else.
pub(crate) fn plain_reply(text: &str, kind: Kind, cards: bool) -> Value {
    match kind {
        Kind::Markers => json!({
            "message": text,
            "suggested_values": null,
            "suggested_actions": null,
            "payload": null,
        }),
        _ if cards => json!({"message": text, "question_cards": []}),
        _ => json!({"message": text}),
    }
}
