//! [`run_turn`]: one user message → attempts → one final message (valid, or the contract's
//! fallback). Steps 2–8 of the request path in ARCHITECTURE.md.
//!
//! The user's message is stored while the model is called ([`TurnWrites::open_turn`]), and settled
//! with the first attempt ([`TurnWrites::record_after`]). Each attempt is stored the moment it ends,
//! before anything else happens. An invalid reply
//! is followed by exactly two messages — the model's own bad reply as the assistant turn, then
//! one user message with the contract's bounded feedback — replacing the previous attempt's
//! pair, so the prompt never accumulates feedback. Provider errors that another attempt may fix
//! (timeouts, resets, 5xx, 429) count as failed attempts and are retried, honouring
//! `Retry-After`; others (401, 400, …) end the turn at once.
//!
//! With an [`EventSink`] the turn streams: each attempt is read as a stream
//! ([`crate::streamed`]) and what it makes visible goes to the client as it arrives. An attempt
//! whose reply so far proves a violation is stopped at once, stored as `aborted` (with the text
//! and estimated tokens so far) and retried without delay; a client that goes away stops the
//! turn, the attempt under way stored as `cancelled`.
//!
//! No attempt stores more than the contract's `max_bytes` of reply: a larger one is stored as
//! its first `max_bytes` bytes, its size in its `too_large` violation ([`crate::bounded`]), and
//! that prefix is also what the retry sends back as the bad reply.

use crate::config::{ModelConfig, RetryPolicy};
use crate::events::{EventSink, TurnEvent};
use crate::metrics::{AttemptOutcome, EngineMetrics};
use crate::providers::{
    ChatMessage, ChatRequest, Completion, Provider, ProviderError, ResponseFormat, Role, Usage,
};
use crate::store::{
    Conversation, Interruption, MessageRole, NewMessage, Pending, Store, StoreError, View,
};
use crate::streamed::{Streamed, estimated_tokens, stream_attempt};
use bridle_core::{Checked, Context, Contract, Repair, Rule, StreamCheck, Violation};
use serde::Serialize;
use serde_json::Value;
use std::time::Instant;

/// Most earlier messages sent as history (the newest ones).
pub const MAX_HISTORY_MESSAGES: usize = 50;

/// Everything one turn needs.
#[derive(Debug)]
pub struct TurnInput<'a> {
    /// Where attempts are recorded.
    pub store: &'a dyn Store,
    /// Who completes the chat.
    pub provider: &'a dyn Provider,
    /// Model settings.
    pub model: &'a ModelConfig,
    /// The contract replies must meet.
    pub contract: &'a Contract,
    /// Attempts and delays.
    pub retry: RetryPolicy,
    /// The conversation (already loaded; must be active).
    pub conversation: &'a Conversation,
    /// The conversation is new and not stored yet ([`Conversation::start`]): it is stored
    /// together with the user's message, in one transaction.
    pub new_conversation: bool,
    /// The application's own prompt, appended to the contract's instructions.
    pub app_prompt: Option<&'a str>,
    /// Per-request facts for the contract.
    pub context: &'a Context,
    /// The user's message.
    pub user_message: &'a str,
    /// A chat the client sent whole (the OpenAI-compatible endpoint): its system messages
    /// follow the contract's instructions, its other messages replace the stored history and
    /// `user_message`. `None`: the conversation's stored history.
    pub given_messages: Option<&'a [ChatMessage]>,
    /// Where attempts and the turn's outcome are counted.
    pub metrics: &'a EngineMetrics,
    /// Where a streamed turn sends its events; `None`: attempts are read whole.
    pub events: Option<&'a EventSink>,
}

