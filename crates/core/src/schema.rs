//! [`Schema`]: a compiled JSON Schema and the translation of its errors into [`Violation`]s.
//!
//! Validation is the `jsonschema` crate's. Every draft it knows is accepted (04, 06, 07,
//! 2019-09, 2020-12), chosen by `$schema`; a schema without `$schema` is read as 2020-12 (or as
//! [`SchemaOptions::default_draft`]). Before compiling, every `pattern` and `patternProperties`
//! key is read as ECMA-262 reads it — with the `u` flag when valid so, else with Annex B's
//! lenient grammar — and rewritten for the validator's regex engine (`ecma`, `prepare`); a
//! pattern that is neither is a load error naming its place. `format` is asserted by default
//! for every name in [`FORMATS`] in every draft (`formats`); other names are not checked and
//! become [`SchemaWarning`]s. `$ref` resolves only inside the document and the contract's own
//! extra schema files: nothing is ever fetched. Errors become violations with the instance
//! path as a JSON pointer, the keyword as the rule and a message a model can act on;
//! `oneOf`/`anyOf` failures say what each branch wanted.

mod ecma;
mod formats;
mod prepare;

pub use formats::{FORMATS, is_known as is_known_format};

use crate::repair::RootHint;
use crate::report::Violation;
use crate::rule::Rule;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{Draft, ValidationError, Validator};
use serde_json::Value;
use std::collections::HashMap;
use std::fmt::Write as _;

/// At most this many violations are reported for one reply; the rest are counted.
pub const MAX_VIOLATIONS: usize = 50;
/// Quotes of offending values are cut to this many characters.
const QUOTE_CHARS: usize = 120;
/// Per `oneOf`/`anyOf` branch, at most this many of its errors are described.
const BRANCH_ERRORS: usize = 2;

/// A JSON Schema that could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// `$schema` names a dialect Bridle does not know.
    #[error(
        "unknown \"$schema\" {0:?}: Bridle accepts draft-04, draft-06, draft-07, 2019-09 and 2020-12"
    )]
    UnknownDraft(String),
    /// `$schema` is present but not a string.
    #[error("\"$schema\" must be a string naming a JSON Schema draft")]
    DraftNotString,
    /// The validator rejected the schema.
    #[error("not a valid JSON Schema: at {location} (keyword \"{keyword}\"): {message}")]
    Invalid {
        location: String,
        keyword: String,
        message: String,
    },
    /// A `pattern` (or `patternProperties` key) that ECMA-262 reads in neither way.
    #[error(
        "not a valid JSON Schema: at {}: {:?} is not an ECMA-262 regular expression (with the u flag or without, Annex B included): {}",
        .0.location, .0.pattern, .0.reason
    )]
    Pattern(Box<BadPattern>),
}

/// Where a pattern that is no regular expression sits, and why it is none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadPattern {
    /// JSON pointer of the `pattern` keyword or `patternProperties` key.
    pub location: String,
    /// The pattern as written (its first 120 characters).
    pub pattern: String,
    /// The regular expression parser's reason.
    pub reason: String,
}

/// Whether a schema's `format` keywords are checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Formats {
    /// Every format of [`FORMATS`] is checked, in every draft (the default).
    #[default]
    Assert,
    /// `format` is an annotation only: nothing is checked, nothing is warned about.
    Annotate,
}

/// A JSON Schema draft, for [`SchemaOptions::default_draft`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaDraft {
    Draft04,
    Draft06,
    Draft07,
    Draft201909,
    Draft202012,
}

impl SchemaDraft {
    fn draft(self) -> Draft {
        match self {
            Self::Draft04 => Draft::Draft4,
            Self::Draft06 => Draft::Draft6,
            Self::Draft07 => Draft::Draft7,
            Self::Draft201909 => Draft::Draft201909,
            Self::Draft202012 => Draft::Draft202012,
        }
    }
}

/// How [`Schema::compile_with`] compiles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SchemaOptions {
    /// Whether `format` is asserted.
    pub formats: Formats,
    /// The draft of a schema without `$schema` (default: 2020-12).
    pub default_draft: Option<SchemaDraft>,
}

/// Something about a schema its author should know, found when it was compiled: today a
/// `format` Bridle does not know (and so does not check).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaWarning {
    /// Where: a JSON pointer into the schema (`file.json#/pointer` in one of a contract's other
    /// schema files).
    pub location: String,
    pub message: String,
}

