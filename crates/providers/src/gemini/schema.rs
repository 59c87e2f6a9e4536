//! [`response_schema`]: a contract's JSON Schema in Gemini's `responseSchema` form — its
//! OpenAPI-3 subset (`type` in capitals, `nullable`, string `enum`s, `properties`, `required`,
//! `items`, `anyOf`, bounds, `format`, `description`, …) — or the keyword that form cannot say.
//!
//! Keywords that only narrow what is valid and that Gemini has no word for
//! (`additionalProperties: false`, `uniqueItems`, exclusive bounds, `multipleOf`) are left out:
//! the native schema is then a little wider than the contract's, and Bridle's own validation
//! still checks every reply. A `$ref` into the schema itself (`#/definitions/…`, `#/$defs/…`)
//! is written out in place (its siblings win); a recursive one ends at the nesting limit.
//! Keywords that change the shape (`oneOf`, `allOf`, `not`, `if`/`then`/`else`, tuple
//! `items`, `patternProperties`, a non-string `enum`, a `$ref` to another document, …) make
//! the schema unsayable: the request goes out prompt-only.

use serde_json::{Map, Value};

/// Deepest nesting converted (a deeper schema is sent prompt-only).
const MAX_DEPTH: usize = 32;

/// Keywords copied as they are.
const COPIED: &[&str] = &[
    "format",
    "description",
    "title",
    "nullable",
    "pattern",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "minProperties",
    "maxProperties",
    "required",
    "propertyOrdering",
    "example",
    "default",
];

/// Keywords left out: annotations, and constraints that only narrow (Bridle checks them).
const DROPPED: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "examples",
    "readOnly",
    "writeOnly",
    "deprecated",
    "definitions",
    "$defs",
    "uniqueItems",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
];

/// `schema` as a Gemini `responseSchema`, or why it cannot be one (the keyword, as
/// `` `oneOf` at /properties/a ``).
pub(crate) fn response_schema(schema: &Value) -> Result<Value, String> {
    convert(schema, schema, "", 0).map(Value::Object)
}

fn convert(
    schema: &Value,
    root: &Value,
    at: &str,
    depth: usize,
) -> Result<Map<String, Value>, String> {
    let refuse = |what: &str| {
        Err(format!(
            "{what} at {}",
            if at.is_empty() { "/" } else { at }
        ))
    };
    if depth > MAX_DEPTH {
        return refuse(&format!("nesting deeper than {MAX_DEPTH}"));
    }
    let Value::Object(schema) = schema else {
        return refuse("a schema that is not an object");
    };
    let mut out = Map::new();
    for (key, value) in schema {
        match key.as_str() {
            "$ref" => {
                let target = value
                    .as_str()
                    .and_then(|reference| reference.strip_prefix('#'))
                    .and_then(|pointer| root.pointer(pointer));
                let Some(target) = target else {
                    return refuse("a `$ref` that does not point into the schema");
                };
                let inlined = convert(target, root, &format!("{at}/$ref"), depth + 1)?;
                for (key, value) in inlined {
                    out.entry(key).or_insert(value);
                }
            }
            "type" => {
                let Some((kind, nullable)) = type_of(value) else {
                    return refuse("a `type` of several types");
                };
                out.insert("type".into(), Value::String(kind));
                if nullable {
                    out.insert("nullable".into(), Value::Bool(true));
                }
            }
            "enum" | "const" => {
                let values = match value {
                    Value::Array(values) if key == "enum" => values.clone(),
                    single => vec![single.clone()],
                };
                let mut texts = Vec::with_capacity(values.len());
                for value in values {
                    match value {
                        Value::String(text) => texts.push(Value::String(text)),
                        Value::Null => {
                            out.insert("nullable".into(), Value::Bool(true));
                        }
                        _ => return refuse(&format!("a `{key}` of values other than strings")),
                    }
                }
                out.insert("enum".into(), Value::Array(texts));
                out.entry("type").or_insert_with(|| "STRING".into());
            }
            "properties" => {
                let Value::Object(properties) = value else {
                    return refuse("`properties` that is not an object");
                };
                let mut converted = Map::new();
                for (name, property) in properties {
                    let path = format!("{at}/properties/{name}");
                    converted.insert(
                        name.clone(),
                        Value::Object(convert(property, root, &path, depth + 1)?),
                    );
                }
                out.insert("properties".into(), Value::Object(converted));
                out.entry("type").or_insert_with(|| "OBJECT".into());
            }
            "items" => {
                if !value.is_object() {
                    return refuse("tuple `items`");
                }
                let items = convert(value, root, &format!("{at}/items"), depth + 1)?;
                out.insert("items".into(), Value::Object(items));
                out.entry("type").or_insert_with(|| "ARRAY".into());
            }
            "anyOf" => {
                let Value::Array(options) = value else {
                    return refuse("`anyOf` that is not an array");
                };
                let mut converted = Vec::with_capacity(options.len());
                for (i, option) in options.iter().enumerate() {
                    let path = format!("{at}/anyOf/{i}");
                    converted.push(Value::Object(convert(option, root, &path, depth + 1)?));
                }
                out.insert("anyOf".into(), Value::Array(converted));
            }
            "additionalProperties" if *value == Value::Bool(false) => {}
            key if COPIED.contains(&key) => {
                out.insert(key.to_owned(), value.clone());
            }
            key if DROPPED.contains(&key) => {}
            other => return refuse(&format!("`{other}`")),
        }
    }
    Ok(out)
}