/// The result of a turn that produced a final message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnOutcome {
    /// Id shared by the turn's stored messages.
    pub turn_id: String,
    /// Id of the stored user message.
    pub user_message_id: i64,
    /// Id of the final stored message (the valid attempt, or the fallback).
    pub message_id: i64,
    /// The final value (meets the contract).
    pub value: Value,
    /// Attempts made.
    pub attempts: u32,
    /// Repairs of the final attempt.
    pub repairs: Vec<Repair>,
    /// The attempts ran out and this is the contract's fallback.
    pub fallback: bool,
    /// Tokens used over all attempts.
    pub usage: Usage,
    /// What the safety policy did with the final message (set by the engine).
    pub safety: Option<crate::policy::SafetyDecision>,
}

/// A turn that produced no final message.
#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    /// Recording failed; nothing is lost silently.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The provider refused in a way retrying cannot fix (401, 400, …).
    #[error("attempt {attempt} failed and cannot be retried: {error}")]
    Provider {
        /// The attempt that failed.
        attempt: u32,
        /// The provider's error.
        error: ProviderError,
    },
    /// The client went away during attempt `attempt`; it is stored as cancelled.
    #[error("the client went away during attempt {attempt}")]
    Cancelled {
        /// The attempt under way.
        attempt: u32,
    },
    /// Every attempt failed and the contract has no fallback.
    #[error("no valid reply after {attempts} attempt(s): {reason}")]
    Exhausted {
        /// Attempts made.
        attempts: u32,
        /// The last attempt's violations (empty when it was a provider error).
        violations: Vec<Violation>,
        /// Why the last attempt failed, in words.
        reason: String,
    },
}

/// Runs one turn.
pub async fn run_turn(input: TurnInput<'_>) -> Result<TurnOutcome, TurnError> {
    let metrics = input.metrics;
    let label = metrics.contract_label(input.contract);
    let result = attempts(input, &label).await;
    let (outcome, attempts) = match &result {
        Ok(outcome) if outcome.fallback => ("fallback", Some(outcome.attempts)),
        Ok(outcome) => ("valid", Some(outcome.attempts)),
        Err(TurnError::Exhausted { attempts, .. }) => ("exhausted", Some(*attempts)),
        Err(TurnError::Provider { attempt, .. }) => ("provider_error", Some(*attempt)),
        Err(TurnError::Cancelled { attempt }) => ("cancelled", Some(*attempt)),
        Err(TurnError::Store(_)) => ("store_error", None),
    };
    metrics.turn(&label, outcome, attempts);
    result
}

