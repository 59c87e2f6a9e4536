//! Tests of [`repair`] as a whole: one row per repair kind, the combinations models produce,
//! every form of truncation, text that must stay unchanged, hostile input, and properties.

use super::*;
use proptest::prelude::*;
use serde_json::{Value, json};

fn value(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{text:?} does not parse: {e}"))
}

fn kinds(repaired: &Repaired) -> Vec<(&str, u32)> {
    repaired
        .repairs
        .iter()
        .map(|r| (r.kind.as_str(), r.count))
        .collect()
}

/// Input, expected value, expected (kind, count) in first-applied order.
type Row = (&'static str, Value, &'static [(&'static str, u32)]);

fn check_rows(rows: &[Row], hint: RootHint) {
    for (input, want, want_kinds) in rows {
        let repaired = repair(input, hint);
        assert_eq!(
            value(&repaired.text),
            *want,
            "{input:?} → {:?}",
            repaired.text
        );
        assert_eq!(kinds(&repaired), *want_kinds, "{input:?}");
        assert_eq!(repaired.truncated, None, "{input:?}");
        assert_eq!(repaired.ambiguous, None, "{input:?}");
        assert_eq!(repaired.broken, None, "{input:?}");
        assert!(repaired.found_json, "{input:?}");
        assert!(
            repaired
                .repairs
                .iter()
                .all(|r| !r.message.is_empty() && r.path.is_none())
        );
    }
}

#[test]
fn each_repair_kind() {
    let rows: &[Row] = &[
        ("\u{feff}{\"a\": 1}", json!({"a": 1}), &[("bom", 1)]),
        (
            "```json\n{\"a\": 1}\n```",
            json!({"a": 1}),
            &[("code_fence", 1)],
        ),
        ("```JSON\n[1]\n```", json!([1]), &[("code_fence", 1)]),
        (
            "```\n{\"a\": 1}\n```\n",
            json!({"a": 1}),
            &[("code_fence", 1)],
        ),
        (
            "~~~json\n{\"a\": 1}\n~~~",
            json!({"a": 1}),
            &[("code_fence", 1)],
        ),
        ("```json\n{\"a\": 1}", json!({"a": 1}), &[("code_fence", 1)]),
        (
            "Here you go:\n```json\n{\"a\": 1}\n```\nHope it helps!",
            json!({"a": 1}),
            &[("code_fence", 1), ("surrounding_prose", 2)],
        ),
        (
            "```\nnot JSON\n```\nthen\n```json\n{\"a\": 1}\n```",
            json!({"a": 1}),
            &[("code_fence", 1), ("surrounding_prose", 1)],
        ),
        (
            "Sure! {\"a\": 1}",
            json!({"a": 1}),
            &[("surrounding_prose", 1)],
        ),
        (
            "{\"a\": 1}\nHope this helps.",
            json!({"a": 1}),
            &[("surrounding_prose", 1)],
        ),
        (
            "Here is [the answer]: {\"a\": 1}.",
            json!({"a": 1}),
            &[("surrounding_prose", 2)],
        ),
        (
            "use {braces} like: {\"a\": [1]}",
            json!({"a": [1]}),
            &[("surrounding_prose", 1)],
        ),
        (
            "// answer\n{\"a\": 1, // one\n \"b\": /* two */ 2} /* end */",
            json!({"a": 1, "b": 2}),
            &[("comment", 4)],
        ),
        (
            "{\"a\": 1, # python style\n\"b\": 2}",
            json!({"a": 1, "b": 2}),
            &[("comment", 1)],
        ),
        (
            "{\"a\": [1, 2,], \"b\": {},}",
            json!({"a": [1, 2], "b": {}}),
            &[("trailing_comma", 2)],
        ),
        ("[1,,2]", json!([1, 2]), &[("extra_comma", 1)]),
        (
            "{\"a\": 1 \"b\": 2}",
            json!({"a": 1, "b": 2}),
            &[("missing_comma", 1)],
        ),
        (
            "[{\"x\": 1} {\"x\": 2}]",
            json!([{"x": 1}, {"x": 2}]),
            &[("missing_comma", 1)],
        ),
        (
            "[\"a\" \"b\"\n\"c\"]",
            json!(["a", "b", "c"]),
            &[("missing_comma", 2)],
        ),
        (
            "{\"a\": 1\n\"b\": 2\n}",
            json!({"a": 1, "b": 2}),
            &[("missing_comma", 1)],
        ),
        (
            "{\"a\": True, \"b\": False, \"c\": None, \"d\": undefined}",
            json!({"a": true, "b": false, "c": null, "d": null}),
            &[("python_literal", 4)],
        ),
        (
            "[NaN, Infinity, -Infinity]",
            json!([null, null, null]),
            &[("non_finite_number", 3)],
        ),
        (
            r#"{'a': 'it\'s "x"', 'b': 'don't'}"#,
            json!({"a": "it's \"x\"", "b": "don't"}),
            &[("single_quote", 4)],
        ),
        (
            "{“a”: “b 'c' \"d\"”}",
            json!({"a": "b 'c' \"d\""}),
            &[("smart_quote", 2)],
        ),
        ("{„a“: „b“}", json!({"a": "b"}), &[("smart_quote", 2)]),
        ("{‘a’: ‘it’s’}", json!({"a": "it’s"}), &[("smart_quote", 2)]),
        (
            "{\"a\": \"line 1\nline 2\r\n\"}",
            json!({"a": "line 1\nline 2\r\n"}),
            &[("raw_newline", 2)],
        ),
        (
            "{\"a\": \"x\ty\u{0}\"}",
            json!({"a": "x\ty\u{0}"}),
            &[("control_character", 2)],
        ),
        (
            "{type: \"x\", max_len: 3, $ref: 1, first-name: 2, 名前: 3}",
            json!({"type": "x", "max_len": 3, "$ref": 1, "first-name": 2, "名前": 3}),
            &[("unquoted_key", 5)],
        ),
        (
            r#"{"re": "\d+\.\d", "q": "it\'s", "p": "C:\Users"}"#,
            json!({"re": "\\d+\\.\\d", "q": "it's", "p": "C:\\Users"}),
            &[("invalid_escape", 5)],
        ),
        (
            "```\n{\"a\": [1, {\"b\": true\n```",
            json!({"a": [1, {"b": true}]}),
            &[("code_fence", 1), ("unclosed_bracket", 3)],
        ),
        (
            "{\"a\": [1, 2}",
            json!({"a": [1, 2]}),
            &[("unclosed_bracket", 1)],
        ),
        (
            "{\"a\": \"He said \"hi\" to me\", \"b\": \"ok\"}",
            json!({"a": "He said \"hi\" to me", "b": "ok"}),
            &[("unescaped_quote", 2)],
        ),
        ("'hello'", json!("hello"), &[("single_quote", 1)]),
        ("True", json!(true), &[("python_literal", 1)]),
    ];
    check_rows(rows, RootHint::Any);
}

#[test]
fn combinations_models_produce() {
    let rows: &[Row] = &[
        (
            "```json\n{\"ok\": True, \"items\": [1, 2,],}\n```",
            json!({"ok": true, "items": [1, 2]}),
            &[
                ("code_fence", 1),
                ("python_literal", 1),
                ("trailing_comma", 2),
            ],
        ),
        (
            "Sure, here it is: {'name': 'Bob', 'tags': ['a', 'b']} Let me know!",
            json!({"name": "Bob", "tags": ["a", "b"]}),
            &[("surrounding_prose", 2), ("single_quote", 5)],
        ),
        (
            "\u{feff}```json\n// the reply\n{title: “Hi”, body: 'a\nb', n: None,\n}\n```",
            json!({"title": "Hi", "body": "a\nb", "n": null}),
            &[
                ("bom", 1),
                ("code_fence", 1),
                ("comment", 1),
                ("unquoted_key", 3),
                ("smart_quote", 1),
                ("single_quote", 1),
                ("raw_newline", 1),
                ("python_literal", 1),
                ("trailing_comma", 1),
            ],
        ),
        (
            "{\"a\": \"x\"} and {\"b\": 2}",
            json!({"a": "x"}),
            &[("surrounding_prose", 1)],
        ),
        (
            "{\"code\": \"```json\\n{}\\n```\",}",
            json!({"code": "```json\n{}\n```"}),
            &[("trailing_comma", 1)],
        ),
        (
            "```json\n{\"code\": \"line 1\n```\nline 3\"}\n```",
            json!({"code": "line 1\n```\nline 3"}),
            &[("surrounding_prose", 2), ("raw_newline", 2)],
        ),
    ];
    check_rows(rows, RootHint::Any);
}

#[test]
fn nothing_is_repaired_into_something_else() {
    // An inner value of a broken object is not taken for the answer.
    let repaired = repair("Result: {\"a\": [1, 2], \"b\": ???}", RootHint::Any);
    assert!(repaired.found_json);
    assert_eq!(repaired.text, "{\"a\": [1, 2], \"b\": ???}");
    assert!(serde_json::from_str::<Value>(&repaired.text).is_err());
    // A string cut short is reported, never closed (here `}` is part of the string).
    let repaired = repair("{\"a\": \"x}", RootHint::Any);
    assert_eq!(repaired.text, "{\"a\": \"x}");
    assert_eq!(repaired.truncated.map(|t| t.path), Some("/a".to_owned()));
    // Bare words are not guessed into strings; prose brackets are not JSON.
    for input in [
        "{\"status\": ok}",
        "Use {braces} or [brackets].",
        "[1, 2] [",
        "{\"a\" 1}",
    ] {
        let repaired = repair(input, RootHint::Any);
        let parsed = serde_json::from_str::<Value>(&repaired.text);
        assert!(
            parsed.is_err() || input.starts_with("[1"),
            "{input:?} → {:?}",
            repaired.text
        );
    }
    // Two values one after the other: neither is taken (see `fragment_tests.rs`).
    let repaired = repair("[1, 2] [3]", RootHint::Any);
    assert!(repaired.ambiguous.is_some(), "{repaired:?}");
}

#[test]
fn the_hint_picks_the_root() {
    let text = "Options [1, 2] are in {\"a\": 1}";
    assert_eq!(value(&repair(text, RootHint::Object).text), json!({"a": 1}));
    assert_eq!(value(&repair(text, RootHint::Array).text), json!([1, 2]));
    assert_eq!(value(&repair(text, RootHint::Any).text), json!([1, 2]));
    // An inner array is never taken out of the object that holds it.
    let text = "{\"items\": [1, 2],}";
    assert_eq!(
        value(&repair(text, RootHint::Array).text),
        json!({"items": [1, 2]})
    );
    // A fence whose root fits the hint wins over an earlier one that does not.
    let text = "```json\n[1]\n```\n```json\n{\"a\": 1}\n```";
    assert_eq!(value(&repair(text, RootHint::Object).text), json!({"a": 1}));
    assert_eq!(value(&repair(text, RootHint::Any).text), json!([1]));
    // Without a fitting one, the first that parses.
    assert_eq!(
        value(&repair("Sure: [1,]", RootHint::Object).text),
        json!([1])
    );
}

#[test]
fn messages_say_what_was_done() {
    let repaired = repair("Sure!\n```json\n{\"a\": [1,],}\n```", RootHint::Any);
    let messages: Vec<&str> = repaired
        .repairs
        .iter()
        .map(|r| r.message.as_str())
        .collect();
    assert_eq!(
        messages,
        [
            "took the JSON out of a ```json code fence",
            "dropped the text around the JSON",
            "removed 2 trailing commas"
        ]
    );
    let repaired = repair("~~~\n[1,]\n~~~", RootHint::Any);
    assert_eq!(
        repaired.repairs[0].message,
        "took the JSON out of a ~~~ code fence"
    );
}

#[test]
fn formatting_is_kept() {
    let repaired = repair(
        "```json\n{\n  \"a\": [1, 2,],\n  \"b\": 1\n  \"c\": 2,\n}\n```",
        RootHint::Any,
    );
    assert_eq!(
        repaired.text,
        "{\n  \"a\": [1, 2],\n  \"b\": 1,\n  \"c\": 2\n}"
    );
    let repaired = repair("```\n{\"a\": {\"b\": 1\n```", RootHint::Any);
    assert_eq!(repaired.text, "{\"a\": {\"b\": 1}}");
}

#[test]
fn truncations_name_the_value_being_written() {
    let rows: &[(&str, &str, &str)] = &[
        (
            r#"{"content":{"text_blocks":[{"type":"text","content":"I was cut"#,
            "/content/text_blocks/0/content",
            "the reply ends inside the string at /content/text_blocks/0/content (it was cut off)",
        ),
        (
            r#"{"a": tru"#,
            "/a",
            "the reply ends inside the value at /a (it was cut off)",
        ),
        (
            r#"{"a": [1, 2."#,
            "/a/1",
            "the reply ends inside the value at /a/1 (it was cut off)",
        ),
        (
            r#"{"a": -"#,
            "/a",
            "the reply ends inside the value at /a (it was cut off)",
        ),
        (
            r#"{"a": 1, "b""#,
            "/b",
            "the reply ends after the key at /b, before its value (it was cut off)",
        ),
        (
            r#"{"a": 1, "b": "#,
            "/b",
            "the reply ends after the ':' at /b, before its value (it was cut off)",
        ),
        (
            r#"{"a": [1,"#,
            "/a/1",
            "the reply ends after a comma, before the next item at /a/1 (it was cut off)",
        ),
        (
            r#"{"a": 1,"#,
            "",
            "the reply ends after a comma, before the next item at the root (it was cut off)",
        ),
        (
            r#"{"a": {"#,
            "/a",
            "the reply ends right after the opening bracket of /a (it was cut off)",
        ),
        (
            r#"{"a": 1, "ke"#,
            "",
            "the reply ends inside a key of the object at the root (it was cut off)",
        ),
        (
            r#"{"a/b~": "x"#,
            "/a~1b~0",
            "the reply ends inside the string at /a~1b~0 (it was cut off)",
        ),
        (
            r#"["x", "y"#,
            "/1",
            "the reply ends inside the string at /1 (it was cut off)",
        ),
        (
            r#"{"a": "ends in \"#,
            "/a",
            "the reply ends inside the string at /a (it was cut off)",
        ),
        (
            "{'a': 'it's",
            "/a",
            "the reply ends inside the string at /a (it was cut off)",
        ),
        (
            "[",
            "",
            "the reply ends right after the opening bracket of the root (it was cut off)",
        ),
        (
            r#"{"count": 12"#,
            "/count",
            "the reply ends after the value at /count, with 1 bracket still open (it was cut off)",
        ),
        (
            "{\"a\": 1, \"b\": [1, 2, 3]\n\n",
            "/b",
            "the reply ends after the value at /b, with 1 bracket still open (it was cut off)",
        ),
        (
            r#"Sure: {"a": [1, {"b": true"#,
            "/a/1/b",
            "the reply ends after the value at /a/1/b, with 3 brackets still open (it was cut off)",
        ),
        (
            "```json\n[\"x\", \"y\"",
            "/1",
            "the reply ends after the value at /1, with 1 bracket still open (it was cut off)",
        ),
    ];
    for &(input, path, message) in rows {
        let repaired = repair(input, RootHint::Any);
        let cut = repaired
            .truncated
            .as_ref()
            .unwrap_or_else(|| panic!("{input:?} not cut"));
        assert_eq!(
            (cut.path.as_str(), cut.message.as_str()),
            (path, message),
            "{input:?}"
        );
        assert!(repaired.found_json);
        assert!(
            !kinds(&repaired)
                .iter()
                .any(|(k, _)| *k == "unclosed_bracket"),
            "{input:?}"
        );
    }
    // The string is left open, and the other repairs are still made and reported.
    let repaired = repair(
        "Sure:\n```json\n{'a': [1, 2,], 'b': \"I was cut",
        RootHint::Object,
    );
    assert_eq!(repaired.text, "{\"a\": [1, 2], \"b\": \"I was cut");
    assert_eq!(
        repaired.truncated.as_ref().map(|t| t.path.as_str()),
        Some("/b")
    );
    assert_eq!(
        kinds(&repaired),
        [
            ("code_fence", 1),
            ("surrounding_prose", 1),
            ("single_quote", 2),
            ("trailing_comma", 1)
        ]
    );
}

#[test]
fn text_that_parses_is_never_changed() {
    let inputs = [
        r#"{"url": "http://x.y/z", "c": "/* not a comment */", "py": "True None"}"#,
        r#"["it's", "“smart”", "‘single’", ",]", ",}", "\\d"]"#,
        "  \n{\"a\": [1, 2]}\n\n",
        r#"{"code": "```json\n{\"a\": 1,}\n```"}"#,
        "\"just a string\"",
        "42",
        "null",
        "[]",
    ];
    for input in inputs {
        let repaired = repair(input, RootHint::Object);
        assert_eq!(
            repaired,
            Repaired {
                text: input.to_owned(),
                repairs: vec![],
                truncated: None,
                found_json: true,
                ambiguous: None,
                broken: None,
            },
            "{input:?}"
        );
    }
    // Once repaired, the output passes through unchanged.
    let first = repair("```json\n{'a': True,}\n```", RootHint::Any);
    let second = repair(&first.text, RootHint::Any);
    assert_eq!((second.text, second.repairs), (first.text, vec![]));
}

#[test]
fn replies_without_json() {
    for input in [
        "",
        "   \n",
        "Sorry, I can't help with that.",
        "\0\u{1}\u{7f}",
        "\u{feff}",
        "1. First",
        "'hello' world",
    ] {
        let repaired = repair(input, RootHint::Any);
        assert!(!repaired.found_json, "{input:?}");
        assert_eq!(repaired.truncated, None, "{input:?}");
        assert_eq!(
            repaired.text,
            input.trim_start_matches('\u{feff}'),
            "{input:?}"
        );
    }
    let repaired = repair("I'd use [the list] or {braces}.", RootHint::Any);
    assert!(repaired.found_json);
    assert!(serde_json::from_str::<Value>(&repaired.text).is_err());
}

/// Runs `f` on a thread with a 2 MB stack, as small as the main thread's can be.
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    let handle = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .expect("spawn");
    handle.join().expect("no panic, no stack overflow");
}

#[test]
fn deep_nesting_uses_no_recursion() {
    on_small_stack(|| {
        let deep = "[".repeat(100_000);
        let repaired = repair(&deep, RootHint::Any);
        assert!(repaired.found_json);
        let closed = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
        let _ = repair(&closed, RootHint::Any);
        let objects = "{\"a\":".repeat(100_000);
        let _ = repair(&objects, RootHint::Object);
        // Shallow enough for serde_json: repaired (in a closed fence, so finished) and parsed.
        let repaired = repair(&format!("```\n{}1\n```", "[".repeat(100)), RootHint::Any);
        assert_eq!(
            kinds(&repaired),
            [("code_fence", 1), ("unclosed_bracket", 100)]
        );
        assert!(serde_json::from_str::<Value>(&repaired.text).is_ok());
    });
}

#[test]
fn large_replies_take_linear_time() {
    const MB: usize = 1 << 20;
    let body = "x".repeat(10 * MB);
    let repaired = repair(
        &format!("```json\n{{\"a\": '{body}',}}\n```"),
        RootHint::Object,
    );
    assert_eq!(
        kinds(&repaired),
        [
            ("code_fence", 1),
            ("single_quote", 1),
            ("trailing_comma", 1)
        ]
    );
    assert_eq!(repaired.text.len(), body.len() + 9);
    // Many starts that each fail: the candidate loop is bounded.
    for hostile in [
        "{x ".repeat(3 * MB),
        "[a".repeat(4 * MB),
        "'".repeat(10 * MB),
        "/*".repeat(4 * MB),
    ] {
        let _ = repair(&hostile, RootHint::Object);
    }
    let cut = repair(&format!("[\"{body}"), RootHint::Any);
    assert_eq!(cut.truncated.map(|t| t.path), Some("/0".to_owned()));
}

fn arb_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f)
            .map(Value::Number)),
        any::<String>().prop_map(Value::String),
        "[\"'“”‘’`/*#,:{}\\[\\]\\\\ \n]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((any::<String>(), inner), 0..6)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

