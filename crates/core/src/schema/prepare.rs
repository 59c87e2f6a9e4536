//! [`Prepared`]: a schema document made ready for the validator — every `pattern` and
//! `patternProperties` key rewritten by [`super::ecma::translate`], every `format` the
//! contract does not know collected for a load-time warning.
//!
//! Subschemas are found the way the validator's own resolver finds them
//! (`referencing::Draft::subresources_of`, which knows each draft's keywords), so a `pattern`
//! or `format` inside `properties`, `enum` or an example is never taken for a keyword. Only the
//! place of each subschema is worked out here (the resolver yields the values, not their
//! pointers).

use super::ecma::{self, NotARegex};
use jsonschema::Draft;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Where a keyword sits: the JSON pointer of its schema object, then the keyword.
fn child_pointer(base: &str, segment: &str) -> String {
    let escaped = segment.replace('~', "~0").replace('/', "~1");
    format!("{base}/{escaped}")
}

/// A pattern that is no regular expression in any reading, and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadPattern {
    /// JSON pointer of the `pattern` keyword or `patternProperties` key.
    pub(crate) pointer: String,
    pub(crate) pattern: String,
    pub(crate) reason: String,
}

/// What [`prepare`] found in one document.
#[derive(Debug, Default)]
pub(crate) struct Prepared {
    /// The document to compile, when a pattern had to be rewritten (else the original is used).
    pub(crate) rewritten: Option<Value>,
    /// Rewritten pattern → as written, for messages.
    pub(crate) originals: HashMap<String, String>,
    /// `format` names not in `known`, with the pointer of each `format` keyword.
    pub(crate) unknown_formats: Vec<(String, String)>,
}

enum Edit {
    /// `pattern` of the schema object at the pointer.
    Pattern(String),
    /// A `patternProperties` key of the schema object at the pointer: written, rewritten.
    Key(String, String),
}

/// Walks `doc` (read as `draft` where it names no `$schema` of its own).
pub(crate) fn prepare(
    doc: &Value,
    draft: Draft,
    known: &dyn Fn(&str) -> bool,
) -> Result<Prepared, BadPattern> {
    let mut prepared = Prepared::default();
    let mut edits: Vec<(String, Edit)> = Vec::new();
    walk(doc, draft, String::new(), &mut |node, pointer| {
        visit(node, pointer, known, &mut prepared, &mut edits)
    })?;
    if !edits.is_empty() {
        let mut copy = doc.clone();
        // Children before parents: a renamed `patternProperties` key must not hide the
        // subschema below it from an edit of its own.
        for (pointer, edit) in edits.into_iter().rev() {
            if let Some(Value::Object(node)) = copy.pointer_mut(&pointer) {
                apply(node, edit);
            }
        }
        prepared.rewritten = Some(copy);
    }
    Ok(prepared)
}

fn visit(
    node: &Map<String, Value>,
    pointer: &str,
    known: &dyn Fn(&str) -> bool,
    prepared: &mut Prepared,
    edits: &mut Vec<(String, Edit)>,
) -> Result<(), BadPattern> {
    if let Some(Value::String(pattern)) = node.get("pattern") {
        let at = child_pointer(pointer, "pattern");
        let translated = rewrite(pattern, at)?;
        if &translated != pattern {
            prepared
                .originals
                .insert(translated.clone(), pattern.clone());
            edits.push((pointer.to_owned(), Edit::Pattern(translated)));
        }
    }
    if let Some(Value::Object(patterns)) = node.get("patternProperties") {
        let base = child_pointer(pointer, "patternProperties");
        for key in patterns.keys() {
            let translated = rewrite(key, child_pointer(&base, key))?;
            if &translated != key {
                edits.push((pointer.to_owned(), Edit::Key(key.clone(), translated)));
            }
        }
    }
    if let Some(Value::String(format)) = node.get("format")
        && !known(format)
    {
        prepared
            .unknown_formats
            .push((child_pointer(pointer, "format"), format.clone()));
    }
    Ok(())
}

fn rewrite(pattern: &str, pointer: String) -> Result<String, BadPattern> {
    ecma::translate(pattern)
        .map(|t| t.text)
        .map_err(|NotARegex(reason)| BadPattern {
            pointer,
            pattern: pattern.to_owned(),
            reason,
        })
}

fn apply(node: &mut Map<String, Value>, edit: Edit) {
    match edit {
        Edit::Pattern(text) => {
            node.insert("pattern".into(), Value::String(text));
        }
        Edit::Key(from, mut to) => {
            let Some(Value::Object(patterns)) = node.get_mut("patternProperties") else {
                return;
            };
            // Two keys that read the same after rewriting stay two keys: a group around one
            // changes nothing it matches.
            while patterns.contains_key(&to) {
                to = format!("(?:{to})");
            }
            if let Some(schema) = patterns.remove(&from) {
                patterns.insert(to, schema);
            }
        }
    }
}

