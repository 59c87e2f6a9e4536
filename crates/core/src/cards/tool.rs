//! The `present_question` tool (spec/04, option B): [`present_question_tool`] is its definition
//! for the model, and [`from_tool_call`] turns a call's arguments into a [`QuestionCard`] through
//! the same normalisation as detection — or reports every way the arguments are wrong as
//! [`Violation`]s with JSON-pointer paths into the arguments, ready for retry feedback.

use super::build::Draft;
use super::normalise::{Choice, option_parts};
use super::{
    Category, MAX_DESCRIPTION_CHARS, MAX_LABEL_CHARS, MAX_OPTIONS, MAX_QUESTION_CHARS,
    MAX_RATIONALE_CHARS, MIN_OPTIONS, QuestionCard,
};
use crate::report::Violation;
use crate::rule::{Rule, SchemaKeyword};
use crate::schema::{quote, type_name};
use serde_json::{Map, Value, json};

/// The tool's function name.
pub const TOOL_NAME: &str = "present_question";

/// The `present_question` tool as an OpenAI-style function tool:
/// `{"type": "function", "function": {"name", "description", "parameters"}}`.
pub fn present_question_tool() -> Value {
    json!({
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": "Present a question to the user with 2 to 6 selectable options. Use this \
                instead of plain text when you ask a discovery or clarification question; the user \
                can pick an option or type their own answer. Call it once per question.",
            "parameters": {
                "type": "object",
                "properties": {
                    "question": {
                        "type": "string",
                        "description": "The question, ending with a question mark.",
                        "maxLength": MAX_QUESTION_CHARS
                    },
                    "rationale": {
                        "type": "string",
                        "description": "One sentence on why the answer matters.",
                        "maxLength": MAX_RATIONALE_CHARS
                    },
                    "options": {
                        "type": "array",
                        "minItems": MIN_OPTIONS,
                        "maxItems": MAX_OPTIONS,
                        "items": {
                            "type": "object",
                            "properties": {
                                "label": {
                                    "type": "string",
                                    "description": "Short button text.",
                                    "maxLength": MAX_LABEL_CHARS
                                },
                                "description": {
                                    "type": "string",
                                    "description": "What choosing this option means.",
                                    "maxLength": MAX_DESCRIPTION_CHARS
                                },
                                "is_default": {
                                    "type": "boolean",
                                    "description": "True for the one option you recommend."
                                }
                            },
                            "required": ["label"],
                            "additionalProperties": false
                        }
                    },
                    "allow_multiple": {
                        "type": "boolean",
                        "description": "True when the user may pick several options."
                    },
                    "max_selections": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_OPTIONS,
                        "description": "How many options the user may pick (default 1)."
                    }
                },
                "required": ["question", "options"],
                "additionalProperties": false
            }
        }
    })
}

/// A `present_question` call's `arguments` (an object, or the JSON text of one as OpenAI sends
/// it) → the `index`-th (0-based) card of the reply. Labels are cut to length and markers such
/// as `(recommended)` become `is_default`, as in detection; an option may also be given as a
/// plain string (its label). Unknown properties are ignored.
pub fn from_tool_call(
    arguments: &Value,
    category: Category,
    seed: &str,
    index: usize,
) -> Result<QuestionCard, Vec<Violation>> {
    let parsed;
    let arguments = match arguments {
        Value::String(raw) => {
            parsed = serde_json::from_str::<Value>(raw).map_err(|e| {
                vec![
                    Violation::new("", Rule::Parse, format!("the arguments are not JSON: {e}"))
                        .with_found(quote(arguments)),
                ]
            })?;
            &parsed
        }
        other => other,
    };
    let Some(args) = arguments.as_object() else {
        return Err(vec![
            Violation::new(
                "",
                Rule::Schema(SchemaKeyword::Type),
                format!(
                    "expected the arguments as an object, found {}",
                    type_name(arguments)
                ),
            )
            .with_found(quote(arguments)),
        ]);
    };
    let mut violations = Vec::new();
    let question = string(args, "question", true, &mut violations);
    let rationale = string(args, "rationale", false, &mut violations);
    let options = options(args, &mut violations);
    let max_selections = selections(args, &mut violations);
    let (Some(question), Some(options), true) = (question, options, violations.is_empty()) else {
        return Err(violations);
    };
    let max_selections = max_selections.map(|m| m.unwrap_or(u32::MAX));
    Ok(Draft {
        hints: question.clone(),
        question,
        rationale,
        options,
        max_selections,
        style: "tool",
    }
    .into_card(category, seed, index))
}

fn missing(path: &str, key: &str) -> Violation {
    Violation::new(
        path,
        Rule::Schema(SchemaKeyword::Required),
        format!("missing required property \"{key}\""),
    )
}

fn wrong_type(path: &str, expected: &str, found: &Value) -> Violation {
    Violation::new(
        path,
        Rule::Schema(SchemaKeyword::Type),
        format!("expected {expected}, found {}", type_name(found)),
    )
    .with_found(quote(found))
}

