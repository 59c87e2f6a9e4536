//! [`read`]: a `markers` reply → `{message, suggested_values, suggested_actions, payload}`,
//! with a violation for every recognised marker whose JSON cannot be used, and a repair for
//! every change made (a lenient JSON repair inside a section, plain-string suggestions turned
//! into objects, a missing `handler`, extra sections dropped).
//!
//! The sections are read one at a time by a [`SectionReader`], which the streaming check also
//! uses to read each section as soon as its JSON is complete.

use super::find::{Body, Section, find_sections};
use super::{ACTIONS_MARKER, MarkerSpec, PAGE_KEY, VALUES_MARKER};
use crate::context::Context;
use crate::repair::{RootHint, repair};
use crate::repair_kind::RepairKind;
use crate::report::{Repair, Violation};
use crate::rule::Rule;
use crate::schema::cut;
use serde_json::{Map, Value, json};
use std::borrow::Cow;

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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slot {
    /// `SUGGESTED_VALUES`.
    Values,
    /// `SUGGESTED_ACTIONS`.
    Actions,
    /// The payload type at this index of the spec.
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
    let mut reader = SectionReader::new(spec, context);
    let sections = find_sections(text, reader.names());
    for section in &sections {
        reader.section(section);
    }
    let message = tidy(&cut_out(text, &sections));
    let allowed = spec.actions_for(context);
    let SectionReader {
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
            RepairKind::SuggestionsWithProposal,
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
                        Rule::UnknownAction,
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

/// Reads marker sections one at a time: the first section of each kind fills its slot, later
/// ones are dropped (with a repair), and a section that cannot be used is a violation.
#[derive(Debug)]
pub(crate) struct SectionReader<'s> {
    /// Marker names, in the order [`find_sections`] is given them: values, actions, payloads.
    names: Vec<Cow<'s, str>>,
    /// Each payload type's name and whether it is offered on the page.
    payloads: Vec<(Cow<'s, str>, bool)>,
    page: Option<Cow<'s, str>>,
    violations: Vec<Violation>,
    repairs: Vec<Repair>,
    values: Option<Value>,
    actions: Option<Value>,
    payload: Option<Value>,
}

impl<'s> SectionReader<'s> {
    /// A reader for replies to `spec` in `context` (the page decides which payloads are offered).
    pub(crate) fn new(spec: &'s MarkerSpec, context: &'s Context) -> Self {
        let page = context.get(PAGE_KEY);
        let mut names: Vec<Cow<'s, str>> = Vec::with_capacity(2 + spec.payloads.len());
        names.push(Cow::Borrowed(VALUES_MARKER));
        names.push(Cow::Borrowed(ACTIONS_MARKER));
        names.extend(
            spec.payloads
                .iter()
                .map(|p| Cow::Borrowed(p.marker.as_str())),
        );
        Self {
            names,
            payloads: spec
                .payloads
                .iter()
                .map(|p| (Cow::Borrowed(p.name.as_str()), p.available_on(page)))
                .collect(),
            page: page.map(Cow::Borrowed),
            violations: Vec::new(),
            repairs: Vec::new(),
            values: None,
            actions: None,
            payload: None,
        }
    }

    /// The same reader, owning its names (for a reader that outlives the contract's borrow).
    pub(crate) fn into_owned(self) -> SectionReader<'static> {
        let owned = |c: Cow<'_, str>| Cow::Owned(c.into_owned());
        SectionReader {
            names: self.names.into_iter().map(owned).collect(),
            payloads: self
                .payloads
                .into_iter()
                .map(|(name, offered)| (owned(name), offered))
                .collect(),
            page: self.page.map(owned),
            violations: self.violations,
            repairs: self.repairs,
            values: self.values,
            actions: self.actions,
            payload: self.payload,
        }
    }

    /// The marker names (without colons), indexed as [`Section::marker`].
    pub(crate) fn names(&self) -> &[Cow<'s, str>] {
        &self.names
    }

    /// What was read so far into `slot` (not normalised).
    pub(crate) fn filled(&self, slot: Slot) -> Option<&Value> {
        match slot {
            Slot::Values => self.values.as_ref(),
            Slot::Actions => self.actions.as_ref(),
            Slot::Payload(_) => self.payload.as_ref(),
        }
    }

    /// Reads one section (sections come in reply order). Returns the slot it filled, if any:
    /// `None` for a repeated or extra section, a payload not offered on the page, or JSON that
    /// is missing, cut off or unreadable (each reported as a repair or violation).
    pub(crate) fn section(&mut self, section: &Section<'_>) -> Option<Slot> {
        let marker = self.names.get(section.marker)?.clone();
        let marker = marker.as_ref();
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
                Slot::Payload(_) => (RepairKind::ExtraPayload, "a second payload was dropped"),
                _ => (
                    RepairKind::DuplicateMarker,
                    "a repeated marker section was dropped",
                ),
            };
            add_repair(&mut self.repairs, kind, &format!("{what} ({marker})"));
            return None;
        }
        if let Slot::Payload(index) = slot {
            let offered = self.payloads.get(index).is_some_and(|p| p.1);
            if !offered {
                self.violations.push(Violation::new(
                    "/payload",
                    Rule::PayloadUnavailable,
                    format!(
                        "{marker} is not available on page {:?}; do not use it here",
                        self.page.as_deref().unwrap_or_default()
                    ),
                ));
                return None;
            }
        }
        let json = self.parse(section, marker, slot)?;
        match slot {
            Slot::Values => self.values = Some(json),
            Slot::Actions => self.actions = Some(json),
            Slot::Payload(index) => {
                let name = self.payloads.get(index).map_or("", |p| p.0.as_ref());
                self.payload = Some(json!({
                    "type": name,
                    "data": json,
                }));
            }
        }
        Some(slot)
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
                        Rule::Truncated,
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
                        Rule::MarkerJson,
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
        if repaired.truncated.is_none()
            && repaired.ambiguous.is_none()
            && repaired.broken.is_none()
            && let Ok(value) = serde_json::from_str::<Value>(&repaired.text)
        {
            for r in repaired.repairs {
                merge_repair(&mut self.repairs, r);
            }
            return Some(value);
        }
        let detail = match serde_json::from_str::<Value>(text) {
            Err(e) => e.to_string(),
            Ok(_) => String::from("unreadable"),
        };
        self.violations.push(
            Violation::new(
                slot.path(),
                Rule::MarkerJson,
                format!("the JSON after {marker}: is not valid JSON: {detail}"),
            )
            .with_found(cut(text, QUOTE_CHARS)),
        );
        None
    }
}

/// Plain-string suggestions become `{label, value}` objects.
pub(crate) fn normalise_values(value: Value, repairs: &mut Vec<Repair>) -> Value {
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
                RepairKind::PlainSuggestion,
                plain,
                "plain-string suggestions were turned into {label, value} objects",
            ),
        );
    }
    Value::Array(items)
}

/// Action buttons without a `handler` get `"client"` (the only handler there is).
pub(crate) fn normalise_actions(value: Value, repairs: &mut Vec<Repair>) -> Value {
    let Value::Array(mut items) = value else {
        return value;
    };
    let mut filled = 0u32;
    for item in &mut items {
        if let Value::Object(map) = item
            && !map.contains_key("handler")
        {
            map.insert("handler".into(), Value::String("client".into()));
            filled += 1;
        }
    }
    if filled > 0 {
        merge_repair(
            repairs,
            Repair::text(
                RepairKind::DefaultHandler,
                filled,
                "actions without a handler were given \"client\"",
            ),
        );
    }
    Value::Array(items)
}

fn add_repair(repairs: &mut Vec<Repair>, kind: RepairKind, message: &str) {
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
