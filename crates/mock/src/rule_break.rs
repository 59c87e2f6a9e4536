//! [`apply`]: the rule faults ([`Fault::BrokenRule`], [`Fault::BrokenExpr`]) — a generated value
//! changed as little as possible so that it still meets the contract's schema but breaks one
//! of its declared rules.
//!
//! A rule says what must hold, not how it can fail, so the breaker searches. For each rule of
//! the wanted family it takes the places the rule looks at — an expression rule's matches, a
//! `unique` rule's values, a `less_than` rule's bounds, an `implies` rule's premise and
//! consequence — and tries small edits there: a boolean flipped, a number moved by one or
//! given a neighbour's value, a string given the value of another string the rule looks at, an
//! array given another such string as a new item. It keeps the edits after which the schema
//! still holds and the rule reports a violation, picks a rule with the seed (each breakable rule
//! as likely as another), then one of its edits. The target is that rule's first violation's
//! pointer: where Bridle's check reports it, and what good feedback names. Bounded: at most
//! [`MAX_TRIED`] edits are checked per reply, whatever its size.

use crate::faults::{Broken, Fault};
use crate::generate::Generated;
use bridle_core::pointer::{PathPattern, child_pointer};
use bridle_core::rules::DeclaredRule;
use bridle_core::{Contract, Kind};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use serde_json::Value;

/// Edits checked against the schema and the rule, over all rules of one reply.
const MAX_TRIED: usize = 800;
/// Nodes of the reply looked at per rule.
const MAX_NODES: usize = 200;
/// Values copied into one place at most (the first ones the rule looks at).
const MAX_SOURCES: usize = 24;
/// Breaking edits kept per rule.
const KEPT_PER_RULE: usize = 4;

/// `fault` (a rule fault) applied to `generated` under `contract`: the broken reply and the
/// pointer Bridle reports; `None` for another fault, a contract that is not JSON, or when no
/// rule of the fault's family can be broken by a small edit of this value.
pub(crate) fn apply(
    contract: &Contract,
    generated: &Generated,
    fault: Fault,
    seed: u64,
) -> Option<Broken> {
    if !fault.is_rule() || contract.kind() != Kind::Json {
        return None;
    }
    let value = &generated.value;
    let mut tried = 0;
    let mut breakable: Vec<Vec<(Value, String)>> = Vec::new();
    for rule in contract.rules() {
        let expr = matches!(rule, DeclaredRule::Expr(_));
        if expr != (fault == Fault::BrokenExpr) || breaks(rule, value).is_some() {
            continue;
        }
        let mut kept = Vec::new();
        for edit in edits(&nodes(&places(rule, value), value)) {
            if tried >= MAX_TRIED || kept.len() >= KEPT_PER_RULE {
                break;
            }
            tried += 1;
            let Some(edited) = edit.applied(value) else {
                continue;
            };
            if !contract.schema().is_valid(&edited) {
                continue;
            }
            if let Some(target) = breaks(rule, &edited) {
                kept.push((edited, target));
            }
        }
        if !kept.is_empty() {
            breakable.push(kept);
        }
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let (edited, target) = breakable.choose(&mut rng)?.choose(&mut rng)?.clone();
    Some(Broken {
        fault,
        text: edited.to_string(),
        value: Some(edited),
        target,
    })
}

/// The pointer of the first violation of `rule` in `value`, if it breaks it.
fn breaks(rule: &DeclaredRule, value: &Value) -> Option<String> {
    let mut violations = Vec::new();
    rule.check(value, &mut violations);
    violations.into_iter().next().map(|v| v.path)
}

/// The pointers of the places `rule` looks at in `value`.
fn places(rule: &DeclaredRule, value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let scopes = |scope: Option<&PathPattern>| match scope {
        Some(scope) => scope.matches(value),
        None => vec![String::new()],
    };
    match rule {
        DeclaredRule::Expr(rule) => out = rule.path().matches(value),
        DeclaredRule::Unique { scope, path, .. } => {
            for base in scopes(scope.as_ref()) {
                if let Some(scoped) = value.pointer(&base) {
                    path.for_each_match(scoped, &base, |p, _| out.push(p.to_owned()));
                }
            }
        }
        DeclaredRule::LessThan {
            scope,
            lesser,
            greater,
            ..
        } => {
            for base in scope.matches(value) {
                out.push(child_pointer(&base, lesser));
                out.push(child_pointer(&base, greater));
            }
        }
        DeclaredRule::Implies {
            scope,
            when_path,
            then_path,
            ..
        } => {
            for base in scopes(scope.as_ref()) {
                out.push(join(&base, when_path));
                out.push(join(&base, then_path));
            }
        }
    }
    out
}

fn join(base: &str, path: &PathPattern) -> String {
    let relative = path.as_str().strip_prefix('/').unwrap_or(path.as_str());
    match relative {
        "" => base.to_owned(),
        relative => format!("{base}/{relative}"),
    }
}

/// Every node under the places (each place included), in document order, at most
/// [`MAX_NODES`].
fn nodes<'v>(places: &[String], value: &'v Value) -> Vec<(String, &'v Value)> {
    let mut out = Vec::new();
    for place in places {
        let Some(found) = value.pointer(place) else {
            continue;
        };
        let mut stack = vec![(place.clone(), found)];
        while let Some((pointer, node)) = stack.pop() {
            if out.len() >= MAX_NODES {
                return out;
            }
            match node {
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate().rev() {
                        stack.push((child_pointer(&pointer, &i.to_string()), item));
                    }
                }
                Value::Object(map) => {
                    for (key, child) in map.iter().rev() {
                        stack.push((child_pointer(&pointer, key), child));
                    }
                }
                _ => {}
            }
            out.push((pointer, node));
        }
    }
    out
}

