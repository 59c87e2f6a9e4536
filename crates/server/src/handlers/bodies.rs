//! The response bodies of the native API, the admin API, the contract list and the health
//! probes, as typed serde structs: what a client reads is declared here, field by field, once
//! (docs/api.md describes the same shapes). The OpenAI-compatible endpoint's bodies are
//! `bridle_wire::openai` types; errors are `crate::error`'s.

use bridle_core::Repair;
use bridle_engine::TurnOutcome;
use bridle_engine::policy::SafetyDecision;
use bridle_engine::providers::Usage;
use bridle_engine::store::{Conversation, ConversationStatus, Message, MessageRole, SafetyEvent};
use serde::Serialize;
use serde_json::Value;

/// One conversation with its whole context (`POST /v1/conversations`, `GET …/{id}`).
#[derive(Debug, Serialize)]
pub struct ConversationBody<'a> {
    pub id: &'a str,
    pub contract: &'a str,
    pub context: &'a Value,
    pub status: ConversationStatus,
    pub created_at: i64,
    pub updated_at: i64,
}

impl<'a> From<&'a Conversation> for ConversationBody<'a> {
    fn from(c: &'a Conversation) -> Self {
        Self {
            id: &c.id,
            contract: &c.contract,
            context: &c.context,
            status: c.status,
            created_at: c.created_at,
            updated_at: c.updated_at,
        }
    }
}

/// One conversation in a list: a short `summary` of its context instead of the context.
#[derive(Debug, Serialize)]
pub struct ListedConversation<'a> {
    pub id: &'a str,
    pub contract: &'a str,
    pub summary: String,
    pub status: ConversationStatus,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A page of a list (`GET /v1/conversations`).
#[derive(Debug, Serialize)]
pub struct PageBody<T> {
    pub items: Vec<T>,
    pub total: u64,
    pub offset: u64,
    pub limit: u64,
}

/// The answer to a message (`POST /v1/conversations/{id}/messages` without SSE).
#[derive(Debug, Serialize)]
pub struct TurnBody {
    pub conversation_id: String,
    pub turn_id: String,
    pub message_id: i64,
    /// The checked value (or the contract's fallback when `fallback`).
    pub value: Value,
    pub attempts: u32,
    pub repairs: Vec<Repair>,
    pub fallback: bool,
    pub usage: Usage,
    /// The configured model whose reply is final (after an escalation or a failover, not the
    /// one asked for; for a fallback, the last attempt's).
    pub model: String,
    /// What the safety policy did; `null` when it did nothing.
    pub safety: Option<SafetyDecision>,
}

impl TurnBody {
    /// The body for `outcome`, a turn of `conversation_id`.
    pub fn new(conversation_id: String, outcome: TurnOutcome) -> Self {
        Self {
            conversation_id,
            turn_id: outcome.turn_id,
            message_id: outcome.message_id,
            value: outcome.value,
            attempts: outcome.attempts,
            repairs: outcome.repairs,
            fallback: outcome.fallback,
            usage: outcome.usage,
            model: outcome.model,
            safety: outcome.safety,
        }
    }
}

/// The `bridle` object of an enforced OpenAI-compatible completion: the checked value and how
/// it came about, beside the standard fields. The official SDKs keep unknown fields
/// (`completion.model_extra["bridle"]` in Python, `completion.bridle` in JavaScript), so an
/// application gets markers' payloads and question cards without parsing the text.
#[derive(Debug, Serialize)]
pub struct BridleExtension<'a> {
    pub contract: &'a str,
    pub conversation_id: &'a str,
    pub turn_id: &'a str,
    /// The checked value (the contract's fallback when `fallback`).
    pub value: &'a Value,
    pub attempts: u32,
    pub repairs: &'a [Repair],
    pub fallback: bool,
}

/// One message of the user's view of a conversation: what the user wrote (with the context its
/// turn ran under and, for a card answer, the answers by id), or the checked value of a reply.
#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum HistoryMessage<'a> {
    User {
        id: i64,
        content: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        context: Option<&'a Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        answer: Option<&'a Value>,
        created_at: i64,
    },
    Assistant {
        id: i64,
        value: &'a Option<Value>,
        created_at: i64,
    },
}

