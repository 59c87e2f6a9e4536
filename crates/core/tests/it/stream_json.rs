//! Streaming `json` replies through [`StreamCheck`]: partial values, early aborts on each kind
//! of proven violation (each agreeing with the complete check, a value closed early included),
//! the documented exceptions, and property tests over generated replies split at random.

use crate::selfhelp;
use bridle_core::{Abort, Context, Contract, StreamCheck};
use proptest::prelude::*;
use serde_json::{Value, json};

/// What streaming one reply gave.
#[derive(Debug, Default)]
struct Streamed {
    /// Every partial value, in order.
    partials: Vec<String>,
    /// The abort, with how many bytes had been pushed when it came.
    abort: Option<(usize, Abort)>,
}

impl Streamed {
    /// `(path, rule)` of the abort's violations, sorted.
    fn proven(&self) -> Option<Vec<(String, String)>> {
        let (_, abort) = self.abort.as_ref()?;
        let mut pairs: Vec<_> = abort
            .violations
            .iter()
            .map(|v| (v.path.clone(), v.rule.to_string()))
            .collect();
        pairs.sort();
        Some(pairs)
    }
}

/// Streams `text` to `contract` in deltas of `sizes` characters (cycled), asking for the
/// partial value after each delta; stops at an abort.
fn stream(contract: &Contract, text: &str, sizes: &[usize]) -> Streamed {
    let mut check = StreamCheck::new(contract, &Context::new());
    let mut out = Vec::new();
    let mut streamed = Streamed::default();
    let mut rest = text;
    let mut turn = 0;
    while !rest.is_empty() {
        let size = sizes
            .get(turn % sizes.len().max(1))
            .copied()
            .unwrap_or(1)
            .max(1);
        turn += 1;
        let cut = rest.char_indices().nth(size).map_or(rest.len(), |(i, _)| i);
        let (delta, tail) = rest.split_at(cut);
        rest = tail;
        let pushed = check.push(delta, &mut out);
        streamed.partials.extend(check.partial());
        if let Err(abort) = pushed {
            streamed.abort = Some((check.raw().len(), abort));
            break;
        }
    }
    streamed
}

fn contract(schema: Value) -> Contract {
    Contract::from_schema("test", schema).unwrap()
}

/// `(path, rule)` of every violation the complete check reports.
fn complete(contract: &Contract, text: &str) -> Vec<(String, String)> {
    contract
        .check(text, &Context::new())
        .violations
        .into_iter()
        .map(|v| (v.path, v.rule.to_string()))
        .collect()
}

/// The selfhelp example, compact, with `edit` applied.
fn selfhelp_reply(edit: impl FnOnce(&mut Value)) -> String {
    let mut value = selfhelp().example().cloned().unwrap();
    edit(&mut value);
    serde_json::to_string_pretty(&value).unwrap()
}

/// Asserts the reply aborts on `(path, rule)`, exactly when the first structural character
/// after `settled` (its first occurrence in `text`) arrives in one-character deltas, and that
/// the complete check reports the same, with the same message.
fn assert_aborts_at(contract: &Contract, text: &str, settled: &str, path: &str, rule: &str) {
    let after = text.find(settled).unwrap() + settled.len();
    let at = after + text[after..].find(|c: char| !c.is_whitespace()).unwrap() + 1;
    let streamed = stream(contract, text, &[1]);
    let (pushed, abort) = streamed.abort.as_ref().expect("an abort");
    assert_eq!(*pushed, at, "aborted after {:?}", &text[..*pushed]);
    assert!(
        abort
            .violations
            .iter()
            .any(|v| v.path == path && v.rule.as_str() == rule),
        "{:?}",
        abort.violations
    );
    let full = complete(contract, text);
    assert!(
        full.contains(&(path.to_owned(), rule.to_owned())),
        "the complete check agrees: {full:?}"
    );
    let checked = contract.check(text, &Context::new());
    for v in &abort.violations {
        // The same path, rule and message (the quote may show less of the value).
        assert!(
            checked
                .violations
                .iter()
                .any(|c| (&c.path, &c.rule, &c.message) == (&v.path, &v.rule, &v.message)),
            "{v:?} not in {:?}",
            checked.violations
        );
    }
}

