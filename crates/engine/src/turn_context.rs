//! [`TurnContext`]: the context one turn runs under — the conversation's context with what the
//! user's message brought merged over it, read into the contract's string facts (`page`,
//! `mode`, `language`, …), the application's prompt (`prompt`) and the application's state
//! (`app_state`: any JSON object, e.g. spec 03's current table — schema, visible rows, filters,
//! sort), which the turn's system prompt shows in an "Application state" section. The merged
//! object is what the user's message stores as its context.

use crate::engine::EngineError;
use bridle_core::Context;
use serde_json::{Map, Value};

/// The key of the application's state in a context.
pub const APP_STATE_KEY: &str = "app_state";
/// The key of the application's prompt in a context.
pub const PROMPT_KEY: &str = "prompt";

/// One user message of the native API: its text, the configured model asked for (`None`: the
/// default model), and the context it brings for its turn (merged over the conversation's).
#[derive(Debug, Clone, Copy, Default)]
pub struct UserTurn<'a> {
    /// The message.
    pub content: &'a str,
    /// The model asked for.
    pub model: Option<&'a str>,
    /// This turn's context: string facts (`page`, `mode`, …), `prompt`, `app_state`.
    pub context: Option<&'a Map<String, Value>>,
    /// The message answers the last reply's question cards (then `content` is not used: the
    /// answers' readable text is sent and stored).
    pub answer: Option<&'a crate::answer::Answers>,
    /// The ids of the HTTP request the turn runs for, stored with its messages (`None`: none).
    pub ids: Option<&'a crate::store::RequestIds>,
}

/// The context of one turn, read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnContext {
    /// The string facts the contract reads.
    pub facts: Context,
    /// The application's prompt.
    pub prompt: Option<String>,
    /// The application's state.
    pub app_state: Option<Value>,
}

impl TurnContext {
    /// Reads a context: a JSON object (or `null`) whose values are strings, but for
    /// `app_state`, a JSON object.
    pub fn read(value: &Value) -> Result<Self, EngineError> {
        let mut read = Self::default();
        match value {
            Value::Null => {}
            Value::Object(map) => {
                for (key, v) in map {
                    match (key.as_str(), v) {
                        (APP_STATE_KEY, Value::Object(_)) => {
                            // The contract's checks read it too (expression rules'
                            // `context.app_state`).
                            read.facts.set_app_state(v.clone());
                            read.app_state = Some(v.clone());
                        }
                        (APP_STATE_KEY, _) => {
                            return Err(EngineError::BadContext(format!(
                                "{APP_STATE_KEY:?} must be a JSON object"
                            )));
                        }
                        (PROMPT_KEY, Value::String(text)) => read.prompt = Some(text.clone()),
                        (_, Value::String(text)) => read.facts.insert(key.clone(), text.clone()),
                        _ => {
                            return Err(EngineError::BadContext(format!(
                                "{key:?} must be a string"
                            )));
                        }
                    }
                }
            }
            _ => return Err(EngineError::BadContext("got a non-object".into())),
        }
        Ok(read)
    }
}

/// The key of the topic id an application gives a topic analysis (spec 05 `topicId`).
pub const TOPIC_ID_KEY: &str = "topic_id";

/// The topic id of a turn's `<llmQuery>`: the application's (`topic_id` in the context), else
/// the conversation's id.
pub fn topic_id<'a>(facts: &'a Context, conversation_id: &'a str) -> &'a str {
    facts
        .get(TOPIC_ID_KEY)
        .filter(|id| !id.trim().is_empty())
        .unwrap_or(conversation_id)
}

/// The conversation's context with `given` (a message's context) merged over it, key by key.
pub fn merged(conversation: &Value, given: Option<&Map<String, Value>>) -> Value {
    let mut merged = match conversation {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    for (key, value) in given.into_iter().flatten() {
        merged.insert(key.clone(), value.clone());
    }
    Value::Object(merged)
}

/// What a user message stores as its turn's context: the merged context without the
/// conversation's prompt (kept once, with the conversation), unless the message brought its own.
pub fn stored(merged: &Value, given: Option<&Map<String, Value>>) -> Value {
    let mut stored = merged.clone();
    let brought_prompt = given.is_some_and(|g| g.contains_key(PROMPT_KEY));
    if let (Value::Object(map), false) = (&mut stored, brought_prompt) {
        map.remove(PROMPT_KEY);
    }
    stored
}

/// The section of a turn's system prompt that shows the application's state as JSON (beside
/// the contract's own "Current context" facts, for a markers contract).
pub fn app_state_section(state: &Value) -> String {
    let json = serde_json::to_string_pretty(state).unwrap_or_default();
    format!(
        "## Application state\n\nWhat the user sees in the application now (refer to things by the ids given here):\n```json\n{json}\n```"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_message_context_merges_over_the_conversations() {
        let conversation = json!({"page": "tables_list", "prompt": "Be kind.", "language": "en"});
        let given = json!({"page": "table_view", "app_state": {"table": {"id": "t1"}}});
        let merged = merged(&conversation, given.as_object());
        let read = TurnContext::read(&merged).unwrap();
        assert_eq!(read.facts.get("page"), Some("table_view"));
        assert_eq!(read.facts.get("language"), Some("en"));
        assert_eq!(read.prompt.as_deref(), Some("Be kind."));
        assert_eq!(read.app_state, Some(json!({"table": {"id": "t1"}})));
        assert_eq!(
            read.facts.app_state(),
            Some(&json!({"table": {"id": "t1"}}))
        );
        // The conversation's prompt stays with the conversation.
        assert_eq!(
            stored(&merged, given.as_object()),
            json!({"page": "table_view", "language": "en", "app_state": {"table": {"id": "t1"}}})
        );
    }

    #[test]
    fn only_app_state_may_be_an_object() {
        for bad in [
            json!({"page": 1}),
            json!({"app_state": "rows"}),
            json!({"mode": {"x": 1}}),
            json!([1]),
        ] {
            assert!(TurnContext::read(&bad).is_err(), "{bad}");
        }
        assert!(TurnContext::read(&Value::Null).unwrap().app_state.is_none());
    }

    #[test]
    fn the_current_context_section_shows_the_state() {
        let section = app_state_section(&json!({"table": {"rows": [{"row_id": "r1"}]}}));
        assert!(section.starts_with("## Application state"));
        assert!(section.contains("\"row_id\": \"r1\""));
    }
}
