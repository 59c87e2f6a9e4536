//! [`read`]: a `markers` reply → `{message, suggested_values, suggested_actions, payload}`,
//! with a violation for every recognised marker whose JSON cannot be used, and a repair for
//! every change made (a lenient JSON repair inside a section, plain-string suggestions turned
//! into objects, a missing `handler`, extra sections dropped).

use super::find::{Body, Section, find_sections};
use super::{ACTIONS_MARKER, MarkerSpec, PAGE_KEY, VALUES_MARKER};
use crate::context::Context;
use crate::repair::{RootHint, repair};
use crate::report::{Repair, Violation};
use crate::schema::cut;
use serde_json::{Map, Value, json};

/// Characters of the text quoted in a violation.
const QUOTE_CHARS: usize = 80;

/// The result of [`read`].
#[derive(Debug, Clone, PartialEq)]
pub struct MarkerRead {
    /// The value (always built: a marker problem is reported, the rest still read).
    pub value: Value,
    /// Problems with the marker sections (the contract's schema is checked afterwards).
    pub violations: Vec<Violation>,
    /// Changes made to read the reply.
    pub repairs: Vec<Repair>,
}

/// What a marker section feeds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    Values,
    Actions,
    Payload(usize),
}

impl Slot {
    fn path(self) -> &'static str {
        match self {
            Self::Values => "/suggested_values",
            Self::Actions => "/suggested_actions",
            Self::Payload(_) => "/payload",
        }
    }
}

/// Reads a `markers` reply. `context` gives the page (which payload types are offered) and
/// the client actions the application registers.
pub fn read(raw: &str, spec: &MarkerSpec, context: &Context) -> MarkerRead {
    let text = raw.strip_prefix('\u{feff}').unwrap_or(raw);
    let mut names: Vec<&str> = vec![VALUES_MARKER, ACTIONS_MARKER];
    names.extend(spec.payloads.iter().map(|p| p.marker.as_str()));
    let sections = find_sections(text, &names);

    let mut reader = Reader {
        spec,
        page: context.get(PAGE_KEY),
        violations: Vec::new(),
        repairs: Vec::new(),
        values: None,
        actions: None,
        payload: None,
    };
    for section in &sections {
        reader.section(section, &names);
    }
    let message = tidy(&cut_out(text, &sections));
    let allowed = spec.actions_for(context);
    let Reader {
        mut violations,
        mut repairs,
        values,
        actions,
        payload,
        ..
    } = reader;
    let (mut values, mut actions) = (values, actions);
    if payload.is_some() && (values.is_some() || actions.is_some()) {
        values = None;
        actions = None;
        add_repair(
            &mut repairs,
            "suggestions_with_proposal",
            "suggestions dropped: a reply with a proposal asks the user to act on it first",
        );
    }
    let values = values.map(|v| normalise_values(v, &mut repairs));
    let actions = actions.map(|v| normalise_actions(v, &mut repairs));
    if let Some(Value::Array(items)) = &actions {
        for (i, item) in items.iter().enumerate() {
            let Some(name) = item.get("action").and_then(Value::as_str) else {
                continue;
            };
            if !allowed.iter().any(|a| a.action == name) {
                let list: Vec<&str> = allowed.iter().map(|a| a.action.as_str()).collect();
                violations.push(
                    Violation::new(
                        format!("/suggested_actions/{i}/action"),
                        "unknown_action",
                        format!(
                            "action {name:?} is not available here; use only: {}",
                            list.join(", ")
                        ),
                    )
                    .with_found(name),
                );
            }
        }
    }
    let mut value = Map::new();
    value.insert("message".into(), Value::String(message));
    value.insert("suggested_values".into(), values.unwrap_or(Value::Null));
    value.insert("suggested_actions".into(), actions.unwrap_or(Value::Null));
    value.insert("payload".into(), payload.unwrap_or(Value::Null));
    MarkerRead {
        value: Value::Object(value),
        violations,
        repairs,
    }
}

struct Reader<'s> {
    spec: &'s MarkerSpec,
    page: Option<&'s str>,
    violations: Vec<Violation>,
    repairs: Vec<Repair>,
    values: Option<Value>,
    actions: Option<Value>,
    payload: Option<Value>,
}

