//! [`Shape`]: what one place of a reply must look like, collected from a JSON Schema — its own
//! keywords, `$ref` targets, every `allOf` member and one chosen `anyOf`/`oneOf` branch merged
//! into a single flat description the generator works from; and [`Schemas`], the document the
//! shapes are read from, which resolves local `$ref`s and tests `if` conditions.
//!
//! Keywords of every draft are read (draft-04 boolean `exclusiveMinimum`, `items` as a tuple
//! before 2020-12, `prefixItems`, `dependencies` and `dependentRequired`/`dependentSchemas`).
//! Only references inside the document are followed; anything else reads as `true`.

use rand::RngExt;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use serde_json::Value;
use std::cell::Cell;

/// The schema `true`: anything goes.
pub(crate) static ANY: Value = Value::Bool(true);

/// `$ref` chains and nested combinators are followed this deep, no further.
const MAX_NESTING: usize = 32;
/// Schema nodes visited for one shape or one `if` test, at most (a hostile schema whose
/// `allOf` points at itself twice would otherwise take exponential time).
const MAX_STEPS: u32 = 4096;
/// Chance of taking a `null`-only `anyOf`/`oneOf` branch when another branch exists.
const NULL_BRANCH_P: f64 = 0.15;

/// A conditional part of a schema, decided once the object it applies to exists.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Conditional<'s> {
    /// `if` / `then` / `else`.
    IfThen {
        test: &'s Value,
        then: Option<&'s Value>,
        otherwise: Option<&'s Value>,
    },
    /// `dependentSchemas` (or a draft-04..07 schema `dependencies` entry).
    WhenPresent { key: &'s str, then: &'s Value },
}

/// The merged constraints on one place of a value.
#[derive(Debug, Default)]
pub(crate) struct Shape<'s> {
    pub types: Option<Vec<&'s str>>,
    pub constant: Option<&'s Value>,
    pub choices: Option<Vec<&'s Value>>,
    pub properties: Vec<(&'s str, Vec<&'s Value>)>,
    pub required: Vec<&'s str>,
    pub additional: Option<&'s Value>,
    pub closed: bool,
    pub dependent: Vec<(&'s str, Vec<&'s str>)>,
    pub min_properties: Option<u64>,
    pub max_properties: Option<u64>,
    pub prefix: Option<&'s [Value]>,
    pub items: Vec<&'s Value>,
    pub no_more_items: bool,
    pub contains: Option<&'s Value>,
    pub min_items: Option<u64>,
    pub max_items: Option<u64>,
    pub unique: bool,
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    pub format: Option<&'s str>,
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
    pub exclusive_minimum: Option<f64>,
    pub exclusive_maximum: Option<f64>,
    pub multiple_of: Option<f64>,
    pub conditionals: Vec<Conditional<'s>>,
    /// Schema nodes visited so far.
    pub steps: u32,
}

impl<'s> Shape<'s> {
    /// The schemas of property `key`, when any schema names it.
    pub(crate) fn property(&self, key: &str) -> Option<&[&'s Value]> {
        self.properties
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, s)| s.as_slice())
    }

    /// The type the other keywords imply, for a shape without `type`.
    pub(crate) fn inferred_type(&self) -> &'static str {
        if !self.properties.is_empty()
            || !self.required.is_empty()
            || self.additional.is_some()
            || self.closed
        {
            "object"
        } else if self.prefix.is_some() || !self.items.is_empty() || self.min_items.is_some() {
            "array"
        } else if self.minimum.is_some()
            || self.maximum.is_some()
            || self.exclusive_minimum.is_some()
            || self.exclusive_maximum.is_some()
            || self.multiple_of.is_some()
        {
            "number"
        } else {
            "string"
        }
    }

    fn add_property(&mut self, key: &'s str, schema: &'s Value) {
        match self.properties.iter_mut().find(|(k, _)| *k == key) {
            Some((_, list)) => list.push(schema),
            None => self.properties.push((key, vec![schema])),
        }
    }

    fn add_required(&mut self, key: &'s str) {
        if !self.required.contains(&key) {
            self.required.push(key);
        }
    }

    fn restrict_types(&mut self, types: Vec<&'s str>) {
        self.types = Some(match self.types.take() {
            None => types,
            Some(old) => old
                .into_iter()
                .filter_map(|t| {
                    if types.contains(&t) {
                        Some(t)
                    } else if t == "number" && types.contains(&"integer") {
                        Some("integer")
                    } else if t == "integer" && types.contains(&"number") {
                        Some(t)
                    } else {
                        None
                    }
                })
                .collect(),
        });
    }
}