fn arb_object() -> impl Strategy<Value = Value> {
    prop::collection::vec(("[a-z_]{1,8}", arb_value()), 1..5)
        .prop_map(|members| Value::Object(members.into_iter().collect()))
}

proptest! {

    #[test]
    fn valid_json_passes_through(v in arb_value(), hint in prop_oneof![Just(RootHint::Any), Just(RootHint::Object), Just(RootHint::Array)]) {
        for text in [serde_json::to_string(&v), serde_json::to_string_pretty(&v)] {
            let text = text.map_err(|e| TestCaseError::fail(e.to_string()))?;
            let repaired = repair(&text, hint);
            prop_assert_eq!(&repaired.text, &text);
            prop_assert!(repaired.repairs.is_empty());
            prop_assert!(repaired.truncated.is_none() && repaired.found_json);
        }
    }

    #[test]
    fn never_panics_on_strings(s in any::<String>()) {
        let _ = repair(&s, RootHint::Any);
        let _ = repair(&s, RootHint::Object);
    }

    #[test]
    fn never_panics_on_json_like_text(s in "[{}\\[\\]\"'“”‘’„`~/*#,:\\\\ \n\tabTFNnu0-9.e+-]{0,80}") {
        for hint in [RootHint::Any, RootHint::Object, RootHint::Array] {
            let repaired = repair(&s, hint);
            if serde_json::from_str::<Value>(&s).is_ok() {
                prop_assert_eq!(&repaired.text, &s);
            }
        }
    }

    #[test]
    fn never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = repair(&String::from_utf8_lossy(&bytes), RootHint::Any);
    }

    #[test]
    fn wrapped_objects_come_back(
        v in arb_object(),
        pretty in any::<bool>(),
        fence in prop_oneof![Just(""), Just("```json\n"), Just("```\n"), Just("~~~JSON\n")],
        before in prop_oneof![Just(""), Just("Sure! "), Just("Here is [the answer]:\n"), Just("use {braces}: ")],
        after in prop_oneof![Just(""), Just("\nHope this helps."), Just(" {\"other\": 1}")],
        trailing_comma in any::<bool>(),
    ) {
        let mut json = if pretty { serde_json::to_string_pretty(&v) } else { serde_json::to_string(&v) }
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        // Compare with the value the printed text holds (floats need not round-trip exactly).
        let want = value(&json);
        if trailing_comma {
            let last = json.len() - 1;
            json.insert(last, ',');
        }
        let close = if fence.is_empty() { "" } else { &fence[..3] };
        let text = format!("{before}{fence}{json}\n{close}{after}");
        let repaired = repair(&text, RootHint::Object);
        let got: Value = serde_json::from_str(&repaired.text)
            .map_err(|e| TestCaseError::fail(format!("{e}: {text:?} → {:?}", repaired.text)))?;
        prop_assert_eq!(got, want);
        prop_assert!(repaired.truncated.is_none());
    }
}

