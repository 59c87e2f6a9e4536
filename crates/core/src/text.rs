//! The `text` kind: the reply is a message for the user. With `[cards]` in the manifest the
//! value is `{message, question_cards}`, and in the `discovery` and `clarification` modes
//! (context key `mode`) question+options patterns become question cards ([`crate::cards`]).
//! Detection never makes a reply invalid: text that is not a clean question stays text.

use crate::cards::{Category, detect};
use crate::context::Context;
use serde_json::{Map, Value};

/// Context key of the conversation mode.
pub const MODE_KEY: &str = "mode";
/// Context key the engine sets to the turn's id, so question ids differ between turns.
pub const TURN_KEY: &str = "turn_id";

/// The value of a `text` reply: `{message}`, plus `question_cards` when `cards` is on (empty
/// outside the discovery and clarification modes).
pub fn read(raw: &str, cards: bool, context: &Context) -> Value {
    let text = raw.strip_prefix('\u{feff}').unwrap_or(raw);
    let mut value = Map::new();
    if !cards {
        value.insert("message".into(), Value::String(text.trim().to_owned()));
        return Value::Object(value);
    }
    let category = context.get(MODE_KEY).and_then(Category::from_mode);
    let (message, found) = match category {
        Some(category) => {
            let detection = detect(text, category, context.get(TURN_KEY).unwrap_or(""));
            let cards = detection
                .cards
                .iter()
                .filter_map(|card| serde_json::to_value(card).ok())
                .collect();
            (detection.message, cards)
        }
        None => (text.trim().to_owned(), Vec::new()),
    };
    value.insert("message".into(), Value::String(message));
    value.insert("question_cards".into(), Value::Array(found));
    Value::Object(value)
}