impl std::fmt::Display for SchemaWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "at {}: {}",
            display_pointer(&self.location),
            self.message
        )
    }
}

/// Most warnings kept for one schema (a schema may name thousands of formats).
const MAX_WARNINGS: usize = 20;

/// A compiled JSON Schema.
#[derive(Debug)]
pub struct Schema {
    raw: Value,
    draft: Draft,
    validator: Validator,
    warnings: Vec<SchemaWarning>,
    /// Patterns as compiled → as written, where they differ.
    originals: HashMap<String, String>,
}

/// What the schema documents became before compiling.
struct Ready {
    root: Option<Value>,
    resources: Vec<(String, Value)>,
    originals: HashMap<String, String>,
    warnings: Vec<SchemaWarning>,
}

impl Schema {
    /// Compiles `raw`. `resources` are the contract's other schema files as `(uri, schema)`
    /// pairs, the only documents a `$ref` may point to besides `raw` itself.
    pub fn compile(raw: Value, resources: &[(String, Value)]) -> Result<Self, SchemaError> {
        Self::compile_with(raw, resources, &SchemaOptions::default())
    }

    /// [`Schema::compile`] with options.
    pub fn compile_with(
        raw: Value,
        resources: &[(String, Value)],
        options: &SchemaOptions,
    ) -> Result<Self, SchemaError> {
        let draft = detect_draft(&raw, options.default_draft)?;
        let ready = ready(&raw, resources, draft, options.formats)?;
        let originals = ready.originals;
        // A schema error is the meta-schema's verdict on the user's schema: its instance path
        // is the place in the user's schema, and that place's last segment is the keyword.
        let invalid = |e: ValidationError<'_>| invalid(&e, &originals);
        let referencing = |e: jsonschema::ReferencingError| SchemaError::Invalid {
            location: "/".into(),
            keyword: "$ref".into(),
            message: e.to_string(),
        };
        let assert = options.formats == Formats::Assert;
        let options = || {
            let base = jsonschema::options()
                .with_draft(draft)
                .should_validate_formats(assert)
                .should_ignore_unknown_formats(true)
                .offline();
            if assert {
                formats::with_formats(base, draft)
            } else {
                base
            }
        };
        let root = ready.root.as_ref().unwrap_or(&raw);
        let validator = if ready.resources.is_empty() {
            options().build(root).map_err(invalid)?
        } else {
            let mut builder = jsonschema::Registry::new();
            for (uri, doc) in ready.resources {
                builder = builder.add(uri, doc).map_err(referencing)?;
            }
            let registry = builder.prepare().map_err(referencing)?;
            options()
                .with_registry(&registry)
                .build(root)
                .map_err(invalid)?
        };
        Ok(Self {
            raw,
            draft,
            validator,
            warnings: ready.warnings,
            originals,
        })
    }

    /// What the schema's author should know (unknown formats), at most 20.
    pub fn warnings(&self) -> &[SchemaWarning] {
        &self.warnings
    }

    /// The schema document as written.
    pub fn raw(&self) -> &Value {
        &self.raw
    }

    /// The draft the schema was compiled as.
    pub fn draft_name(&self) -> &'static str {
        match self.draft {
            Draft::Draft4 => "draft-04",
            Draft::Draft6 => "draft-06",
            Draft::Draft7 => "draft-07",
            Draft::Draft201909 => "2019-09",
            _ => "2020-12",
        }
    }

    /// What the schema wants at the root, to pick the JSON out of prose.
    pub fn root_hint(&self) -> RootHint {
        match self.raw.get("type") {
            Some(Value::String(t)) if t == "object" => RootHint::Object,
            Some(Value::String(t)) if t == "array" => RootHint::Array,
            _ => RootHint::Any,
        }
    }

    /// True when `value` meets the schema (the fast path: no error is built).
    pub fn is_valid(&self, value: &Value) -> bool {
        self.validator.is_valid(value)
    }

    /// Every way `value` breaks the schema, at most [`MAX_VIOLATIONS`] of them (a last
    /// violation with rule `too_many_violations` counts the rest).
    pub fn violations(&self, value: &Value) -> Vec<Violation> {
        let mut out = Vec::new();
        let mut extra = 0usize;
        for error in self.validator.iter_errors(value) {
            if out.len() < MAX_VIOLATIONS {
                out.push(to_violation(&error, &self.originals));
            } else {
                extra += 1;
            }
        }
        if extra > 0 {
            out.push(Violation::new(
                "",
                Rule::TooManyViolations,
                format!("{extra} more violations of the schema were not listed"),
            ));
        }
        out
    }
}

