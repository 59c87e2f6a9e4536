//! [`DeclaredRule`]: the rules a contract declares beside its JSON Schema, for what a schema
//! cannot say. (A violation's rule *name* is [`crate::Rule`].)
//!
//! Four kinds, each declared in the manifest (never arbitrary code):
//! - `unique` — the values at a path are unique (within each match of an optional scope);
//! - `less_than` — in each object at a path, one number is less than another (`min < max`);
//! - `implies` — if the value at one path meets a condition, the value at another must meet one
//!   too (`danger_level` critical or emergency ⇒ `is_safe` is false);
//! - `expr` — an expression is true at each match of a path ([`crate::expr`]: CEL, bounded).
//!
//! Rules run after schema validation, on the parsed value; each broken rule is a [`Violation`]
//! whose rule name is the kind.

use crate::expr::{ExprInputs, ExprRule};
use crate::pointer::PathPattern;
use crate::report::Violation;
use crate::rule::Rule as RuleName;
use crate::schema::quote;
use serde_json::Value;
use std::collections::HashMap;

/// A test on the value at a path.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// The value equals this one.
    Equals(Value),
    /// The value equals one of these.
    OneOf(Vec<Value>),
    /// The path is present (`true`) or absent (`false`); `null` counts as present.
    Present(bool),
}

impl Condition {
    pub(crate) fn holds(&self, value: Option<&Value>) -> bool {
        match self {
            Self::Equals(expected) => value == Some(expected),
            Self::OneOf(options) => value.is_some_and(|v| options.contains(v)),
            Self::Present(wanted) => value.is_some() == *wanted,
        }
    }

    /// The condition as a predicate: `is "x"`, `is one of …`, `is present`.
    fn describe(&self) -> String {
        self.phrase("is")
    }

    /// The condition as a demand: `must be "x"`, `must be one of …`, `must be present`.
    fn expectation(&self) -> String {
        self.phrase("must be")
    }

    fn phrase(&self, verb: &str) -> String {
        match self {
            Self::Equals(v) => format!("{verb} {v}"),
            Self::OneOf(options) => {
                let list: Vec<String> = options.iter().map(Value::to_string).collect();
                format!("{verb} one of {}", list.join(", "))
            }
            Self::Present(true) => format!("{verb} present"),
            Self::Present(false) => format!("{verb} absent"),
        }
    }
}

/// One declared rule, ready to check.
#[derive(Debug, Clone, PartialEq)]
pub enum DeclaredRule {
    /// Values at `path` (relative to each `scope` match, or absolute without a scope) are unique.
    Unique {
        scope: Option<PathPattern>,
        path: PathPattern,
        note: Option<String>,
    },
    /// In each object matched by `scope`, `lesser < greater` (or `<=` with `allow_equal`), when
    /// both are numbers.
    LessThan {
        scope: PathPattern,
        lesser: String,
        greater: String,
        allow_equal: bool,
        note: Option<String>,
    },
    /// Under each `scope` match (or the root), `when` on `when_path` ⇒ `then` on `then_path`.
    Implies {
        scope: Option<PathPattern>,
        when_path: PathPattern,
        when: Condition,
        then_path: PathPattern,
        then: Condition,
        note: Option<String>,
    },
    /// An expression that is true at each match of its path.
    Expr(Box<ExprRule>),
}

impl DeclaredRule {
    /// The rule violations of it carry.
    pub fn kind(&self) -> RuleName {
        match self {
            Self::Unique { .. } => RuleName::Unique,
            Self::LessThan { .. } => RuleName::LessThan,
            Self::Implies { .. } => RuleName::Implies,
            Self::Expr(_) => RuleName::Expr,
        }
    }

    /// The rule in one line, for the prompt.
    pub fn describe(&self) -> String {
        let (text, note) = match self {
            Self::Expr(rule) => return rule.describe(),
            Self::Unique { scope, path, note } => (
                match scope {
                    Some(scope) => format!("within each {scope}, the values at {path} are unique"),
                    None => format!("the values at {path} are unique"),
                },
                note,
            ),
            Self::LessThan {
                scope,
                lesser,
                greater,
                allow_equal,
                note,
            } => (
                format!(
                    "in each {scope} that has both, \"{lesser}\" {} \"{greater}\"",
                    if *allow_equal {
                        "is at most"
                    } else {
                        "is less than"
                    }
                ),
                note,
            ),
            Self::Implies {
                scope,
                when_path,
                when,
                then_path,
                then,
                note,
            } => (
                match scope {
                    Some(scope) => format!(
                        "in each {scope}: when {when_path} {}, {then_path} {}",
                        when.describe(),
                        then.expectation()
                    ),
                    None => format!(
                        "when {when_path} {}, {then_path} {}",
                        when.describe(),
                        then.expectation()
                    ),
                },
                note,
            ),
        };
        match note {
            Some(note) => format!("{text} ({note})"),
            None => text,
        }
    }

