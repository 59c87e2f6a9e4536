//! Tests of [`Fault::apply`]: each fault breaks what it says, Bridle's check reports it at the
//! target, and the serde and name forms round-trip.

use super::*;
use crate::generate::{Hints, generate, generate_valid};
use bridle_core::{Checked, Context, Contract, Contracts};
use serde_json::json;
use std::sync::Arc;

fn selfhelp() -> Arc<Contract> {
    Contracts::builtin()
        .unwrap()
        .get("selfhelp-response")
        .unwrap()
}

fn check(contract: &Contract, text: &str) -> Checked {
    contract.check(text, &Context::new())
}

fn paths(checked: &Checked) -> Vec<(&str, &str)> {
    checked
        .violations
        .iter()
        .map(|v| (v.path.as_str(), v.rule.as_str()))
        .collect()
}

#[test]
fn repairable_faults_are_repaired_without_violations() {
    let contract = selfhelp();
    for seed in 0..30 {
        let generated = generate_valid(&contract, &Hints::default(), seed);
        for (fault, repair) in [
            (Fault::Fence, "code_fence"),
            (Fault::Prose, "surrounding_prose"),
            (Fault::TrailingComma, "trailing_comma"),
        ] {
            let broken = fault.apply(&generated, seed).unwrap();
            assert!(
                serde_json::from_str::<Value>(&broken.text).is_err(),
                "{fault}"
            );
            let checked = check(&contract, &broken.text);
            assert!(
                checked.is_valid(),
                "{fault} seed {seed}: {:?}",
                paths(&checked)
            );
            assert!(
                checked.repairs.iter().any(|r| r.kind.as_str() == repair),
                "{fault}"
            );
            assert_eq!(checked.value.as_ref(), Some(&generated.value));
            assert_eq!((broken.target.as_str(), broken.value), ("", None));
        }
    }
}

#[test]
fn structural_faults_break_what_their_target_names() {
    let contract = selfhelp();
    for seed in 0..60 {
        let generated = generate_valid(&contract, &Hints::default(), seed);
        for (fault, rule) in [
            (Fault::WrongKey, "required"),
            (Fault::MissingRequired, "required"),
            (Fault::WrongEnum, "enum"),
        ] {
            let broken = fault.apply(&generated, seed).unwrap();
            let value = broken.value.clone().unwrap();
            assert_eq!(serde_json::from_str::<Value>(&broken.text).unwrap(), value);
            let checked = check(&contract, &broken.text);
            let found = paths(&checked);
            let rule = if broken.target == "/type" {
                "const"
            } else {
                rule
            };
            assert!(
                found.contains(&(broken.target.as_str(), rule)),
                "{fault} seed {seed}: target {} but {found:?}",
                broken.target
            );
        }
    }
}

#[test]
fn wrong_key_renames_a_required_key_inside_an_array_item() {
    let contract = selfhelp();
    let generated = generate_valid(&contract, &Hints::default(), 3);
    let broken = Fault::WrongKey.apply(&generated, 11).unwrap();
    let value = broken.value.unwrap();
    let object = value.pointer(&broken.target).unwrap().as_object().unwrap();
    let original = generated
        .value
        .pointer(&broken.target)
        .unwrap()
        .as_object()
        .unwrap();
    assert_eq!(object.len(), original.len());
    let gone: Vec<&String> = original
        .keys()
        .filter(|k| !object.contains_key(*k))
        .collect();
    let new: Vec<&String> = object
        .keys()
        .filter(|k| !original.contains_key(*k))
        .collect();
    assert_eq!((gone.len(), new.len()), (1, 1));
    // The target is an item of an array (…/<index>).
    let last = broken.target.rsplit('/').next().unwrap();
    assert!(last.parse::<usize>().is_ok(), "{}", broken.target);
    // A suggestion's text becomes a label, as models do.
    let suggestion = json!({"type": "object", "required": ["suggestions"], "properties": {
        "suggestions": {"type": "array", "minItems": 1, "items": {
            "type": "object", "required": ["text"], "additionalProperties": false,
            "properties": {"text": {"type": "string"}}}}}});
    let generated = generate(&suggestion, &Hints::default(), 1);
    let broken = Fault::WrongKey.apply(&generated, 1).unwrap();
    assert!(broken.target.starts_with("/suggestions/"));
    assert!(
        broken
            .value
            .unwrap()
            .pointer(&format!("{}/label", broken.target))
            .is_some()
    );
}

#[test]
fn truncate_cuts_inside_the_target_string() {
    let contract = selfhelp();
    for seed in 0..60 {
        let generated = generate_valid(&contract, &Hints::default(), seed);
        let broken = Fault::Truncate.apply(&generated, seed).unwrap();
        let original = generated
            .value
            .pointer(&broken.target)
            .unwrap()
            .as_str()
            .unwrap();
        assert!(original.len() >= 8);
        assert!(generated.text().starts_with(&broken.text));
        let checked = check(&contract, &broken.text);
        assert_eq!(
            paths(&checked),
            [(broken.target.as_str(), "truncated")],
            "seed {seed}"
        );
    }
}

#[test]
fn plain_text_has_no_json() {
    let contract = selfhelp();
    let generated = generate_valid(&contract, &Hints::default(), 9);
    let broken = Fault::PlainText.apply(&generated, 9).unwrap();
    assert!(!broken.text.contains(['{', '[']));
    assert_eq!(paths(&check(&contract, &broken.text)), [("", "not_json")]);
    assert_eq!(broken.target, "");
}