/// Rewrites the patterns of `raw` and of each resource, and collects the warnings.
fn ready(
    raw: &Value,
    resources: &[(String, Value)],
    draft: Draft,
    formats: Formats,
) -> Result<Ready, SchemaError> {
    let known = |name: &str| formats == Formats::Annotate || is_known_format(name);
    let mut out = Ready {
        root: None,
        resources: Vec::with_capacity(resources.len()),
        originals: HashMap::new(),
        warnings: Vec::new(),
    };
    let documents = std::iter::once((None, raw))
        .chain(resources.iter().map(|(uri, doc)| (Some(uri.as_str()), doc)));
    for (uri, doc) in documents {
        // A resource is named by its file (`defs.json#/…`), the root by the pointer alone.
        let place = |pointer: &str| match uri {
            Some(uri) => format!("{}#{pointer}", uri.trim_start_matches("json-schema:///")),
            None => pointer.to_owned(),
        };
        let prepared = prepare::prepare(doc, draft, &known).map_err(|bad| {
            SchemaError::Pattern(Box::new(BadPattern {
                location: cut(display_pointer(&place(&bad.pointer)), QUOTE_CHARS),
                pattern: cut(&bad.pattern, QUOTE_CHARS),
                reason: cut(&bad.reason, QUOTE_CHARS),
            }))
        })?;
        out.originals.extend(prepared.originals);
        for (pointer, name) in prepared.unknown_formats {
            if out.warnings.len() < MAX_WARNINGS {
                out.warnings.push(SchemaWarning {
                    location: cut(&place(&pointer), 200),
                    message: format!(
                        "format {:?} is not one Bridle knows, so it is not checked",
                        schema_cut(&name)
                    ),
                });
            }
        }
        match uri {
            None => out.root = prepared.rewritten,
            Some(uri) => out.resources.push((
                uri.to_owned(),
                prepared.rewritten.unwrap_or_else(|| doc.clone()),
            )),
        }
    }
    Ok(out)
}

fn schema_cut(name: &str) -> String {
    cut(name, 60)
}

/// The meta-schema's verdict on the user's schema as a [`SchemaError`]; a pattern is named as
/// written, not as rewritten.
fn invalid(e: &ValidationError<'_>, originals: &Originals) -> SchemaError {
    let location = e.instance_path().as_str().to_owned();
    let keyword = match location.rsplit('/').next() {
        Some(last) if !location.is_empty() => last.replace("~1", "/").replace("~0", "~"),
        _ => e.kind().keyword().to_owned(),
    };
    if let Value::String(text) = e.instance().as_ref()
        && let Some(original) = originals.get(text.as_str())
    {
        return SchemaError::Invalid {
            location: display_pointer(&location).to_owned(),
            keyword,
            message: format!(
                "the pattern {original:?} is ECMA-262 but Bridle's regex engine cannot run it"
            ),
        };
    }
    SchemaError::Invalid {
        location: display_pointer(&location).to_owned(),
        keyword,
        message: e.to_string(),
    }
}

fn detect_draft(raw: &Value, default: Option<SchemaDraft>) -> Result<Draft, SchemaError> {
    match raw.get("$schema") {
        None => Ok(default.map_or(Draft::Draft202012, SchemaDraft::draft)),
        Some(Value::String(uri)) => match Draft::from_schema_uri(uri) {
            Draft::Unknown => Err(SchemaError::UnknownDraft(uri.clone())),
            draft => Ok(draft),
        },
        Some(_) => Err(SchemaError::DraftNotString),
    }
}

/// `""` is shown as `/` so that the root has a visible name in messages.
pub(crate) fn display_pointer(pointer: &str) -> &str {
    if pointer.is_empty() { "/" } else { pointer }
}

fn to_violation(error: &ValidationError<'_>, originals: &Originals) -> Violation {
    let instance = error.instance();
    Violation::new(
        error.instance_path().as_str(),
        Rule::from_name(error.kind().keyword()),
        message(error.kind(), instance, originals),
    )
    .with_found(quote(instance))
}

