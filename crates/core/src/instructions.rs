//! The instructions text a contract puts into the system prompt: what to output, the JSON
//! Schema, the declared rules in words, the contract's own guidance and one example.
//! Compact (schema and example minified) and deterministic (no maps with random order, no
//! clock), so prompts can be cached and snapshot-tested.

use crate::context::Context;
use crate::contract::Contract;
use serde_json::Value;
use std::fmt::Write as _;

pub(crate) fn render(contract: &Contract, context: &Context, history: &[Value]) -> String {
    if let Some(markers) = &contract.markers {
        return crate::markers::instructions(contract, markers, context, history);
    }
    if contract.kind == crate::Kind::Text {
        return render_text(contract, context);
    }
    // The rest depends on the contract alone: rendered once (a turn's 10 KB were ~2.5 % of
    // the gateway's CPU, bench/history-2026-11.md).
    contract
        .instructions
        .get_or_init(|| render_structured(contract))
        .clone()
}

/// The `json` and `xml` kinds: the schema, the rules, the guidance and the example.
fn render_structured(contract: &Contract) -> String {
    let mut out = String::new();
    if let Some(xml) = &contract.xml {
        let _ = writeln!(
            out,
            "Reply with a single XML document, root element <{}>, that meets the contract \"{}\" (version {}).",
            xml.root, contract.name, contract.version
        );
        out.push_str(
            "Output only the XML: no code fences, no DOCTYPE, no text before or after it. Escape <, > and & in text as &lt; &gt; &amp; (or use CDATA).\n",
        );
        let _ = write!(
            out,
            "\nThe document is read as JSON (attributes as \"@name\", repeated elements as arrays, text elements as strings) and must meet this JSON Schema ({}):\n",
            contract.schema.draft_name()
        );
    } else {
        let _ = writeln!(
            out,
            "Reply with a single JSON value that meets the contract \"{}\" (version {}).",
            contract.name, contract.version
        );
        out.push_str(
            "Output only the JSON: no code fences, no comments, no text before or after it.\n",
        );
        let _ = write!(
            out,
            "\nJSON Schema ({}) of the reply:\n",
            contract.schema.draft_name()
        );
    }
    out.push_str(&contract.schema_text);
    out.push('\n');
    if !contract.rules.is_empty() {
        out.push_str("\nRules the schema cannot express:\n");
        for rule in &contract.rules {
            let _ = writeln!(out, "- {}", rule.describe());
        }
    }
    if !contract.guidance.is_empty() {
        out.push_str("\nGuidance:\n");
        out.push_str(&contract.guidance);
        out.push('\n');
    }
    if let Some(example) = &contract.example_text {
        out.push_str("\nExample of a valid reply:\n");
        out.push_str(example);
        out.push('\n');
    }
    out
}

/// The `text` kind: plain text; in the discovery and clarification modes, how to write a
/// question with options so that it becomes a card.
fn render_text(contract: &Contract, context: &Context) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Reply in plain text (Markdown allowed) that meets the contract \"{}\" (version {}).",
        contract.name, contract.version
    );
    if !contract.guidance.is_empty() {
        out.push('\n');
        out.push_str(&contract.guidance);
        out.push('\n');
    }
    let mode = context.get(crate::text::MODE_KEY);
    let category = mode.and_then(crate::cards::Category::from_mode);
    if let (Some(cards), Some(category)) = (contract.cards, category) {
        let _ = write!(
            out,
            "\nConversation mode: {}. When you ask the user to choose, the application shows the question as a card with buttons:\n\
- Write one sentence on why it matters, then the question on its own line, ending with \"?\".\n\
- Then 2 to 6 options, one per line: (A) short label — optional one-line description.\n\
- Mark the option you recommend with \"(recommended)\". Say \"select all that apply\" in the question when several may be chosen.\n\
- Ask at most a few questions per reply; the user can always answer in their own words.\n",
            category.as_str()
        );
        if cards.tool {
            let _ = writeln!(
                out,
                "- You may instead call the tool `{}` with the question, the rationale and the options.",
                crate::cards::TOOL_NAME
            );
        }
    }
    // A card contract's example asks a question with options: outside the card modes it would
    // invite options that never become cards, so it is shown in the card modes only.
    let example_fits = contract.cards.is_none() || category.is_some();
    if let Some(example) = contract.example_text.as_ref().filter(|_| example_fits) {
        out.push_str("\nExample of a reply:\n");
        out.push_str(example);
        out.push('\n');
    }
    out
}

/// `text` (valid JSON) without the whitespace between tokens; strings and key order untouched.
pub(crate) fn minify(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !matches!(c, ' ' | '\t' | '\n' | '\r') {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::minify;

    #[test]
    fn structured_instructions_are_rendered_once_and_the_same_in_any_context() {
        let registry = crate::registry::Contracts::builtin().unwrap();
        for name in ["selfhelp-response", "topic-analysis"] {
            let contract = registry.get(name).unwrap();
            assert!(contract.instructions.get().is_none());
            let plain = contract.instructions(&crate::Context::new());
            assert_eq!(contract.instructions.get(), Some(&plain), "{name}: kept");
            let other = crate::Context::new().with("page", "p").with("mode", "m");
            assert_eq!(contract.instructions_with_history(&other, &[]), plain);
            assert_eq!(plain, super::render_structured(&contract));
        }
    }

    #[test]
    fn a_card_contracts_example_is_shown_in_the_card_modes_only() {
        let registry = crate::registry::Contracts::builtin().unwrap();
        let contract = registry.get("question-cards").unwrap();
        let in_mode = |mode: &str| contract.instructions(&crate::Context::new().with("mode", mode));
        for mode in ["discovery", "clarification", "mode_selection"] {
            let text = in_mode(mode);
            assert!(text.contains("Example of a reply:\n"), "{mode}: {text}");
            assert!(
                text.contains("(B) Everyone in the flat (recommended)"),
                "{mode}"
            );
        }
        // A normal reply is not shown a question with lettered options to copy.
        for text in [
            in_mode("normal"),
            contract.instructions(&crate::Context::new()),
        ] {
            assert!(!text.contains("Example of a reply"), "{text}");
            assert!(!text.contains("(A) "), "{text}");
        }
    }

    #[test]
    fn minify_keeps_strings_and_order() {
        let text = "{\n  \"z\": \"a b\\\" c\",\n  \"a\": [1, 2]\n}";
        assert_eq!(minify(text), "{\"z\":\"a b\\\" c\",\"a\":[1,2]}");
        let value: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&minify(text)).unwrap(),
            value
        );
    }
}
