//! [`StreamCheck`]: checking a reply while it streams in, one delta at a time.
//!
//! A `StreamCheck` is made per attempt ([`StreamCheck::new`]) and fed the provider's text deltas
//! in order ([`StreamCheck::push`]). It keeps the reply received so far (once) and, depending on
//! the contract's kind:
//!
//! - `markers`: emits the text for the user with marker sections stripped **live** — text that
//!   may be the start of a marker is held back only until it is resolved — and each section's
//!   JSON, once complete, as [`Emit::Suggestions`] or [`Emit::Payload`];
//! - `text`: emits the text; in the question-card modes, text from where a question may start
//!   is held back until the reply is complete, and [`StreamCheck::finish`] releases what the
//!   cards did not take;
//! - `json` and `xml`: keep a best-effort partial value ([`StreamCheck::partial`]), and for
//!   `json`, watch for violations no continuation can fix (early abort, [`Abort`]).
//!
//! All the work is incremental: each byte is scanned a bounded number of times, so feeding a
//! reply costs time linear in its length however it is split. [`StreamCheck::partial`] costs
//! time linear in the value's size; callers throttle it.
//!
//! The complete reply is then checked as usual ([`crate::Contract::check_reply`]); the final
//! value, not the concatenated events, is the authority.

mod json;
mod markers;
mod out;
mod text;
mod xml;

pub(crate) use json::SchemaIndex;

use crate::context::Context;
use crate::contract::{Checked, Contract, Kind};
use crate::report::Violation;
use serde_json::Value;

/// Something a streaming reply produced for the user.
#[derive(Debug, Clone, PartialEq)]
pub enum Emit {
    /// Text for the user (markers stripped, question-card text held back).
    Text(String),
    /// A `SUGGESTED_VALUES` / `SUGGESTED_ACTIONS` section, read: `{"suggested_values": […]}`
    /// or `{"suggested_actions": […]}`, normalised as the complete check would.
    Suggestions(Value),
    /// A payload section, read: `{"type", "data"}` as in the final value's `payload`.
    Payload(Value),
}

/// Why a streaming reply was given up early: what it already proves wrong, whatever follows.
#[derive(Debug, Clone, PartialEq)]
pub struct Abort {
    /// The proven violations (JSON pointer, rule, message — as the complete check reports).
    pub violations: Vec<Violation>,
}

/// The streaming check of one attempt. See the module docs.
#[derive(Debug)]
pub struct StreamCheck {
    raw: String,
    max_bytes: usize,
    inner: Inner,
}

#[derive(Debug)]
enum Inner {
    Json(json::JsonStream),
    Xml(xml::XmlStream),
    Markers(markers::MarkerStream),
    Text(text::TextStream),
}

impl StreamCheck {
    /// A streaming check of a reply to `contract` in `context`.
    pub fn new(contract: &Contract, context: &Context) -> Self {
        let inner = match contract.kind {
            Kind::Xml => Inner::Xml(xml::XmlStream::new(contract)),
            Kind::Markers => Inner::Markers(markers::MarkerStream::new(contract, context)),
            Kind::Text => Inner::Text(text::TextStream::new(contract, context)),
            Kind::Json => Inner::Json(json::JsonStream::new(contract)),
        };
        Self {
            raw: String::new(),
            max_bytes: contract.limits.max_bytes,
            inner,
        }
    }

    /// Feeds the next delta; what it makes visible is appended to `out`. An `Err` means the
    /// reply so far already breaks the contract whatever follows: stop reading it.
    pub fn push(&mut self, delta: &str, out: &mut Vec<Emit>) -> Result<(), Abort> {
        let from = self.raw.len();
        self.raw.push_str(delta);
        if self.raw.len() > self.max_bytes {
            return Err(Abort {
                violations: vec![crate::check::too_large(
                    self.raw.len() as u64,
                    self.max_bytes,
                )],
            });
        }
        match &mut self.inner {
            Inner::Json(s) => s
                .feed(&self.raw, from)
                .map_err(|violations| Abort { violations }),
            Inner::Xml(s) => {
                s.feed(&self.raw, from);
                Ok(())
            }
            Inner::Markers(s) => {
                s.feed(&self.raw, from, out);
                Ok(())
            }
            Inner::Text(s) => {
                s.feed(&self.raw, from, out);
                Ok(())
            }
        }
    }

    /// The value so far as compact JSON text (one line), when it changed since the last call;
    /// `None` for the text kinds, before any value is readable, or when nothing changed. Fields
    /// once shown are kept (a string may grow, a number gain digits) until the attempt ends.
    pub fn partial(&mut self) -> Option<String> {
        match &mut self.inner {
            Inner::Json(s) => s.partial(&self.raw),
            Inner::Xml(s) => s.partial(&self.raw),
            Inner::Markers(_) | Inner::Text(_) => None,
        }
    }

    /// The reply is complete and `checked` is its check: releases text still held back (for
    /// question cards: the text the cards did not take).
    pub fn finish(&mut self, checked: &Checked, out: &mut Vec<Emit>) {
        match &mut self.inner {
            Inner::Markers(s) => s.finish(&self.raw, checked, out),
            Inner::Text(s) => s.finish(&self.raw, checked, out),
            Inner::Json(_) | Inner::Xml(_) => {}
        }
    }

    /// The reply received so far.
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// The reply received so far, moved out.
    pub fn into_raw(self) -> String {
        self.raw
    }
}

/// The last partial value an attempt showed (hash and length), so an unchanged one is not
/// shown again.
#[derive(Debug, Default)]
pub(super) struct LastShown(Option<(u64, usize)>);

impl LastShown {
    /// Whether `text` differs from the last one shown; it is the last one shown from now on.
    pub(super) fn is_new(&mut self, text: &str) -> bool {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut hasher);
        let stamp = Some((hasher.finish(), text.len()));
        let new = self.0 != stamp;
        self.0 = stamp;
        new
    }
}

/// Test support: `raw` cut before each char index in `cuts` (taken modulo the length).
#[cfg(test)]
pub(crate) fn cut<'a>(raw: &'a str, cuts: &[usize]) -> Vec<&'a str> {
    let bounds: Vec<usize> = raw.char_indices().map(|(i, _)| i).collect();
    let mut at: Vec<usize> = cuts
        .iter()
        .filter_map(|c| bounds.get(c % bounds.len().max(1)).copied())
        .collect();
    at.sort_unstable();
    at.dedup();
    let mut pieces = Vec::new();
    let mut from = 0;
    for a in at {
        pieces.push(&raw[from..a]);
        from = a;
    }
    pieces.push(&raw[from..]);
    pieces
}