/// The JSON type name of a value, as JSON Schema names it.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Compact JSON of `value`, cut to a readable length on a character boundary.
pub(crate) fn quote(value: &Value) -> String {
    let text = value.to_string();
    cut(&text, QUOTE_CHARS)
}

/// `text` cut to at most `max` characters, with `…` when something was cut.
pub(crate) fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}…", &text[..end]),
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// `expected at least 2 items, found 1`.
fn bound(relation: &str, limit: u64, unit: &str, found: usize) -> String {
    format!(
        "expected {relation} {}, found {found}",
        plural(limit, unit, &format!("{unit}s"))
    )
}

/// Patterns as compiled → as written.
type Originals = HashMap<String, String>;

fn message(kind: &ValidationErrorKind, instance: &Value, originals: &Originals) -> String {
    let found = type_name(instance);
    match kind {
        ValidationErrorKind::Required { property } => {
            format!("missing required property {property}")
        }
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(t) => t.to_string(),
                TypeKind::Multiple(set) => set
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(" or "),
            };
            format!("expected {expected}, found {found} {}", quote(instance))
        }
        ValidationErrorKind::Enum { options } => {
            format!("expected one of {options}, found {}", quote(instance))
        }
        ValidationErrorKind::Constant { expected_value } => {
            format!("expected {expected_value}, found {}", quote(instance))
        }
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            let noun = if unexpected.len() == 1 {
                "property"
            } else {
                "properties"
            };
            format!(
                "unexpected {noun} {} (not allowed here)",
                quoted_list(unexpected)
            )
        }
        ValidationErrorKind::MinItems { limit } => {
            bound("at least", *limit, "item", array_len(instance))
        }
        ValidationErrorKind::MaxItems { limit } => {
            bound("at most", *limit, "item", array_len(instance))
        }
        ValidationErrorKind::MinLength { limit } => {
            bound("at least", *limit, "character", str_len(instance))
        }
        ValidationErrorKind::MaxLength { limit } => {
            bound("at most", *limit, "character", str_len(instance))
        }
        ValidationErrorKind::Minimum { limit } => {
            format!("must be at least {limit}, found {instance}")
        }
        ValidationErrorKind::Maximum { limit } => {
            format!("must be at most {limit}, found {instance}")
        }
        ValidationErrorKind::ExclusiveMinimum { limit } => {
            format!("must be greater than {limit}, found {instance}")
        }
        ValidationErrorKind::ExclusiveMaximum { limit } => {
            format!("must be less than {limit}, found {instance}")
        }
        ValidationErrorKind::Format { format } => {
            format!("{} is not a valid {format}", quote(instance))
        }
        ValidationErrorKind::Pattern { pattern } => {
            let pattern = originals.get(pattern).unwrap_or(pattern);
            format!("{} does not match the pattern {pattern:?}", quote(instance))
        }
        ValidationErrorKind::UniqueItems => {
            "items must be unique; this array repeats an item".to_owned()
        }
        ValidationErrorKind::AnyOf { context } => branches_message(
            "matches none of the allowed shapes (anyOf)",
            context,
            originals,
        ),
        ValidationErrorKind::OneOfNotValid { context } => branches_message(
            "matches none of the allowed shapes (oneOf: exactly one must match)",
            context,
            originals,
        ),
        ValidationErrorKind::OneOfMultipleValid { context } => {
            let matched: Vec<String> = context
                .iter()
                .enumerate()
                .filter(|(_, errors)| errors.is_empty())
                .map(|(i, _)| (i + 1).to_string())
                .collect();
            format!(
                "matches more than one allowed shape (oneOf branches {}); it must match exactly one",
                matched.join(" and ")
            )
        }
        _ => kind_fallback(kind, instance),
    }
}