proptest! {
    #[test]
    fn cut_replies_are_reported_or_closed(v in arb_object(), pretty in any::<bool>(), at in any::<prop::sample::Index>()) {
        let json = if pretty { serde_json::to_string_pretty(&v) } else { serde_json::to_string(&v) }
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let cuts: Vec<usize> = json.char_indices().map(|(i, _)| i).filter(|&i| i > 0).collect();
        let cut = cuts[at.index(cuts.len())];
        let prefix = &json[..cut];
        let repaired = repair(prefix, RootHint::Object);
        prop_assert!(repaired.found_json);
        match &repaired.truncated {
            Some(t) => prop_assert!(t.path.is_empty() || t.path.starts_with('/')),
            None => {
                let closed: Result<Value, _> = serde_json::from_str(&repaired.text);
                prop_assert!(closed.is_ok(), "{prefix:?} → {:?}", repaired.text);
            }
        }
    }

    #[test]
    fn mangled_json_never_panics(v in arb_value(), edits in prop::collection::vec((any::<prop::sample::Index>(), 0..8u8), 1..6)) {
        let mut text: Vec<char> = serde_json::to_string_pretty(&v)
            .map_err(|e| TestCaseError::fail(e.to_string()))?
            .chars()
            .collect();
        for (at, edit) in edits {
            let i = at.index(text.len() + 1);
            match edit {
                0 => { text.insert(i, ','); }
                1 => { text.insert(i, '\''); }
                2 => { text.insert(i, '\n'); }
                3 => { text.insert(i, '“'); }
                4 => { text.truncate(i); }
                5 if i < text.len() => { text.remove(i); }
                6 => { text.insert(i, '\\'); }
                _ => { text.insert(i, '}'); }
            }
        }
        let text: String = text.into_iter().collect();
        for hint in [RootHint::Any, RootHint::Object, RootHint::Array] {
            let _ = repair(&text, hint);
            let _ = repair(&format!("Sure!\n```json\n{text}\n```"), hint);
        }
    }
}

