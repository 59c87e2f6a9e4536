//! The `markers` kind (spec/03): a plain-text reply with marker sections —
//! `SUGGESTED_VALUES:`, `SUGGESTED_ACTIONS:` and one registered payload type such as
//! `SCHEMA_PROPOSAL:` — each followed by JSON. [`MarkerSpec`] is what a contract's manifest
//! registers (payload types with their schemas and pages, pages with their instructions and
//! client actions); [`read`] turns a reply into the contract's value
//! `{message, suggested_values, suggested_actions, payload}`.
//!
//! A recognised marker whose JSON is missing, cut off or unreadable is a violation (so the
//! engine retries with feedback), never a silent skip; the message never keeps a recognised
//! marker. Suggestions may be plain strings or `{label, value}` objects (the protocol changed
//! from one to the other): both are normalised to objects.

mod find;
pub(crate) mod manifest;
mod prompt;
mod read;

pub use read::{MarkerRead, read};

pub(crate) use find::{Body, Section};
pub(crate) use read::{SectionReader, Slot, normalise_actions, normalise_values};

pub(crate) use prompt::render as instructions;

use crate::report::Violation;
use crate::rule::{Rule, SchemaKeyword};
use crate::schema::Schema;
use serde_json::Value;
use std::collections::BTreeMap;

/// The marker of clickable suggestions.
pub const VALUES_MARKER: &str = "SUGGESTED_VALUES";
/// The marker of client-side action buttons.
pub const ACTIONS_MARKER: &str = "SUGGESTED_ACTIONS";
/// The action every page has.
pub const CLOSE_CHAT: &str = "close_chat";

/// Context keys the markers kind reads: the page the chat is on, and extra client actions the
/// application registers (comma-separated).
pub const PAGE_KEY: &str = "page";
/// See [`PAGE_KEY`].
pub const ACTIONS_KEY: &str = "actions";

/// A payload type: a marker, the JSON Schema of its data and where it is offered.
#[derive(Debug)]
pub struct PayloadType {
    /// Name in the value (`payload.type`), e.g. `schema_proposal`.
    pub name: String,
    /// Marker text without the colon, e.g. `SCHEMA_PROPOSAL`.
    pub marker: String,
    /// Schema of `payload.data`.
    pub schema: Schema,
    /// Schema as compact JSON text in the author's key order, for the prompt.
    pub schema_text: String,
    /// Pages where it is offered; empty means every page.
    pub pages: Vec<String>,
    /// How and when to use it, for the prompt.
    pub instructions: String,
}

impl PayloadType {
    /// True when the type is offered on `page` (every type is, when no page is given).
    pub fn available_on(&self, page: Option<&str>) -> bool {
        match page {
            None => true,
            Some(page) => self.pages.is_empty() || self.pages.iter().any(|p| p == page),
        }
    }
}

/// A client-side action a suggestion button may trigger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Action {
    /// Identifier sent to the client, e.g. `close_chat`.
    pub action: String,
    /// What it does, for the prompt.
    pub description: String,
}

/// A page the chat can be on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Page {
    /// Page-specific instructions for the prompt.
    pub instructions: String,
    /// Client actions registered on this page.
    pub actions: Vec<Action>,
}

/// What a `markers` contract registers.
#[derive(Debug)]
pub struct MarkerSpec {
    /// Payload types, in manifest order.
    pub payloads: Vec<PayloadType>,
    /// Pages by name.
    pub pages: BTreeMap<String, Page>,
    /// Client actions offered on every page (`close_chat` is always one of them).
    pub actions: Vec<Action>,
}

impl MarkerSpec {
    /// The payload type called `name`.
    pub fn payload(&self, name: &str) -> Option<&PayloadType> {
        self.payloads.iter().find(|p| p.name == name)
    }

    /// Actions allowed in `SUGGESTED_ACTIONS` for a context: the global ones, the page's, and
    /// the ones the application lists under `actions`.
    pub fn actions_for(&self, context: &crate::Context) -> Vec<Action> {
        let mut out = self.actions.clone();
        if let Some(page) = context.get(PAGE_KEY).and_then(|p| self.pages.get(p)) {
            out.extend(page.actions.iter().cloned());
        }
        if let Some(list) = context.get(ACTIONS_KEY) {
            for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                out.push(Action {
                    action: name.to_owned(),
                    description: String::new(),
                });
            }
        }
        let mut seen = std::collections::HashSet::new();
        out.retain(|a| seen.insert(a.action.clone()));
        out
    }

    /// Violations of the payload's data against its type's schema (paths under
    /// `/payload/data`), or of an unknown payload type. Context-free: part of
    /// [`crate::Contract::validate`].
    pub fn validate_payload(&self, value: &Value, out: &mut Vec<Violation>) {
        let Some(payload) = value.get("payload").filter(|p| !p.is_null()) else {
            return;
        };
        let Some(name) = payload.get("type").and_then(Value::as_str) else {
            return; // the contract's schema reports a payload without a type
        };
        let Some(kind) = self.payload(name) else {
            let known: Vec<&str> = self.payloads.iter().map(|p| p.name.as_str()).collect();
            out.push(Violation::new(
                "/payload/type",
                Rule::Schema(SchemaKeyword::Enum),
                format!(
                    "payload type {name:?} is not registered; known types: {}",
                    known.join(", ")
                ),
            ));
            return;
        };
        let Some(data) = payload.get("data") else {
            return;
        };
        if kind.schema.is_valid(data) {
            return;
        }
        for mut violation in kind.schema.violations(data) {
            violation.path = format!("/payload/data{}", violation.path);
            out.push(violation);
        }
    }
}

/// Builds the reply text a model would write for a value of a `markers` contract: the
/// message, then each marker with its JSON on its own line.
pub fn write(value: &Value, spec: &MarkerSpec) -> String {
    let mut out = value
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim()
        .to_owned();
    let mut section = |marker: &str, json: &Value| {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(marker);
        out.push_str(":\n");
        out.push_str(&json.to_string());
    };
    if let Some(payload) = value.get("payload").filter(|p| !p.is_null()) {
        let name = payload.get("type").and_then(Value::as_str).unwrap_or("");
        if let (Some(kind), Some(data)) = (spec.payload(name), payload.get("data")) {
            section(&kind.marker, data);
        }
    }
    for (key, marker) in [
        ("suggested_values", VALUES_MARKER),
        ("suggested_actions", ACTIONS_MARKER),
    ] {
        if let Some(list) = value.get(key).filter(|v| !v.is_null()) {
            section(marker, list);
        }
    }
    out
}
