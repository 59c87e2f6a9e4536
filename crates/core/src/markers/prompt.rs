//! The system-prompt text of a `markers` contract, in the sections of spec/03: preamble, page
//! instructions, the current context the application gives, the payload manifest (payloads
//! earlier in the conversation), capabilities (structured responses offered on this page and
//! client actions) and the format rules of the suggestion markers.
//!
//! Deterministic: the same contract, context and history give the same text.

use super::{ACTIONS_KEY, ACTIONS_MARKER, MarkerSpec, PAGE_KEY, VALUES_MARKER};
use crate::context::Context;
use crate::contract::Contract;
use serde_json::Value;
use std::fmt::Write as _;

/// Context keys that steer the contract rather than describe the situation.
const RESERVED: &[&str] = &[PAGE_KEY, ACTIONS_KEY, "mode", "turn_id"];
/// Most earlier payloads listed in the manifest section (the newest ones).
const MANIFEST_ITEMS: usize = 10;
/// Longest context value shown, in characters.
const CONTEXT_VALUE_CHARS: usize = 4000;

pub(crate) fn render(
    contract: &Contract,
    spec: &MarkerSpec,
    context: &Context,
    history: &[Value],
) -> String {
    let page = context.get(PAGE_KEY);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Write a reply that meets the contract \"{}\" (version {}): plain text for the user, plus optional marker sections that the application reads and removes before the user sees the text.",
        contract.name, contract.version
    );
    if !contract.guidance.is_empty() {
        out.push('\n');
        out.push_str(&contract.guidance);
        out.push('\n');
    }

    if let Some(page_spec) = page.and_then(|p| spec.pages.get(p)) {
        let _ = writeln!(out, "\n## Page: {}", page.unwrap_or_default());
        if !page_spec.instructions.is_empty() {
            out.push_str(page_spec.instructions.trim());
            out.push('\n');
        }
    }

    let facts: Vec<(&str, &str)> = context
        .iter()
        .filter(|(k, _)| !RESERVED.contains(k))
        .collect();
    if !facts.is_empty() {
        out.push_str("\n## Current context (from the application)\n");
        for (key, value) in facts {
            let _ = writeln!(
                out,
                "- {key}: {}",
                crate::schema::cut(value, CONTEXT_VALUE_CHARS)
            );
        }
    }

    let earlier: Vec<String> = history.iter().filter_map(summary).collect();
    if !earlier.is_empty() {
        out.push_str("\n## Payloads earlier in this conversation\n");
        let skip = earlier.len().saturating_sub(MANIFEST_ITEMS);
        for line in &earlier[skip..] {
            let _ = writeln!(out, "- {line}");
        }
    }

    out.push_str("\n## Capabilities\n");
    let offered: Vec<_> = spec
        .payloads
        .iter()
        .filter(|p| p.available_on(page))
        .collect();
    if offered.is_empty() {
        out.push_str("No structured responses are available on this page.\n");
    } else {
        out.push_str("STRUCTURED RESPONSES (at most one per reply):\n");
        for payload in offered {
            let _ = writeln!(out, "\n### {}:", payload.marker);
            if !payload.instructions.is_empty() {
                out.push_str(payload.instructions.trim());
                out.push('\n');
            }
            let _ = writeln!(
                out,
                "Write `{}:` on its own line followed by one JSON object meeting this JSON Schema:\n{}",
                payload.marker, payload.schema_text
            );
        }
    }
    out.push_str("\nCLIENT ACTIONS (the only values allowed for \"action\"):\n");
    for action in spec.actions_for(context) {
        if action.description.is_empty() {
            let _ = writeln!(out, "- {}", action.action);
        } else {
            let _ = writeln!(out, "- {}: {}", action.action, action.description);
        }
    }

    let _ = write!(
        out,
        "\n## Format rules\n\
- {VALUES_MARKER}: then a JSON array of 2-4 {{\"label\": \"2-6 words\", \"value\": \"the text sent as the user's next message\"}} objects: after answering, creating or changing something, or when the user seems unsure.\n\
- {ACTIONS_MARKER}: then a JSON array of {{\"label\": \"button text\", \"action\": \"one of the CLIENT ACTIONS\", \"handler\": \"client\"}} objects.\n\
- Never put suggestions in a reply that has a structured response: the user acts on the proposal first.\n\
- Each marker starts its own line, written exactly as shown (upper case, then a colon), followed by valid JSON (double quotes, no comments, no trailing commas). Use each marker at most once.\n\
- Everything else is the message shown to the user; never mention the markers in it.\n"
    );
    out
}

/// One line about an earlier reply's payload: its type and its short facts.
fn summary(value: &Value) -> Option<String> {
    let payload = value.get("payload").filter(|p| !p.is_null())?;
    let kind = payload.get("type").and_then(Value::as_str)?;
    let mut facts = Vec::new();
    if let Some(Value::Object(data)) = payload.get("data") {
        for (key, item) in data {
            match item {
                Value::String(s) if s.chars().count() <= 60 && key != "reasoning" => {
                    facts.push(format!("{key}: {s}"));
                }
                Value::Array(list) => facts.push(format!("{key}: {} item(s)", list.len())),
                Value::Number(n) => facts.push(format!("{key}: {n}")),
                _ => {}
            }
        }
    }
    Some(if facts.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind} ({})", facts.join("; "))
    })
}
