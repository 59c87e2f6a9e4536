//! Tests of the generator: every seed valid for `selfhelp-response`, ad-hoc draft-04 and 2020-12
//! schemas, realistic strings, determinism, and schemas that must not hang or panic.

use super::*;
use bridle_core::{Contract, Contracts};
use serde_json::json;

fn selfhelp() -> std::sync::Arc<Contract> {
    Contracts::builtin()
        .unwrap()
        .get("selfhelp-response")
        .unwrap()
}

fn hints() -> Hints {
    Hints {
        model: "test-model".into(),
        language: "en".into(),
        topic: None,
    }
}

#[test]
fn selfhelp_values_are_valid_for_every_seed() {
    let contract = selfhelp();
    let mut tries = 0;
    let mut with_form = 0;
    for seed in 0..200 {
        let generated = generate_valid(&contract, &hints(), seed);
        let violations = contract.validate(&generated.value);
        assert!(violations.is_empty(), "seed {seed}: {violations:?}");
        assert!(generated.valid);
        tries += generated.tries;
        if generated.value.pointer("/content/form/fields").is_some() {
            with_form += 1;
        }
        assert_eq!(generated.value["metadata"]["model"], "test-model");
    }
    // Rule fixes make most first draws pass; forms appear often enough to exercise their rules.
    assert!(tries < 200 * 3, "{tries} tries for 200 values");
    assert!(with_form > 40, "{with_form} forms in 200 values");
}

#[test]
fn the_same_seed_gives_the_same_value_and_another_seed_another() {
    let contract = selfhelp();
    let a = generate_valid(&contract, &hints(), 42);
    let b = generate_valid(&contract, &hints(), 42);
    let c = generate_valid(&contract, &hints(), 43);
    assert_eq!(a, b);
    assert_ne!(a.value, c.value);
}

#[test]
fn realistic_strings_by_property_name() {
    let contract = selfhelp();
    for seed in 0..50 {
        let value = generate_valid(&contract, &hints(), seed).value;
        if let Some(language) = value.pointer("/metadata/language").and_then(Value::as_str) {
            assert_eq!(language, "en");
        }
        for block in value["content"]["text_blocks"].as_array().unwrap() {
            let text = block["content"].as_str().unwrap();
            assert!(text.chars().next().unwrap().is_uppercase(), "{text}");
        }
        for media in value["content"]["media"].as_array().into_iter().flatten() {
            assert!(media["url"].as_str().unwrap().starts_with("/assets/"));
        }
        if let Some(fields) = value
            .pointer("/content/form/fields")
            .and_then(Value::as_array)
        {
            let ids: Vec<&str> = fields.iter().map(|f| f["id"].as_str().unwrap()).collect();
            assert!(ids.iter().all(|id| {
                id.chars()
                    .all(|c| c.is_ascii_lowercase() || c == '_' || c.is_ascii_digit())
            }));
            let unique: HashSet<&&str> = ids.iter().collect();
            assert_eq!(unique.len(), ids.len(), "{ids:?}");
        }
    }
}

fn valid_over_seeds(schema: Value, seeds: u64) -> Vec<Value> {
    let contract = Contract::from_schema("adhoc", schema).unwrap();
    (0..seeds)
        .map(|seed| {
            let generated = generate_valid(&contract, &hints(), seed);
            let violations = contract.validate(&generated.value);
            assert!(
                violations.is_empty(),
                "seed {seed}: {:?} {violations:?}",
                generated.value
            );
            generated.value
        })
        .collect()
}

