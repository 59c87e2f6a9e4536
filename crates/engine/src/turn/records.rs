//! What a turn stores: its [`Opening`] (the user's message, settled with the first record after
//! it) and the records of its user message, attempts (each naming the configured model it went
//! to and, when it is not the turn's own, why), cancelled attempts and fallback.

use super::spans::StoreWrite;
use super::{TurnError, TurnInput};
use crate::engine::Model;
use crate::providers::Completion;
use crate::store::{Interruption, MessageRole, NewMessage, Pending, Route, Store, StoreError};
use crate::streamed::estimated_tokens;
use bridle_core::{Checked, StreamCheck};
use serde_json::Value;

/// A turn's opening (the user's message, and the conversation when the turn starts it), stored
/// while the model is called and settled with the first message recorded after it.
pub(super) struct Opening {
    /// On its way to the store, until settled.
    pending: Option<Pending<i64>>,
    /// The user message's id, once settled.
    id: i64,
    /// The contract's `max_bytes`: no record stores more of a reply.
    max_bytes: usize,
}

impl Opening {
    /// Starts storing `user` (with the conversation when the turn starts it).
    pub(super) fn start(input: &TurnInput<'_>, user: &NewMessage) -> Self {
        let conversation = input.new_conversation.then_some(input.conversation);
        let pending = input.store.open_turn(conversation, user);
        Self {
            pending: Some(traced_opening(input.store, pending)),
            id: 0,
            max_bytes: input.contract.limits().max_bytes,
        }
    }

    /// Stores `record`, cut to the contract's `max_bytes` ([`crate::bounded::bound`]), after
    /// the opening (settling it the first time); the record's id.
    pub(super) async fn record(
        &mut self,
        store: &dyn Store,
        record: &mut NewMessage,
    ) -> Result<i64, StoreError> {
        crate::bounded::bound(record, self.max_bytes);
        let what = if record.is_fallback {
            StoreWrite::FALLBACK
        } else {
            StoreWrite::ATTEMPT
        };
        let write = async {
            match self.pending.take() {
                Some(opening) => {
                    let (first, id) = store.record_after(opening, record).await?;
                    self.id = first;
                    Ok(id)
                }
                None => store.record_message(record).await,
            }
        };
        what.traced(store, write).await
    }

    /// The user message's id, once stored.
    pub(super) async fn id(&mut self) -> Result<i64, StoreError> {
        if let Some(opening) = self.pending.take() {
            self.id = opening.await?;
        }
        Ok(self.id)
    }
}

/// The opening's write in a span of its own (with telemetry on), a child of the turn's. The
/// span ends when the turn has settled the opening: once the write is committed (SQLite), or
/// when the first record takes the held user message along into its own write (PostgreSQL: the
/// write's future is then dropped, which ends the span, and that record's span covers the
/// commit). No task of its own awaits it: that would make PostgreSQL write the opening alone,
/// two commits a turn.
fn traced_opening(store: &dyn Store, pending: Pending<i64>) -> Pending<i64> {
    let span = StoreWrite::USER.span(store);
    if !span.is_recording() {
        return pending;
    }
    pending.wrapped(move |write| async move {
        let result = write.await;
        super::spans::written(&span, &result);
        result
    })
}

/// The client went away during `attempt`: the attempt is stored as cancelled, with what had
/// arrived of the reply, and the turn ends with the error this returns.
pub(super) async fn cancelled(
    input: &TurnInput<'_>,
    opening: &mut Opening,
    target: Target<'_>,
    payload: Value,
    check: Option<StreamCheck>,
) -> TurnError {
    let attempt = target.attempt;
    let mut record = attempt_record(input, target, payload, 0);
    record.latency_ms = None;
    if let Some(check) = check {
        record.content = check.into_raw();
        record.tokens_out = Some(estimated_tokens(&record.content));
    }
    record.interrupted = Some(Interruption::Cancelled);
    match opening.record(input.store, &mut record).await {
        Ok(_) => TurnError::Cancelled { attempt },
        Err(error) => TurnError::Store(error),
    }
}

