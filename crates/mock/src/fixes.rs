//! [`fix_rules`]: targeted fixes that make a generated value meet a contract's declared rules
//! (`unique`, `less_than`, `implies`; not `expr`), which a JSON Schema-driven generator cannot know about.
//!
//! Each fix is the smallest change a careful writer would make: a duplicate gets a suffix,
//! `min`/`max` the wrong way round are swapped, and a broken implication is mended by flipping
//! a boolean premise (`is_safe: false` ⇒ … becomes `is_safe: true`) or else by making the
//! consequence true. The caller validates afterwards; whatever is still wrong is regenerated.

use bridle_core::pointer::PathPattern;
use bridle_core::rules::{Condition, DeclaredRule};
use serde_json::Value;

/// Fix passes over all rules (one fix can break another rule; a few passes settle it).
const PASSES: usize = 4;

/// Changes `value` so that it breaks fewer of `rules`; returns whether anything changed.
pub(crate) fn fix_rules(rules: &[DeclaredRule], value: &mut Value) -> bool {
    let mut any = false;
    for _ in 0..PASSES {
        let mut changed = false;
        for rule in rules {
            changed |= fix_rule(rule, value);
        }
        any |= changed;
        if !changed {
            break;
        }
    }
    any
}

fn fix_rule(rule: &DeclaredRule, value: &mut Value) -> bool {
    match rule {
        // An expression says what must hold, not how to make it hold: the caller regenerates.
        DeclaredRule::Expr(_) => false,
        DeclaredRule::Unique { .. } => fix_unique(rule, value),
        DeclaredRule::LessThan {
            scope,
            lesser,
            greater,
            allow_equal,
            ..
        } => fix_less_than(scope, lesser, greater, *allow_equal, value),
        DeclaredRule::Implies {
            scope,
            when_path,
            when,
            then_path,
            then,
            ..
        } => {
            let mut changed = false;
            for base in scope_pointers(scope.as_ref(), value) {
                let when_at = join(&base, when_path);
                let then_at = join(&base, then_path);
                let premise = value.pointer(&when_at);
                if !holds(when, premise) || holds(then, value.pointer(&then_at)) {
                    continue;
                }
                changed |= match (when, premise) {
                    (Condition::Equals(Value::Bool(b)), Some(Value::Bool(_))) => {
                        set(value, &when_at, Value::Bool(!b))
                    }
                    _ => satisfy(value, &then_at, then),
                };
            }
            changed
        }
    }
}

/// Later duplicates get a suffix (`mood` → `mood_2`); numbers are moved up.
fn fix_unique(rule: &DeclaredRule, value: &mut Value) -> bool {
    let mut violations = Vec::new();
    rule.check(value, &mut violations);
    let mut changed = false;
    for (n, violation) in violations.iter().enumerate() {
        let Some(slot) = value.pointer_mut(&violation.path) else {
            continue;
        };
        let bump = n as u64 + 2;
        let replacement = match slot {
            Value::String(s) => Value::String(format!("{s}_{bump}")),
            Value::Number(x) => match (x.as_i64(), x.as_f64()) {
                (Some(i), _) => Value::from(i.saturating_add(bump as i64)),
                (None, Some(f)) => Value::from(f + bump as f64),
                (None, None) => continue,
            },
            _ => continue,
        };
        *slot = replacement;
        changed = true;
    }
    changed
}

fn fix_less_than(
    scope: &PathPattern,
    lesser: &str,
    greater: &str,
    allow_equal: bool,
    value: &mut Value,
) -> bool {
    let mut changed = false;
    for pointer in scope_pointers(Some(scope), value) {
        let Some(Value::Object(object)) = value.pointer_mut(&pointer) else {
            continue;
        };
        let (Some(a), Some(b)) = (object.get(lesser).cloned(), object.get(greater).cloned()) else {
            continue;
        };
        let (Some(x), Some(y)) = (a.as_f64(), b.as_f64()) else {
            continue;
        };
        if x < y || (allow_equal && x == y) {
            continue;
        }
        if x == y {
            let above = match b.as_i64() {
                Some(i) => Value::from(i.saturating_add(1)),
                None => Value::from(y + 1.0),
            };
            object.insert(greater.to_owned(), above);
        } else {
            object.insert(lesser.to_owned(), b);
            object.insert(greater.to_owned(), a);
        }
        changed = true;
    }
    changed
}

/// Makes `condition` hold at `pointer`, when a value for it is known.
fn satisfy(value: &mut Value, pointer: &str, condition: &Condition) -> bool {
    match condition {
        Condition::Equals(wanted) => set(value, pointer, wanted.clone()),
        Condition::OneOf(options) => options
            .first()
            .is_some_and(|first| set(value, pointer, first.clone())),
        Condition::Present(false) => remove(value, pointer),
        Condition::Present(true) => false,
    }
}

