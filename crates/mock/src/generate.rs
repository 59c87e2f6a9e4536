//! [`Generated`]: a realistic value made from a JSON Schema by [`generate`], or by
//! [`generate_valid`], which loops generate → targeted rule fixes → `Contract::validate` until
//! the value meets a contract.
//!
//! The generator reads every draft (see [`crate::shape`]): `type` and type lists, `const`,
//! `enum`, `properties`/`required` (every required property and some optional ones),
//! `additionalProperties`, `items`/`prefixItems`, item and length bounds, `uniqueItems`, numeric
//! bounds and `multipleOf`, common `format`s, local `$ref`, `allOf`, one branch of
//! `anyOf`/`oneOf`, and `if`/`then`/`else` (`then` is satisfied when `if` matches). Strings are
//! chosen by property name (see [`crate::words`]); arrays get one to three items within their
//! bounds. The same schema, hints and seed always give the same value.
//!
//! Work is bounded whatever the schema asks for: a value stops growing at [`MAX_REPLY_BYTES`]
//! of JSON text (strings shorter than their `minLength`, arrays shorter than their `minItems`,
//! fewer properties), and [`generate_valid`] stops trying once its tries together made
//! [`MAX_TRIES_BYTES`] — or at once for a schema that accepts nothing (`false`, `"not": {}`).
//! Such a value does not meet the schema: the mock answers it anyway, as it does any value it
//! could not make valid.

use crate::fixes::fix_rules;
use crate::scalars;
use crate::shape::{ANY, Conditional, Schemas, Shape};
use crate::words::{self, StringKind};
use bridle_core::Contract;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{RngExt, SeedableRng};
use serde_json::{Map, Value};
use std::collections::HashSet;

/// Below this depth optional properties are filled in and arrays get several items; deeper,
/// only what the schema requires is made.
const RICH_DEPTH: usize = 8;
/// Deeper than this a value is `null` (a recursive schema that requires itself).
const MAX_DEPTH: usize = 40;
/// Most items generated for one array, whatever its `minItems`.
const MAX_ITEMS: u64 = 1000;
/// Most values made for one reply (a schema asking for 1000 items of 1000 items gets `null`s
/// once this is spent).
const MAX_VALUES: u32 = 20_000;
/// Chance that an optional property is included.
const OPTIONAL_P: f64 = 0.6;
/// Chance that a nullable scalar is `null`.
const NULL_SCALAR_P: f64 = 0.2;
/// Chance that an `enum` with `null` in it gives `null` ("none" is the common answer).
const NULL_ENUM_P: f64 = 0.6;
/// Tries [`generate_valid`] makes before it gives up and returns its last value.
pub const MAX_TRIES: u32 = 50;
/// Most bytes of JSON text one generated value takes (1 MiB): a schema asking for 1,000 strings
/// of 65,536 characters gets a value of this size, not one of 65 MB.
pub const MAX_REPLY_BYTES: usize = 1 << 20;
/// Bytes [`generate_valid`] may make over all its tries: once its tries together made this
/// much it gives up (a schema whose large values are never valid is tried twice or three
/// times, not [`MAX_TRIES`] times).
pub const MAX_TRIES_BYTES: usize = 2 * MAX_REPLY_BYTES;
/// Values [`generate_valid`] may make over all its tries (as [`MAX_TRIES_BYTES`], counted in
/// values: small values that are never valid).
const MAX_TRIES_VALUES: u32 = 2 * MAX_VALUES;

/// What the generator should know about the request it answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hints {
    /// The requested model name, used for properties named `model`.
    pub model: String,
    /// The reply language code, used for properties named `language`.
    pub language: String,
    /// What the user asked about ("sleep and exams"): the first sentence of the reply's main
    /// text (a property named `content`, `message`, `response` or `text`) starts with it.
    pub topic: Option<String>,
}

impl Default for Hints {
    fn default() -> Self {
        Self {
            model: "bridle-mock".to_owned(),
            language: "en".to_owned(),
            topic: None,
        }
    }
}

