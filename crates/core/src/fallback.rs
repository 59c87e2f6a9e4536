//! [`Fallback`]: the reply a contract gives when the attempts run out — a valid reply of the
//! contract saying the answer could not be produced — and the parts it carries over from the
//! attempts so that nothing important is dropped (for `selfhelp-response`: the most severe
//! safety assessment any attempt made; a fallback never downgrades safety).

use crate::pointer::PathPattern;
use crate::rules::{Condition, DeclaredRule};
use serde_json::Value;

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

/// A contract's fallback reply and what it carries over.
#[derive(Debug, Clone, PartialEq)]
pub struct Fallback {
    /// The reply template (valid against the contract, checked at load).
    pub reply: Value,
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
    /// The fallback reply built from `attempts` (the parsed values of every attempt that could
    /// be read, in order). `valid` says whether a candidate reply meets the contract.
    pub(crate) fn build(
        &self,
        attempts: &[&Value],
        rules: &[DeclaredRule],
        valid: impl Fn(&Value) -> bool,
    ) -> Value {
        let mut reply = self.reply.clone();
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
