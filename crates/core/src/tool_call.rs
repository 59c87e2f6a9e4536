//! [`ToolCall`]: a function tool the model called in its reply, and the check of a reply that
//! has some (`Contract::check_reply`).
//!
//! Only a `text` contract with `[cards] tool = true` offers a tool, and only in the discovery
//! and clarification modes: `present_question` ([`crate::cards::present_question_tool`]). For
//! such a contract each `present_question` call becomes a card — through
//! [`crate::cards::from_tool_call`], the same normalisation as detection — appended after the
//! cards detected in the text; a call whose arguments fail is reported at
//! `/tool_calls/K/arguments…` (K: the call's 0-based position in the reply) with the rule names
//! `from_tool_call` gives, and a call to any other tool is an `unknown_tool` violation at
//! `/tool_calls/K`. With at least one call the text may be empty. Calls in a reply to a contract
//! (or a mode) that offers no tool are ignored: the reply is checked as its text alone.

use crate::cards::{Category, TOOL_NAME, from_tool_call};
use crate::context::Context;
use crate::contract::{Checked, Contract};
use crate::report::Violation;
use crate::rule::Rule;
use crate::text::{MODE_KEY, TURN_KEY};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Where the violations of a reply's tool calls are reported: `/tool_calls/K/…`.
pub const TOOL_CALLS_PATH: &str = "/tool_calls";

/// One function tool call in a model's reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id as the provider gave it (OpenAI `tool_calls[].id`, Anthropic `tool_use`
    /// `id`), echoed by the tool result that answers it; empty when the provider gave none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    /// The function's name.
    pub name: String,
    /// The arguments: the JSON the model sent, or — when its text is not JSON — that text as a
    /// JSON string, so the check can report it.
    pub arguments: Value,
}

impl ToolCall {
    /// A call of `name` with already-parsed `arguments`.
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id: String::new(),
            name: name.into(),
            arguments,
        }
    }

    /// The same call with the provider's `id`.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    /// The arguments as JSON text, as OpenAI writes them: the text the model sent when it was
    /// not JSON, else the JSON.
    pub fn arguments_text(&self) -> String {
        match &self.arguments {
            Value::String(raw) => raw.clone(),
            other => other.to_string(),
        }
    }

    /// A call of `name` whose arguments came as JSON text (as OpenAI sends them): parsed when
    /// they are JSON, kept as a string when not; blank text is `{}` (no arguments).
    pub fn from_text(name: impl Into<String>, arguments: &str) -> Self {
        let arguments = if arguments.trim().is_empty() {
            Value::Object(Map::new())
        } else {
            serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.to_owned()))
        };
        Self::new(name, arguments)
    }

    /// The call as a line of text — `name({…arguments…})` — for transcripts: the stored
    /// content of an attempt and the bad reply shown back to the model on a retry.
    pub fn to_text(&self) -> String {
        format!("{}({})", self.name, self.arguments_text())
    }
}

/// The card category when `contract` offers the `present_question` tool in `context`.
pub(crate) fn offering(contract: &Contract, context: &Context) -> Option<Category> {
    contract.cards.filter(|c| c.tool)?;
    if contract.kind != crate::Kind::Text {
        return None;
    }
    context.get(MODE_KEY).and_then(Category::from_mode)
}

/// The check of a reply with tool calls (see the module docs).
pub(crate) fn check_reply(
    contract: &Contract,
    raw: &str,
    calls: &[ToolCall],
    context: &Context,
) -> Checked {
    let Some(category) = offering(contract, context).filter(|_| !calls.is_empty()) else {
        return contract.check(raw, context);
    };
    // Only the size step: a blank text is fine here, the calls are the reply.
    if raw.len() > contract.limits.max_bytes {
        return Checked::rejected(
            crate::check::too_large(raw.len() as u64, contract.limits.max_bytes),
            Vec::new(),
        );
    }
    let mut value = crate::text::read(raw, true, context);
    let seed = context.get(TURN_KEY).unwrap_or("");
    let mut violations = Vec::new();
    let mut cards: Vec<Value> = match value.get_mut("question_cards").map(Value::take) {
        Some(Value::Array(cards)) => cards,
        _ => Vec::new(),
    };
    let mut index = cards.len();
    for (k, call) in calls.iter().enumerate() {
        if call.name != TOOL_NAME {
            violations.push(
                Violation::new(
                    format!("{TOOL_CALLS_PATH}/{k}"),
                    Rule::UnknownTool,
                    format!(
                        "there is no tool \"{}\"; the only tool is \"{TOOL_NAME}\"",
                        call.name
                    ),
                )
                .with_found(crate::schema::cut(&call.name, 60)),
            );
            continue;
        }
        match from_tool_call(&call.arguments, category, seed, index) {
            Ok(card) => {
                if let Ok(card) = serde_json::to_value(card) {
                    cards.push(card);
                    index += 1;
                }
            }
            Err(found) => violations.extend(found.into_iter().map(|mut v| {
                v.path = format!("{TOOL_CALLS_PATH}/{k}/arguments{}", v.path);
                v.message = format!("in the {TOOL_NAME} call: {}", v.message);
                v
            })),
        }
    }
    if let Some(slot) = value.get_mut("question_cards") {
        *slot = Value::Array(cards);
    }
    crate::check::finish(contract, value, violations, Vec::new(), context)
}
