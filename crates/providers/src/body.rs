//! [`BodyEncoder`]: a request body as JSON bytes, its long texts escaped once.
//!
//! Every attempt under a contract sends the same system prompt — the contract's instructions
//! and the application's prompt, ~10 KB — and escaping it into JSON, byte by byte, was the
//! largest single piece of serialising the upstream request (~4 % of the gateway's CPU a turn).
//! The encoder keeps the escaped form of the texts of at least [`MIN_CACHED_BYTES`] it wrote
//! last (at most [`CACHED_TEXTS`], the least recently used going first) and writes a text it
//! has seen again from there: a comparison of the bytes instead of an escape. The output is
//! byte for byte what `serde_json::to_vec` writes.

use bridle_wire::strings_as::{StringWriter, StringsAs};
use serde::{Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Texts shorter than this (bytes) are escaped every time: looking them up would cost about
/// what escaping them does.
pub const MIN_CACHED_BYTES: usize = 1024;

/// Most escaped texts kept.
pub const CACHED_TEXTS: usize = 16;

/// Encodes request bodies, keeping the escaped form of recent long texts.
#[derive(Debug, Default)]
pub struct BodyEncoder {
    /// Most recently used first.
    texts: Mutex<Vec<Escaped>>,
    /// The length of the last body written.
    last_len: AtomicUsize,
}

/// A text and its JSON form (quoted and escaped).
#[derive(Debug)]
struct Escaped {
    text: String,
    json: Box<RawValue>,
}

impl BodyEncoder {
    /// `body` as JSON bytes.
    pub fn encode(&self, body: &Value) -> Result<Vec<u8>, serde_json::Error> {
        // Room for a body like the last one, so the buffer is not grown (and copied) a
        // dozen times on the way to 10 KB.
        let expected = self.last_len.load(Ordering::Relaxed);
        let mut bytes = Vec::with_capacity(expected + expected / 8);
        serde_json::to_writer(
            &mut bytes,
            &StringsAs {
                value: body,
                writer: self,
            },
        )?;
        self.last_len.store(bytes.len(), Ordering::Relaxed);
        Ok(bytes)
    }

    /// How many escaped texts are kept.
    pub fn kept(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Escaped>> {
        // The list is valid whatever a panicking holder left in it (each entry is whole).
        self.texts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl StringWriter for BodyEncoder {
    /// Writes a long `text` from the kept ones, escaping and keeping it first if need be; a
    /// short one as it is.
    fn write<S: Serializer>(&self, text: &str, serializer: S) -> Result<S::Ok, S::Error> {
        if text.len() < MIN_CACHED_BYTES {
            return serializer.serialize_str(text);
        }
        let mut texts = self.lock();
        let found = texts.iter().position(|kept| kept.text == text);
        let index = match found {
            Some(index) => index,
            None => {
                let json = serde_json::to_string(text)
                    .and_then(RawValue::from_string)
                    .map_err(serde::ser::Error::custom)?;
                if texts.len() == CACHED_TEXTS {
                    texts.pop();
                }
                texts.push(Escaped {
                    text: text.to_owned(),
                    json,
                });
                texts.len() - 1
            }
        };
        if index > 0 {
            texts[..=index].rotate_right(1);
        }
        texts[0].json.serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `piece` repeated to `bytes` bytes (fewer when a character would cross the end).
    fn long(piece: &str, bytes: usize) -> String {
        let mut text = piece.repeat(bytes / piece.len() + 1);
        let end = (0..=bytes).rev().find(|&i| text.is_char_boundary(i));
        text.truncate(end.unwrap_or(0));
        text
    }

    #[test]
    fn writes_what_serde_json_writes() {
        let system = long(
            "Reply with JSON: {\"a\": \"b\\c\"}\n\ttabs, é, 🙂, \u{1}. ",
            11_000,
        );
        let bodies = [
            json!({"model": "m", "messages": [{"role": "system", "content": system}, {"role": "user", "content": "hi"}], "stream": false, "temperature": 0.2}),
            json!({"system": system, "nested": [[system.clone(), 1, null, true], {"k": -3.5}]}),
            json!("short"),
            json!([]),
        ];
        let encoder = BodyEncoder::default();
        for round in 0..2 {
            for body in &bodies {
                assert_eq!(
                    encoder.encode(body).unwrap(),
                    serde_json::to_vec(body).unwrap(),
                    "round {round}: {body:.80}"
                );
            }
        }
    }

    #[test]
    fn keeps_each_long_text_once_and_only_long_ones() {
        let encoder = BodyEncoder::default();
        let prompt = long("instructions ", 10_000);
        for _ in 0..3 {
            encoder
                .encode(&json!({"messages": [{"content": prompt}, {"content": "short"}]}))
                .unwrap();
        }
        assert_eq!(encoder.kept(), 1);
        encoder
            .encode(&json!({"a": long("x", MIN_CACHED_BYTES - 1)}))
            .unwrap();
        assert_eq!(encoder.kept(), 1);
        encoder
            .encode(&json!({"a": long("y", MIN_CACHED_BYTES)}))
            .unwrap();
        assert_eq!(encoder.kept(), 2);
    }

    #[test]
    fn forgets_the_least_recently_used_text_first() {
        let encoder = BodyEncoder::default();
        let texts: Vec<String> = (0..=CACHED_TEXTS)
            .map(|n| long(&format!("text {n} "), 2000))
            .collect();
        // The first text is used again before the list is full, so the second goes first.
        encoder.encode(&json!(texts[0])).unwrap();
        encoder.encode(&json!(texts[1])).unwrap();
        encoder.encode(&json!(texts[0])).unwrap();
        for text in &texts[2..] {
            encoder.encode(&json!(text)).unwrap();
        }
        assert_eq!(encoder.kept(), CACHED_TEXTS);
        let kept: Vec<String> = encoder.lock().iter().map(|e| e.text.clone()).collect();
        assert!(kept.contains(&texts[0]));
        assert!(!kept.contains(&texts[1]));
        assert_eq!(kept[0], texts[CACHED_TEXTS]);
        // And what it writes from the list is still the text.
        let body = json!({"again": texts[0]});
        assert_eq!(
            encoder.encode(&body).unwrap(),
            serde_json::to_vec(&body).unwrap()
        );
    }
}
