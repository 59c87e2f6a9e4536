//! [`XmlStream`]: the partial value of an `xml` reply.
//!
//! Feeding costs nothing but a flag; the partial value is worked out when asked for (callers
//! throttle that): the reply so far is cut and closed ([`close`]) and read by the contract's
//! own XML reader — the same rules as the complete check, so a DOCTYPE, an unknown entity or
//! anything else the reader refuses gives no partial value rather than another reading. A
//! value is returned when it differs from the last one returned.

mod close;

use crate::contract::{Contract, XmlSpec};
use close::close;

/// The partial reader of an `xml` reply. See the module docs.
#[derive(Debug)]
pub(super) struct XmlStream {
    /// The root element and shape (`None` for a contract that has none: no value then).
    spec: Option<XmlSpec>,
    /// Text arrived since the last partial value was worked out.
    dirty: bool,
    /// Hash and length of the last partial value returned.
    last: super::LastShown,
}

impl XmlStream {
    pub(super) fn new(contract: &Contract) -> Self {
        Self {
            spec: contract.xml.clone(),
            dirty: false,
            last: super::LastShown::default(),
        }
    }

    /// Notes that `raw[from..]` arrived.
    pub(super) fn feed(&mut self, raw: &str, from: usize) {
        if from < raw.len() {
            self.dirty = true;
        }
    }

    /// The value so far as compact JSON text, when it changed since the last one returned.
    pub(super) fn partial(&mut self, raw: &str) -> Option<String> {
        let spec = self.spec.as_ref()?;
        if !std::mem::take(&mut self.dirty) {
            return None;
        }
        let document = close(raw, &spec.root, &spec.shape)?;
        let value = crate::xml::read(&document, &spec.root, &spec.shape).value?;
        let text = value.to_string();
        self.last.is_new(&text).then_some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Contracts;

    /// The partial values of `text` fed in pieces of `step` characters, asked after each.
    fn partials(text: &str, step: usize) -> Vec<String> {
        let contracts = Contracts::builtin().unwrap_or_else(|e| panic!("{e}"));
        let contract = contracts
            .get("topic-analysis")
            .unwrap_or_else(|e| panic!("topic-analysis is built in: {e}"));
        let mut stream = XmlStream::new(&contract);
        let mut raw = String::new();
        let mut out = Vec::new();
        let chars: Vec<char> = text.chars().collect();
        for piece in chars.chunks(step.max(1)) {
            let from = raw.len();
            raw.extend(piece);
            stream.feed(&raw, from);
            out.extend(stream.partial(&raw));
        }
        out
    }

    #[test]
    fn the_value_grows_with_the_document() {
        let text = "```xml\n<llmResponse><response>Walk daily.</response><analysis>\
            <subject name=\"walks\" description=\"Walking\" isNew=\"true\">\
            <keyword term=\"walking\" confidence=\"0.9\"/></subject>\
            <summaryUpdate>Walks.</summaryUpdate></analysis></llmResponse>\n```";
        let all = partials(text, 3);
        assert_eq!(all.first().map(String::as_str), Some("{}"));
        let growing = |p: &String| {
            let v: serde_json::Value = serde_json::from_str(p).unwrap_or_default();
            v["response"]
                .as_str()
                .is_some_and(|r| !r.is_empty() && r.len() < 11 && "Walk daily.".starts_with(r))
        };
        assert!(all.iter().any(growing), "{all:?}");
        let last: serde_json::Value =
            serde_json::from_str(all.last().map_or("", String::as_str)).unwrap_or_default();
        assert_eq!(
            last["analysis"]["subject"][0]["keyword"][0]["@confidence"],
            0.9
        );
        assert_eq!(last["analysis"]["subject"][0]["@isNew"], true);
        assert_eq!(all.windows(2).filter(|w| w[0] == w[1]).count(), 0);
        assert_eq!(partials(text, 1000).len(), 1);
    }

    #[test]
    fn hostile_or_foreign_text_gives_nothing() {
        for text in [
            "<!DOCTYPE x [<!ENTITY e \"boom\">]><llmResponse><response>&e;</response>",
            "Just prose, no document.",
            "<other>text</other>",
        ] {
            for step in [1, 7, 1000] {
                assert_eq!(partials(text, step), Vec::<String>::new(), "{text:?}");
            }
        }
        // Up to an entity the reader refuses, then nothing more.
        let text = "<llmResponse><response>Hi &nbsp; there</response></llmResponse>";
        let all = partials(text, 1);
        assert_eq!(
            all.last().map(String::as_str),
            Some("{\"response\":\"Hi\"}")
        );
    }
}