/// A schema document: resolves local `$ref`s, collects [`Shape`]s, tests `if` conditions.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Schemas<'s> {
    root: &'s Value,
}

impl<'s> Schemas<'s> {
    pub(crate) fn new(root: &'s Value) -> Self {
        Self { root }
    }

    /// The schema a `$ref` names, when it is inside this document.
    pub(crate) fn resolve(&self, reference: &str) -> Option<&'s Value> {
        let fragment = match reference.split_once('#') {
            Some(("", fragment)) => fragment,
            Some((base, fragment)) if self.is_own_id(base) => fragment,
            _ => return None,
        };
        if fragment.is_empty() {
            return Some(self.root);
        }
        if fragment.starts_with('/') {
            return self.root.pointer(&percent_decode(fragment));
        }
        find_anchor(self.root, fragment, 0)
    }

    fn is_own_id(&self, base: &str) -> bool {
        ["$id", "id"]
            .iter()
            .filter_map(|k| self.root.get(*k).and_then(Value::as_str))
            .any(|id| id.trim_end_matches('#') == base)
    }

    /// Merges `schema` into `shape`, choosing one branch of each `anyOf`/`oneOf`.
    pub(crate) fn collect(
        &self,
        schema: &'s Value,
        shape: &mut Shape<'s>,
        rng: &mut StdRng,
        nesting: usize,
    ) {
        let Value::Object(map) = schema else {
            if schema == &Value::Bool(false) {
                shape.types = Some(Vec::new());
            }
            return;
        };
        shape.steps += 1;
        if nesting > MAX_NESTING || shape.steps > MAX_STEPS {
            return;
        }
        for key in ["$ref", "$dynamicRef", "$recursiveRef"] {
            if let Some(target) = map
                .get(key)
                .and_then(Value::as_str)
                .and_then(|r| self.resolve(r))
            {
                self.collect(target, shape, rng, nesting + 1);
            }
        }
        self.collect_types(map, shape);
        self.collect_object(map, shape);
        collect_array(map, shape);
        collect_scalar(map, shape);
        if let Some(Value::Array(all)) = map.get("allOf") {
            for member in all {
                self.collect(member, shape, rng, nesting + 1);
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = map.get(key)
                && let Some(branch) = self.choose_branch(branches, rng)
            {
                self.collect(branch, shape, rng, nesting + 1);
            }
        }
        if let Some(test) = map.get("if") {
            shape.conditionals.push(Conditional::IfThen {
                test,
                then: map.get("then"),
                otherwise: map.get("else"),
            });
        }
    }

    fn collect_types(&self, map: &'s serde_json::Map<String, Value>, shape: &mut Shape<'s>) {
        match map.get("type") {
            Some(Value::String(t)) => {
                let mut types = vec![t.as_str()];
                if map.get("nullable") == Some(&Value::Bool(true)) {
                    types.push("null");
                }
                shape.restrict_types(types);
            }
            Some(Value::Array(list)) => {
                shape.restrict_types(list.iter().filter_map(Value::as_str).collect());
            }
            _ => {}
        }
        if let Some(c) = map.get("const") {
            shape.constant = Some(c);
        }
        if let Some(Value::Array(options)) = map.get("enum") {
            let options: Vec<&Value> = options.iter().collect();
            shape.choices = Some(match shape.choices.take() {
                Some(old) => old.into_iter().filter(|v| options.contains(v)).collect(),
                None => options,
            });
        }
    }

    fn collect_object(&self, map: &'s serde_json::Map<String, Value>, shape: &mut Shape<'s>) {
        if let Some(Value::Object(props)) = map.get("properties") {
            for (key, schema) in props {
                shape.add_property(key, schema);
            }
        }
        if let Some(Value::Array(required)) = map.get("required") {
            for key in required.iter().filter_map(Value::as_str) {
                shape.add_required(key);
            }
        }
        match map.get("additionalProperties") {
            Some(Value::Bool(false)) => shape.closed = true,
            Some(schema @ Value::Object(_)) => shape.additional = Some(schema),
            _ => {}
        }
        if map.get("unevaluatedProperties") == Some(&Value::Bool(false)) {
            shape.closed = true;
        }
        shape.min_properties = tighter_min(shape.min_properties, uint(map.get("minProperties")));
        shape.max_properties = tighter_max(shape.max_properties, uint(map.get("maxProperties")));
        for key in ["dependencies", "dependentRequired", "dependentSchemas"] {
            let Some(Value::Object(deps)) = map.get(key) else {
                continue;
            };
            for (name, dep) in deps {
                match dep {
                    Value::Array(keys) => shape
                        .dependent
                        .push((name, keys.iter().filter_map(Value::as_str).collect())),
                    Value::Object(_) => shape.conditionals.push(Conditional::WhenPresent {
                        key: name,
                        then: dep,
                    }),
                    _ => {}
                }
            }
        }
    }

    fn choose_branch(&self, branches: &'s [Value], rng: &mut StdRng) -> Option<&'s Value> {
        let usable: Vec<&Value> = branches
            .iter()
            .filter(|b| **b != Value::Bool(false))
            .collect();
        let (nulls, others): (Vec<&Value>, Vec<&Value>) =
            usable.into_iter().partition(|b| self.is_null_only(b));
        if others.is_empty() || (!nulls.is_empty() && rng.random_bool(NULL_BRANCH_P)) {
            return nulls.first().copied();
        }
        others.choose(rng).copied()
    }

    fn is_null_only(&self, schema: &Value) -> bool {
        let schema = match schema.get("$ref").and_then(Value::as_str) {
            Some(r) => self.resolve(r).unwrap_or(schema),
            None => schema,
        };
        schema.get("type") == Some(&Value::String("null".into()))
            || schema.get("const") == Some(&Value::Null)
            || schema.get("enum") == Some(&Value::Array(vec![Value::Null]))
    }

    /// Whether `value` meets `schema`, for the keywords an `if` usually tests (`type`, `const`,
    /// `enum`, `required`, `properties`, bounds, lengths, combinators, `$ref`). Keywords it does
    /// not know count as met.
    pub(crate) fn matches(&self, schema: &Value, value: &Value) -> bool {
        self.matches_within(schema, value, 0, &Cell::new(0))
    }

    fn matches_within(
        &self,
        schema: &Value,
        value: &Value,
        nesting: usize,
        steps: &Cell<u32>,
    ) -> bool {
        let Value::Object(map) = schema else {
            return schema != &Value::Bool(false);
        };
        steps.set(steps.get().saturating_add(1));
        if nesting > MAX_NESTING || steps.get() > MAX_STEPS {
            return true;
        }
        let sub = |s: &Value| self.matches_within(s, value, nesting + 1, steps);
        if let Some(target) = map
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| self.resolve(r))
            && !sub(target)
        {
            return false;
        }
        if !type_matches(map.get("type"), value)
            || map.get("const").is_some_and(|c| c != value)
            || matches!(map.get("enum"), Some(Value::Array(options)) if !options.contains(value))
            || !bounds_match(map, value)
        {
            return false;
        }
        if let Value::Object(object) = value {
            if let Some(Value::Array(required)) = map.get("required")
                && required
                    .iter()
                    .filter_map(Value::as_str)
                    .any(|k| !object.contains_key(k))
            {
                return false;
            }
            if let Some(Value::Object(props)) = map.get("properties")
                && props.iter().any(|(k, s)| {
                    object
                        .get(k)
                        .is_some_and(|v| !self.matches_within(s, v, nesting + 1, steps))
                })
            {
                return false;
            }
        }
        if let (Value::Array(items), Some(schema @ Value::Object(_))) = (value, map.get("items"))
            && items
                .iter()
                .any(|v| !self.matches_within(schema, v, nesting + 1, steps))
        {
            return false;
        }
        let list = |k: &str| match map.get(k) {
            Some(Value::Array(list)) => Some(list),
            _ => None,
        };
        if list("allOf").is_some_and(|all| !all.iter().all(sub))
            || list("anyOf").is_some_and(|any| !any.iter().any(sub))
            || list("oneOf").is_some_and(|one| one.iter().filter(|s| sub(s)).count() != 1)
            || map.get("not").is_some_and(sub)
        {
            return false;
        }
        match map.get("if") {
            Some(test) if sub(test) => map.get("then").is_none_or(sub),
            Some(_) => map.get("else").is_none_or(sub),
            None => true,
        }
    }
}

