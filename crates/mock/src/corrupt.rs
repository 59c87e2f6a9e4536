//! How the HTTP front ends spoil an answer on the wire for [`Fault::InvalidUtf8`] and
//! [`Fault::Garbage`]: the reply is rendered as usual, then its bytes are corrupted.
//!
//! - `invalid_utf8`: [`mark`] puts one private-use character in the middle of the reply's text
//!   (or inside a string of a tool's input) before it is rendered. Pieces are cut on character
//!   boundaries and JSON does not escape the character, so it arrives whole inside one content
//!   string — of the body, or of one delta's frame — where [`spoil`] replaces its three bytes
//!   by three bytes that are never UTF-8 (frame lengths stay as they were).
//! - `garbage`: the body becomes a proxy's HTML error page, still labelled `application/json`;
//!   a stream gets a frame whose `data:` is that page, half-way through.

use crate::faults::Fault;
use crate::request::MockReply;
use bytes::Bytes;
use serde_json::Value;

/// The character [`mark`] inserts: U+E000, the first private-use character (`EE 80 80`).
const MARK: char = '\u{E000}';
/// What replaces it: a byte that never starts a character, then a lead byte without its
/// continuation.
const SPOILED: [u8; 3] = [0xFF, 0xC3, 0x28];

/// A proxy's error page: what a misconfigured gateway in front of a model sends.
pub(crate) const GARBAGE_PAGE: &str = "<html><head><title>502 Bad Gateway</title></head><body>\
<center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>";

/// `reply` with [`MARK`] in the middle of its text, or inside the longest string of its tool
/// input or call arguments when it has no text.
pub(crate) fn mark(reply: MockReply) -> MockReply {
    match reply {
        MockReply::Text {
            mut content,
            mut calls,
            usage,
            stop,
            fault,
            pieces: _,
            info,
        } => {
            match calls.first_mut() {
                Some(call) if content.is_empty() => mark_value(&mut call.arguments),
                _ => mark_text(&mut content),
            }
            MockReply::Text {
                content,
                calls,
                usage,
                stop,
                fault,
                pieces: None,
                info,
            }
        }
        MockReply::ToolCall {
            name,
            mut input,
            usage,
            fault,
            pieces: _,
            info,
        } => {
            mark_value(&mut input);
            MockReply::ToolCall {
                name,
                input,
                usage,
                fault,
                pieces: None,
                info,
            }
        }
        other => other,
    }
}

fn mark_text(text: &mut String) {
    let middle = text.chars().count() / 2;
    let at = text
        .char_indices()
        .nth(middle)
        .map_or(text.len(), |(i, _)| i);
    text.insert(at, MARK);
}

/// Marks the longest string inside `value`; a value without strings is left as it is.
fn mark_value(value: &mut Value) {
    fn longest(value: &mut Value) -> Option<&mut String> {
        match value {
            Value::String(text) => Some(text),
            Value::Array(items) => items.iter_mut().filter_map(longest).max_by_key(|s| s.len()),
            Value::Object(map) => map.values_mut().filter_map(longest).max_by_key(|s| s.len()),
            _ => None,
        }
    }
    if let Some(text) = longest(value) {
        mark_text(text);
    }
}

/// `bytes` with every [`MARK`] replaced by [`SPOILED`]. When there is none (a reply with no
/// string to mark), the bytes are spoiled inside the first JSON string instead, so that the
/// answer is never valid UTF-8.
pub(crate) fn spoil(bytes: &[u8]) -> Vec<u8> {
    let mut mark = [0; 3];
    let mark = MARK.encode_utf8(&mut mark).as_bytes();
    let mut out = Vec::with_capacity(bytes.len() + SPOILED.len());
    let mut rest = bytes;
    let mut found = false;
    while let Some(at) = rest.windows(mark.len()).position(|w| w == mark) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(&SPOILED);
        rest = &rest[at + mark.len()..];
        found = true;
    }
    out.extend_from_slice(rest);
    if !found {
        let at = out
            .iter()
            .position(|b| *b == b'"')
            .map_or(out.len(), |i| i + 1);
        out.splice(at..at, SPOILED);
    }
    out
}

/// The SSE frames of an answer spoiled by `fault` (any other fault leaves them as they are):
/// `invalid_utf8` spoils the frames that carry the mark (the first data frame when none
/// does), `garbage` puts a frame of HTML half-way through.
pub(crate) fn frames(frames: Vec<String>, fault: Option<Fault>) -> Vec<Bytes> {
    match fault {
        Some(Fault::InvalidUtf8) => {
            let mut marked = false;
            let mut out: Vec<Bytes> = frames
                .into_iter()
                .map(|frame| {
                    if frame.contains(MARK) {
                        marked = true;
                        Bytes::from(spoil(frame.as_bytes()))
                    } else {
                        Bytes::from(frame)
                    }
                })
                .collect();
            if !marked && let Some(first) = out.first_mut() {
                *first = Bytes::from(spoil(first));
            }
            out
        }
        Some(Fault::Garbage) => {
            let mut out: Vec<Bytes> = frames.into_iter().map(Bytes::from).collect();
            let at = (out.len() / 2).max(1).min(out.len());
            out.insert(at, Bytes::from(format!("data: {GARBAGE_PAGE}\n\n")));
            out
        }
        _ => frames.into_iter().map(Bytes::from).collect(),
    }
}

#[cfg(test)]
mod tests;