#[test]
fn a_wrong_type_aborts_once_the_value_is_settled() {
    let text = selfhelp_reply(|v| v["safety"]["is_safe"] = json!("yes"));
    assert_aborts_at(
        &selfhelp(),
        &text,
        "\"is_safe\": \"yes\"",
        "/safety/is_safe",
        "type",
    );
    let text = selfhelp_reply(|v| v["metadata"]["tokens_used"] = json!(2.5));
    assert_aborts_at(&selfhelp(), &text, "2.5", "/metadata/tokens_used", "type");
    // An integral number is an integer, as the validator says.
    let text = selfhelp_reply(|v| v["metadata"]["tokens_used"] = json!(2.0));
    assert!(stream(&selfhelp(), &text, &[1]).abort.is_none());
    assert!(selfhelp().check(&text, &Context::new()).is_valid());
}

#[test]
fn integers_are_judged_as_the_draft_says() {
    // draft-04: "a number without a fraction or exponent part", so 5.0 is not an integer.
    let d4 = contract(json!({
        "$schema": "http://json-schema.org/draft-04/schema#",
        "properties": {"n": {"type": "integer"}}
    }));
    assert_aborts_at(&d4, "{\"n\": 5.0, \"m\": 1}", "5.0", "/n", "type");
    let d7 = contract(json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "properties": {"n": {"type": "integer"}, "e": {"enum": [1, "one"]}}
    }));
    for text in ["{\"n\": 5.0}", "{\"n\": 1e2}", "{\"e\": 1.0}"] {
        assert!(stream(&d7, text, &[1]).abort.is_none(), "{text}");
        assert!(d7.check(text, &Context::new()).is_valid(), "{text}");
    }
    assert_aborts_at(&d7, "{\"n\": 5.5, \"m\": 1}", "5.5", "/n", "type");
}

#[test]
fn a_value_outside_enum_aborts() {
    let text = selfhelp_reply(|v| v["safety"]["danger_level"] = json!("high"));
    assert_aborts_at(
        &selfhelp(),
        &text,
        "\"high\"",
        "/safety/danger_level",
        "enum",
    );
    let text = selfhelp_reply(|v| v["content"]["text_blocks"][1]["type"] = json!("para"));
    assert_aborts_at(
        &selfhelp(),
        &text,
        "\"para\"",
        "/content/text_blocks/1/type",
        "enum",
    );
}

#[test]
fn a_value_unequal_to_const_aborts() {
    // `type` is the root's last member: what the root's closing bracket settles waits for what
    // follows it (here prose, so the value is the answer and the abort stands).
    let text = selfhelp_reply(|v| v["type"] = json!("reply")) + "\n\nThat is all.";
    assert_aborts_at(&selfhelp(), &text, "\n}", "/type", "const");
}

#[test]
fn a_forbidden_member_aborts_at_its_key() {
    let text = selfhelp_reply(|v| v["safety"]["mood"] = json!("calm"));
    assert_aborts_at(
        &selfhelp(),
        &text,
        "\"mood\"",
        "/safety",
        "additionalProperties",
    );
    // The abort comes before the member's value.
    let streamed = stream(&selfhelp(), &text, &[1]);
    let (pushed, _) = streamed.abort.unwrap();
    assert!(
        text[..pushed].ends_with("\"mood\":"),
        "{:?}",
        &text[..pushed]
    );
}

#[test]
fn a_closed_object_without_a_required_member_aborts() {
    let text = selfhelp_reply(|v| {
        v["content"]["text_blocks"][0]
            .as_object_mut()
            .unwrap()
            .remove("content");
    });
    assert_aborts_at(
        &selfhelp(),
        &text,
        "\"type\": \"heading\"",
        "/content/text_blocks/0",
        "required",
    );
    let messages: Vec<String> = stream(&selfhelp(), &text, &[3])
        .abort
        .unwrap()
        .1
        .violations
        .into_iter()
        .map(|v| v.message)
        .collect();
    assert_eq!(messages, ["missing required property \"content\""]);
}

#[test]
fn valid_replies_stream_to_their_value_without_abort() {
    let contract = selfhelp();
    let example = contract.example().cloned().unwrap();
    for text in [
        example.to_string(),
        serde_json::to_string_pretty(&example).unwrap(),
        format!("```json\n{example}\n```"),
        format!("Here it is:\n\n```json\n{example:#}\n```\nAnything else?"),
        format!("\u{feff}{example} \n\nHope that {{helps}}."),
    ] {
        assert!(contract.check(&text, &Context::new()).is_valid());
        for sizes in [&[1][..], &[4], &[3, 17, 1, 64]] {
            let streamed = stream(&contract, &text, sizes);
            assert!(streamed.abort.is_none(), "{text:?}");
            let last: Value = serde_json::from_str(streamed.partials.last().unwrap()).unwrap();
            assert_eq!(last, example);
            for partial in &streamed.partials {
                assert!(!partial.contains('\n'), "one line: {partial:?}");
                serde_json::from_str::<Value>(partial).unwrap();
            }
        }
    }
}

