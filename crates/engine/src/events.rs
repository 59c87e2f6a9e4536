//! [`TurnEvent`]: what a streamed turn tells its client, and [`EventSink`], where the turn sends
//! it. The server writes each event as one SSE event (`event: NAME`, `data: JSON`); the names
//! and fields are documented in `docs/streaming.md`.

use bridle_core::{Emit, Repair, Violation};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How often, at most, a `partial` event is sent per attempt (default).
pub const DEFAULT_PARTIAL_INTERVAL: Duration = Duration::from_millis(100);

/// Events waiting for a slow client before the turn waits for it.
const CHANNEL_CAPACITY: usize = 256;

/// One event of a streamed turn.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEvent {
    /// An attempt began (1-based).
    AttemptStarted {
        /// The attempt.
        attempt: u32,
        /// The configured model it goes to.
        model: String,
        /// `escalated` or `failover` when that is not the turn's own model; `None` otherwise.
        route: Option<&'static str>,
    },
    /// More text for the user: markers stripped, question-card text held back.
    TextDelta {
        /// The text.
        text: String,
    },
    /// The value so far (`json` and `xml` contracts), as compact JSON text.
    Partial {
        /// The attempt it belongs to.
        attempt: u32,
        /// The value, JSON text.
        value: String,
    },
    /// A marker section's suggestions: `{"suggested_values": […]}` or `{"suggested_actions": […]}`.
    Suggestions(Value),
    /// A marker section's payload: `{"type", "data"}`.
    Payload(Value),
    /// The attempt failed: the client discards what it showed for it.
    AttemptFailed {
        /// The attempt.
        attempt: u32,
        /// `invalid` (the complete reply broke the contract), `aborted` (the reply so far
        /// already did, and the stream was stopped), or `provider_error`.
        reason: &'static str,
        /// What it broke (empty for a provider error).
        violations: Vec<Violation>,
        /// In words.
        message: String,
    },
    /// A question card of the final message (one event per card).
    QuestionCard(Value),
    /// What the safety policy did with the final message.
    Safety(Value),
    /// The final message, stored.
    MessageComplete {
        /// The turn.
        turn_id: String,
        /// The stored final message.
        message_id: i64,
        /// The final value (meets the contract).
        value: Value,
        /// Attempts made.
        attempts: u32,
        /// Repairs of the final attempt.
        repairs: Vec<Repair>,
        /// The contract's fallback after the attempts ran out.
        fallback: bool,
        /// Tokens used over all attempts.
        usage: Value,
        /// The configured model whose reply is final.
        model: String,
    },
    /// The turn's attempts used its token budget (`max_turn_tokens`): it retries no more
    /// (the fallback, when the contract has one, follows).
    BudgetSpent {
        /// Tokens used, input and output.
        used: u64,
        /// The budget.
        budget: u64,
    },
    /// The turn ended without a final message.
    Error {
        /// A stable code (`upstream_failed`, `conversation_blocked`, `internal`, …).
        code: String,
        /// In words.
        message: String,
        /// The request's id (its `x-request-id`), for the user to quote; not sent when `None`.
        request_id: Option<String>,
    },
}

