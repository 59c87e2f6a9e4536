//! Replaying an attempt: its stored request (`request_payload`, secrets redacted) is sent again
//! to the configured provider that made it — with that provider's credentials put back — and
//! the answer is checked against the attempt's contract, so an admin can see whether a failure
//! reproduces (or a fixed prompt/model now passes) without touching the conversation.
//!
//! A replay is not stored as an attempt: it belongs to no turn, and the conversation's record
//! stays exactly what the user got. The stored URL must be the endpoint of a configured
//! provider of the same kind; a payload naming any other URL is refused (the store is not a
//! way to make the gateway call arbitrary hosts).

use crate::engine::{Engine, EngineError};
use crate::providers::{Provider, RequestPayload, Usage};
use crate::store::MessageRole;
use bridle_core::{Contract, Repair, Violation};
use serde::Serialize;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Instant;

/// The check of a replayed answer against the attempt's contract.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayCheck {
    /// The answer meets the contract.
    pub valid: bool,
    /// The value read from it (repaired, coerced), when it could be read.
    pub value: Option<Value>,
    /// How it breaks the contract.
    pub violations: Vec<Violation>,
    /// Changes made to read it.
    pub repairs: Vec<Repair>,
}

/// What the original attempt was, for comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayOriginal {
    /// The attempt passed.
    pub valid: bool,
    /// Its reply text (or provider error).
    pub content: String,
    /// Its violations.
    pub violations: Vec<Violation>,
    /// Its provider error, if the call failed.
    pub error: Option<String>,
}

/// The result of replaying one attempt.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Replay {
    /// The replayed attempt.
    pub message_id: i64,
    /// Its conversation.
    pub conversation_id: String,
    /// Provider kind that answered.
    pub provider: String,
    /// Endpoint the request went to.
    pub url: String,
    /// Contract the answer was checked against (name).
    pub contract: String,
    /// Wall time of the call.
    pub latency_ms: u64,
    /// The model that answered (None when the call failed).
    pub model: Option<String>,
    /// The answer as one text — its text, then any tool calls as `name({…})` lines (None
    /// when the call failed).
    pub content: Option<String>,
    /// The provider's response body (None when the call failed).
    pub raw_response: Option<Value>,
    /// Tokens used.
    pub usage: Option<Usage>,
    /// The provider error, when the call failed.
    pub error: Option<String>,
    /// The check of the answer; None when the call failed or the contract (an inline schema
    /// that is no longer known) cannot be rebuilt.
    pub check: Option<ReplayCheck>,
    /// The original attempt.
    pub original: ReplayOriginal,
}

impl Engine {
    /// Replays attempt `message_id` (see the module docs).
    pub async fn replay(&self, message_id: i64) -> Result<Replay, EngineError> {
        let message = self
            .store()
            .message(message_id)
            .await?
            .ok_or(EngineError::NoMessage(message_id))?;
        if let Some(when) = message.payload_purged_at {
            return Err(EngineError::NotReplayable(format!(
                "the stored request of message {message_id} was purged by the retention policy \
                 (at {when} ms)"
            )));
        }
        let data = message.data;
        let stored = match (&data.role, &data.request_payload) {
            (MessageRole::Assistant, Some(payload)) => payload,
            _ => {
                return Err(EngineError::NotReplayable(format!(
                    "message {message_id} is not a model attempt with a stored request"
                )));
            }
        };
        let payload: RequestPayload = serde_json::from_value(stored.clone()).map_err(|e| {
            EngineError::NotReplayable(format!(
                "the stored request of message {message_id} cannot be read: {e}"
            ))
        })?;
        let provider = self.provider_for(&payload, data.model.as_deref())?;
        let contract = self.replay_contract(&data.contract, &payload.body);

        let started = Instant::now();
        let result = provider.send(&payload.body).await;
        let latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);

        let conversation = self.store().conversation(&data.conversation_id).await?;
        // The turn's id, as the turn loop checks with it (question ids).
        let context = conversation
            .map(|c| crate::turn_context::TurnContext::read(&c.context).map(|read| read.facts))
            .transpose()?
            .unwrap_or_default()
            .with(bridle_core::text::TURN_KEY, data.turn_id.as_str());
        let original = ReplayOriginal {
            valid: data.is_validated,
            content: data.content,
            violations: data.violations,
            error: data.error,
        };
        let mut replay = Replay {
            message_id,
            conversation_id: data.conversation_id,
            provider: payload.provider,
            url: payload.url,
            contract: data.contract,
            latency_ms,
            model: None,
            content: None,
            raw_response: None,
            usage: None,
            error: None,
            check: None,
            original,
        };
        match result {
            Ok(completion) => {
                replay.check = contract.map(|contract| {
                    let checked =
                        contract.check_reply(&completion.content, &completion.tool_calls, &context);
                    ReplayCheck {
                        valid: checked.is_valid(),
                        value: checked.value,
                        violations: checked.violations,
                        repairs: checked.repairs,
                    }
                });
                replay.content = Some(completion.transcript());
                replay.model = Some(completion.model);
                replay.usage = completion.usage;
                replay.raw_response = Some(completion.raw);
            }
            Err(error) => replay.error = Some(format!("{}: {error}", error.kind())),
        }
        tracing::info!(
            message_id,
            provider = %replay.provider,
            latency_ms,
            valid = replay.check.as_ref().map(|c| c.valid),
            error = replay.error.as_deref(),
            "attempt replayed"
        );
        Ok(replay)
    }

    /// The configured provider that sends where `payload` went, preferring the model entry
    /// `model` names (its configured name; attempts stored before escalation existed hold the
    /// upstream name).
    fn provider_for(
        &self,
        payload: &RequestPayload,
        model: Option<&str>,
    ) -> Result<Arc<dyn Provider>, EngineError> {
        let matching = self.models().filter(|m| {
            m.provider.name() == payload.provider && m.provider.endpoint() == payload.url
        });
        let mut first = None;
        for candidate in matching {
            if model.is_some_and(|name| candidate.name == name || candidate.settings.model == name)
            {
                return Ok(candidate.provider.clone());
            }
            first.get_or_insert_with(|| candidate.provider.clone());
        }
        first.ok_or_else(|| {
            EngineError::NotReplayable(format!(
                "the attempt went to {} ({}); no configured provider sends there now",
                payload.url, payload.provider
            ))
        })
    }

    /// The contract to check a replayed answer against: the loaded contract of that name, else
    /// the inline schema the stored request carried (OpenAI-compatible `json_schema` requests
    /// sent with native structured output), else "a JSON object" for `json_object`.
    fn replay_contract(&self, name: &str, body: &Value) -> Option<Arc<Contract>> {
        if let Ok(contract) = self.contracts().get(name) {
            return Some(contract);
        }
        let schema = body
            .pointer("/response_format/json_schema/schema")
            .or_else(|| body.pointer("/response_format/schema"))
            .cloned()
            .or_else(|| (name == "json_object").then(|| json!({"type": "object"})))?;
        Contract::from_schema(name, schema).ok().map(Arc::new)
    }
}