#[test]
fn coerced_places_are_never_judged() {
    // A plain-string suggestion becomes {"text": …} by the declared coercion.
    let text = selfhelp_reply(|v| v["content"]["suggestions"] = json!(["Skip", {"text": "Why?"}]));
    assert!(stream(&selfhelp(), &text, &[1]).abort.is_none());
    assert!(selfhelp().check(&text, &Context::new()).is_valid());
}

#[test]
fn replies_the_reader_does_not_follow_never_abort() {
    let contract = selfhelp();
    for text in [
        "Sure! {\"type\": \"oops\"}".to_owned(),
        "I cannot answer that.".to_owned(),
        "Note: ```json\n{\"type\": \"oops\"}\n```".to_owned(),
        "```python\nx = 1\n```\n```json\n{\"type\": \"oops\"}\n```".to_owned(),
        // The schema wants an object: an array root may be followed by the real answer.
        "[1, 2, 3]\n{\"type\": \"oops\"}".to_owned(),
        // Lost at the comment: nothing after it is judged.
        "{\"type\": \"oops\" // later\n}".to_owned(),
    ] {
        let streamed = stream(&contract, &text, &[1]);
        assert!(streamed.abort.is_none(), "{text:?}");
    }
    let streamed = stream(&contract, "Sure! {\"type\": \"oops\"}", &[2]);
    assert!(streamed.partials.is_empty());
}

/// A continuation that breaks the started JSON after an abort: the complete check refuses the
/// reply too (as `parse`, at the break) — it never takes a later value in its place.
#[test]
fn a_broken_json_after_an_abort_is_refused_by_the_complete_check() {
    let contract = contract(json!({
        "type": "object",
        "required": ["n"],
        "properties": {"n": {"type": "integer"}}
    }));
    let text = "{\"n\": \"x\", :::: }\nSorry, here is the right one: {\"n\": 1}";
    let streamed = stream(&contract, text, &[1]);
    assert_eq!(
        streamed.proven(),
        Some(vec![("/n".to_owned(), "type".to_owned())])
    );
    assert_eq!(
        complete(&contract, text),
        [("".to_owned(), "parse".to_owned())]
    );
}

/// A value closed early with more members after it: the stream aborts with the complete
/// check's own `parse` violation, as soon as the first of them shows, whatever else it holds.
#[test]
fn a_value_closed_early_aborts_as_the_complete_check_refuses_it() {
    let contract = contract(json!({
        "type": "object",
        "required": ["key", "key2"],
        "properties": {"key": {"type": "string"}}
    }));
    for (text, at) in [
        ("{\"key\": \"value\"}, \"key2\": \"value2\"}", 19),
        ("```json\n{\"key\": \"value\"}\n, key2: 1}\n```", 32),
        ("{\"key\": 5}}, \"key2\": 1}", 14),
    ] {
        let checked = contract.check(text, &Context::new());
        for sizes in [&[1][..], &[4], &[2, 9]] {
            let streamed = stream(&contract, text, sizes);
            let (pushed, abort) = streamed.abort.expect("an abort");
            // The same words and place (the quote shows what had arrived).
            let said = |v: &[bridle_core::Violation]| -> Vec<(String, String, String)> {
                v.iter()
                    .map(|v| (v.path.clone(), v.rule.to_string(), v.message.clone()))
                    .collect()
            };
            assert_eq!(
                said(&abort.violations),
                said(&checked.violations),
                "{text:?}"
            );
            if sizes == [1] {
                assert_eq!(pushed, at, "{text:?}");
            }
        }
        assert_eq!(checked.violations[0].rule.as_str(), "parse");
    }
    // Not more members: prose after a comma, a second value, a closer too many.
    for text in [
        "{\"key\": \"value\"}, as you asked.",
        "{\"key\": \"value\"}\n{\"key\": \"other\"}",
        "{\"key\": \"v\", \"key2\": 1}}",
    ] {
        let streamed = stream(&contract, text, &[1]);
        let full = complete(&contract, text);
        if let Some(proven) = streamed.proven() {
            assert!(proven.iter().all(|p| full.contains(p)), "{text:?}");
        }
        assert!(
            !full.iter().any(|(_, rule)| rule == "parse"),
            "{text:?}: {full:?}"
        );
    }
}