impl TurnEvent {
    /// The SSE event name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::AttemptStarted { .. } => "attempt_started",
            Self::TextDelta { .. } => "text_delta",
            Self::Partial { .. } => "partial",
            Self::Suggestions(_) => "suggestions",
            Self::Payload(_) => "payload",
            Self::AttemptFailed { .. } => "attempt_failed",
            Self::QuestionCard(_) => "question_card",
            Self::Safety(_) => "safety",
            Self::MessageComplete { .. } => "message_complete",
            Self::BudgetSpent { .. } => "budget_spent",
            Self::Error { .. } => "error",
        }
    }

    /// The SSE data: one line of JSON.
    pub fn data(&self) -> String {
        match self {
            Self::AttemptStarted {
                attempt,
                model,
                route,
            } => match route {
                Some(route) => json!({"attempt": attempt, "model": model, "route": route}),
                None => json!({"attempt": attempt, "model": model}),
            }
            .to_string(),
            Self::BudgetSpent { used, budget } => {
                json!({"used": used, "budget": budget}).to_string()
            }
            Self::TextDelta { text } => {
                // The most frequent event: written directly, no JSON map built.
                let mut data = String::with_capacity(text.len() + 12);
                data.push_str("{\"text\":");
                data.push_str(&Value::from(text.as_str()).to_string());
                data.push('}');
                data
            }
            Self::Partial { attempt, value } => {
                let mut data = String::with_capacity(value.len() + 32);
                data.push_str("{\"attempt\":");
                data.push_str(&attempt.to_string());
                data.push_str(",\"value\":");
                data.push_str(value);
                data.push('}');
                data
            }
            Self::Suggestions(value) | Self::Payload(value) | Self::Safety(value) => {
                value.to_string()
            }
            // The card's own fields at the top level, as spec 04's `question_card` event.
            Self::QuestionCard(card) => card.to_string(),
            Self::AttemptFailed {
                attempt,
                reason,
                violations,
                message,
            } => json!({"attempt": attempt, "reason": reason, "violations": violations, "message": message})
                .to_string(),
            Self::MessageComplete {
                turn_id,
                message_id,
                value,
                attempts,
                repairs,
                fallback,
                usage,
                model,
            } => json!({
                "model": model,
                "turn_id": turn_id,
                "message_id": message_id,
                "value": value,
                "attempts": attempts,
                "repairs": repairs,
                "fallback": fallback,
                "usage": usage,
            })
            .to_string(),
            Self::Error {
                code,
                message,
                request_id: Some(request_id),
            } => json!({"code": code, "message": message, "request_id": request_id}).to_string(),
            Self::Error {
                code,
                message,
                request_id: None,
            } => json!({"code": code, "message": message}).to_string(),
        }
    }

    /// The event for something a streaming check emitted.
    pub fn from_emit(emit: Emit) -> Self {
        match emit {
            Emit::Text(text) => Self::TextDelta { text },
            Emit::Suggestions(value) => Self::Suggestions(value),
            Emit::Payload(value) => Self::Payload(value),
        }
    }
}

/// Least growth of the reply, in bytes, between two `partial` events.
const PARTIAL_MIN_GROWTH: usize = 64;

/// When an attempt's next `partial` event is due: the interval has passed since the last one
/// **and** the reply has grown by an eighth since then (at least [`PARTIAL_MIN_GROWTH`] bytes).
/// Each partial costs time linear in the value; growing geometrically, all of them together
/// cost at most about nine times the reply — the stream stays linear however long it is.
#[derive(Debug, Clone, Copy)]
pub struct PartialThrottle {
    interval: Duration,
    last: Option<(Instant, usize)>,
}

impl PartialThrottle {
    /// At most one partial per `interval`.
    pub fn new(interval: Duration) -> Self {
        Self {
            interval,
            last: None,
        }
    }

    /// Whether a partial may be sent at `now`, the reply being `len` bytes long.
    pub fn due(&self, now: Instant, len: usize) -> bool {
        match self.last {
            None => true,
            Some((at, shown)) => {
                now.saturating_duration_since(at) >= self.interval
                    && len >= shown + (shown / 8).max(PARTIAL_MIN_GROWTH)
            }
        }
    }

    /// A partial was sent at `now` with the reply `len` bytes long.
    pub fn shown(&mut self, now: Instant, len: usize) {
        self.last = Some((now, len));
    }
}

/// Where a streamed turn sends its events, and how often it may send `partial`.
#[derive(Debug, Clone)]
pub struct EventSink {
    tx: mpsc::Sender<TurnEvent>,
    partial_interval: Duration,
}

impl EventSink {
    /// A sink and the receiver the client side reads.
    pub fn channel(partial_interval: Duration) -> (Self, mpsc::Receiver<TurnEvent>) {
        let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
        (
            Self {
                tx,
                partial_interval,
            },
            rx,
        )
    }

    /// Sends an event; false when the client went away.
    pub async fn send(&self, event: TurnEvent) -> bool {
        self.tx.send(event).await.is_ok()
    }

    /// Resolves when the client went away (its receiver was dropped).
    pub async fn closed(&self) {
        self.tx.closed().await;
    }

    /// Whether the client went away.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    /// The least time between two `partial` events of an attempt.
    pub fn partial_interval(&self) -> Duration {
        self.partial_interval
    }
}
