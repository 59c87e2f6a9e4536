//! Tests of "never a fragment" (issue 33, part 4): a reply whose JSON breaks, closes early and
//! goes on, or holds a second value right after the first is refused — the repaired value is
//! never a strict part of a longer JSON text in the reply. The shapes a JSON-repair library's
//! test suite showed (and variations), then a property over generated values broken in those
//! ways.

use super::*;
use proptest::prelude::*;
use serde_json::{Value, json};

/// Marks, in a row's input, the place the refusal must name (removed before the repair).
const MARK: char = '‸';

/// What the repair must make of a reply.
#[derive(Debug)]
enum Want {
    /// Refused as broken (`parse`), at the marked place.
    Broken,
    /// Refused as ambiguous, the second value starting at the marked place.
    Ambiguous,
    /// Refused (nothing accepted), without a place to check.
    Refused,
    /// Accepted as this value.
    Value(Value),
}

/// The input without its mark, and the mark's (line, column).
fn unmark(input: &str) -> (String, Option<(usize, usize)>) {
    let at = input.find(MARK);
    let text = input.replace(MARK, "");
    (text.clone(), at.map(|at| line_column(&text, at)))
}

/// The value a repair accepts: nothing refused it and its text parses.
fn accepted(repaired: &Repaired) -> Option<Value> {
    if repaired.truncated.is_some() || repaired.ambiguous.is_some() || repaired.broken.is_some() {
        return None;
    }
    serde_json::from_str(&repaired.text).ok()
}

fn check(rows: &[(&str, RootHint, Want)]) {
    for (input, hint, want) in rows {
        let (text, place) = unmark(input);
        let repaired = repair(&text, *hint);
        match want {
            Want::Broken => {
                let broken = repaired
                    .broken
                    .as_ref()
                    .unwrap_or_else(|| panic!("{text:?} not broken: {repaired:?}"));
                assert_eq!(Some((broken.line, broken.column)), place, "{text:?}");
                assert!(serde_json::from_str::<Value>(&repaired.text).is_err());
                assert!(broken.found.contains("⟨here⟩"), "{broken:?}");
                assert!(repaired.truncated.is_none() && repaired.ambiguous.is_none());
            }
            Want::Ambiguous => {
                let ambiguity = repaired
                    .ambiguous
                    .as_ref()
                    .unwrap_or_else(|| panic!("{text:?} not ambiguous: {repaired:?}"));
                let (line, column) = place.unwrap_or_default();
                let at = format!("at line {line}, column {column};");
                assert!(ambiguity.message.contains(&at), "{text:?}: {ambiguity:?}");
            }
            Want::Refused => assert_eq!(accepted(&repaired), None, "{text:?}"),
            Want::Value(value) => {
                assert_eq!(accepted(&repaired).as_ref(), Some(value), "{text:?}");
            }
        }
    }
}