fn collect_array<'s>(map: &'s serde_json::Map<String, Value>, shape: &mut Shape<'s>) {
    let mut more = map.get("additionalItems");
    if let Some(Value::Array(prefix)) = map.get("prefixItems") {
        shape.prefix = Some(prefix);
        more = map.get("items");
    } else {
        match map.get("items") {
            Some(Value::Array(prefix)) => shape.prefix = Some(prefix),
            Some(schema) => {
                shape.items.push(schema);
                more = None;
            }
            None => {}
        }
    }
    match more {
        Some(Value::Bool(false)) => shape.no_more_items = true,
        Some(schema @ Value::Object(_)) => shape.items.push(schema),
        _ => {}
    }
    if let Some(contains) = map.get("contains") {
        shape.contains = Some(contains);
    }
    shape.min_items = tighter_min(shape.min_items, uint(map.get("minItems")));
    shape.max_items = tighter_max(shape.max_items, uint(map.get("maxItems")));
    if map.get("uniqueItems") == Some(&Value::Bool(true)) {
        shape.unique = true;
    }
}

fn collect_scalar<'s>(map: &'s serde_json::Map<String, Value>, shape: &mut Shape<'s>) {
    shape.min_length = tighter_min(shape.min_length, uint(map.get("minLength")));
    shape.max_length = tighter_max(shape.max_length, uint(map.get("maxLength")));
    if let Some(format) = map.get("format").and_then(Value::as_str) {
        shape.format = Some(format);
    }
    let number = |k: &str| map.get(k).and_then(Value::as_f64);
    shape.minimum = tighter_min_f(shape.minimum, number("minimum"));
    shape.maximum = tighter_max_f(shape.maximum, number("maximum"));
    // Draft-04 writes exclusiveMinimum as a flag on minimum; later drafts as a number.
    let ex_min = exclusive(map.get("exclusiveMinimum"), number("minimum"));
    let ex_max = exclusive(map.get("exclusiveMaximum"), number("maximum"));
    shape.exclusive_minimum = tighter_min_f(shape.exclusive_minimum, ex_min);
    shape.exclusive_maximum = tighter_max_f(shape.exclusive_maximum, ex_max);
    if let Some(m) = number("multipleOf").filter(|m| *m > 0.0) {
        shape.multiple_of = Some(m);
    }
}

