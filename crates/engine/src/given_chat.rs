//! [`GivenChat`]: a chat the client of the OpenAI-compatible endpoint sent whole, read against
//! the call's contract the way a stored conversation's history is read, so that a call under a
//! `markers`, `text` or `xml` contract reaches the model as a native turn would:
//!
//! - **Earlier replies as the model writes them.** The endpoint answers with the checked value
//!   as JSON content, and a client sends that content back as the assistant's message. An
//!   assistant message whose content is a valid value of the contract is sent as the contract's
//!   reply text (`Contract::reply_text`: text with marker sections, text with lettered options,
//!   an XML document) — never as JSON the model would then imitate. A reply sent back as the
//!   model wrote it is kept as it is.
//! - **What the earlier replies built.** Their values feed the instructions (`markers`: the
//!   payloads earlier in the conversation) and the contract's state (`topic-analysis`: active
//!   subjects, recent keywords, the running summary), as the stored state of a conversation is.
//! - **The user's message as the contract sends it.** Under a contract that keeps a topic
//!   state, the last user message goes as spec 05's `<llmQuery>` built from that state, with the
//!   application's `topic_id` (context) — unless the application wrote the query itself (the
//!   message is already an `<llmQuery>`). A message with media parts is sent as it came.

use crate::engine::EngineError;
use crate::providers::{ChatMessage, Role};
use bridle_core::{Context, Contract, Kind};
use serde_json::{Map, Value};

/// A client's chat, read against the call's contract.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GivenChat {
    /// The messages as they go to the model (the client's system messages included: the turn
    /// puts them after the contract's instructions).
    pub messages: Vec<ChatMessage>,
    /// The values of the earlier replies that meet the contract, oldest first.
    pub earlier: Vec<Value>,
    /// The contract's state built from those replies (`{}` for a contract without state).
    pub state: Value,
}

impl GivenChat {
    /// Reads `messages` under `contract` and `context` (the call's string facts).
    pub fn read(contract: &Contract, messages: &[ChatMessage], context: &Context) -> Self {
        let mut read = Self {
            messages: messages.to_vec(),
            earlier: Vec::new(),
            state: Value::Object(Map::new()),
        };
        // A `json` contract's replies are JSON already and its instructions take no history:
        // without a state, there is nothing to read.
        if contract.kind() == Kind::Json && contract.state_kind().is_none() {
            return read;
        }
        for message in &mut read.messages {
            if message.role != Role::Assistant || !message.tool_calls.is_empty() {
                continue;
            }
            let Some((value, sent_as_value)) = reply_value(contract, &message.content, context)
            else {
                continue;
            };
            if sent_as_value && contract.kind() != Kind::Json && !message.has_media() {
                message.content = contract.reply_text(&value);
                message.parts.clear();
            }
            if let Some(next) = contract.next_state(&read.state, &value) {
                read.state = next;
            }
            read.earlier.push(value);
        }
        read
    }

    /// Sends the last user message as the contract sends a user's message (spec 05's
    /// `<llmQuery>` under a topic state, with `topic_id`), unless it holds media; an
    /// application's own query is sent as written. A message the query cannot carry (past its
    /// 10,000 characters) and an own query that breaks spec 05's query rules are refused.
    pub fn ask(&mut self, contract: &Contract, topic_id: &str) -> Result<(), EngineError> {
        if contract.state_kind().is_none() {
            return Ok(());
        }
        let Some(index) = self.messages.iter().rposition(|m| m.role == Role::User) else {
            return Ok(());
        };
        let count = self.messages[..=index]
            .iter()
            .filter(|m| matches!(m.role, Role::User | Role::Assistant))
            .count();
        let message = &mut self.messages[index];
        // An application's own `<llmQuery>` is checked and kept as written by `user_prompt`.
        if message.has_media() {
            return Ok(());
        }
        let count = u64::try_from(count).unwrap_or(u64::MAX);
        message.content = contract
            .user_prompt(&message.content, &self.state, topic_id, count)
            .map_err(|e| EngineError::BadMessage(e.to_string()))?;
        message.parts.clear();
        Ok(())
    }
}