#[test]
fn the_shapes_a_repair_library_took_fragments_of_are_refused() {
    use RootHint::{Any, Array, Object};
    use Want::{Ambiguous, Broken, Refused};
    check(&[
        // The four quoted in issue 33.
        (r#"{"key1": ["v1", "v2"‸}, "key2": ["v3"]}"#, Any, Broken),
        (r#"{"key": "value"‸}, "key2": "value2"}"#, Object, Broken),
        (
            r#"{"headers": ["h1", "h2"], "rows": [["r1a", "r1b"], "r3a", "r3b"], ‸["r2a", "r2b"]]}"#,
            Any,
            Broken,
        ),
        (r#"{"key": ["a"], ‸["b"], ["c"], "k3": "v"}"#, Array, Broken),
        // Closed early at other depths, by either bracket.
        (r#"[1, 2‸], [3, 4]]"#, Array, Broken),
        (r#"[[1, 2], [3, 4]‸], [5, 6]]"#, Any, Broken),
        (r#"{"a": {"b": 1}‸}, "c": 2}"#, Any, Broken),
        (r#"[{"id": 1}‸], {"id": 2}]"#, Object, Broken),
        (r#"{"a": [1, 2‸}, "b": [3]}"#, Any, Broken),
        (r#"{"key": "value"‸} "key2": "value2"}"#, Any, Broken),
        (r#"{'key': 'value'‸}, 'key2': 'value2'}"#, Any, Broken),
        (r#"{"a": 1‸}, b: 2}"#, Any, Broken),
        // An unbalanced closer inside.
        (r#"{"a": [1, 2]‸], "b": 3}"#, Any, Broken),
        (
            "{\n  \"rows\": [\n    [1, 2]\n  ]‸],\n  \"total\": 2\n}",
            Any,
            Broken,
        ),
        // A second top-level value right after the first.
        ("{\"a\": 1}\n‸{\"b\": 2}", Any, Ambiguous),
        (r#"[{"id": 1}] ‸[{"id": 2}]"#, Array, Ambiguous),
        ("[1, 2] ‸[3]", Any, Ambiguous),
        ("{\"a\": 1}\n‸{\"a\": 2, \"b\":", Object, Ambiguous),
        // Fenced.
        (
            "```json\n{\"key\": \"value\"‸}, \"key2\": \"value2\"}\n```",
            Any,
            Broken,
        ),
        (
            "```json\n{\"key\": [\"a\"], ‸[\"b\"], \"k3\": \"v\"}\n```",
            Any,
            Broken,
        ),
        ("```json\n{\"a\": 1}\n‸{\"a\": 2}\n```", Any, Ambiguous),
        ("Sure:\n```\n[[1], [2]‸], [3]]\n```\nDone.", Array, Broken),
        // Wrapped in prose.
        (
            "Here is the JSON: {\"key\": [\"a\"], ‸[\"b\"], [\"c\"], \"k3\": \"v\"} Hope it helps.",
            Any,
            Broken,
        ),
        (
            "Sure!\n{\"key1\": [\"v1\", \"v2\"‸}, \"key2\": [\"v3\"]}\nLet me know.",
            Object,
            Broken,
        ),
        ("Result:\n[[1, 2], [3, 4]‸], [5, 6]]\nDone.", Any, Broken),
        // The opening bracket missing: the reply starts inside the value.
        (r#"‸"key": "value", "key2": {"a": 1}}"#, Any, Broken),
        (r#"‸1, 2, [3]]"#, Any, Broken),
        (r#"Here: "key": "value", "key2": {"a": 1}}"#, Any, Refused),
        ("Here: 1, 2, [3]]", Any, Refused),
        (
            "1, 2 and 3:\n```json\n{\"a\": 1‸}, \"b\": 2}\n```",
            Any,
            Broken,
        ),
    ]);
}

#[test]
fn what_is_plainly_not_more_json_still_repairs() {
    use RootHint::{Any, Array, Object};
    use Want::Value as V;
    check(&[
        // A closer too many, a lone comma, prose after a comma: nothing is lost.
        ("{\"a\": 1}}", Any, V(json!({"a": 1}))),
        ("[[1, 2]]]\n", Any, V(json!([[1, 2]]))),
        ("{\"a\": 1},", Any, V(json!({"a": 1}))),
        ("{\"a\": 1}, as you asked.", Any, V(json!({"a": 1}))),
        ("{\"a\": [1, 2}", Any, V(json!({"a": [1, 2]}))),
        // The same value again is no second answer; one of another root is no answer.
        ("{\"a\": 1} {\"a\": 1}", Any, V(json!({"a": 1}))),
        ("[1, 2]\n{\"a\": 1}", Object, V(json!({"a": 1}))),
        ("{\"a\": 1}\n[1, 2]", Object, V(json!({"a": 1}))),
        ("[1, 2]\n{\"a\": 1}", Array, V(json!([1, 2]))),
        // Brackets in prose that never were JSON.
        ("[Note] {\"a\": 1}", Any, V(json!({"a": 1}))),
        (
            "\"Note\": the answer is {\"a\": 1}",
            Any,
            V(json!({"a": 1})),
        ),
        ("use {braces} like: {\"a\": [1]}", Any, V(json!({"a": [1]}))),
        ("Here: {\"a\": 1} and {\"b\": 2}", Any, V(json!({"a": 1}))),
        // JSON-like snippets in the prose before the answer: passed over, brackets and all.
        (
            "I answer in the {key: value} form: {\"k\": 1}",
            Any,
            V(json!({"k": 1})),
        ),
        (
            "Like {a: 1, b: ...} here: {\"k\": 1}",
            Any,
            V(json!({"k": 1})),
        ),
        (
            "Use {a: 1}, {b: 2} forms: {\"k\": 1}",
            Object,
            V(json!({"k": 1})),
        ),
        ("Not [1, 2, ...] but [3]", Array, V(json!([3]))),
        (
            "1, 2 and 3:\n```json\n{\"a\": 1}\n```",
            Any,
            V(json!({"a": 1})),
        ),
        // A continuation outside the fence is not the fenced value's.
        (
            "```json\n{\"a\": 1}\n```\n, \"b\": 2}",
            Any,
            V(json!({"a": 1})),
        ),
    ]);
}

#[test]
fn refusals_name_the_place_in_words() {
    let text = "{\"key1\": [\"v1\", \"v2\"}, \"key2\": [\"v3\"]}";
    let broken = repair(text, RootHint::Object).broken.expect("broken");
    assert_eq!(
        broken.message,
        "the '}' at line 1, column 21 closes the whole JSON value, but more members or items follow it: a bracket before it is missing or one too many; send the whole value as one JSON document"
    );
    assert_eq!(
        broken.found,
        "{\"key1\": [\"v1\", \"v2\"⟨here⟩}, \"key2\": [\"v3\"]}"
    );
    let text = "Sure:\n{\"key\": [\"a\"],\n  [\"b\"], \"k3\": \"v\"}";
    let broken = repair(text, RootHint::Any).broken.expect("broken");
    assert_eq!(
        broken.message,
        "the JSON breaks at line 3, column 3: expected a member name in double quotes, found '['"
    );
    assert_eq!(
        broken.found,
        "Sure: {\"key\": [\"a\"], ⟨here⟩[\"b\"], \"k3\": \"v\"}"
    );
    let text = "\"key\": 1, \"b\": 2}";
    let broken = repair(text, RootHint::Any).broken.expect("broken");
    assert_eq!(
        broken.message,
        "the JSON breaks at line 1, column 1: expected the opening '{' or '[' of the JSON value, found '\"'"
    );
    let ambiguity = repair("[1]\n[2]", RootHint::Any).ambiguous.expect("two");
    assert_eq!(
        ambiguity.message,
        "a second JSON value starts right after the first, at line 2, column 1; send exactly one JSON value"
    );
    assert_eq!(ambiguity.found, "[1] ⟨here⟩[2]");
}

// ---- the property ---------------------------------------------------------------------------

/// The shape of a generated value; leaves and keys are numbered when it is written, so no two
/// are equal and no part of the value can be mistaken for another.
#[derive(Debug, Clone)]
enum Shape {
    Leaf,
    Array(Vec<Shape>),
    Object(Vec<Shape>),
}

fn shape() -> impl Strategy<Value = Shape> {
    let leaf = Just(Shape::Leaf);
    leaf.prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..5).prop_map(Shape::Array),
            prop::collection::vec(inner, 1..5).prop_map(Shape::Object),
        ]
    })
    .prop_filter("a container root", |s| !matches!(s, Shape::Leaf))
}

/// How the written value is broken, at the `target`-th container (in document order), after
/// its `k`-th child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Break {
    /// The container's closing bracket written after child `k` too (`{"a": 1}, "b": 2}`).
    EarlyClose,
    /// The container closed by the other bracket (`["v1", "v2"}`).
    WrongCloser,
    /// Member `k + 1` of an object written without its key (`{"k": ["a"], ["b"]}`).
    KeyDropped,
    /// The root array's items written one after another, without brackets or commas.
    SplitRoot,
    /// The root's opening bracket left out.
    OpenerDropped,
}

struct Writer {
    out: String,
    pretty: bool,
    leaves: usize,
    keys: usize,
    containers: usize,
    brk: Break,
    target: usize,
    k: usize,
    /// Whether the break was written (the target exists and fits it).
    applied: bool,
}

impl Writer {
    fn newline(&mut self, depth: usize) {
        if self.pretty {
            self.out.push('\n');
            self.out.push_str(&"  ".repeat(depth));
        }
    }

    /// Writes `shape` (the break included) and returns the value it stands for, unbroken.
    fn write(&mut self, shape: &Shape, depth: usize) -> Value {
        let children = match shape {
            Shape::Leaf => {
                self.leaves += 1;
                let value = if self.leaves.is_multiple_of(2) {
                    json!(self.leaves)
                } else {
                    json!(format!("s{}", self.leaves))
                };
                self.out.push_str(&value.to_string());
                return value;
            }
            Shape::Array(c) | Shape::Object(c) => c,
        };
        let object = matches!(shape, Shape::Object(_));
        let id = self.containers;
        self.containers += 1;
        let target = id == self.target;
        let (open, close, wrong) = if object {
            ('{', '}', ']')
        } else {
            ('[', ']', '}')
        };
        let root = depth == 0;
        let split = root && self.brk == Break::SplitRoot;
        if split {
            let containers = children.iter().take(2).all(|c| !matches!(c, Shape::Leaf));
            self.applied = !object && children.len() >= 2 && containers;
        }
        let dropped = root && self.brk == Break::OpenerDropped;
        if dropped {
            self.applied = children.len() >= 2;
        }
        if !split && !dropped {
            self.out.push(open);
        }
        let mut members = serde_json::Map::new();
        let mut items = Vec::new();
        for (i, child) in children.iter().enumerate() {
            if i > 0 {
                self.out.push_str(if split { "\n" } else { "," });
            }
            self.newline(depth + 1);
            self.keys += 1;
            let key = format!("k{}", self.keys);
            let keyless = target && self.brk == Break::KeyDropped && i == self.k + 1;
            if keyless {
                self.applied = true;
            }
            if object && !keyless {
                self.out.push_str(&format!("\"{key}\": "));
            }
            let value = self.write(child, depth + 1);
            if target && self.brk == Break::EarlyClose && i == self.k.min(children.len() - 1) {
                self.applied = true;
                self.out.push(close);
            }
            if object {
                members.insert(key, value);
            } else {
                items.push(value);
            }
        }
        self.newline(depth);
        if target && self.brk == Break::WrongCloser {
            self.applied = true;
            self.out.push(wrong);
        } else if !split {
            self.out.push(close);
        }
        if object {
            Value::Object(members)
        } else {
            Value::Array(items)
        }
    }
}

/// Every value strictly inside `value`.
fn strict_parts(value: &Value, out: &mut Vec<Value>) {
    let children: Vec<&Value> = match value {
        Value::Array(items) => items.iter().collect(),
        Value::Object(members) => members.values().collect(),
        _ => Vec::new(),
    };
    for child in children {
        out.push(child.clone());
        strict_parts(child, out);
    }
}

/// Each container of `shape` in document order (as [`Writer`] numbers them): whether it is an
/// object, and how many children it has.
fn containers(shape: &Shape, out: &mut Vec<(bool, usize)>) {
    if let Shape::Array(children) | Shape::Object(children) = shape {
        out.push((matches!(shape, Shape::Object(_)), children.len()));
        for child in children {
            containers(child, out);
        }
    }
}

/// The scalars of `value`, sorted (as text).
fn leaves(value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(items) => stack.extend(items),
            Value::Object(members) => stack.extend(members.values()),
            scalar => out.push(scalar.to_string()),
        }
    }
    out.sort();
    out
}

fn broken_kind() -> impl Strategy<Value = Break> {
    prop_oneof![
        Just(Break::EarlyClose),
        Just(Break::WrongCloser),
        Just(Break::KeyDropped),
        Just(Break::SplitRoot),
        Just(Break::OpenerDropped),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, .. ProptestConfig::default() })]

    /// The repaired value is never a strict part of a longer JSON text in the reply: the repair
    /// refuses, or returns a value that is no strict part of the value the reply was written
    /// from and that keeps every one of its scalars.
    #[test]
    fn the_repaired_value_is_never_a_strict_part(
        shape in shape(),
        brk in broken_kind(),
        target in any::<prop::sample::Index>(),
        k in any::<prop::sample::Index>(),
        pretty in any::<bool>(),
        wrap in 0usize..5,
        hint in prop_oneof![Just(RootHint::Any), Just(RootHint::Object), Just(RootHint::Array)],
    ) {
        // The container to break, among those the break fits, and the child to break it at.
        let mut all = Vec::new();
        containers(&shape, &mut all);
        let eligible: Vec<(usize, usize)> = all
            .iter()
            .enumerate()
            .filter(|(_, (object, len))| brk != Break::KeyDropped || (*object && *len >= 2))
            .map(|(id, (_, len))| (id, *len))
            .collect();
        prop_assume!(!eligible.is_empty());
        let (target, len) = eligible[target.index(eligible.len())];
        let k = match brk {
            Break::KeyDropped => k.index(len - 1),
            _ => k.index(len),
        };
        let mut writer = Writer {
            out: String::new(), pretty, leaves: 0, keys: 0, containers: 0, brk, target, k, applied: false,
        };
        let value = writer.write(&shape, 0);
        prop_assume!(writer.applied);
        let json = writer.out;
        let text = match wrap {
            0 => json,
            1 => format!("Sure! Here is the JSON:\n{json}"),
            2 => format!("{json}\n\nLet me know if you need anything else."),
            3 => format!("```json\n{json}\n```"),
            _ => format!("Of course.\n\n```json\n{json}\n```\nDone."),
        };
        for hint in [hint, RootHint::Any] {
            // Two values one after the other: one whose root the contract does not take is
            // plainly not an answer (`[…]` then `{…}` for an object contract), so the other is.
            let fits = |v: &Value| match hint {
                RootHint::Any => true,
                RootHint::Object => v.is_object(),
                RootHint::Array => v.is_array(),
            };
            if brk == Break::SplitRoot && !value.as_array().is_some_and(|items| items.iter().take(2).all(fits)) {
                continue;
            }
            let repaired = repair(&text, hint);
            let Some(got) = accepted(&repaired) else { continue };
            let mut parts = Vec::new();
            strict_parts(&value, &mut parts);
            prop_assert!(!parts.contains(&got), "{text:?} → a part: {got}");
            prop_assert_eq!(leaves(&got), leaves(&value), "{:?} → {} lost data", text, got);
        }
    }
}