fn kind_fallback(kind: &ValidationErrorKind, instance: &Value) -> String {
    // The rarer keywords (not, contains, dependencies, …).
    match kind {
        ValidationErrorKind::Not { schema } => {
            format!("must not match the schema {}", cut(&schema.to_string(), 80))
        }
        ValidationErrorKind::Contains => "no item matches the \"contains\" schema".to_owned(),
        ValidationErrorKind::FalseSchema => "no value is allowed here".to_owned(),
        ValidationErrorKind::MultipleOf { multiple_of } => {
            format!("must be a multiple of {multiple_of}, found {instance}")
        }
        ValidationErrorKind::MinProperties { limit } => format!(
            "expected at least {}",
            plural(*limit, "property", "properties")
        ),
        ValidationErrorKind::MaxProperties { limit } => format!(
            "expected at most {}",
            plural(*limit, "property", "properties")
        ),
        ValidationErrorKind::AdditionalItems { limit } => format!(
            "expected at most {}",
            plural(*limit as u64, "item", "items")
        ),
        ValidationErrorKind::UnevaluatedItems { unexpected } => {
            format!("unexpected items {}", unexpected.join(", "))
        }
        ValidationErrorKind::Custom { message, .. } => message.clone(),
        other => format!("breaks the \"{}\" keyword", other.keyword()),
    }
}