#[test]
fn draft04_schema_with_refs_and_exclusive_flags() {
    let values = valid_over_seeds(
        json!({
            "$schema": "http://json-schema.org/draft-04/schema#",
            "type": "object",
            "required": ["ticket", "priority", "tags"],
            "additionalProperties": false,
            "properties": {
                "ticket": {"$ref": "#/definitions/ticket"},
                "priority": {"type": "integer", "minimum": 1, "maximum": 3, "exclusiveMaximum": true},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]},
                         "uniqueItems": true, "minItems": 2, "maxItems": 3},
                "score": {"type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 0.5},
                "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}],
                         "additionalItems": false}
            },
            "definitions": {
                "ticket": {
                    "type": "object",
                    "required": ["id", "email", "opened", "url"],
                    "properties": {
                        "id": {"type": "string", "format": "uuid"},
                        "email": {"type": "string", "format": "email"},
                        "opened": {"type": "string", "format": "date-time"},
                        "url": {"type": "string", "format": "uri"},
                        "count": {"type": "integer", "multipleOf": 5, "minimum": 3, "maximum": 40}
                    }
                }
            }
        }),
        60,
    );
    for value in &values {
        let priority = value["priority"].as_i64().unwrap();
        assert!((1..3).contains(&priority));
        if let Some(pair) = value.get("pair") {
            assert!(pair.as_array().unwrap().len() <= 2);
        }
    }
}

#[test]
fn draft2020_schema_with_one_of_if_then_and_prefix_items() {
    let values = valid_over_seeds(
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "required": ["shape", "point", "note"],
            "properties": {
                "shape": {"oneOf": [{"$ref": "#/$defs/circle"}, {"$ref": "#/$defs/square"}]},
                "point": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}],
                          "items": false, "minItems": 2},
                "note": {"type": ["string", "null"], "minLength": 3, "maxLength": 12},
                "kind": {"enum": ["plain", "fancy"]},
                "fancy_detail": {"type": "string"}
            },
            "if": {"properties": {"kind": {"const": "fancy"}}, "required": ["kind"]},
            "then": {"required": ["fancy_detail"]},
            "$defs": {
                "circle": {"type": "object", "required": ["type", "radius"], "additionalProperties": false,
                           "properties": {"type": {"const": "circle"}, "radius": {"type": "number", "exclusiveMinimum": 0}}},
                "square": {"type": "object", "required": ["type", "side"], "additionalProperties": false,
                           "properties": {"type": {"const": "square"}, "side": {"type": "integer", "minimum": 1}}}
            }
        }),
        80,
    );
    let kinds: HashSet<&str> = values
        .iter()
        .map(|v| v["shape"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.len(), 2, "both oneOf branches are used");
    assert!(
        values
            .iter()
            .any(|v| v.get("kind") == Some(&json!("fancy")) && v.get("fancy_detail").is_some())
    );
}

#[test]
fn schemas_without_type_and_odd_corners_never_panic() {
    let schemas = [
        json!(true),
        json!(false),
        json!({}),
        json!({"$ref": "#"}),
        json!({"type": "object", "properties": {"child": {"$ref": "#"}}, "required": ["child"]}),
        json!({"$ref": "other.json#/x"}),
        json!({"type": "array", "minItems": 5000}),
        json!({"type": "integer", "minimum": 10, "maximum": 2}),
        json!({"type": "number", "multipleOf": 0.25, "minimum": 1, "maximum": 2}),
        json!({"type": "string", "minLength": 300}),
        json!({"type": "string", "maxLength": 0}),
        json!({"enum": []}),
        json!({"type": []}),
        json!({"anyOf": [{"type": "null"}, false]}),
        json!({"type": "object", "minProperties": 3, "maxProperties": 1,
               "properties": {"a": {}, "b": {}, "c": {}}}),
        json!({"type": "object", "dependentRequired": {"a": ["b"]},
               "dependentSchemas": {"a": {"required": ["c"]}}, "required": ["a"]}),
        json!({"type": "number", "maximum": 1e300, "minimum": -1e300}),
        json!({"type": "integer", "minimum": 1e300}),
        json!({"type": "array", "minItems": 1000, "items": {"type": "array", "minItems": 1000,
               "items": {"type": "array", "minItems": 1000}}}),
        json!({"allOf": [{"$ref": "#"}, {"$ref": "#"}], "if": {"allOf": [{"$ref": "#"}, {"$ref": "#"}]},
               "then": {"required": ["a"]}, "type": "object"}),
    ];
    for schema in schemas {
        for seed in 0..5 {
            let generated = generate(&schema, &Hints::default(), seed);
            assert!(!generated.text().is_empty());
        }
    }
    let deep = generate(
        &json!({"type": "object", "properties": {"child": {"$ref": "#"}}, "required": ["child"]}),
        &Hints::default(),
        1,
    );
    assert!(deep.text().len() < 4000);
    let long = generate(
        &json!({"type": "string", "minLength": 300}),
        &Hints::default(),
        1,
    );
    assert!(long.value.as_str().unwrap().chars().count() >= 300);
    let stepped = generate(
        &json!({"type": "integer", "multipleOf": 7, "minimum": 10, "maximum": 30}),
        &Hints::default(),
        3,
    );
    assert_eq!(stepped.value.as_i64().unwrap() % 7, 0);
}