/// The attempt loop; `label` names the contract in metrics.
async fn attempts(input: TurnInput<'_>, label: &str) -> Result<TurnOutcome, TurnError> {
    let turn_id = uuid::Uuid::now_v7().to_string();
    let base = base_messages(&input).await?;
    let user = user_record(&input, &turn_id);
    let mut opening = Opening::start(&input, &user);

    // The turn's id goes into the context the replies are checked with (question ids).
    let context = input
        .context
        .clone()
        .with(bridle_core::text::TURN_KEY, turn_id.as_str());
    // The function tools the contract offers in this context (question cards' present_question).
    let tools = input.contract.tools(&context);
    let mut usage = Usage::default();
    let mut readable: Vec<Value> = Vec::new();
    // The previous attempt's (bad reply, feedback): the only retry context ever sent.
    let mut correction: Option<(String, String)> = None;
    let mut last_failure = String::new();
    let mut last_violations = Vec::new();

    for attempt in 1..=input.retry.max_attempts {
        let request = request(&input, &tools, &base, correction.as_ref());
        // Built once: the body sent is exactly the body stored.
        let payload = input.provider.payload(&request, input.events.is_some());
        let started = Instant::now();
        let result = match input.events {
            None => input.provider.send(&payload.body).await.map(|c| (c, None)),
            Some(sink) => {
                if !sink.send(TurnEvent::AttemptStarted { attempt }).await {
                    let payload = payload.into_value();
                    return cancelled(&input, &mut opening, &turn_id, attempt, payload, None).await;
                }
                let streamed = stream_attempt(
                    input.provider,
                    &payload.body,
                    input.contract,
                    &context,
                    sink,
                    attempt,
                )
                .await;
                match streamed {
                    Streamed::Complete(completion, check) => Ok((completion, Some(check))),
                    Streamed::Failed(error) => Err(error),
                    Streamed::Cancelled(check) => {
                        let payload = payload.into_value();
                        return cancelled(
                            &input,
                            &mut opening,
                            &turn_id,
                            attempt,
                            payload,
                            Some(*check),
                        )
                        .await;
                    }
                    Streamed::Aborted { check, violations } => {
                        let mut record = attempt_record(
                            &input,
                            &turn_id,
                            attempt,
                            payload.into_value(),
                            started.elapsed().as_millis(),
                        );
                        let text = check.into_raw();
                        let tokens = estimated_tokens(&text);
                        input.metrics.aborted(label, tokens);
                        input.metrics.attempt(
                            label,
                            input.provider.name(),
                            attempt,
                            started.elapsed(),
                            None,
                            AttemptOutcome::Aborted {
                                violations: &violations,
                            },
                        );
                        let checked = Checked {
                            value: None,
                            violations,
                            repairs: Vec::new(),
                        };
                        record.content = text;
                        record.violations = checked.violations.clone();
                        record.tokens_out = Some(tokens);
                        record.interrupted = Some(Interruption::Aborted);
                        opening.record(input.store, &mut record).await?;
                        sink.send(failed_event(attempt, "aborted", &checked.violations))
                            .await;
                        last_failure = summary(&checked.violations);
                        correction = Some((record.content, input.contract.feedback(&checked)));
                        last_violations = checked.violations;
                        // Retried at once: the provider did nothing wrong that waiting helps.
                        continue;
                    }
                }
            }
        };
        let payload = payload.into_value();
        let latency = started.elapsed();
        let mut record = attempt_record(&input, &turn_id, attempt, payload, latency.as_millis());
        let retry_after = match result {
            Ok((mut completion, check)) => {
                let checked = cut_at_limit(
                    input.contract,
                    &completion,
                    check_whole(input.contract, &completion, &context),
                );
                fill_completion(&mut record, &mut completion, &checked);
                input.metrics.attempt(
                    label,
                    input.provider.name(),
                    attempt,
                    latency,
                    completion.usage,
                    if checked.is_valid() {
                        AttemptOutcome::Valid {
                            repairs: &checked.repairs,
                        }
                    } else {
                        AttemptOutcome::Invalid {
                            violations: &checked.violations,
                            repairs: &checked.repairs,
                        }
                    },
                );
                if let Some(u) = completion.usage {
                    usage += u;
                    if checked.is_valid() {
                        input.metrics.completed_output(label, u.output_tokens);
                    }
                }
                let message_id = opening.record(input.store, &mut record).await?;
                if let (Some(sink), Some(mut check)) = (input.events, check) {
                    stream_verdict(sink, &mut check, &checked, attempt).await;
                }
                // The record is stored: its copy of the value is the outcome's.
                if let Some(value) = record.value.take() {
                    if checked.is_valid() {
                        return Ok(TurnOutcome {
                            turn_id,
                            user_message_id: opening.id().await?,
                            message_id,
                            value,
                            attempts: attempt,
                            repairs: checked.repairs,
                            fallback: false,
                            usage,
                            safety: None,
                        });
                    }
                    readable.push(value);
                }
                last_failure = summary(&checked.violations);
                correction = Some((record.content.clone(), input.contract.feedback(&checked)));
                last_violations = checked.violations;
                None
            }
            Err(error) => {
                input.metrics.attempt(
                    label,
                    input.provider.name(),
                    attempt,
                    latency,
                    None,
                    AttemptOutcome::ProviderError(&error),
                );
                record.content = error.to_string();
                record.error = Some(format!("{}: {error}", error.kind()));
                opening.record(input.store, &mut record).await?;
                if let Some(sink) = input.events {
                    sink.send(TurnEvent::AttemptFailed {
                        attempt,
                        reason: "provider_error",
                        violations: Vec::new(),
                        message: error.to_string(),
                    })
                    .await;
                }
                if !error.is_retryable() {
                    return Err(TurnError::Provider { attempt, error });
                }
                last_failure = error.to_string();
                last_violations = Vec::new();
                error.retry_after()
            }
        };
        if attempt < input.retry.max_attempts {
            let delay = tokio::time::sleep(input.retry.delay_after(attempt, retry_after));
            match input.events {
                None => delay.await,
                Some(sink) => {
                    tokio::select! {
                        () = delay => {}
                        () = sink.closed() => return Err(TurnError::Cancelled { attempt }),
                    }
                }
            }
        }
    }

    let attempts = input.retry.max_attempts;
    let candidates: Vec<&Value> = readable.iter().collect();
    let Some(value) = input.contract.fallback(&candidates) else {
        return Err(TurnError::Exhausted {
            attempts,
            violations: last_violations,
            reason: last_failure,
        });
    };
    let mut record = fallback_record(&input, &turn_id, &value, &last_failure);
    let message_id = opening.record(input.store, &mut record).await?;
    Ok(TurnOutcome {
        turn_id,
        user_message_id: opening.id().await?,
        message_id,
        value,
        attempts,
        repairs: Vec::new(),
        fallback: true,
        usage,
        safety: None,
    })
}