fn branches_message(
    head: &str,
    branches: &[Vec<ValidationError<'static>>],
    originals: &Originals,
) -> String {
    let mut out = String::from(head);
    out.push(':');
    for (index, errors) in branches.iter().enumerate() {
        let _ = write!(out, " ({}) ", index + 1);
        let described: Vec<String> = errors
            .iter()
            .take(BRANCH_ERRORS)
            .map(|e| {
                let at = e.instance_path().as_str();
                let text = message(e.kind(), e.instance(), originals);
                if at.is_empty() {
                    text
                } else {
                    format!("{at}: {text}")
                }
            })
            .collect();
        out.push_str(&described.join("; "));
        if errors.len() > BRANCH_ERRORS {
            let _ = write!(out, "; +{} more", errors.len() - BRANCH_ERRORS);
        }
    }
    out
}

fn quoted_list(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("\"{n}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

fn array_len(value: &Value) -> usize {
    value.as_array().map_or(0, Vec::len)
}

fn str_len(value: &Value) -> usize {
    value.as_str().map_or(0, |s| s.chars().count())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rules(schema: Value, value: Value) -> Vec<(String, String)> {
        let s = Schema::compile(schema, &[]).unwrap();
        s.violations(&value)
            .into_iter()
            .map(|v| (v.path, v.rule.to_string()))
            .collect()
    }

    #[test]
    fn every_known_draft_is_chosen_by_dollar_schema() {
        for (uri, name) in [
            ("http://json-schema.org/draft-04/schema#", "draft-04"),
            ("http://json-schema.org/draft-06/schema#", "draft-06"),
            ("http://json-schema.org/draft-07/schema#", "draft-07"),
            ("https://json-schema.org/draft/2019-09/schema", "2019-09"),
            ("https://json-schema.org/draft/2020-12/schema", "2020-12"),
        ] {
            let s = Schema::compile(json!({"$schema": uri, "type": "object"}), &[]).unwrap();
            assert_eq!(s.draft_name(), name);
        }
        assert_eq!(
            Schema::compile(json!({"type": "object"}), &[])
                .unwrap()
                .draft_name(),
            "2020-12"
        );
    }

    #[test]
    fn draft_specific_keywords_follow_the_chosen_draft() {
        // draft-04: exclusiveMaximum is a boolean modifying maximum.
        let d4 = json!({"$schema": "http://json-schema.org/draft-04/schema#", "maximum": 5, "exclusiveMaximum": true});
        assert_eq!(rules(d4, json!(5)).len(), 1);
        assert!(rules(json!({"maximum": 5, "exclusiveMaximum": 6}), json!(5)).is_empty());
        // 2020-12: prefixItems exists; draft-07 ignores it.
        let modern = json!({"prefixItems": [{"type": "string"}]});
        assert_eq!(rules(modern, json!([1])).len(), 1);
        let d7 = json!({"$schema": "http://json-schema.org/draft-07/schema#", "prefixItems": [{"type": "string"}]});
        assert!(rules(d7, json!([1])).is_empty());
    }

    #[test]
    fn unknown_or_broken_schemas_are_clear_errors() {
        let e =
            Schema::compile(json!({"$schema": "https://example.com/my-dialect"}), &[]).unwrap_err();
        assert!(matches!(e, SchemaError::UnknownDraft(_)), "{e}");
        let e = Schema::compile(json!({"type": "strnig"}), &[]).unwrap_err();
        let SchemaError::Invalid {
            location, keyword, ..
        } = &e
        else {
            panic!("{e}")
        };
        assert_eq!((location.as_str(), keyword.as_str()), ("/type", "type"));
        assert!(Schema::compile(json!([1, 2]), &[]).is_err());
        assert!(Schema::compile(json!({"$schema": 7}), &[]).is_err());
    }

    #[test]
    fn refs_never_leave_the_contract() {
        let e =
            Schema::compile(json!({"$ref": "https://example.com/remote.json"}), &[]).unwrap_err();
        assert!(
            e.to_string().contains("$ref") || e.to_string().contains("example.com"),
            "{e}"
        );
        let defs = json!({"$id": "https://bridle.local/defs.json", "$defs": {"name": {"type": "string", "minLength": 1}}});
        let s = Schema::compile(
            json!({"properties": {"n": {"$ref": "https://bridle.local/defs.json#/$defs/name"}}}),
            &[("https://bridle.local/defs.json".into(), defs)],
        )
        .unwrap();
        assert!(s.is_valid(&json!({"n": "x"})));
        assert_eq!(
            s.violations(&json!({"n": ""}))[0].rule.as_str(),
            "minLength"
        );
    }

    #[test]
    fn format_is_asserted() {
        let schema = json!({"type": "string", "format": "email"});
        assert_eq!(
            rules(schema.clone(), json!("not-an-email")),
            vec![("".into(), "format".into())]
        );
        assert!(rules(schema, json!("a@example.com")).is_empty());
        let d7 = json!({"$schema": "http://json-schema.org/draft-07/schema#", "format": "date"});
        assert_eq!(rules(d7, json!("2024-13-45")).len(), 1);
    }

    #[test]
    fn violations_carry_pointer_rule_message_and_quote() {
        let s = Schema::compile(
            json!({"type": "object", "required": ["a"], "properties": {"b": {"type": "array", "items": {"enum": ["x", "y"]}}}}),
            &[],
        )
        .unwrap();
        let v = s.violations(&json!({"b": ["x", "z"]}));
        assert_eq!(v.len(), 2);
        assert_eq!((v[0].path.as_str(), v[0].rule.as_str()), ("", "required"));
        assert_eq!(v[0].message, "missing required property \"a\"");
        assert_eq!((v[1].path.as_str(), v[1].rule.as_str()), ("/b/1", "enum"));
        assert_eq!(v[1].message, "expected one of [\"x\",\"y\"], found \"z\"");
        assert_eq!(v[1].found.as_deref(), Some("\"z\""));
    }

    #[test]
    fn one_of_and_any_of_say_what_each_branch_wanted() {
        let s = Schema::compile(
            json!({"oneOf": [
                {"type": "object", "required": ["text"]},
                {"type": "string", "minLength": 3}
            ]}),
            &[],
        )
        .unwrap();
        let v = s.violations(&json!({"label": "x"}));
        assert_eq!(v[0].rule.as_str(), "oneOf");
        assert!(
            v[0].message
                .contains("(1) missing required property \"text\""),
            "{}",
            v[0].message
        );
        assert!(
            v[0].message.contains("(2) expected string, found object"),
            "{}",
            v[0].message
        );
        let any = Schema::compile(
            json!({"anyOf": [{"type": "integer"}, {"type": "string", "pattern": "^[0-9]+$"}]}),
            &[],
        )
        .unwrap();
        let v = any.violations(&json!("abc"));
        assert_eq!(v[0].rule.as_str(), "anyOf");
        assert!(
            v[0].message.contains("(1) expected integer"),
            "{}",
            v[0].message
        );
        assert!(
            v[0].message.contains("(2) \"abc\" does not match"),
            "{}",
            v[0].message
        );
        let both =
            Schema::compile(json!({"oneOf": [{"type": "integer"}, {"minimum": 0}]}), &[]).unwrap();
        let v = both.violations(&json!(3));
        assert!(
            v[0].message.contains("branches 1 and 2"),
            "{}",
            v[0].message
        );
    }

    #[test]
    fn violation_count_is_capped() {
        let s =
            Schema::compile(json!({"type": "array", "items": {"type": "string"}}), &[]).unwrap();
        let v = s.violations(&json!((0..500).collect::<Vec<_>>()));
        assert_eq!(v.len(), MAX_VIOLATIONS + 1);
        assert_eq!(v[MAX_VIOLATIONS].rule.as_str(), "too_many_violations");
        assert!(v[MAX_VIOLATIONS].message.starts_with("450 more"));
    }
}