#[test]
fn spots_record_required_objects_and_enums() {
    let contract = selfhelp();
    let generated = generate_valid(&contract, &hints(), 5);
    let spots = &generated.spots;
    assert!(
        spots.objects.iter().any(|o| o.pointer.is_empty()
            && o.required.contains(&"safety".to_owned())
            && !o.in_array)
    );
    assert!(
        spots
            .objects
            .iter()
            .any(|o| o.pointer.starts_with("/content/text_blocks/") && o.in_array)
    );
    assert!(
        spots
            .enums
            .iter()
            .any(|e| e.pointer == "/type" && e.allowed == vec![json!("response")])
    );
    for spot in &spots.objects {
        assert!(
            generated
                .value
                .pointer(&spot.pointer)
                .is_some_and(Value::is_object),
            "{spot:?}"
        );
    }
}

#[test]
fn hostile_schemas_get_a_value_within_the_byte_budget() {
    let huge = json!({"type": "array", "minItems": 1000,
                      "items": {"type": "string", "minLength": 65536}});
    let generated = generate(&huge, &Hints::default(), 1);
    let size = generated.text().len();
    // 1,000 × 65,536 characters asked for; the value stops growing at the budget, full to it.
    assert!(size <= MAX_REPLY_BYTES, "{size} bytes");
    assert!(size > MAX_REPLY_BYTES - 1024, "{size} bytes");
    let long_const = json!({"type": "array", "minItems": 1000,
                            "items": {"const": "x".repeat(100_000)}});
    let size = generate(&long_const, &Hints::default(), 1).text().len();
    assert!(size <= MAX_REPLY_BYTES, "{size} bytes");
    let wide = json!({"type": "array", "minItems": 1000, "items": {"type": "object",
                      "required": ["a", "b"], "properties": {"a": {"type": "string", "minLength": 5000},
                      "b": {"type": "array", "minItems": 1000, "items": {"type": "integer"}}}}});
    let size = generate(&wide, &Hints::default(), 1).text().len();
    assert!(size <= MAX_REPLY_BYTES, "{size} bytes");
}

#[test]
fn schemas_never_met_are_given_up_on_within_the_work_budget() {
    let huge = Contract::from_schema(
        "huge",
        json!({"type": "array", "minItems": 1000,
               "items": {"type": "string", "minLength": 65536}}),
    )
    .unwrap();
    let generated = generate_valid(&huge, &Hints::default(), 1);
    assert!(!generated.valid);
    assert!(generated.text().len() <= MAX_REPLY_BYTES);
    // Each try makes a full budget's worth: the tries stop at the work budget, not at 50.
    let most = u32::try_from(MAX_TRIES_BYTES / (MAX_REPLY_BYTES - 1024)).unwrap() + 1;
    assert!(generated.tries <= most, "{} tries", generated.tries);
    for nothing in [
        json!({"not": {}}),
        json!({"allOf": [{"type": "object"}, {"not": true}]}),
    ] {
        let contract = Contract::from_schema("nothing", nothing.clone()).unwrap();
        let generated = generate_valid(&contract, &Hints::default(), 1);
        assert!(!generated.valid, "{nothing}");
        assert_eq!(generated.tries, 1, "{nothing}");
        assert!(generated.text().len() <= MAX_REPLY_BYTES);
    }
    // A schema whose small values are never valid still stops at the count of tries.
    let unmet =
        Contract::from_schema("unmet", json!({"type": "string", "pattern": "^z{40}$"})).unwrap();
    assert_eq!(
        generate_valid(&unmet, &Hints::default(), 1).tries,
        MAX_TRIES
    );
}