/// The reply's check. Text and tool calls together are the reply, and are stored together
/// ([`Completion::transcript`]): past the contract's `max_bytes` they are too large, as the
/// text alone would be.
fn check_whole(contract: &Contract, completion: &Completion, context: &Context) -> Checked {
    if !completion.tool_calls.is_empty() {
        let size = completion.transcript().len();
        if size > contract.limits().max_bytes {
            return contract.too_large(u64::try_from(size).unwrap_or(u64::MAX));
        }
    }
    contract.check_reply(&completion.content, &completion.tool_calls, context)
}

/// A reply the provider stopped at the output token limit (`finish_reason` `length`, Anthropic's
/// `max_tokens`) is incomplete. A JSON or XML reply proves it by its structure (the check says
/// `truncated`), and one whose value was complete before the cut (only prose after it was lost)
/// stands; any other is refused with a `max_tokens` violation — first, so the feedback opens
/// with it: a retry that writes as much again would be cut again.
fn cut_at_limit(contract: &Contract, completion: &Completion, mut checked: Checked) -> Checked {
    let at_limit = matches!(
        completion.finish_reason.as_deref(),
        Some("length" | "max_tokens")
    );
    let complete_structure = checked.is_valid()
        && matches!(
            contract.kind(),
            bridle_core::Kind::Json | bridle_core::Kind::Xml
        );
    if at_limit && !complete_structure {
        checked.violations.insert(
            0,
            Violation::new(
                "",
                Rule::MaxTokens,
                "the reply hit the output token limit and was cut off; send a complete reply that is shorter",
            ),
        );
    }
    checked
}

/// After a streamed attempt's complete check: a valid reply releases the text the stream held
/// back (question-card text the cards did not take); an invalid one is announced as failed.
async fn stream_verdict(
    sink: &EventSink,
    check: &mut StreamCheck,
    checked: &Checked,
    attempt: u32,
) {
    if checked.is_valid() {
        let mut emitted = Vec::new();
        check.finish(checked, &mut emitted);
        for emit in emitted {
            sink.send(TurnEvent::from_emit(emit)).await;
        }
    } else {
        sink.send(failed_event(attempt, "invalid", &checked.violations))
            .await;
    }
}

fn failed_event(attempt: u32, reason: &'static str, violations: &[Violation]) -> TurnEvent {
    TurnEvent::AttemptFailed {
        attempt,
        reason,
        violations: violations.to_vec(),
        message: summary(violations),
    }
}

/// A turn's opening (the user's message, and the conversation when the turn starts it), stored
/// while the model is called and settled with the first message recorded after it.
struct Opening {
    /// On its way to the store, until settled.
    pending: Option<Pending<i64>>,
    /// The user message's id, once settled.
    id: i64,
    /// The contract's `max_bytes`: no record stores more of a reply.
    max_bytes: usize,
}