/// An object in a generated value and the required properties it holds (where
/// [`crate::Fault::WrongKey`] and [`crate::Fault::MissingRequired`] can strike).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ObjectSpot {
    pub pointer: String,
    pub required: Vec<String>,
    pub in_array: bool,
}

/// A value chosen from an `enum` or `const` (where [`crate::Fault::WrongEnum`] can strike).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EnumSpot {
    pub pointer: String,
    pub allowed: Vec<Value>,
}

/// Where in a generated value the schema made demands that faults can break.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Spots {
    pub objects: Vec<ObjectSpot>,
    pub enums: Vec<EnumSpot>,
}

impl Spots {
    /// Drops every spot at or under `pointer` (that part of the value is being made again).
    fn forget(&mut self, pointer: &str) {
        let under = |p: &str| {
            p == pointer
                || (p.starts_with(pointer) && p.as_bytes().get(pointer.len()) == Some(&b'/'))
        };
        self.objects.retain(|s| !under(&s.pointer));
        self.enums.retain(|s| !under(&s.pointer));
    }
}

/// A generated value.
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    /// The value.
    pub value: Value,
    /// False when [`generate_valid`] found no value meeting the contract within [`MAX_TRIES`]
    /// (the last one is returned); true otherwise (also when nothing was checked).
    pub valid: bool,
    /// Values made to find this one (1 when the first one was right).
    pub tries: u32,
    pub(crate) spots: Spots,
}

impl Generated {
    /// The value as compact JSON text.
    pub fn text(&self) -> String {
        self.value.to_string()
    }
}

/// One value for `schema`, drawn with `seed` (not validated), of at most [`MAX_REPLY_BYTES`]
/// of JSON text.
pub fn generate(schema: &Value, hints: &Hints, seed: u64) -> Generated {
    generate_within(schema, hints, seed, MAX_REPLY_BYTES).0
}

/// What making a value cost.
#[derive(Debug, Clone, Copy, Default)]
struct Spent {
    values: u32,
    bytes: usize,
}

/// One value for `schema` of at most `bytes` bytes of JSON text (give or take a `null` per
/// level of nesting), and what it cost.
fn generate_within(schema: &Value, hints: &Hints, seed: u64, bytes: usize) -> (Generated, Spent) {
    let mut walk = Walk {
        schemas: Schemas::new(schema),
        hints,
        rng: StdRng::seed_from_u64(seed),
        spots: Spots::default(),
        pointer: String::new(),
        array_depth: 0,
        array_name: None,
        sibling_type: None,
        budget: MAX_VALUES,
        bytes,
        slug_scopes: vec![HashSet::new()],
        topic_told: false,
    };
    let value = walk.value(&[schema], None, 0);
    let spent = Spent {
        values: MAX_VALUES - walk.budget,
        bytes: bytes - walk.bytes,
    };
    let generated = Generated {
        value,
        valid: true,
        tries: 1,
        spots: walk.spots,
    };
    (generated, spent)
}

/// A value that meets `contract`: generated from its schema, with targeted fixes for its
/// declared rules, validated, and made again with the next seed until it passes — at most
/// [`MAX_TRIES`] times, and no more once the tries together made [`MAX_TRIES_BYTES`] (or twice
/// `MAX_VALUES` values), and once only when the schema accepts nothing. Then the last value is
/// returned with `valid: false`.
pub fn generate_valid(contract: &Contract, hints: &Hints, seed: u64) -> Generated {
    let schema = contract.schema().raw();
    let hopeless = accepts_nothing(schema);
    let mut total = Spent::default();
    let mut attempt = 0;
    loop {
        let seed = seed.wrapping_add(u64::from(attempt));
        let (mut generated, spent) = generate_within(schema, hints, seed, MAX_REPLY_BYTES);
        total.values = total.values.saturating_add(spent.values);
        total.bytes = total.bytes.saturating_add(spent.bytes);
        fix_rules(contract.rules(), &mut generated.value);
        attempt += 1;
        generated.tries = attempt;
        if contract.validate(&generated.value).is_empty() {
            return generated;
        }
        generated.valid = false;
        let spent_all = total.bytes >= MAX_TRIES_BYTES || total.values >= MAX_TRIES_VALUES;
        if hopeless || spent_all || attempt >= MAX_TRIES {
            return generated;
        }
    }
}