    /// Appends a violation for every place `value` breaks the rule (an expression rule sees an
    /// empty context).
    pub fn check(&self, value: &Value, out: &mut Vec<Violation>) {
        let context = crate::Context::new();
        self.check_in(&ExprInputs::new(value, &context), out);
    }

    /// Appends a violation for every place the inputs' value breaks the rule.
    pub fn check_in(&self, inputs: &ExprInputs<'_>, out: &mut Vec<Violation>) {
        let value = inputs.value();
        match self {
            Self::Expr(rule) => rule.check(inputs, out),
            Self::Unique { scope, path, note } => {
                for_each_scope(scope.as_ref(), value, |base, scoped| {
                    check_unique(path, base, scoped, note.as_deref(), out)
                });
            }
            Self::LessThan {
                scope,
                lesser,
                greater,
                allow_equal,
                note,
            } => {
                scope.for_each_match(value, "", |pointer, object| {
                    let (Some(a), Some(b)) = (
                        object.get(lesser).and_then(Value::as_f64),
                        object.get(greater).and_then(Value::as_f64),
                    ) else {
                        return;
                    };
                    let ok = if *allow_equal { a <= b } else { a < b };
                    if !ok {
                        let relation = if *allow_equal { "at most" } else { "less than" };
                        let found = format!(
                            "{{\"{lesser}\":{},\"{greater}\":{}}}",
                            object[lesser.as_str()],
                            object[greater.as_str()]
                        );
                        out.push(
                            Violation::new(
                                pointer,
                                RuleName::LessThan,
                                with_note(
                                    format!(
                                        "\"{lesser}\" ({a}) must be {relation} \"{greater}\" ({b})"
                                    ),
                                    note.as_deref(),
                                ),
                            )
                            .with_found(found),
                        );
                    }
                });
            }
            Self::Implies {
                scope,
                when_path,
                when,
                then_path,
                then,
                note,
            } => {
                for_each_scope(scope.as_ref(), value, |base, scoped| {
                    let when_value = lookup(when_path, scoped);
                    if !when.holds(when_value) {
                        return;
                    }
                    let then_value = lookup(then_path, scoped);
                    if then.holds(then_value) {
                        return;
                    }
                    let shown_when = when_value.map_or_else(|| "absent".to_owned(), quote);
                    let found = then_value.map_or_else(|| "absent".to_owned(), quote);
                    let pointer = join(base, then_path);
                    out.push(
                        Violation::new(
                            pointer,
                            RuleName::Implies,
                            with_note(
                                format!(
                                    "{} when {} is {shown_when}; found {found}",
                                    then.expectation(),
                                    join(base, when_path)
                                ),
                                note.as_deref(),
                            ),
                        )
                        .with_found(found),
                    );
                });
            }
        }
    }
}

fn with_note(message: String, note: Option<&str>) -> String {
    match note {
        Some(note) => format!("{message}: {note}"),
        None => message,
    }
}

fn for_each_scope<'v>(
    scope: Option<&PathPattern>,
    value: &'v Value,
    mut f: impl FnMut(&str, &'v Value),
) {
    match scope {
        Some(scope) => scope.for_each_match(value, "", |pointer, scoped| f(pointer, scoped)),
        None => f("", value),
    }
}

/// The single value a wildcard-free path names under `scoped`.
fn lookup<'v>(path: &PathPattern, scoped: &'v Value) -> Option<&'v Value> {
    let mut found = None;
    path.for_each_match(scoped, "", |_, v| {
        if found.is_none() {
            found = Some(v);
        }
    });
    found
}

/// The pointer of `path` under `base` (the path need not exist in the value).
fn join(base: &str, path: &PathPattern) -> String {
    let rel = path.as_str().strip_prefix('/').unwrap_or(path.as_str());
    if rel.is_empty() {
        base.to_owned()
    } else {
        format!("{base}/{rel}")
    }
}