impl Opening {
    /// Starts storing `user` (with the conversation when the turn starts it).
    fn start(input: &TurnInput<'_>, user: &NewMessage) -> Self {
        let conversation = input.new_conversation.then_some(input.conversation);
        Self {
            pending: Some(input.store.open_turn(conversation, user)),
            id: 0,
            max_bytes: input.contract.limits().max_bytes,
        }
    }

    /// Stores `record`, cut to the contract's `max_bytes` ([`crate::bounded::bound`]), after
    /// the opening (settling it the first time); the record's id.
    async fn record(
        &mut self,
        store: &dyn Store,
        record: &mut NewMessage,
    ) -> Result<i64, StoreError> {
        crate::bounded::bound(record, self.max_bytes);
        match self.pending.take() {
            Some(opening) => {
                let (first, id) = store.record_after(opening, record).await?;
                self.id = first;
                Ok(id)
            }
            None => store.record_message(record).await,
        }
    }

    /// The user message's id, once stored.
    async fn id(&mut self) -> Result<i64, StoreError> {
        if let Some(opening) = self.pending.take() {
            self.id = opening.await?;
        }
        Ok(self.id)
    }
}

/// The client went away during `attempt`: the attempt is stored as cancelled, with what had
/// arrived of the reply, and the turn ends.
async fn cancelled(
    input: &TurnInput<'_>,
    opening: &mut Opening,
    turn_id: &str,
    attempt: u32,
    payload: Value,
    check: Option<StreamCheck>,
) -> Result<TurnOutcome, TurnError> {
    let mut record = attempt_record(input, turn_id, attempt, payload, 0);
    record.latency_ms = None;
    if let Some(check) = check {
        record.content = check.into_raw();
        record.tokens_out = Some(estimated_tokens(&record.content));
    }
    record.interrupted = Some(Interruption::Cancelled);
    opening.record(input.store, &mut record).await?;
    Err(TurnError::Cancelled { attempt })
}

/// System message (contract instructions + the application's prompt), then the validated
/// history, then the user's message — or, for a chat the client sent whole, its own messages.
async fn base_messages(input: &TurnInput<'_>) -> Result<Vec<ChatMessage>, StoreError> {
    let app_prompt = |mut system: String| {
        if let Some(prompt) = input.app_prompt.filter(|p| !p.trim().is_empty()) {
            system.push_str("\n\n");
            system.push_str(prompt.trim());
        }
        system
    };
    if let Some(given) = input.given_messages {
        let mut system = app_prompt(input.contract.instructions(input.context));
        for message in given.iter().filter(|m| m.role.is_instructions()) {
            system.push_str("\n\n");
            system.push_str(message.content.trim());
        }
        let mut messages = vec![ChatMessage::new(Role::System, system)];
        messages.extend(given.iter().filter(|m| !m.role.is_instructions()).cloned());
        return Ok(messages);
    }
    let history = input
        .store
        .messages(&input.conversation.id, View::User)
        .await?;
    let skip = history.len().saturating_sub(MAX_HISTORY_MESSAGES);
    let history = &history[skip..];
    let earlier: Vec<Value> = history
        .iter()
        .filter(|m| m.data.role == MessageRole::Assistant)
        .filter_map(|m| m.data.value.clone())
        .collect();
    let mut system = app_prompt(
        input
            .contract
            .instructions_with_history(input.context, &earlier),
    );
    if let Some(note) = input.contract.state_note(&input.conversation.state) {
        system.push_str("\n\n");
        system.push_str(&note);
    }
    let mut messages = vec![ChatMessage::new(Role::System, system)];
    for message in history {
        let role = match message.data.role {
            MessageRole::User => Role::User,
            MessageRole::Assistant => Role::Assistant,
        };
        // A valid reply is sent back in its clean form (repaired, coerced), written the way
        // the contract's replies are written (JSON, XML, text with markers).
        let content = match (&message.data.role, &message.data.value) {
            (MessageRole::Assistant, Some(value)) => input.contract.reply_text(value),
            _ => message.data.content.clone(),
        };
        messages.push(ChatMessage::new(role, content));
    }
    // The engine checked that the message can be sent (`Engine::send`); should that change,
    // the plain message is sent rather than nothing.
    let count = u64::try_from(history.len())
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    let sent = input
        .contract
        .user_prompt(
            input.user_message,
            &input.conversation.state,
            &input.conversation.id,
            count,
        )
        .unwrap_or_else(|_| input.user_message.to_owned());
    messages.push(ChatMessage::new(Role::User, sent));
    Ok(messages)
}