impl Reader<'_> {
    fn section(&mut self, section: &Section<'_>, names: &[&str]) {
        let marker = names[section.marker];
        let slot = match section.marker {
            0 => Slot::Values,
            1 => Slot::Actions,
            n => Slot::Payload(n - 2),
        };
        let taken = match slot {
            Slot::Values => self.values.is_some(),
            Slot::Actions => self.actions.is_some(),
            Slot::Payload(_) => self.payload.is_some(),
        };
        if taken {
            let (kind, what) = match slot {
                Slot::Payload(_) => ("extra_payload", "a second payload was dropped"),
                _ => ("duplicate_marker", "a repeated marker section was dropped"),
            };
            add_repair(&mut self.repairs, kind, &format!("{what} ({marker})"));
            return;
        }
        if let Slot::Payload(index) = slot {
            let kind = &self.spec.payloads[index];
            if !kind.available_on(self.page) {
                self.violations.push(Violation::new(
                    "/payload",
                    "payload_unavailable",
                    format!(
                        "{marker} is not available on page {:?}; do not use it here",
                        self.page.unwrap_or_default()
                    ),
                ));
                return;
            }
        }
        let Some(json) = self.parse(section, marker, slot) else {
            return;
        };
        match slot {
            Slot::Values => self.values = Some(json),
            Slot::Actions => self.actions = Some(json),
            Slot::Payload(index) => {
                self.payload = Some(json!({
                    "type": self.spec.payloads[index].name,
                    "data": json,
                }));
            }
        }
    }

    /// The section's JSON, leniently repaired when needed; a violation when it cannot be read.
    fn parse(&mut self, section: &Section<'_>, marker: &str, slot: Slot) -> Option<Value> {
        let expected = match slot {
            Slot::Payload(_) => "a JSON object",
            _ => "a JSON array",
        };
        let text = match section.body {
            Body::Json(text) => text,
            Body::Unclosed(text) => {
                self.violations.push(
                    Violation::new(
                        slot.path(),
                        "truncated",
                        format!(
                            "the JSON after {marker}: is cut off (the reply ended inside it); send it complete"
                        ),
                    )
                    .with_found(tail(text)),
                );
                return None;
            }
            Body::Missing(rest) => {
                self.violations.push(
                    Violation::new(
                        slot.path(),
                        "marker_json",
                        format!("{marker}: must be followed by {expected}"),
                    )
                    .with_found(cut(rest, QUOTE_CHARS)),
                );
                return None;
            }
        };
        if let Ok(value) = serde_json::from_str::<Value>(text) {
            return Some(value);
        }
        let hint = match slot {
            Slot::Payload(_) => RootHint::Object,
            _ => RootHint::Array,
        };
        let repaired = repair(text, hint);
        if repaired.truncated.is_none() {
            if let Ok(value) = serde_json::from_str::<Value>(&repaired.text) {
                for r in repaired.repairs {
                    merge_repair(&mut self.repairs, r);
                }
                return Some(value);
            }
        }
        let detail = match serde_json::from_str::<Value>(text) {
            Err(e) => e.to_string(),
            Ok(_) => String::from("unreadable"),
        };
        self.violations.push(
            Violation::new(
                slot.path(),
                "marker_json",
                format!("the JSON after {marker}: is not valid JSON: {detail}"),
            )
            .with_found(cut(text, QUOTE_CHARS)),
        );
        None
    }
}

/// Plain-string suggestions become `{label, value}` objects.
fn normalise_values(value: Value, repairs: &mut Vec<Repair>) -> Value {
    let Value::Array(items) = value else {
        return value;
    };
    let mut plain = 0u32;
    let items = items
        .into_iter()
        .map(|item| match item {
            Value::String(s) => {
                plain += 1;
                json!({"label": s, "value": s})
            }
            other => other,
        })
        .collect();
    if plain > 0 {
        merge_repair(
            repairs,
            Repair::text(
                "plain_suggestion",
                plain,
                "plain-string suggestions were turned into {label, value} objects",
            ),
        );
    }
    Value::Array(items)
}

/// Action buttons without a `handler` get `"client"` (the only handler there is).
fn normalise_actions(value: Value, repairs: &mut Vec<Repair>) -> Value {
    let Value::Array(mut items) = value else {
        return value;
    };
    let mut filled = 0u32;
    for item in &mut items {
        if let Value::Object(map) = item {
            if !map.contains_key("handler") {
                map.insert("handler".into(), Value::String("client".into()));
                filled += 1;
            }
        }
    }
    if filled > 0 {
        merge_repair(
            repairs,
            Repair::text(
                "default_handler",
                filled,
                "actions without a handler were given \"client\"",
            ),
        );
    }
    Value::Array(items)
}

fn add_repair(repairs: &mut Vec<Repair>, kind: &str, message: &str) {
    merge_repair(repairs, Repair::text(kind, 1, message));
}

fn merge_repair(repairs: &mut Vec<Repair>, repair: Repair) {
    match repairs
        .iter_mut()
        .find(|r| r.kind == repair.kind && r.path == repair.path)
    {
        Some(existing) => existing.count += repair.count,
        None => repairs.push(repair),
    }
}

/// `text` without the sections.
fn cut_out(text: &str, sections: &[Section<'_>]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for s in sections {
        out.push_str(&text[at..s.start]);
        out.push('\n');
        at = s.end;
    }
    out.push_str(&text[at..]);
    out
}

/// Trailing spaces off each line, runs of blank lines down to one, no empty code fences,
/// no blank edges.
fn tidy(text: &str) -> String {
    let mut lines: Vec<&str> = Vec::new();
    for line in text.lines().map(str::trim_end) {
        if line.is_empty() && lines.last().is_none_or(|l| l.is_empty()) {
            continue;
        }
        lines.push(line);
    }
    // An opening fence followed (after blank lines) by a closing fence wraps nothing.
    let mut out: Vec<&str> = Vec::with_capacity(lines.len());
    for line in lines {
        if line.trim() == "```" {
            let mut back = out.len();
            while back > 0 && out[back - 1].is_empty() {
                back -= 1;
            }
            if back > 0 && out[back - 1].trim_start().starts_with("```") && is_opening(&out[..back])
            {
                out.truncate(back - 1);
                continue;
            }
        }
        out.push(line);
    }
    while out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    let mut joined = out.join("\n");
    let trimmed = joined.trim_start().len();
    joined.drain(..joined.len() - trimmed);
    // Removing a fence can leave two blank lines side by side.
    while joined.contains("\n\n\n") {
        joined = joined.replace("\n\n\n", "\n\n");
    }
    joined
}

/// True when the last line of `lines` that starts with ``` opens a fence (an even number of
/// fence lines before it).
fn is_opening(lines: &[&str]) -> bool {
    lines
        .iter()
        .filter(|l| l.trim_start().starts_with("```"))
        .count()
        % 2
        == 1
}

fn tail(text: &str) -> String {
    let chars: Vec<char> = text.chars().rev().take(QUOTE_CHARS).collect();
    let mut out: String = chars.into_iter().rev().collect();
    if out.len() < text.len() {
        out.insert(0, '…');
    }
    out
}