impl<'a> From<&'a Message> for HistoryMessage<'a> {
    fn from(m: &'a Message) -> Self {
        match m.data.role {
            MessageRole::User => Self::User {
                id: m.id,
                content: &m.data.content,
                context: m.data.context.as_ref(),
                answer: m.data.answer.as_ref(),
                created_at: m.created_at,
            },
            MessageRole::Assistant => Self::Assistant {
                id: m.id,
                value: &m.data.value,
                created_at: m.created_at,
            },
        }
    }
}

/// The user's view of a conversation (`GET /v1/conversations/{id}/messages`).
#[derive(Debug, Serialize)]
pub struct HistoryBody<'a> {
    pub conversation_id: &'a str,
    pub messages: Vec<HistoryMessage<'a>>,
}

/// Everything stored about a conversation (`GET /admin/v1/conversations/{id}`).
#[derive(Debug, Serialize)]
pub struct AdminConversationBody {
    pub conversation: Conversation,
    pub messages: Vec<Message>,
    pub safety_events: Vec<SafetyEvent>,
    /// `[telemetry] trace_url_template`, for the console to link each message's `trace_id` to
    /// its trace (absent when not configured).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_url_template: Option<String>,
}

/// A conversation's new status (`POST /admin/v1/conversations/{id}/unblock`).
#[derive(Debug, Serialize)]
pub struct StatusBody {
    pub id: String,
    pub status: ConversationStatus,
}

/// One contract a conversation can be started under (`GET /v1/contracts`).
#[derive(Debug, Serialize)]
pub struct ContractItem<'a> {
    pub name: &'a str,
    pub version: String,
    pub kind: &'static str,
    pub description: &'a str,
}

/// A list without pages.
#[derive(Debug, Serialize)]
pub struct ItemsBody<T> {
    pub items: Vec<T>,
}

/// `/healthz` and `/readyz`.
#[derive(Debug, Serialize)]
pub struct HealthBody {
    /// `ok` (live) or `ready`.
    pub status: &'static str,
    /// The store's backend: `sqlite` or `postgres`.
    pub store: &'static str,
    /// `ok` when the write probe passed (`/readyz` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writes: Option<&'static str>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn history_messages_carry_their_role_and_fields() {
        let user = HistoryMessage::User {
            id: 1,
            content: "hi",
            context: None,
            answer: None,
            created_at: 5,
        };
        assert_eq!(
            serde_json::to_value(&user).unwrap(),
            json!({"id": 1, "role": "user", "content": "hi", "created_at": 5})
        );
        let context = json!({"page": "table_view"});
        let answer = json!([{"question_id": "q_1", "option_ids": ["opt_2"]}]);
        let answered = HistoryMessage::User {
            id: 3,
            content: "Who? — Me",
            context: Some(&context),
            answer: Some(&answer),
            created_at: 7,
        };
        assert_eq!(
            serde_json::to_value(&answered).unwrap(),
            json!({"id": 3, "role": "user", "content": "Who? — Me", "context": {"page": "table_view"},
                   "answer": [{"question_id": "q_1", "option_ids": ["opt_2"]}], "created_at": 7})
        );
        let value = Some(json!({"message": "hello"}));
        let reply = HistoryMessage::Assistant {
            id: 2,
            value: &value,
            created_at: 6,
        };
        assert_eq!(
            serde_json::to_value(&reply).unwrap(),
            json!({"id": 2, "role": "assistant", "value": {"message": "hello"}, "created_at": 6})
        );
    }

    #[test]
    fn health_leaves_writes_out_unless_probed() {
        let live = HealthBody {
            status: "ok",
            store: "sqlite",
            writes: None,
        };
        assert_eq!(
            serde_json::to_value(&live).unwrap(),
            json!({"status": "ok", "store": "sqlite"})
        );
    }
}