fn request(
    input: &TurnInput<'_>,
    tools: &[Value],
    base: &[ChatMessage],
    correction: Option<&(String, String)>,
) -> ChatRequest {
    let mut messages = base.to_vec();
    if let Some((bad_reply, feedback)) = correction {
        messages.push(ChatMessage::new(Role::Assistant, bad_reply.clone()));
        messages.push(ChatMessage::new(Role::User, feedback.clone()));
    }
    let response_format =
        input
            .model
            .native_structured_output
            .then(|| ResponseFormat::JsonSchema {
                name: input.contract.name().to_owned(),
                schema: input.contract.schema().raw().clone(),
            });
    ChatRequest {
        model: input.model.model.clone(),
        messages,
        temperature: input.model.temperature,
        max_tokens: input.model.max_tokens,
        response_format,
        tools: tools.to_vec(),
        ..ChatRequest::default()
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
    }
}

fn user_record(input: &TurnInput<'_>, turn_id: &str) -> NewMessage {
    NewMessage {
        content: input.user_message.to_owned(),
        is_validated: true,
        ..blank_record(input, turn_id, MessageRole::User)
    }
}

fn attempt_record(
    input: &TurnInput<'_>,
    turn_id: &str,
    attempt: u32,
    payload: Value,
    latency_ms: u128,
) -> NewMessage {
    NewMessage {
        attempt: Some(attempt),
        request_payload: Some(payload),
        provider: Some(input.provider.name().to_owned()),
        model: Some(input.model.model.clone()),
        latency_ms: Some(u64::try_from(latency_ms).unwrap_or(u64::MAX)),
        ..blank_record(input, turn_id, MessageRole::Assistant)
    }
}

/// The attempt's record after an answer. Its content is the reply as one text: the text, then
/// any tool calls as `name({…})` lines ([`Completion::transcript`]) — also what the model sees
/// of its bad reply before the feedback. The provider's raw response moves into the record.
fn fill_completion(record: &mut NewMessage, completion: &mut Completion, checked: &Checked) {
    record.content = completion.transcript();
    record.value = checked.value.clone();
    record.is_validated = checked.is_valid();
    record.violations = checked.violations.clone();
    record.repairs = checked.repairs.clone();
    record.raw_response = Some(std::mem::take(&mut completion.raw));
    record.model = Some(completion.model.clone());
    record.tokens_in = completion.usage.map(|u| u.input_tokens);
    record.tokens_out = completion.usage.map(|u| u.output_tokens);
}

fn fallback_record(
    input: &TurnInput<'_>,
    turn_id: &str,
    value: &Value,
    reason: &str,
) -> NewMessage {
    NewMessage {
        content: value.to_string(),
        value: Some(value.clone()),
        is_fallback: true,
        error: Some(format!(
            "fallback after {} attempt(s): {reason}",
            input.retry.max_attempts
        )),
        ..blank_record(input, turn_id, MessageRole::Assistant)
    }
}

/// The first violations in one line, for the turn's error text.
fn summary(violations: &[Violation]) -> String {
    let parts: Vec<String> = violations
        .iter()
        .take(3)
        .map(|v| {
            format!(
                "{} [{}] {}",
                if v.path.is_empty() { "/" } else { &v.path },
                v.rule,
                v.message
            )
        })
        .collect();
    let more = violations.len().saturating_sub(3);
    if more > 0 {
        format!("{} (+{more} more)", parts.join("; "))
    } else {
        parts.join("; ")
    }
}