/// One small change of the reply.
enum Edit {
    /// The value at the pointer replaced.
    Set(String, Value),
    /// An item added at the end of the array at the pointer.
    Push(String, Value),
}

impl Edit {
    fn applied(&self, value: &Value) -> Option<Value> {
        let mut edited = value.clone();
        match self {
            Self::Set(pointer, new) => *edited.pointer_mut(pointer)? = new.clone(),
            Self::Push(pointer, item) => edited
                .pointer_mut(pointer)?
                .as_array_mut()?
                .push(item.clone()),
        }
        Some(edited)
    }
}

/// The edits worth trying on `nodes`, the likeliest to break a rule first.
fn edits(nodes: &[(String, &Value)]) -> Vec<Edit> {
    let strings: Vec<&Value> = nodes
        .iter()
        .map(|(_, v)| *v)
        .filter(|v| v.is_string())
        .take(MAX_SOURCES)
        .collect();
    let numbers: Vec<&Value> = nodes
        .iter()
        .map(|(_, v)| *v)
        .filter(|v| v.is_number())
        .take(MAX_SOURCES)
        .collect();
    let mut out = Vec::new();
    for (pointer, node) in nodes {
        let others = |pool: &[&Value]| -> Vec<Value> {
            pool.iter()
                .filter(|v| **v != *node)
                .map(|v| (*v).clone())
                .collect()
        };
        match node {
            Value::Bool(b) => out.push(Edit::Set(pointer.clone(), Value::Bool(!b))),
            Value::Number(n) => {
                out.extend(
                    others(&numbers)
                        .into_iter()
                        .map(|v| Edit::Set(pointer.clone(), v)),
                );
                if let Some(i) = n.as_i64() {
                    out.push(Edit::Set(pointer.clone(), Value::from(i.saturating_add(1))));
                    out.push(Edit::Set(pointer.clone(), Value::from(i.saturating_sub(1))));
                } else if let Some(x) = n.as_f64() {
                    out.push(Edit::Set(pointer.clone(), Value::from(x + 1.0)));
                    out.push(Edit::Set(pointer.clone(), Value::from(x - 1.0)));
                }
            }
            Value::String(_) => {
                out.extend(
                    others(&strings)
                        .into_iter()
                        .map(|v| Edit::Set(pointer.clone(), v)),
                );
            }
            Value::Array(items) => {
                let absent = strings.iter().filter(|v| !items.contains(**v));
                out.extend(absent.map(|v| Edit::Push(pointer.clone(), (*v).clone())));
                if let Some(first) = items.first() {
                    out.push(Edit::Push(pointer.clone(), first.clone()));
                }
            }
            Value::Null | Value::Object(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests;