/// What [`walk`] calls on each schema object, with its JSON pointer.
type Visit<'a> = dyn FnMut(&Map<String, Value>, &str) -> Result<(), BadPattern> + 'a;

/// Calls `f` on every schema object in `doc`, with its JSON pointer.
fn walk(doc: &Value, draft: Draft, pointer: String, f: &mut Visit<'_>) -> Result<(), BadPattern> {
    let Value::Object(node) = doc else {
        return Ok(());
    };
    let draft = match draft.detect(doc) {
        Draft::Unknown => draft,
        own => own,
    };
    f(node, &pointer)?;
    let places = places_of_children(node);
    for child in draft.subresources_of(doc) {
        if let Some(place) = places.get(&(child as *const Value as usize)) {
            walk(child, draft, format!("{pointer}{place}"), f)?;
        }
    }
    Ok(())
}

/// Every value one or two levels below `node`, by address, with its pointer relative to it.
fn places_of_children(node: &Map<String, Value>) -> HashMap<usize, String> {
    let mut places = HashMap::new();
    let address = |v: &Value| v as *const Value as usize;
    for (key, value) in node {
        let here = child_pointer("", key);
        match value {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    places.insert(address(item), format!("{here}/{i}"));
                }
            }
            Value::Object(members) => {
                for (name, member) in members {
                    places.insert(address(member), child_pointer(&here, name));
                }
            }
            _ => {}
        }
        places.insert(address(value), here);
    }
    places
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn all_known(_: &str) -> bool {
        true
    }

    #[test]
    fn patterns_are_found_only_where_they_are_keywords() {
        let doc = json!({
            "properties": {
                "pattern": {"type": "string", "pattern": "^a{,2}$"},
                "list": {"prefixItems": [{"pattern": "x]"}]},
                "other": {"enum": [{"pattern": "{"}], "examples": [{"pattern": "}"}]}
            },
            "patternProperties": {"^\\z$": {"pattern": "ok"}},
            "$defs": {"d": {"pattern": "\\a"}}
        });
        let p = prepare(&doc, Draft::Draft202012, &all_known).unwrap();
        let out = p.rewritten.unwrap();
        assert_eq!(
            out.pointer("/properties/pattern/pattern"),
            Some(&json!("^a\\{,2\\}$"))
        );
        assert_eq!(
            out.pointer("/properties/list/prefixItems/0/pattern"),
            Some(&json!("x\\]"))
        );
        assert_eq!(out.pointer("/$defs/d/pattern"), Some(&json!("a")));
        // Values that are not schemas are left alone.
        assert_eq!(
            out.pointer("/properties/other"),
            doc.pointer("/properties/other")
        );
        assert!(out.pointer("/patternProperties/^z$").is_some());
        assert_eq!(p.originals.get("x\\]").map(String::as_str), Some("x]"));
    }

    #[test]
    fn a_bad_pattern_names_its_place() {
        let doc = json!({"properties": {"a/b": {"patternProperties": {"(": {}}}}});
        let e = prepare(&doc, Draft::Draft7, &all_known).unwrap_err();
        assert_eq!(e.pointer, "/properties/a~1b/patternProperties/(");
        assert_eq!(e.pattern, "(");
        let e = prepare(
            &json!({"items": {"pattern": "a**"}}),
            Draft::Draft4,
            &all_known,
        )
        .unwrap_err();
        assert_eq!(e.pointer, "/items/pattern");
    }

    #[test]
    fn unknown_formats_are_listed_with_their_place() {
        let doc = json!({
            "format": "uuid",
            "properties": {"format": {"format": "zip-code"}, "n": {"const": {"format": "nope"}}},
            "anyOf": [{"format": "phone"}]
        });
        let known = |name: &str| name == "uuid";
        let p = prepare(&doc, Draft::Draft4, &known).unwrap();
        assert!(p.rewritten.is_none());
        let mut found = p.unknown_formats.clone();
        found.sort();
        assert_eq!(
            found,
            vec![
                ("/anyOf/0/format".to_owned(), "phone".to_owned()),
                (
                    "/properties/format/format".to_owned(),
                    "zip-code".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn rewritten_keys_never_collide() {
        let doc =
            json!({"patternProperties": {"a\\z": {"type": "string"}, "az": {"type": "integer"}}});
        let out = prepare(&doc, Draft::Draft202012, &all_known)
            .unwrap()
            .rewritten
            .unwrap();
        let keys: Vec<&String> = out["patternProperties"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(keys.len(), 2, "{keys:?}");
    }
}
