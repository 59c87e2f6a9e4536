//! The rows both stores insert, as owned columns with their JSON already encoded:
//! [`MessageRow`] (its prompt taken apart, [`crate::prompts`]) and [`ConversationRow`]. Each
//! backend's module adds the statements that insert them.

use crate::prompts::Prompt;
use crate::rows::{self, EncodedMessage};
use crate::{Conversation, Interruption, NewMessage, Route, StoreError, now_ms};

/// A message as the writer inserts it: owned columns, JSON already encoded.
#[derive(Debug)]
pub(crate) struct MessageRow {
    /// Given before the insert (`store_commit = "after_reply"`); else the database gives it.
    pub id: Option<i64>,
    pub conversation_id: String,
    pub turn_id: String,
    pub role: &'static str,
    pub content: String,
    pub is_validated: bool,
    pub is_fallback: bool,
    pub contract: String,
    pub contract_version: String,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub error: Option<String>,
    pub interrupted: Option<&'static str>,
    pub route: Option<&'static str>,
    pub request_id: Option<String>,
    pub trace_id: Option<String>,
    pub created_at: i64,
    pub encoded: EncodedMessage,
    /// The longest text of the request, stored apart (once per distinct text).
    pub prompt: Option<Prompt>,
}

impl MessageRow {
    /// `message` as it is stored: its prompt apart, its JSON as text, the time of now.
    pub fn new(message: &NewMessage) -> Result<Self, StoreError> {
        let (request_payload, prompt) = match &message.request_payload {
            Some(payload) => {
                let (json, prompt) = Prompt::take(payload)?;
                (Some(json), prompt)
            }
            None => (None, None),
        };
        Ok(Self {
            id: None,
            conversation_id: message.conversation_id.clone(),
            turn_id: message.turn_id.clone(),
            role: message.role.as_str(),
            content: message.content.clone(),
            is_validated: message.is_validated,
            is_fallback: message.is_fallback,
            contract: message.contract.clone(),
            contract_version: message.contract_version.clone(),
            provider: message.provider.clone(),
            model: message.model.clone(),
            error: message.error.clone(),
            interrupted: message.interrupted.map(Interruption::as_str),
            route: message.route.map(Route::as_str),
            request_id: message.request_id.clone(),
            trace_id: message.trace_id.clone(),
            created_at: now_ms(),
            encoded: EncodedMessage::with_payload(message, request_payload)?,
            prompt,
        })
    }
}

/// A conversation as the writer inserts it.
pub(crate) struct ConversationRow {
    pub conversation: Conversation,
    pub context: String,
    pub state: String,
}

impl ConversationRow {
    /// The conversation with its JSON encoded.
    pub fn new(conversation: &Conversation) -> Result<Self, StoreError> {
        Ok(Self {
            context: rows::to_json(&conversation.context)?,
            state: rows::to_json(&conversation.state)?,
            conversation: conversation.clone(),
        })
    }
}