#[test]
fn faults_that_cannot_strike_say_so() {
    let scalar = generate(&json!({"type": "integer"}), &Hints::default(), 1);
    for fault in [
        Fault::TrailingComma,
        Fault::WrongKey,
        Fault::MissingRequired,
        Fault::WrongEnum,
        Fault::Truncate,
        Fault::Http500,
        Fault::Slow { ms: 1 },
        Fault::BrokenStream,
        Fault::Reset,
        Fault::InvalidUtf8,
        Fault::Garbage,
    ] {
        assert_eq!(fault.apply(&scalar, 1), None, "{fault}");
    }
    assert!(Fault::Fence.apply(&scalar, 1).is_some());
    assert!(Fault::PlainText.apply(&scalar, 1).is_some());
}

#[test]
fn wrong_words_and_keys_are_plausible_and_new() {
    let allowed = [json!(null), json!("warning"), json!("critical")];
    assert_eq!(
        wrong_word(&json!("warning"), &allowed),
        Some(json!("caution"))
    );
    assert_eq!(wrong_word(&json!(null), &allowed), Some(json!("none")));
    assert_eq!(
        wrong_word(&json!("odd"), &[json!("odd")]),
        Some(json!("Odd"))
    );
    assert_eq!(wrong_word(&json!(3), &[json!(3)]), None);
    let object = serde_json::Map::new();
    assert_eq!(wrong_key("text", &object), "label");
    assert_eq!(wrong_key("danger_level", &object), "dangerLevel");
    assert_eq!(wrong_key("helpText", &object), "help_text");
    assert_eq!(wrong_key("fields", &object), "inputs");
    let taken: serde_json::Map<String, Value> =
        [("label".to_owned(), json!(1))].into_iter().collect();
    assert_eq!(wrong_key("text", &taken), "label_1");
}

#[test]
fn faults_serialise_tagged_and_parse_from_names() {
    let rows = [
        (Fault::WrongKey, json!({"kind": "wrong_key"})),
        (Fault::TrailingComma, json!({"kind": "trailing_comma"})),
        (Fault::Http500, json!({"kind": "http500"})),
        (
            Fault::Http429 {
                retry_after_secs: 2,
            },
            json!({"kind": "http429", "retry_after_secs": 2}),
        ),
        (Fault::Slow { ms: 250 }, json!({"kind": "slow", "ms": 250})),
        (Fault::BrokenStream, json!({"kind": "broken_stream"})),
        (Fault::Reset, json!({"kind": "reset"})),
        (Fault::InvalidUtf8, json!({"kind": "invalid_utf8"})),
        (Fault::Garbage, json!({"kind": "garbage"})),
    ];
    for (fault, wire) in rows {
        assert_eq!(serde_json::to_value(fault).unwrap(), wire);
        assert_eq!(serde_json::from_value::<Fault>(wire).unwrap(), fault);
        assert_eq!(fault.to_string().parse::<Fault>().unwrap(), fault);
    }
    assert_eq!(
        serde_json::from_value::<Fault>(json!({"kind": "http429"})).unwrap(),
        Fault::Http429 {
            retry_after_secs: 1
        }
    );
    assert!(serde_json::from_value::<Fault>(json!({"kind": "slow"})).is_err());
    for bad in [
        json!({"kind": "fence", "x": 1}),
        json!({"kind": "fence", "ms": 1}),
        json!({"kind": "slow", "msec": 1}),
        json!({"kind": "http429", "ms": 1}),
        json!({"kind": "gremlins"}),
        json!("fence"),
    ] {
        assert!(
            serde_json::from_value::<Fault>(bad.clone()).is_err(),
            "{bad}"
        );
    }
    assert_eq!("slow".parse::<Fault>().unwrap(), Fault::Slow { ms: 1000 });
    assert_eq!("http429:5".parse::<Fault>().unwrap().name(), "http429");
    for bad in [
        "",
        "fence:1",
        "gremlins",
        "slow:fast",
        "reset:1",
        "garbage:2",
    ] {
        assert!(bad.parse::<Fault>().is_err(), "{bad}");
    }
    for fault in Fault::default_mix() {
        assert_eq!(fault.name().parse::<Fault>().unwrap().name(), fault.name());
    }
}

#[test]
fn transport_faults_are_the_ones_outside_the_reply_text() {
    let transport: Vec<&str> = [
        Fault::Http500,
        Fault::Http429 {
            retry_after_secs: 1,
        },
        Fault::Slow { ms: 1 },
        Fault::BrokenStream,
        Fault::Reset,
        Fault::InvalidUtf8,
        Fault::Garbage,
    ]
    .iter()
    .filter(|f| f.is_transport())
    .map(Fault::name)
    .collect();
    assert_eq!(
        transport,
        [
            "http500",
            "http429",
            "slow",
            "broken_stream",
            "reset",
            "invalid_utf8",
            "garbage"
        ]
    );
    assert!(Fault::CONTENT.iter().all(|f| !f.is_transport()));
    for name in ["reset", "invalid_utf8", "garbage"] {
        assert!(
            UnknownFault("x".into()).to_string().contains(name),
            "{name}"
        );
    }
}