fn blank_record(input: &TurnInput<'_>, turn_id: &str, role: MessageRole) -> NewMessage {
    NewMessage {
        conversation_id: input.conversation.id.clone(),
        turn_id: turn_id.to_owned(),
        role,
        content: String::new(),
        value: None,
        is_validated: false,
        is_fallback: false,
        attempt: None,
        contract: input.contract.name().to_owned(),
        contract_version: input.contract.version().to_string(),
        request_payload: None,
        raw_response: None,
        violations: Vec::new(),
        repairs: Vec::new(),
        provider: None,
        model: None,
        tokens_in: None,
        tokens_out: None,
        latency_ms: None,
        error: None,
        interrupted: None,
        route: None,
        context: None,
        answer: None,
        request_id: input.ids.and_then(|ids| ids.request_id.clone()),
        trace_id: input.ids.and_then(|ids| ids.trace_id.clone()),
    }
}

pub(super) fn user_record(input: &TurnInput<'_>, turn_id: &str) -> NewMessage {
    NewMessage {
        content: input.user_message.to_owned(),
        is_validated: true,
        context: input.turn_context.cloned(),
        answer: input.answer.cloned(),
        ..blank_record(input, turn_id, MessageRole::User)
    }
}

/// Where one attempt went: its number, the model (by its configured name; the upstream name is
/// in the stored request) and why that model, when it is not the turn's own.
#[derive(Debug, Clone, Copy)]
pub(super) struct Target<'t> {
    /// The turn.
    pub turn_id: &'t str,
    /// The attempt, 1-based.
    pub attempt: u32,
    /// The model it went to.
    pub model: &'t Model,
    /// Why that model.
    pub route: Option<Route>,
}

/// An attempt's record before its answer is known.
pub(super) fn attempt_record(
    input: &TurnInput<'_>,
    target: Target<'_>,
    payload: Value,
    latency_ms: u128,
) -> NewMessage {
    NewMessage {
        attempt: Some(target.attempt),
        request_payload: Some(payload),
        provider: Some(target.model.provider.name().to_owned()),
        model: Some(target.model.name.clone()),
        latency_ms: Some(u64::try_from(latency_ms).unwrap_or(u64::MAX)),
        route: target.route,
        ..blank_record(input, target.turn_id, MessageRole::Assistant)
    }
}

/// The attempt's record after an answer. Its content is the reply as one text: the text, then
/// any tool calls as `name({…})` lines ([`Completion::transcript`]) — also what the model sees
/// of its bad reply before the feedback. The provider's raw response moves into the record.
pub(super) fn fill_completion(
    record: &mut NewMessage,
    completion: &mut Completion,
    checked: &Checked,
) {
    record.content = completion.transcript();
    record.value = checked.value.clone();
    record.is_validated = checked.is_valid();
    record.violations = checked.violations.clone();
    record.repairs = checked.repairs.clone();
    record.raw_response = Some(std::mem::take(&mut completion.raw));
    record.tokens_in = completion.usage.map(|u| u.input_tokens);
    record.tokens_out = completion.usage.map(|u| u.output_tokens);
}

/// The fallback's record after `attempts` attempts; `reason` says why the last one failed (or
/// that the token budget was spent).
pub(super) fn fallback_record(
    input: &TurnInput<'_>,
    turn_id: &str,
    value: &Value,
    attempts: u32,
    reason: &str,
) -> NewMessage {
    NewMessage {
        // Written the way the contract's replies are (text with markers, an XML document, …),
        // so the record reads as the reply the user got.
        content: input.contract.reply_text(value),
        value: Some(value.clone()),
        is_fallback: true,
        error: Some(format!("fallback after {attempts} attempt(s): {reason}")),
        ..blank_record(input, turn_id, MessageRole::Assistant)
    }
}