/// The other documented exception: serde_json keeps the last of two members with the same
/// key, so a duplicate can replace a member that was proven wrong.
#[test]
fn exception_a_duplicate_key_can_replace_a_wrong_member() {
    let contract = contract(json!({"properties": {"n": {"type": "integer"}}}));
    let text = "{\"n\": \"x\", \"n\": 1}";
    assert!(stream(&contract, text, &[1]).abort.is_some());
    assert!(contract.check(text, &Context::new()).is_valid());
}

// ---- property tests ---------------------------------------------------------------------

/// The schemas the property tests stream replies to, with a generator of valid values each.
fn schemas() -> Vec<Value> {
    vec![
        json!({
            "type": "object",
            "required": ["kind", "items"],
            "additionalProperties": false,
            "properties": {
                "kind": {"enum": ["a", "b"]},
                "version": {"const": 1},
                "count": {"type": "integer"},
                "ratio": {"type": ["number", "null"]},
                "items": {"type": "array", "items": {"$ref": "#/$defs/item"}},
                "grid": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}},
                "meta": {"type": "object", "additionalProperties": {"type": "string"}}
            },
            "$defs": {"item": {
                "type": "object",
                "required": ["id"],
                "additionalProperties": false,
                "properties": {"id": {"type": "string"}, "flag": {"type": "boolean"}}
            }}
        }),
        json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "required": ["a"],
            "properties": {
                "a": {"$ref": "#/definitions/s", "type": "integer"},
                "t": {"type": "array", "items": [{"type": "integer"}, {"type": "string"}], "additionalItems": {"type": "boolean"}},
                "p": {"patternProperties": {"^x": {"type": "integer"}}, "additionalProperties": false, "properties": {"k": {"type": "null"}}}
            },
            "definitions": {"s": {"type": "string", "enum": ["x", "y"]}}
        }),
        json!({"type": "array", "items": {"type": "integer", "enum": [1, 2, 3]}}),
    ]
}

/// A valid value of `schemas()[which]` (the selfhelp example for 3), from `seed` choices.
fn valid(which: usize, seed: &[u8]) -> Value {
    let pick = |i: usize, n: u8| seed.get(i).copied().unwrap_or(0) % n.max(1);
    match which {
        0 => {
            let kind = ["a", "b"][pick(0, 2) as usize];
            let mut v = json!({
                "kind": kind,
                "items": (0..pick(1, 3)).map(|i| json!({"id": format!("i{i}"), "flag": i % 2 == 0})).collect::<Vec<_>>(),
            });
            if pick(2, 2) == 0 {
                v["version"] = json!(1);
                v["count"] = json!(pick(3, 50));
                v["ratio"] = if pick(4, 2) == 0 {
                    json!(0.25)
                } else {
                    Value::Null
                };
            }
            if pick(5, 2) == 0 {
                v["grid"] = json!([["x", "y"], [], ["z \"q\" \\ é \u{1F600}"]]);
                v["meta"] = json!({"lang": "en", "note": "line\nbreak\ttab"});
            }
            v
        }
        1 => {
            let a = ["x", "y"][pick(0, 2) as usize];
            let mut v = json!({ "a": a });
            if pick(1, 2) == 0 {
                v["t"] = json!([3, "s", true, false]);
                v["p"] = json!({"k": null, "x1": 5});
            }
            v
        }
        2 => json!((0..pick(0, 5)).map(|i| i % 3 + 1).collect::<Vec<_>>()),
        _ => selfhelp().example().cloned().unwrap(),
    }
}

/// A small value to put somewhere in a reply.
fn replacement() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..60).prop_map(Value::from),
        Just(json!(1.0)),
        Just(json!(2.5)),
        prop::sample::select(vec![
            "a", "b", "x", "y", "z", "response", "warning", "", "text"
        ])
        .prop_map(|s| json!(s)),
        Just(json!([])),
        Just(json!({})),
        Just(json!({"id": "q"})),
        Just(json!({"text": "t"})),
        Just(json!(["s", 1])),
    ]
}