/// True for a schema no value meets: `false`, or one whose `not` (or an `allOf` branch's)
/// accepts everything (`"not": {}`, `"not": true`).
fn accepts_nothing(schema: &Value) -> bool {
    match schema {
        Value::Bool(accepts) => !accepts,
        Value::Object(map) => {
            let anything =
                |s: &Value| *s == Value::Bool(true) || s.as_object().is_some_and(Map::is_empty);
            map.get("not").is_some_and(anything)
                || map
                    .get("allOf")
                    .and_then(Value::as_array)
                    .is_some_and(|branches| branches.iter().any(accepts_nothing))
        }
        _ => false,
    }
}

/// Bytes of `value` written as compact JSON.
fn json_len<T: serde::Serialize + ?Sized>(value: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing into a counter cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Type {
    Null,
    Boolean,
    Integer,
    Number,
    String,
    Array,
    Object,
}

impl Type {
    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "null" => Self::Null,
            "boolean" => Self::Boolean,
            "integer" => Self::Integer,
            "number" => Self::Number,
            "string" => Self::String,
            "array" => Self::Array,
            "object" => Self::Object,
            _ => return None,
        })
    }
}

struct Walk<'s, 'h> {
    schemas: Schemas<'s>,
    hints: &'h Hints,
    rng: StdRng,
    spots: Spots,
    /// JSON pointer of the value being made.
    pointer: String,
    array_depth: usize,
    /// Property name of the innermost array (`suggestions`: its `text` is a short label).
    array_name: Option<String>,
    /// The `type` chosen for the object being made (`video` → a `.mp4` url).
    sibling_type: Option<String>,
    /// Values that may still be made.
    budget: u32,
    /// Bytes of JSON text the value may still grow by.
    bytes: usize,
    /// Slugs used so far in each enclosing array (ids and values differ within an array).
    slug_scopes: Vec<HashSet<String>>,
    /// The hints' topic has been written into a main text.
    topic_told: bool,
}

