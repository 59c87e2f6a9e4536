//! [`StringsAs`]: a JSON value serialised as it is, but with its strings written by a
//! [`StringWriter`] — without copying the value. The stored request leaves its prompt out this
//! way (`bridle-store`'s `prompts.rs`), and the upstream body writes its long texts from their kept
//! escaped form (`bridle-providers`' `body.rs`).

use serde::{Serialize, Serializer};
use serde_json::Value;

/// Writes the strings of a value.
pub trait StringWriter {
    /// Writes `text`, the very string inside the value (its address tells it apart from an
    /// equal one); `serializer.serialize_str(text)` writes it as it is.
    fn write<S: Serializer>(&self, text: &str, serializer: S) -> Result<S::Ok, S::Error>;
}

/// `value`, its strings written by `writer`.
#[allow(missing_debug_implementations)] // a borrowed view made to be serialised at once
pub struct StringsAs<'a, W> {
    pub value: &'a Value,
    pub writer: &'a W,
}

impl<W: StringWriter> Serialize for StringsAs<'_, W> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let inner = |value| StringsAs {
            value,
            writer: self.writer,
        };
        match self.value {
            Value::String(text) => self.writer.write(text, serializer),
            Value::Array(items) => serializer.collect_seq(items.iter().map(inner)),
            Value::Object(members) => {
                serializer.collect_map(members.iter().map(|(key, member)| (key, inner(member))))
            }
            other => other.serialize(serializer),
        }
    }
}