/// How [`mutate`] changes the node it picks.
#[derive(Debug, Clone)]
enum Change {
    /// Replace it by this value.
    Replace(Value),
    /// In an object, remove its first member (a required one, maybe).
    Remove,
    /// In an object, add (or set) this member.
    Insert(String, Value),
}

fn change() -> impl Strategy<Value = Change> {
    let key = prop::sample::select(vec![
        "extra", "id", "kind", "x1", "text", "flag", "mood", "k",
    ]);
    prop_oneof![
        3 => replacement().prop_map(Change::Replace),
        1 => Just(Change::Remove),
        2 => (key, replacement()).prop_map(|(k, v)| Change::Insert(k.to_owned(), v)),
    ]
}

/// Changes the `selector`-th node of `value` (pre-order); a removal or an insertion picks the
/// first object at or after it.
fn mutate(value: &mut Value, selector: usize, change: Change) {
    let (with, remove) = match change {
        Change::Replace(with) => (with, false),
        Change::Remove => (Value::Null, true),
        Change::Insert(key, member) => {
            insert(value, selector, key, member);
            return;
        }
    };
    fn count(v: &Value) -> usize {
        1 + match v {
            Value::Array(items) => items.iter().map(count).sum(),
            Value::Object(map) => map.values().map(count).sum(),
            _ => 0,
        }
    }
    fn walk(v: &mut Value, mut k: usize, with: Value, remove: bool) {
        if k == 0 {
            match v {
                Value::Object(map) if remove && !map.is_empty() => {
                    let key = map.keys().next().cloned().unwrap_or_default();
                    map.remove(&key);
                }
                _ => *v = with,
            }
            return;
        }
        k -= 1;
        let children: Vec<&mut Value> = match v {
            Value::Array(items) => items.iter_mut().collect(),
            Value::Object(map) => map.values_mut().collect(),
            _ => return,
        };
        for child in children {
            let n = count(child);
            if k < n {
                walk(child, k, with, remove);
                return;
            }
            k -= n;
        }
    }
    let n = count(value);
    walk(value, selector % n, with, remove);
}

/// Adds `key: member` to the `selector`-th object of `value` (pre-order, cycling).
fn insert(value: &mut Value, selector: usize, key: String, member: Value) {
    fn objects(v: &Value) -> usize {
        usize::from(v.is_object())
            + match v {
                Value::Array(items) => items.iter().map(objects).sum(),
                Value::Object(map) => map.values().map(objects).sum(),
                _ => 0,
            }
    }
    fn put(v: &mut Value, k: &mut usize, key: &str, member: &Value) -> bool {
        if let Value::Object(map) = v {
            if *k == 0 {
                map.insert(key.to_owned(), member.clone());
                return true;
            }
            *k -= 1;
        }
        match v {
            Value::Array(items) => items.iter_mut().any(|c| put(c, k, key, member)),
            Value::Object(map) => map.values_mut().any(|c| put(c, k, key, member)),
            _ => false,
        }
    }
    let n = objects(value);
    if n > 0 {
        put(value, &mut (selector % n), &key, &member);
    }
}

/// The reply text for `value`: compact or pretty, maybe with trailing commas, in a fence,
/// with prose around.
fn reply_text(value: &Value, form: u8, commas: u8, wrap: u8) -> String {
    let mut text = if form.is_multiple_of(2) {
        value.to_string()
    } else {
        serde_json::to_string_pretty(value).unwrap()
    };
    if commas > 0 && form % 2 == 1 {
        // A comma before some closing brackets of non-empty containers.
        let mut out = String::new();
        for (n, line) in text.split('\n').enumerate() {
            let closing = line.trim_start().starts_with(['}', ']']);
            if n > 0 {
                if closing && (n as u8).is_multiple_of(commas) && !out.ends_with(['{', '[']) {
                    out.push(',');
                }
                out.push('\n');
            }
            out.push_str(line);
        }
        text = out;
    }
    match wrap % 5 {
        0 => text,
        1 => format!("```json\n{text}\n```"),
        2 => format!("Here is the reply:\n\n```json\n{text}\n```\nTell me if {{anything}} is off."),
        3 => format!("{text}\n\nLet me know [if] you need more."),
        _ => format!("\u{feff}  \n{text}"),
    }
}