fn exclusive(keyword: Option<&Value>, bound: Option<f64>) -> Option<f64> {
    match keyword {
        Some(Value::Bool(true)) => bound,
        Some(v) => v.as_f64(),
        None => None,
    }
}

fn uint(value: Option<&Value>) -> Option<u64> {
    value.and_then(|v| v.as_u64().or_else(|| v.as_f64().map(|f| f.max(0.0) as u64)))
}

fn tighter_min(old: Option<u64>, new: Option<u64>) -> Option<u64> {
    match (old, new) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

fn tighter_max(old: Option<u64>, new: Option<u64>) -> Option<u64> {
    match (old, new) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn tighter_min_f(old: Option<f64>, new: Option<f64>) -> Option<f64> {
    match (old, new) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

fn tighter_max_f(old: Option<f64>, new: Option<f64>) -> Option<f64> {
    match (old, new) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn type_matches(types: Option<&Value>, value: &Value) -> bool {
    let one = |t: &str| match t {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => value
            .as_f64()
            .is_some_and(|f| f.fract() == 0.0 && f.is_finite()),
        _ => true,
    };
    match types {
        Some(Value::String(t)) => one(t),
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).any(one),
        _ => true,
    }
}

fn bounds_match(map: &serde_json::Map<String, Value>, value: &Value) -> bool {
    let number = |k: &str| map.get(k).and_then(Value::as_f64);
    let count = |k: &str| uint(map.get(k));
    match value {
        Value::Number(n) => {
            let Some(x) = n.as_f64() else {
                return true;
            };
            let ex_min = exclusive(map.get("exclusiveMinimum"), number("minimum"));
            let ex_max = exclusive(map.get("exclusiveMaximum"), number("maximum"));
            number("minimum").is_none_or(|m| x >= m)
                && number("maximum").is_none_or(|m| x <= m)
                && ex_min.is_none_or(|m| x > m)
                && ex_max.is_none_or(|m| x < m)
        }
        Value::String(s) => {
            let len = s.chars().count() as u64;
            count("minLength").is_none_or(|m| len >= m)
                && count("maxLength").is_none_or(|m| len <= m)
        }
        Value::Array(items) => {
            let len = items.len() as u64;
            count("minItems").is_none_or(|m| len >= m) && count("maxItems").is_none_or(|m| len <= m)
        }
        _ => true,
    }
}

/// `%25` → `%`, `%2F` → `/` in a URI fragment (JSON pointer escapes are left to `pointer`).
fn percent_decode(fragment: &str) -> String {
    let bytes = fragment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                let (h, l) = (hex(h).unwrap_or(0), hex(l).unwrap_or(0));
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The subschema whose `$anchor` (or draft-04..07 `$id`/`id` `#name`) is `name`.
fn find_anchor<'s>(schema: &'s Value, name: &str, depth: usize) -> Option<&'s Value> {
    if depth > MAX_NESTING {
        return None;
    }
    match schema {
        Value::Object(map) => {
            let hit = map.get("$anchor").and_then(Value::as_str) == Some(name)
                || ["$id", "id"].iter().any(|k| {
                    map.get(*k)
                        .and_then(Value::as_str)
                        .and_then(|id| id.strip_prefix('#'))
                        == Some(name)
                });
            if hit {
                return Some(schema);
            }
            map.values().find_map(|v| find_anchor(v, name, depth + 1))
        }
        Value::Array(items) => items.iter().find_map(|v| find_anchor(v, name, depth + 1)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use serde_json::json;

    #[test]
    fn refs_resolve_inside_the_document_only() {
        let root = json!({
            "$id": "https://example.com/s.json",
            "definitions": {"a": {"type": "string"}},
            "$defs": {"b~c": {"$anchor": "bee", "type": "integer"}, "d e": {"type": "null"}}
        });
        let s = Schemas::new(&root);
        assert_eq!(
            s.resolve("#/definitions/a"),
            Some(&json!({"type": "string"}))
        );
        assert_eq!(
            s.resolve("https://example.com/s.json#/definitions/a"),
            Some(&json!({"type": "string"}))
        );
        assert_eq!(
            s.resolve("#/$defs/b~0c").and_then(|v| v.get("type")),
            Some(&json!("integer"))
        );
        assert_eq!(
            s.resolve("#bee").and_then(|v| v.get("type")),
            Some(&json!("integer"))
        );
        assert_eq!(s.resolve("#/$defs/d%20e"), Some(&json!({"type": "null"})));
        assert_eq!(s.resolve("#"), Some(&root));
        assert_eq!(s.resolve("other.json#/x"), None);
        assert_eq!(s.resolve("#/nowhere"), None);
    }

    #[test]
    fn all_of_merges_and_draft4_exclusive_flags_are_read() {
        let root = json!({
            "allOf": [
                {"type": ["integer", "null"], "properties": {"a": {"minimum": 1}}, "required": ["a"]},
                {"type": "integer", "properties": {"a": {"maximum": 3}}, "required": ["b"]}
            ],
            "minimum": 2, "exclusiveMinimum": true
        });
        let mut shape = Shape::default();
        Schemas::new(&root).collect(&root, &mut shape, &mut StdRng::seed_from_u64(1), 0);
        assert_eq!(shape.types, Some(vec!["integer"]));
        assert_eq!(shape.required, vec!["a", "b"]);
        assert_eq!(shape.property("a").map(<[_]>::len), Some(2));
        assert_eq!(shape.exclusive_minimum, Some(2.0));
    }

    #[test]
    fn matches_reads_common_if_conditions() {
        let root = json!({"$defs": {"kinds": {"enum": ["radio", "select"]}}});
        let s = Schemas::new(&root);
        let test = json!({"required": ["type"], "properties": {"type": {"$ref": "#/$defs/kinds"}}});
        assert!(s.matches(&test, &json!({"type": "radio"})));
        assert!(!s.matches(&test, &json!({"type": "text"})));
        assert!(!s.matches(&test, &json!({})));
        assert!(s.matches(&json!({"not": {"const": 1}}), &json!(2)));
        assert!(!s.matches(
            &json!({"oneOf": [{"type": "integer"}, {"minimum": 0}]}),
            &json!(1)
        ));
        assert!(s.matches(&json!({"minLength": 2, "maxLength": 3}), &json!("abc")));
        assert!(!s.matches(&json!({"exclusiveMaximum": 3}), &json!(3)));
        // A schema that refers to itself twice at every level is cut off, not explored.
        let knot = json!({"allOf": [{"$ref": "#"}, {"$ref": "#"}], "anyOf": [{"$ref": "#"}, {"$ref": "#"}]});
        let started = std::time::Instant::now();
        let _ = Schemas::new(&knot).matches(&knot, &json!(1));
        let mut shape = Shape::default();
        Schemas::new(&knot).collect(&knot, &mut shape, &mut StdRng::seed_from_u64(1), 0);
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }
}