fn check_unique(
    path: &PathPattern,
    base: &str,
    scoped: &Value,
    note: Option<&str>,
    out: &mut Vec<Violation>,
) {
    // Keyed by the value's canonical JSON text, so that 1 and "1" stay distinct.
    let mut first_seen: HashMap<String, String> = HashMap::new();
    path.for_each_match(scoped, base, |pointer, v| {
        let key = v.to_string();
        match first_seen.get(&key) {
            Some(first) => out.push(
                Violation::new(
                    pointer,
                    RuleName::Unique,
                    with_note(
                        format!("duplicate value {} (already used at {first})", quote(v)),
                        note,
                    ),
                )
                .with_found(quote(v)),
            ),
            None => {
                first_seen.insert(key, pointer.to_owned());
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(s: &str) -> PathPattern {
        PathPattern::relative(s).unwrap()
    }

    fn run(rule: &DeclaredRule, value: Value) -> Vec<(String, String)> {
        let mut out = Vec::new();
        rule.check(&value, &mut out);
        out.into_iter().map(|v| (v.path, v.message)).collect()
    }

    #[test]
    fn unique_reports_each_later_duplicate() {
        let rule = DeclaredRule::Unique {
            scope: None,
            path: PathPattern::absolute("/f/*/id").unwrap(),
            note: Some("ids must be unique".into()),
        };
        let got = run(
            &rule,
            json!({"f": [{"id": "a"}, {"id": "b"}, {"id": "a"}, {"id": 1}, {"id": "1"}]}),
        );
        assert_eq!(
            got,
            vec![(
                "/f/2/id".into(),
                "duplicate value \"a\" (already used at /f/0/id): ids must be unique".into()
            )]
        );
    }

    #[test]
    fn unique_within_scope_compares_only_inside_each_scope() {
        let rule = DeclaredRule::Unique {
            scope: Some(PathPattern::absolute("/f/*").unwrap()),
            path: p("options/*/value"),
            note: None,
        };
        let value = json!({"f": [
            {"options": [{"value": "x"}, {"value": "y"}]},
            {"options": [{"value": "x"}, {"value": "x"}]}
        ]});
        let got = run(&rule, value);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, "/f/1/options/1/value");
    }

    #[test]
    fn less_than_checks_pairs_only_when_both_are_numbers() {
        let rule = DeclaredRule::LessThan {
            scope: PathPattern::absolute("/f/*").unwrap(),
            lesser: "min".into(),
            greater: "max".into(),
            allow_equal: false,
            note: None,
        };
        let got = run(
            &rule,
            json!({"f": [{"min": 1, "max": 10}, {"min": 10, "max": 1}, {"min": 5, "max": 5}, {"min": 1}, {"min": "a", "max": 0}]}),
        );
        assert_eq!(
            got.iter().map(|g| g.0.as_str()).collect::<Vec<_>>(),
            vec!["/f/1", "/f/2"]
        );
        assert_eq!(got[0].1, "\"min\" (10) must be less than \"max\" (1)");
        let lenient = DeclaredRule::LessThan {
            scope: PathPattern::absolute("/f/*").unwrap(),
            lesser: "min".into(),
            greater: "max".into(),
            allow_equal: true,
            note: None,
        };
        assert_eq!(run(&lenient, json!({"f": [{"min": 5, "max": 5}]})).len(), 0);
    }

    #[test]
    fn implies_checks_the_consequence_only_when_the_condition_holds() {
        let rule = DeclaredRule::Implies {
            scope: None,
            when_path: p("/safety/danger_level"),
            when: Condition::OneOf(vec![json!("critical"), json!("emergency")]),
            then_path: p("/safety/is_safe"),
            then: Condition::Equals(json!(false)),
            note: None,
        };
        let bad = run(
            &rule,
            json!({"safety": {"danger_level": "critical", "is_safe": true}}),
        );
        assert_eq!(
            bad,
            vec![(
                "/safety/is_safe".into(),
                "must be false when /safety/danger_level is \"critical\"; found true".into()
            )]
        );
        assert!(
            run(
                &rule,
                json!({"safety": {"danger_level": "warning", "is_safe": true}})
            )
            .is_empty()
        );
        assert!(
            run(
                &rule,
                json!({"safety": {"danger_level": "emergency", "is_safe": false}})
            )
            .is_empty()
        );
        let missing = run(&rule, json!({"safety": {"danger_level": "emergency"}}));
        assert!(missing[0].1.ends_with("found absent"));
    }

    #[test]
    fn implies_in_scope_uses_relative_paths() {
        let rule = DeclaredRule::Implies {
            scope: Some(PathPattern::absolute("/fields/*").unwrap()),
            when_path: p("type"),
            when: Condition::Equals(json!("radio")),
            then_path: p("options"),
            then: Condition::Present(true),
            note: None,
        };
        let got = run(
            &rule,
            json!({"fields": [{"type": "radio", "options": []}, {"type": "radio"}, {"type": "text"}]}),
        );
        assert_eq!(
            got.iter().map(|g| g.0.as_str()).collect::<Vec<_>>(),
            vec!["/fields/1/options"]
        );
    }

    #[test]
    fn rules_describe_themselves_for_the_prompt() {
        let rule = DeclaredRule::Implies {
            scope: None,
            when_path: p("/a"),
            when: Condition::OneOf(vec![json!("x"), json!("y")]),
            then_path: p("/b"),
            then: Condition::Equals(json!(false)),
            note: Some("because".into()),
        };
        assert_eq!(
            rule.describe(),
            "when /a is one of \"x\", \"y\", /b must be false (because)"
        );
    }
}