/// Every field an earlier partial showed is still in `later` (strings only grow, arrays only
/// gain items; a number may gain digits).
fn kept(earlier: &Value, later: &Value) -> bool {
    match (earlier, later) {
        (Value::Object(a), Value::Object(b)) => {
            a.iter().all(|(k, v)| b.get(k).is_some_and(|w| kept(v, w)))
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() <= b.len() && a.iter().zip(b).all(|(v, w)| kept(v, w))
        }
        (Value::String(a), Value::String(b)) => b.starts_with(a.as_str()),
        (Value::Number(_), Value::Number(_)) => true,
        (a, b) => a == b,
    }
}

fn contract_for(which: usize) -> std::sync::Arc<Contract> {
    match which {
        0..=2 => std::sync::Arc::new(contract(schemas()[which].clone())),
        _ => selfhelp(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 384, .. ProptestConfig::default() })]

    #[test]
    fn streaming_agrees_with_the_complete_check(
        which in 0usize..4,
        seed in prop::collection::vec(any::<u8>(), 8),
        mutations in prop::collection::vec((any::<usize>(), change()), 0..3),
        form in any::<u8>(),
        commas in 0u8..4,
        wrap in any::<u8>(),
        sizes_a in prop::collection::vec(1usize..9, 1..6),
        sizes_b in prop::collection::vec(1usize..40, 1..6),
    ) {
        let contract = contract_for(which);
        let mut value = valid(which, &seed);
        for (selector, change) in mutations {
            mutate(&mut value, selector, change);
        }
        let text = reply_text(&value, form, commas, wrap);
        let checked = contract.check(&text, &Context::new());
        let full: Vec<(String, String)> =
            checked.violations.iter().map(|v| (v.path.clone(), v.rule.to_string())).collect();

        let one = stream(&contract, &text, &[1]);
        let a = stream(&contract, &text, &sizes_a);
        let b = stream(&contract, &text, &sizes_b);
        for streamed in [&one, &a, &b] {
            // (1) An abort is a violation the complete check reports too.
            if let Some(proven) = streamed.proven() {
                prop_assert!(!checked.is_valid(), "aborted {proven:?} on a valid reply:\n{text}");
                for pair in &proven {
                    prop_assert!(full.contains(pair), "{pair:?} not in {full:?}:\n{text}");
                }
            }
            // (2) A valid reply never aborts.
            if checked.is_valid() {
                prop_assert!(streamed.abort.is_none());
            }
            // (3) Every partial parses, and shows again what it showed before.
            let mut previous: Option<Value> = None;
            for partial in &streamed.partials {
                prop_assert!(!partial.contains('\n'));
                let parsed: Value = serde_json::from_str(partial)
                    .map_err(|e| TestCaseError::fail(format!("{partial:?}: {e}")))?;
                if let Some(previous) = &previous {
                    prop_assert!(kept(previous, &parsed), "{previous} then {parsed}");
                }
                previous = Some(parsed);
            }
        }
        // (4) However it is split: the same decision on the same violations, within one
        // delta of the same place; and without an abort, the same last partial.
        prop_assert_eq!(one.proven(), a.proven());
        prop_assert_eq!(one.proven(), b.proven());
        if let Some((at, _)) = &one.abort {
            for (other, sizes) in [(&a, &sizes_a), (&b, &sizes_b)] {
                let (pushed, _) = other.abort.as_ref().unwrap();
                let widest = sizes.iter().max().copied().unwrap_or(1) * 4;
                prop_assert!(*pushed >= *at && *pushed < *at + widest, "{pushed} vs {at}");
            }
        } else {
            prop_assert_eq!(one.partials.last(), a.partials.last());
            prop_assert_eq!(one.partials.last(), b.partials.last());
            // The last partial is the value read (no coercion changes it here).
            if which < 3 && let (Some(last), Some(read)) = (one.partials.last(), &checked.value) {
                let last: Value = serde_json::from_str(last).unwrap();
                prop_assert_eq!(&last, read);
            }
        }
    }

    #[test]
    fn streaming_never_panics_on_any_text(
        text in "[{}\\[\\]\",:a-z0-9 \n`~\\\\.eE+-]{0,80}",
        sizes in prop::collection::vec(1usize..6, 1..4),
    ) {
        let contract = contract_for(0);
        let streamed = stream(&contract, &text, &sizes);
        for partial in &streamed.partials {
            prop_assert!(serde_json::from_str::<Value>(partial).is_ok(), "{partial:?}");
        }
    }
}