/// The value of an earlier reply that meets `contract`, and whether it was sent as that value's
/// JSON (rather than as the model wrote it).
fn reply_value(contract: &Contract, content: &str, context: &Context) -> Option<(Value, bool)> {
    let trimmed = content.trim_start();
    if trimmed.starts_with('{')
        && let Ok(value) = serde_json::from_str::<Value>(trimmed)
        && contract.validate(&value).is_empty()
    {
        return Some((value, true));
    }
    if contract.kind() == Kind::Json {
        return None;
    }
    let checked = contract.check(content, context);
    if !checked.is_valid() {
        return None;
    }
    checked.value.map(|value| (value, false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bridle_core::Contracts;
    use serde_json::json;

    fn contract(name: &str) -> std::sync::Arc<Contract> {
        Contracts::builtin().unwrap().get(name).unwrap()
    }

    fn chat(messages: &[(Role, &str)]) -> Vec<ChatMessage> {
        messages
            .iter()
            .map(|(role, text)| ChatMessage::new(*role, *text))
            .collect()
    }

    #[test]
    fn a_markers_reply_sent_back_as_its_json_value_goes_as_marker_text() {
        let table = contract("table-chat");
        let value = json!({"message": "Two columns.", "suggested_values": [{"label": "Add rows", "value": "Add some rows"}], "suggested_actions": null, "payload": null});
        let sent = chat(&[
            (Role::User, "Make a table"),
            (Role::Assistant, &value.to_string()),
            (Role::User, "Yes"),
        ]);
        let read = GivenChat::read(&table, &sent, &Context::new());
        let reply = &read.messages[1].content;
        assert!(reply.starts_with("Two columns."), "{reply}");
        assert!(reply.contains("SUGGESTED_VALUES:"), "{reply}");
        assert_eq!(read.earlier, [value]);
        assert_eq!(read.messages[2].content, "Yes");
    }

    #[test]
    fn a_reply_that_is_not_a_value_of_the_contract_stays_as_sent() {
        let table = contract("table-chat");
        let not_a_value = r#"{"name": "Ada"}"#;
        let as_written = "Sure.\n\nSUGGESTED_VALUES: [{\"label\": \"Go\", \"value\": \"Go on\"}]";
        let sent = chat(&[
            (Role::Assistant, not_a_value),
            (Role::Assistant, as_written),
        ]);
        let read = GivenChat::read(&table, &sent, &Context::new());
        assert_eq!(read.messages[0].content, not_a_value);
        assert_eq!(read.messages[1].content, as_written);
        // Both are read as the model's text: a message, and one with a suggestion.
        assert_eq!(read.earlier[0]["message"], not_a_value);
        assert_eq!(read.earlier[1]["suggested_values"][0]["value"], "Go on");
    }

    #[test]
    fn a_topic_chat_builds_its_state_and_asks_with_the_applications_topic_id() {
        let topic = contract("topic-analysis");
        let earlier = json!({"response": "Start with a 529 plan.", "analysis": {"subject": [{"@name": "college-savings", "@description": "Saving for college", "@isNew": true, "keyword": [{"@term": "529-plan", "@confidence": 0.9}]}], "summaryUpdate": "Savings were discussed."}});
        let sent = chat(&[
            (Role::System, "Be brief."),
            (Role::User, "How much?"),
            (Role::Assistant, &earlier.to_string()),
            (Role::User, "And <more>?"),
        ]);
        let mut read = GivenChat::read(&topic, &sent, &Context::new());
        assert!(read.messages[2].content.starts_with("<llmResponse>"));
        assert_eq!(
            read.state["topic"]["active_subjects"],
            json!(["college-savings"])
        );
        read.ask(&topic, "family-2025").unwrap();
        let query = &read.messages[3].content;
        assert!(
            query.contains(r#"<context topicId="family-2025" messageCount="3">"#),
            "{query}"
        );
        assert!(
            query.contains("<userMessage>And &lt;more&gt;?</userMessage>"),
            "{query}"
        );
        assert!(
            query.contains("<activeSubjects>college-savings</activeSubjects>"),
            "{query}"
        );
        assert_eq!(
            read.messages[1].content, "How much?",
            "earlier messages go as written"
        );
    }

    #[test]
    fn an_applications_own_query_and_a_contract_without_state_are_left_alone() {
        let topic = contract("topic-analysis");
        let own = "<llmQuery><userMessage>Hi</userMessage><context topicId=\"a\" messageCount=\"1\"/></llmQuery>";
        let mut read = GivenChat::read(&topic, &chat(&[(Role::User, own)]), &Context::new());
        read.ask(&topic, "b").unwrap();
        assert_eq!(read.messages[0].content, own);
        // ... but one that breaks the query rules is refused, never wrapped in a second query.
        let broken = "<llmQuery><context topicId=\"a\" messageCount=\"1\"/></llmQuery>";
        let mut read = GivenChat::read(&topic, &chat(&[(Role::User, broken)]), &Context::new());
        match read.ask(&topic, "b") {
            Err(EngineError::BadMessage(message)) => {
                assert!(message.contains("breaks the query rules"), "{message}")
            }
            other => panic!("{other:?}"),
        }
        let cards = contract("question-cards");
        let mut read = GivenChat::read(&cards, &chat(&[(Role::User, "Hi")]), &Context::new());
        read.ask(&cards, "b").unwrap();
        assert_eq!(read.messages[0].content, "Hi");
        assert_eq!(read.state, json!({}));
    }

    #[test]
    fn a_message_too_long_for_the_query_is_refused() {
        let topic = contract("topic-analysis");
        let long = "a".repeat(10_001);
        let mut read = GivenChat::read(&topic, &chat(&[(Role::User, &long)]), &Context::new());
        assert!(matches!(
            read.ask(&topic, "t"),
            Err(EngineError::BadMessage(_))
        ));
    }
}