#[test]
fn two_answers_of_the_same_shape_are_refused() {
    let two = "Option A: {\"choice\": \"walk\", \"minutes\": 20}\nOption B: {\"choice\": \"nap\", \"minutes\": 15}\nWhich one?";
    let repaired = repair(two, RootHint::Object);
    let ambiguity = repaired.ambiguous.expect("two answers");
    assert_eq!(
        ambiguity.message,
        "the reply holds two different JSON answers of the same shape (on lines 1 and 2); send exactly one"
    );
    assert_eq!(ambiguity.found, "{\"choice\": \"nap\", \"minutes\": 15}");
    // Also when the first starts the reply, sits in a fence, or the two are arrays of objects.
    for two in [
        "{\"a\": 1}\nor rather {'a': 2}",
        "```json\n{\"a\": 1}\n```\nor\n```json\n{\"a\": 2,}\n```",
        "[{\"n\": 1}] or [{\"n\": 2}]",
    ] {
        assert!(repair(two, RootHint::Any).ambiguous.is_some(), "{two:?}");
    }
    // Not rivals: another shape, the same value again, an inner value, a scalar, a cut one.
    for one in [
        "{\"done\": true}\n(Note: fields like {\"extra\": 1} were left out.)",
        "```json\n{\"c\": \"list\"}\n```\nRun: curl -d '{\"c\": \"list\"}' host",
        "Here: {\"a\": {\"a\": 1}}.",
        "[1, 2] see [3]",
        "Sure: {\"a\": 1}, then {\"a\": 2",
    ] {
        let repaired = repair(one, RootHint::Any);
        assert!(repaired.ambiguous.is_none(), "{one:?}: {repaired:?}");
    }
}
