//! Property tests: text that already parses is never changed; check never panics, whatever it
//! is given; the feedback stays bounded.

use crate::selfhelp;
use bridle_core::{Context, MAX_FEEDBACK_CHARS, RootHint, repair};
use proptest::prelude::*;
use serde_json::Value;

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        any::<String>().prop_map(Value::String),
        "[ a-z'\"\\\\/{}\\[\\],:“”\n]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((any::<String>(), inner), 0..6)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn text_that_parses_is_never_repaired(value in json_value()) {
        for text in [value.to_string(), serde_json::to_string_pretty(&value).unwrap()] {
            for hint in [RootHint::Any, RootHint::Object, RootHint::Array] {
                let repaired = repair(&text, hint);
                prop_assert_eq!(&repaired.text, &text);
                prop_assert!(repaired.repairs.is_empty());
                prop_assert!(repaired.truncated.is_none());
            }
            let checked = selfhelp().check(&text, &Context::new());
            prop_assert!(checked.repairs.iter().all(|r| r.path.is_some()), "only value coercions, never text repairs");
        }
    }

    #[test]
    fn check_never_panics_on_strings(text in any::<String>()) {
        let contract = selfhelp();
        let checked = contract.check(&text, &Context::new());
        prop_assert!(contract.feedback(&checked).chars().count() <= MAX_FEEDBACK_CHARS);
    }

    #[test]
    fn check_never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let contract = selfhelp();
        let checked = contract.check_bytes(&bytes, &Context::new());
        prop_assert!(contract.feedback(&checked).chars().count() <= MAX_FEEDBACK_CHARS);
    }

    #[test]
    fn check_never_panics_on_mangled_json(value in json_value(), cut in 0usize..400, junk in "[,\\]\\[{}'\"`\n ]{0,4}") {
        let mut text = serde_json::to_string_pretty(&value).unwrap();
        let mut at = cut.min(text.len());
        while !text.is_char_boundary(at) { at -= 1; }
        text.insert_str(at, &junk);
        let fenced = format!("Sure:\n```json\n{text}\n```");
        let contract = selfhelp();
        for t in [&text, &fenced, &text[..at]] {
            let checked = contract.check(t, &Context::new());
            prop_assert!(contract.feedback(&checked).chars().count() <= MAX_FEEDBACK_CHARS);
        }
    }
}