/// A JSON Schema `type` as Gemini's (capitals) and whether `null` is allowed too; `None` for
/// several non-null types.
fn type_of(value: &Value) -> Option<(String, bool)> {
    match value {
        Value::String(kind) => Some((kind.to_ascii_uppercase(), false)),
        Value::Array(kinds) => {
            let nullable = kinds.iter().any(|k| k == "null");
            let mut others = kinds.iter().filter(|k| *k != "null");
            let kind = others.next().and_then(Value::as_str).unwrap_or("null");
            if others.next().is_some() {
                return None;
            }
            Some((kind.to_ascii_uppercase(), nullable))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_plain_schema_becomes_gemini_s_subset() {
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "additionalProperties": false,
            "required": ["name", "tags"],
            "properties": {
                "name": {"type": "string", "minLength": 1, "description": "who"},
                "age": {"type": ["integer", "null"], "minimum": 0},
                "kind": {"enum": ["a", "b", null]},
                "fixed": {"const": "x"},
                "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
                "either": {"anyOf": [{"type": "string"}, {"type": "number"}]}
            }
        });
        assert_eq!(
            response_schema(&schema).unwrap(),
            json!({
                "type": "OBJECT",
                "required": ["name", "tags"],
                "properties": {
                    "name": {"type": "STRING", "minLength": 1, "description": "who"},
                    "age": {"type": "INTEGER", "nullable": true, "minimum": 0},
                    "kind": {"enum": ["a", "b"], "nullable": true, "type": "STRING"},
                    "fixed": {"enum": ["x"], "type": "STRING"},
                    "tags": {"type": "ARRAY", "items": {"type": "STRING"}},
                    "either": {"anyOf": [{"type": "STRING"}, {"type": "NUMBER"}]}
                }
            })
        );
    }

    #[test]
    fn a_ref_into_the_schema_is_written_out_in_place() {
        let schema = json!({
            "definitions": {"city": {"type": "string", "description": "a city", "minLength": 1}},
            "type": "object",
            "properties": {
                "from": {"$ref": "#/definitions/city"},
                "to": {"$ref": "#/definitions/city", "description": "where to"}
            }
        });
        assert_eq!(
            response_schema(&schema).unwrap(),
            json!({"type": "OBJECT", "properties": {
                "from": {"type": "STRING", "description": "a city", "minLength": 1},
                "to": {"type": "STRING", "description": "where to", "minLength": 1}
            }})
        );
    }

    #[test]
    fn what_the_subset_cannot_say_is_named_with_its_place() {
        let refused = |schema: Value| response_schema(&schema).unwrap_err();
        assert_eq!(
            refused(json!({"type": "object", "properties": {"a": {"$ref": "other.json#/a"}}})),
            "a `$ref` that does not point into the schema at /properties/a"
        );
        assert_eq!(
            refused(json!({"properties": {"a": {"$ref": "#/definitions/missing"}}})),
            "a `$ref` that does not point into the schema at /properties/a"
        );
        let recursive = json!({"definitions": {"node": {"type": "object",
            "properties": {"next": {"$ref": "#/definitions/node"}}}}, "$ref": "#/definitions/node"});
        assert!(refused(recursive).starts_with("nesting deeper than 32"));
        assert_eq!(
            refused(json!({"oneOf": [{"type": "string"}]})),
            "`oneOf` at /"
        );
        assert_eq!(
            refused(json!({"additionalProperties": {"type": "string"}})),
            "`additionalProperties` at /"
        );
        assert_eq!(
            refused(json!({"type": ["string", "number"]})),
            "a `type` of several types at /"
        );
        assert_eq!(
            refused(json!({"enum": [1, 2]})),
            "a `enum` of values other than strings at /"
        );
        assert_eq!(
            refused(json!({"items": [{"type": "string"}]})),
            "tuple `items` at /"
        );
        let mut deep = json!({"type": "string"});
        for _ in 0..40 {
            deep = json!({"type": "array", "items": deep});
        }
        assert!(refused(deep).starts_with("nesting deeper than 32"));
    }
}