/// A string property; `null` counts as absent. A required one must not be blank.
fn string(
    args: &Map<String, Value>,
    key: &str,
    required: bool,
    violations: &mut Vec<Violation>,
) -> Option<String> {
    let path = format!("/{key}");
    match args.get(key) {
        None | Some(Value::Null) => {
            if required {
                violations.push(missing(&path, key));
            }
            None
        }
        Some(Value::String(s)) if required && s.trim().is_empty() => {
            violations.push(Violation::new(
                path,
                Rule::Schema(SchemaKeyword::MinLength),
                format!("\"{key}\" must not be empty"),
            ));
            None
        }
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            violations.push(wrong_type(&path, "string", other));
            None
        }
    }
}

fn options(args: &Map<String, Value>, violations: &mut Vec<Violation>) -> Option<Vec<Choice>> {
    let items = match args.get("options") {
        None | Some(Value::Null) => {
            violations.push(missing("/options", "options"));
            return None;
        }
        Some(Value::Array(items)) => items,
        Some(other) => {
            violations.push(wrong_type("/options", "array", other));
            return None;
        }
    };
    let before = violations.len();
    if items.len() < MIN_OPTIONS {
        violations.push(Violation::new(
            "/options",
            Rule::Schema(SchemaKeyword::MinItems),
            format!(
                "expected at least {MIN_OPTIONS} options, found {}",
                items.len()
            ),
        ));
    } else if items.len() > MAX_OPTIONS {
        violations.push(Violation::new(
            "/options",
            Rule::Schema(SchemaKeyword::MaxItems),
            format!(
                "expected at most {MAX_OPTIONS} options, found {}",
                items.len()
            ),
        ));
    }
    let choices: Vec<Choice> = items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| choice(item, &format!("/options/{i}"), violations))
        .collect();
    (violations.len() == before).then_some(choices)
}

fn choice(item: &Value, path: &str, violations: &mut Vec<Violation>) -> Option<Choice> {
    let empty = |violations: &mut Vec<Violation>, path: String| -> Option<Choice> {
        violations.push(Violation::new(
            path,
            Rule::Schema(SchemaKeyword::MinLength),
            "the label must have text (markers such as \"(recommended)\" do not count)",
        ));
        None
    };
    let fields = match item {
        Value::String(label) => {
            return option_parts(label, None, false).or_else(|| empty(violations, path.into()));
        }
        Value::Object(fields) => fields,
        other => {
            violations.push(wrong_type(path, "object", other));
            return None;
        }
    };
    let label_path = format!("{path}/label");
    let label = match fields.get("label") {
        Some(Value::String(label)) => Some(label.as_str()),
        None | Some(Value::Null) => {
            violations.push(missing(&label_path, "label"));
            None
        }
        Some(other) => {
            violations.push(wrong_type(&label_path, "string", other));
            None
        }
    };
    let description = match fields.get("description") {
        None | Some(Value::Null) => Some(None),
        Some(Value::String(d)) => Some(Some(d.as_str())),
        Some(other) => {
            violations.push(wrong_type(&format!("{path}/description"), "string", other));
            None
        }
    };
    let is_default = match fields.get("is_default") {
        None | Some(Value::Null) => Some(false),
        Some(Value::Bool(b)) => Some(*b),
        Some(other) => {
            violations.push(wrong_type(&format!("{path}/is_default"), "boolean", other));
            None
        }
    };
    let (label, description, is_default) = (label?, description?, is_default?);
    option_parts(label, description, is_default).or_else(|| empty(violations, label_path))
}

/// `Some(Some(n))` for `max_selections: n`, `Some(None)` for `allow_multiple: true` (all
/// options), `Some(Some(1))` for `allow_multiple: false`, `None` when neither is given.
fn selections(args: &Map<String, Value>, violations: &mut Vec<Violation>) -> Option<Option<u32>> {
    if let Some(value) = args.get("max_selections").filter(|v| !v.is_null()) {
        let path = "/max_selections";
        let whole = value
            .as_i64()
            .or_else(|| value.as_u64().map(|_| i64::MAX))
            .or_else(|| {
                value
                    .as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 1e15)
                    .map(|f| f as i64)
            });
        let max = i64::try_from(MAX_OPTIONS).unwrap_or(i64::MAX);
        return match whole {
            None => {
                violations.push(wrong_type(path, "integer", value));
                None
            }
            Some(n) if n < 1 => {
                violations.push(Violation::new(
                    path,
                    Rule::Schema(SchemaKeyword::Minimum),
                    format!("must be at least 1, found {value}"),
                ));
                None
            }
            Some(n) if n > max => {
                violations.push(Violation::new(
                    path,
                    Rule::Schema(SchemaKeyword::Maximum),
                    format!("must be at most {MAX_OPTIONS}, found {value}"),
                ));
                None
            }
            Some(n) => Some(u32::try_from(n).ok()),
        };
    }
    match args.get("allow_multiple") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(true)) => Some(None),
        Some(Value::Bool(false)) => Some(Some(1)),
        Some(other) => {
            violations.push(wrong_type("/allow_multiple", "boolean", other));
            None
        }
    }
}