fn holds(condition: &Condition, value: Option<&Value>) -> bool {
    match condition {
        Condition::Equals(expected) => value == Some(expected),
        Condition::OneOf(options) => value.is_some_and(|v| options.contains(v)),
        Condition::Present(wanted) => value.is_some() == *wanted,
    }
}

fn scope_pointers(scope: Option<&PathPattern>, value: &Value) -> Vec<String> {
    match scope {
        Some(scope) => {
            let mut out = Vec::new();
            scope.for_each_match(value, "", |pointer, _| out.push(pointer.to_owned()));
            out
        }
        None => vec![String::new()],
    }
}

fn join(base: &str, path: &PathPattern) -> String {
    let rel = path.as_str().strip_prefix('/').unwrap_or(path.as_str());
    if rel.is_empty() {
        base.to_owned()
    } else {
        format!("{base}/{rel}")
    }
}

/// Sets the value at `pointer`, adding the member to its parent object when it is absent.
fn set(value: &mut Value, pointer: &str, new: Value) -> bool {
    if let Some(slot) = value.pointer_mut(pointer) {
        *slot = new;
        return true;
    }
    let Some((parent, key)) = pointer.rsplit_once('/') else {
        return false;
    };
    match value.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.insert(unescape(key), new);
            true
        }
        _ => false,
    }
}

fn remove(value: &mut Value, pointer: &str) -> bool {
    let Some((parent, key)) = pointer.rsplit_once('/') else {
        return false;
    };
    match value.pointer_mut(parent) {
        Some(Value::Object(map)) => map.remove(&unescape(key)).is_some(),
        _ => false,
    }
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(s: &str) -> PathPattern {
        PathPattern::absolute(s).unwrap()
    }

    #[test]
    fn implies_flips_a_boolean_premise_or_sets_the_consequence() {
        let unsafe_means_critical = DeclaredRule::Implies {
            scope: None,
            when_path: p("/safety/is_safe"),
            when: Condition::Equals(json!(false)),
            then_path: p("/safety/danger_level"),
            then: Condition::OneOf(vec![json!("critical"), json!("emergency")]),
            note: None,
        };
        let critical_means_unsafe = DeclaredRule::Implies {
            scope: None,
            when_path: p("/safety/danger_level"),
            when: Condition::OneOf(vec![json!("critical"), json!("emergency")]),
            then_path: p("/safety/is_safe"),
            then: Condition::Equals(json!(false)),
            note: None,
        };
        let rules = [unsafe_means_critical, critical_means_unsafe];
        let mut value = json!({"safety": {"is_safe": false, "danger_level": null}});
        assert!(fix_rules(&rules, &mut value));
        assert_eq!(
            value,
            json!({"safety": {"is_safe": true, "danger_level": null}})
        );
        let mut value = json!({"safety": {"is_safe": true, "danger_level": "emergency"}});
        assert!(fix_rules(&rules, &mut value));
        assert_eq!(
            value,
            json!({"safety": {"is_safe": false, "danger_level": "emergency"}})
        );
        let mut broken = Vec::new();
        for rule in &rules {
            rule.check(&value, &mut broken);
        }
        assert!(broken.is_empty());
    }

    #[test]
    fn less_than_swaps_or_lifts_and_unique_adds_suffixes() {
        let rules = [
            DeclaredRule::LessThan {
                scope: p("/fields/*"),
                lesser: "min".into(),
                greater: "max".into(),
                allow_equal: false,
                note: None,
            },
            DeclaredRule::Unique {
                scope: None,
                path: p("/fields/*/id"),
                note: None,
            },
        ];
        let mut value = json!({"fields": [
            {"id": "mood", "min": 5, "max": 1},
            {"id": "mood", "min": 3, "max": 3},
            {"id": "mood"}
        ]});
        assert!(fix_rules(&rules, &mut value));
        assert_eq!(
            value,
            json!({"fields": [
                {"id": "mood", "min": 1, "max": 5},
                {"id": "mood_2", "min": 3, "max": 4},
                {"id": "mood_3"}
            ]})
        );
        assert!(!fix_rules(&rules, &mut value));
    }

    #[test]
    fn set_and_remove_reach_absent_members() {
        let mut value = json!({"a": {}});
        assert!(set(&mut value, "/a/b~1c", json!(1)));
        assert_eq!(value, json!({"a": {"b/c": 1}}));
        assert!(remove(&mut value, "/a/b~1c"));
        assert!(!set(&mut value, "/x/y", json!(1)));
        assert!(!remove(&mut value, ""));
    }
}
