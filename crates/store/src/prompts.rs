//! Each distinct prompt stored once (both stores). The longest text of an attempt's
//! request — in practice its system prompt: the contract's instructions and the application's
//! prompt, the same 10 KB on every attempt of every turn under a contract — is most of the bytes
//! an attempt writes. [`Prompt::take`] leaves `""` in its place in the request's JSON and names
//! the text by its SHA-256; the store keeps the text once (table `prompts`) and the message keeps
//! the hash and the JSON pointer to where the text was; [`restore`] puts it back when the message
//! is read, so every reader sees the request exactly as it was sent.

use crate::rows::{self, Field, StoreRow, to_json};
use crate::{Message, StoreError};
use bridle_wire::strings_as::{StringWriter, StringsAs};
use serde::Serializer;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// A text shorter than this (bytes) stays in the request: a row of its own would cost more than
/// it saves.
pub(crate) const MIN_PROMPT_BYTES: usize = 1024;

/// The text taken out of a request, and where it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Prompt {
    /// SHA-256 of `text`, lower-case hex: the key in `prompts`.
    pub hash: String,
    /// JSON pointer (RFC 6901) to the text's place in the request.
    pub pointer: String,
    /// The text.
    pub text: String,
}

impl Prompt {
    /// `payload` as JSON text, with its longest string (of at least [`MIN_PROMPT_BYTES`]) taken
    /// out; the whole payload when no string is that long.
    pub fn take(payload: &Value) -> Result<(String, Option<Self>), StoreError> {
        let mut longest = None;
        let mut path = Vec::new();
        find_longest(payload, &mut path, &mut longest);
        let Some((text, pointer)) = longest else {
            return Ok((to_json(payload)?, None));
        };
        let json = to_json(&StringsAs {
            value: payload,
            writer: &Blank { target: text },
        })?;
        let prompt = Self {
            hash: hex::encode(Sha256::digest(text.as_bytes())),
            pointer,
            text: text.clone(),
        };
        Ok((json, Some(prompt)))
    }
}

/// The longest string in `value` of at least [`MIN_PROMPT_BYTES`], with its pointer; the first
/// such in document order on a tie.
fn find_longest<'a>(
    value: &'a Value,
    path: &mut Vec<String>,
    longest: &mut Option<(&'a String, String)>,
) {
    match value {
        Value::String(text) => {
            let best = longest
                .as_ref()
                .map_or(MIN_PROMPT_BYTES - 1, |(t, _)| t.len());
            if text.len() > best {
                *longest = Some((text, pointer_of(path)));
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                path.push(index.to_string());
                find_longest(item, path, longest);
                path.pop();
            }
        }
        Value::Object(members) => {
            for (key, member) in members {
                path.push(key.clone());
                find_longest(member, path, longest);
                path.pop();
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// The JSON pointer of a path of keys and indexes (`~` and `/` escaped).
fn pointer_of(path: &[String]) -> String {
    path.iter().fold(String::new(), |mut pointer, key| {
        pointer.push('/');
        pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
        pointer
    })
}

/// Writes the one string `target` (the very string, not an equal one) as `""`, and every other
/// string as it is.
struct Blank<'a> {
    target: &'a str,
}

impl StringWriter for Blank<'_> {
    fn write<S: Serializer>(&self, text: &str, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(if std::ptr::eq(text, self.target) {
            ""
        } else {
            text
        })
    }
}

/// Puts a message's prompt back into its request, from the columns `prompt_pointer` and
/// `prompt_text` (the text joined from `prompts`). A pointer without its text, or one that does
/// not lead to the blank the text was taken from, is a [`StoreError::Corrupt`].
pub(crate) fn restore<R: StoreRow>(
    row: &R,
    message_id: i64,
    payload: Option<&mut Value>,
) -> Result<(), StoreError> {
    let Some(pointer) = row.opt_text("prompt_pointer")? else {
        return Ok(());
    };
    let key = message_id.to_string();
    let field = Field {
        table: "messages",
        column: "prompt_pointer",
        row: &key,
    };
    let text = row
        .opt_text("prompt_text")?
        .ok_or_else(|| field.corrupt("the prompt it names is not stored"))?;
    let place = payload
        .and_then(|payload| payload.pointer_mut(&pointer))
        .ok_or_else(|| field.corrupt(format_args!("{pointer:?} is not in the request")))?;
    match place {
        Value::String(blank) if blank.is_empty() => {
            *blank = text;
            Ok(())
        }
        _ => Err(field.corrupt(format_args!("{pointer:?} is not the prompt's blank"))),
    }
}

/// A message read with [`rows::select_messages`]`!(prompts …)`, its prompt back in its request.
pub(crate) fn message_with_prompt<R: StoreRow>(row: &R) -> Result<Message, StoreError> {
    let mut message = rows::message(row)?;
    restore(row, message.id, message.data.request_payload.as_mut())?;
    Ok(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn long(letter: char, bytes: usize) -> String {
        std::iter::repeat_n(letter, bytes).collect()
    }

    #[test]
    fn takes_the_longest_text_and_leaves_a_blank_at_its_pointer() {
        let system = long('s', 4000);
        let payload = json!({
            "url": "http://upstream/v1/chat/completions",
            "body": {"messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": long('u', 2000)},
            ]},
        });
        let (json, prompt) = Prompt::take(&payload).unwrap();
        let prompt = prompt.unwrap();
        assert_eq!(prompt.pointer, "/body/messages/0/content");
        assert_eq!(prompt.text, system);
        assert_eq!(prompt.hash, hex::encode(Sha256::digest(system.as_bytes())));
        let mut stored: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(stored.pointer("/body/messages/0/content"), Some(&json!("")));
        assert_eq!(
            stored["body"]["messages"][1]["content"]
                .as_str()
                .map(str::len),
            Some(2000)
        );
        *stored.pointer_mut(&prompt.pointer).unwrap() = Value::String(prompt.text);
        assert_eq!(stored, payload);
    }

    #[test]
    fn short_texts_stay_in_the_request() {
        let payload = json!({"body": {"system": long('s', MIN_PROMPT_BYTES - 1)}});
        let (json, prompt) = Prompt::take(&payload).unwrap();
        assert_eq!(prompt, None);
        assert_eq!(serde_json::from_str::<Value>(&json).unwrap(), payload);
        let payload = json!({"body": {"system": long('s', MIN_PROMPT_BYTES)}});
        assert!(Prompt::take(&payload).unwrap().1.is_some());
    }

    #[test]
    fn only_the_very_string_is_blanked_not_an_equal_one() {
        let text = long('x', 1500);
        let payload = json!({"a": text, "b": [text]});
        let (json, prompt) = Prompt::take(&payload).unwrap();
        assert_eq!(prompt.unwrap().pointer, "/a");
        assert_eq!(
            serde_json::from_str::<Value>(&json).unwrap(),
            json!({"a": "", "b": [text]})
        );
    }

    #[test]
    fn pointers_escape_slashes_and_tildes() {
        let payload = json!({"a/b": {"c~d": long('x', 1100)}});
        let (_, prompt) = Prompt::take(&payload).unwrap();
        let pointer = prompt.unwrap().pointer;
        assert_eq!(pointer, "/a~1b/c~0d");
        assert!(payload.pointer(&pointer).is_some());
    }
}