impl<'s> Walk<'s, '_> {
    fn value(&mut self, schemas: &[&'s Value], name: Option<&str>, depth: usize) -> Value {
        if depth > MAX_DEPTH || self.budget == 0 || self.bytes == 0 {
            return Value::Null;
        }
        self.budget -= 1;
        let mut shape = Shape::default();
        for schema in schemas {
            self.schemas.collect(schema, &mut shape, &mut self.rng, 0);
        }
        if let Some(constant) = shape.constant {
            self.note_enum(vec![constant.clone()]);
            return self.sized(constant.clone());
        }
        if let Some(choices) = shape.choices.as_ref().filter(|c| !c.is_empty()) {
            let chosen = self.choose_enum(choices);
            self.note_enum(choices.iter().map(|v| (*v).clone()).collect());
            return self.sized(chosen);
        }
        match self.pick_type(&shape) {
            Type::Null => self.sized(Value::Null),
            Type::Boolean => {
                let yes = self.boolean(name);
                self.sized(Value::Bool(yes))
            }
            Type::Integer => {
                let number = scalars::number(&shape, name, true, &mut self.rng);
                self.sized(number)
            }
            Type::Number => {
                let number = scalars::number(&shape, name, false, &mut self.rng);
                self.sized(number)
            }
            Type::String => Value::String(self.string(&shape, name)),
            Type::Array => self.array(&shape, name, depth),
            Type::Object => self.object(&shape, depth),
        }
    }

    /// Takes `bytes` from the budget; when fewer are left, the budget is spent (nothing more
    /// is made) and false is returned.
    fn spend(&mut self, bytes: usize) -> bool {
        match self.bytes.checked_sub(bytes) {
            Some(left) => {
                self.bytes = left;
                true
            }
            None => {
                self.bytes = 0;
                false
            }
        }
    }

    /// `value` when the budget has room for it, else `null` (and the budget is spent).
    fn sized(&mut self, value: Value) -> Value {
        if self.spend(json_len(&value)) {
            value
        } else {
            Value::Null
        }
    }

    fn note_enum(&mut self, allowed: Vec<Value>) {
        self.spots.enums.push(EnumSpot {
            pointer: self.pointer.clone(),
            allowed,
        });
    }

    /// `null` often when allowed; otherwise earlier options are likelier than later ones
    /// (enums tend to list the common case first).
    fn choose_enum(&mut self, choices: &[&Value]) -> Value {
        let (nulls, others): (Vec<&Value>, Vec<&Value>) =
            choices.iter().copied().partition(|v| v.is_null());
        if others.is_empty() || (!nulls.is_empty() && self.rng.random_bool(NULL_ENUM_P)) {
            return Value::Null;
        }
        let weights: Vec<(usize, f64)> = (0..others.len())
            .map(|i| (i, 1.0 / (i as f64 + 1.0)))
            .collect();
        let index = weights
            .choose_weighted(&mut self.rng, |(_, w)| *w)
            .map_or(0, |(i, _)| *i);
        others.get(index).map_or(Value::Null, |v| (*v).clone())
    }

    fn pick_type(&mut self, shape: &Shape<'s>) -> Type {
        let mut types: Vec<Type> = match &shape.types {
            Some(names) => names.iter().filter_map(|t| Type::parse(t)).collect(),
            None => Type::parse(shape.inferred_type()).into_iter().collect(),
        };
        if types.contains(&Type::Integer) {
            types.retain(|t| *t != Type::Number);
        }
        let nullable = types.contains(&Type::Null);
        types.retain(|t| *t != Type::Null);
        let rich = types
            .iter()
            .any(|t| matches!(t, Type::Object | Type::Array));
        if types.is_empty() || (nullable && !rich && self.rng.random_bool(NULL_SCALAR_P)) {
            return Type::Null;
        }
        if rich {
            types.retain(|t| matches!(t, Type::Object | Type::Array));
        }
        types.choose(&mut self.rng).copied().unwrap_or(Type::Null)
    }

    fn boolean(&mut self, name: Option<&str>) -> bool {
        let name = words::snake(name.unwrap_or_default());
        let p_true = if ["requires_", "needs_", "must_", "has_error", "is_error"]
            .iter()
            .any(|p| name.starts_with(p))
        {
            0.15
        } else if ["is_", "has_", "can_"].iter().any(|p| name.starts_with(p))
            || matches!(
                name.as_str(),
                "enabled" | "active" | "valid" | "success" | "safe"
            )
        {
            0.85
        } else {
            0.5
        };
        self.rng.random_bool(p_true)
    }

    fn string(&mut self, shape: &Shape<'s>, name: Option<&str>) -> String {
        let kind = StringKind::for_name(name);
        let formatted = shape
            .format
            .and_then(|f| words::format_value(&mut self.rng, f, name.unwrap_or_default()));
        let text = match formatted {
            Some(text) => text,
            None if kind.is_slug() => self.unique_slug(),
            None => self.text_of_kind(kind, name.unwrap_or_default()),
        };
        // The string takes at most what is left of the budget (its quotes included).
        let room = self.bytes.saturating_sub(2);
        let min = shape.min_length.map(|m| m.min(room as u64));
        let mut text = scalars::fit_length(text, min, shape.max_length, &mut self.rng);
        if text.len() > room {
            let mut end = room;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
        }
        if !self.spend(json_len(text.as_str())) {
            // Escapes made it larger than what was left.
            text.clear();
        }
        text
    }

    fn text_of_kind(&mut self, kind: StringKind, name: &str) -> String {
        let in_buttons = self
            .array_name
            .as_deref()
            .is_some_and(words::is_button_list);
        let media = self.sibling_type.as_deref().unwrap_or(name);
        let rng = &mut self.rng;
        match kind {
            StringKind::Slug => words::slug(rng).to_owned(),
            StringKind::Path => words::asset_path(rng, media),
            StringKind::Sentence if in_buttons => words::phrase(rng).to_owned(),
            StringKind::Email => format!("{}@example.com", words::word(rng)),
            StringKind::Language => self.hints.language.clone(),
            StringKind::Model => self.hints.model.clone(),
            StringKind::Sentence => match &self.hints.topic {
                Some(topic) if !self.topic_told && words::is_main_text(name) => {
                    self.topic_told = true;
                    format!("On {topic}: {}", words::sentence(rng))
                }
                _ => words::sentence(rng).to_owned(),
            },
            StringKind::Phrase => words::phrase(rng).to_owned(),
            StringKind::Timestamp => {
                words::format_value(rng, "date-time", name).unwrap_or_default()
            }
            StringKind::Version => "1.0.0".to_owned(),
            StringKind::Color => "#4a90d9".to_owned(),
            StringKind::Other if rng.random_bool(0.5) => words::word(rng).to_owned(),
            StringKind::Other => words::phrase(rng).to_owned(),
        }
    }

    /// A slug not yet used in the innermost array.
    fn unique_slug(&mut self) -> String {
        let mut candidate = words::slug(&mut self.rng).to_owned();
        let Some(used) = self.slug_scopes.last_mut() else {
            return candidate;
        };
        for _ in 0..6 {
            if !used.contains(&candidate) {
                break;
            }
            candidate = words::slug(&mut self.rng).to_owned();
        }
        let mut n = 2;
        let base = candidate.clone();
        while used.contains(&candidate) {
            candidate = format!("{base}_{n}");
            n += 1;
        }
        used.insert(candidate.clone());
        candidate
    }

    fn array(&mut self, shape: &Shape<'s>, name: Option<&str>, depth: usize) -> Value {
        let prefix = shape.prefix.unwrap_or_default();
        let min = shape.min_items.unwrap_or(0);
        let mut max = shape.max_items.unwrap_or(u64::MAX);
        if shape.no_more_items {
            max = max.min(prefix.len() as u64);
        }
        let usually_empty = name.is_some_and(words::is_usually_empty);
        let wanted = if depth >= RICH_DEPTH || (usually_empty && self.rng.random_bool(0.8)) {
            0
        } else {
            self.rng.random_range(1..=3u64)
        };
        let count = wanted.min(max).max(min).min(MAX_ITEMS);
        // `[]`, then a comma per item: an array stops short once the budget is spent.
        self.spend(2);
        let mut items: Vec<Value> = Vec::new();
        self.slug_scopes.push(HashSet::new());
        self.array_depth += 1;
        let outer_name = std::mem::replace(&mut self.array_name, name.map(str::to_owned));
        for index in 0..count {
            if !self.spend(1) {
                break;
            }
            let mut schemas: Vec<&'s Value> = match prefix.get(index as usize) {
                Some(schema) => vec![schema],
                None if shape.items.is_empty() => vec![&ANY],
                None => shape.items.clone(),
            };
            if index == 0
                && let Some(contains) = shape.contains
            {
                schemas.push(contains);
            }
            let Some(item) = self.item(&schemas, name, index, &items, shape.unique, depth) else {
                if items.len() as u64 >= min {
                    break;
                }
                continue;
            };
            items.push(item);
        }
        self.array_name = outer_name;
        self.array_depth -= 1;
        self.slug_scopes.pop();
        Value::Array(items)
    }

    /// Item `index`, distinct from `earlier` when `unique` (`None` when no distinct one came).
    fn item(
        &mut self,
        schemas: &[&'s Value],
        name: Option<&str>,
        index: u64,
        earlier: &[Value],
        unique: bool,
        depth: usize,
    ) -> Option<Value> {
        let mark = self.pointer.len();
        self.pointer.push('/');
        self.pointer.push_str(&index.to_string());
        let mut found = None;
        for _ in 0..8 {
            let item = self.value(schemas, name, depth + 1);
            if !unique || !earlier.contains(&item) {
                found = Some(item);
                break;
            }
            self.spots.forget(&self.pointer);
        }
        self.pointer.truncate(mark);
        found
    }

    fn object(&mut self, shape: &Shape<'s>, depth: usize) -> Value {
        let rich = depth < RICH_DEPTH;
        let mut keys: Vec<&'s str> = shape.properties.iter().map(|(k, _)| *k).collect();
        for key in &shape.required {
            if !keys.contains(key) {
                keys.push(key);
            }
        }
        let mut chosen: Vec<&'s str> = Vec::new();
        for key in &keys {
            if shape.required.contains(key) || (rich && self.rng.random_bool(OPTIONAL_P)) {
                chosen.push(key);
            }
        }
        let optional = |k: &str| !shape.required.contains(&k);
        if let Some(min) = shape.min_properties {
            for key in keys.iter().filter(|k| optional(k)) {
                if chosen.len() as u64 >= min {
                    break;
                }
                if !chosen.contains(key) {
                    chosen.push(key);
                }
            }
        }
        if let Some(max) = shape.max_properties {
            while chosen.len() as u64 > max {
                match chosen.iter().rposition(|k| optional(k)) {
                    Some(i) => chosen.remove(i),
                    None => break,
                };
            }
        }
        for (key, needs) in &shape.dependent {
            if chosen.contains(key) {
                for need in needs {
                    if !chosen.contains(need) {
                        chosen.push(need);
                    }
                }
            }
        }
        let mut map = Map::new();
        let outer_type = self.sibling_type.take();
        // `{}`, then the key, colon and comma of each member: an object stops short once the
        // budget is spent.
        self.spend(2);
        for key in chosen {
            if !self.spend(json_len(key) + 2) {
                break;
            }
            let value = self.member(shape, key, &[], depth);
            if matches!(key, "type" | "kind" | "media_type") {
                self.sibling_type = value.as_str().map(str::to_owned);
            }
            map.insert(key.to_owned(), value);
        }
        let mut value = Value::Object(map);
        let mut required: Vec<String> = shape.required.iter().map(|k| (*k).to_owned()).collect();
        self.apply_conditionals(shape, &mut value, &mut required, depth);
        self.sibling_type = outer_type;
        self.spots.objects.push(ObjectSpot {
            pointer: self.pointer.clone(),
            required: required
                .into_iter()
                .filter(|k| value.get(k).is_some())
                .collect(),
            in_array: self.array_depth > 0,
        });
        value
    }

    fn member(&mut self, shape: &Shape<'s>, key: &str, extra: &[&'s Value], depth: usize) -> Value {
        let mut schemas: Vec<&'s Value> = match shape.property(key) {
            Some(list) => list.to_vec(),
            None => vec![shape.additional.unwrap_or(&ANY)],
        };
        schemas.extend_from_slice(extra);
        let mark = self.pointer.len();
        self.pointer.push('/');
        self.pointer
            .push_str(&key.replace('~', "~0").replace('/', "~1"));
        self.spots.forget(&self.pointer);
        let value = self.value(&schemas, Some(key), depth + 1);
        self.pointer.truncate(mark);
        value
    }

    /// Decides each `if` (and dependent schema) on the object made so far, then remakes the
    /// properties the chosen `then`/`else` refines and adds the ones it requires.
    fn apply_conditionals(
        &mut self,
        shape: &Shape<'s>,
        value: &mut Value,
        required: &mut Vec<String>,
        depth: usize,
    ) {
        let mut extra = Shape::default();
        for conditional in &shape.conditionals {
            let branch = match *conditional {
                Conditional::IfThen {
                    test,
                    then,
                    otherwise,
                } => {
                    if self.schemas.matches(test, value) {
                        then
                    } else {
                        otherwise
                    }
                }
                Conditional::WhenPresent { key, then } => value.get(key).is_some().then_some(then),
            };
            if let Some(branch) = branch {
                self.schemas.collect(branch, &mut extra, &mut self.rng, 0);
            }
        }
        let mut keys: Vec<&'s str> = extra.required.clone();
        for (key, _) in &extra.properties {
            if !keys.contains(key) && value.get(*key).is_some() {
                keys.push(key);
            }
        }
        for key in keys {
            if !self.spend(json_len(key) + 2) {
                break;
            }
            let refinements = extra.property(key).unwrap_or_default().to_vec();
            let remade = self.member(shape, key, &refinements, depth);
            if let Value::Object(map) = value {
                map.insert(key.to_owned(), remade);
            }
            if extra.required.contains(&key) && !required.iter().any(|k| k == key) {
                required.push(key.to_owned());
            }
        }
    }
}

#[cfg(test)]
mod tests;
