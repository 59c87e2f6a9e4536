//! [`run_turn`]: one user message → attempts → one final message (valid, or the contract's
//! fallback). Steps 2–8 of the request path in ARCHITECTURE.md.
//!
//! The user's message is stored while the model is called ([`TurnWrites::open_turn`]), and settled
//! with the first attempt ([`TurnWrites::record_after`]). Each attempt is stored the moment it ends,
//! before anything else happens ([`records`]). An invalid reply
//! is followed by exactly two messages — the model's own bad reply as the assistant turn, then
//! one user message with the contract's bounded feedback — replacing the previous attempt's
//! pair, so the prompt never accumulates feedback ([`prompt`]). Provider errors that another
//! attempt may fix (timeouts, resets, 5xx, 429) count as failed attempts and are retried,
//! honouring `Retry-After`; others (401, 400, …) end the turn at once.
//!
//! Each attempt goes to the model the [`router`] names: the turn's own, a model its
//! `escalate_to` chain names once it has had its failed content attempts (the correction carries
//! over, so the larger model sees the bad reply and its feedback), or for one attempt after a
//! provider error a `failover` model. Every attempt records the configured model it went to and
//! why. With `max_turn_tokens`, a turn whose attempts have used that many tokens stops
//! retrying: the fallback, or [`TurnError::Exhausted`] saying the budget was spent.
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
//!
//! [`TurnWrites::open_turn`]: crate::store::TurnWrites::open_turn
//! [`TurnWrites::record_after`]: crate::store::TurnWrites::record_after

mod checks;
mod prompt;
mod records;
mod router;
pub(crate) mod spans;

use crate::config::RetryPolicy;
use crate::engine::Model;
use crate::events::{EventSink, TurnEvent};
use crate::metrics::{AttemptOutcome, EngineMetrics};
use crate::providers::traces::TraceSpan;
use crate::providers::{ChatMessage, Completion, ProviderError, Usage};
use crate::store::{Conversation, Interruption, Store, StoreError};
use crate::streamed::{Streamed, estimated_tokens, stream_attempt};
use bridle_core::{Checked, Context, Contract, Repair, StreamCheck, ToolCall, Violation};
use checks::{check_whole, cut_at_limit, failed_event, stream_verdict, summary};
use records::{Opening, Target, attempt_record, cancelled, fallback_record, fill_completion};
use router::{AfterError, Moved, Router};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Most earlier messages sent as history (the newest ones).
pub const MAX_HISTORY_MESSAGES: usize = 50;

/// Everything one turn needs.
#[derive(Debug)]
pub struct TurnInput<'a> {
    /// Where attempts are recorded.
    pub store: &'a dyn Store,
    /// Every configured model by name: where escalation and failover go.
    pub models: &'a BTreeMap<String, Model>,
    /// The model the turn starts on.
    pub model: &'a Model,
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
    /// The application's state for this turn (`app_state`), shown to the model in the system
    /// prompt's "Application state" section.
    pub app_state: Option<&'a Value>,
    /// The turn's context as the user's message stores it (`None`: not stored).
    pub turn_context: Option<&'a Value>,
    /// The card answers the user's message is, by id, as it stores them.
    pub answer: Option<&'a Value>,
    /// The user's message.
    pub user_message: &'a str,
    /// A chat the client sent whole (the OpenAI-compatible endpoint), read against the
    /// contract: its system messages follow the contract's instructions, its other messages
    /// replace the stored history and `user_message`. `None`: the conversation's stored history.
    pub given_messages: Option<&'a crate::GivenChat>,
    /// What the client sends beside the chat (the OpenAI-compatible endpoint): its tools, tool
    /// choice and options go with every attempt, and a reply calling one of its tools ends the
    /// turn as that call.
    pub passthrough: Option<&'a crate::Passthrough>,
    /// Where attempts and the turn's outcome are counted.
    pub metrics: &'a EngineMetrics,
    /// The ids of the HTTP request the turn runs for, stored with every message it writes.
    pub ids: Option<&'a crate::store::RequestIds>,
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
    /// The configured model whose reply is final (for a fallback: the last attempt's model).
    pub model: String,
    /// The reply calls the client's own tools ([`TurnInput::passthrough`]): these calls, with
    /// their ids, are the answer (and `value` is `{"tool_calls": […]}`); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
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
    /// Every attempt failed, or the turn's token budget was spent, and the contract has no
    /// fallback.
    #[error("no valid reply after {attempts} attempt(s): {reason}")]
    Exhausted {
        /// Attempts made.
        attempts: u32,
        /// The attempts stopped because they had used the turn's `max_turn_tokens`.
        budget_spent: bool,
        /// The last attempt's violations (empty when it was a provider error).
        violations: Vec<Violation>,
        /// Why the last attempt failed, in words.
        reason: String,
    },
}

/// The span of a turn on `input` (`bridle.turn`; nothing when telemetry is off): what
/// [`run_turn`] runs in, and what follows the turn (its state, its safety policy) after it.
/// Whoever begins it ends it.
pub fn turn_span(input: &TurnInput<'_>) -> TraceSpan {
    spans::turn(input.contract, input.model)
}

/// Runs one turn in `span` (from [`turn_span`]), recording its outcome there.
pub async fn run_turn(input: TurnInput<'_>, span: &TraceSpan) -> Result<TurnOutcome, TurnError> {
    let metrics = input.metrics;
    let label = metrics.contract_label(input.contract);
    let result = span.run(attempts(&input, &label)).await;
    let (outcome, attempts) = match &result {
        Ok(outcome) if outcome.fallback => ("fallback", Some(outcome.attempts)),
        Ok(outcome) => ("valid", Some(outcome.attempts)),
        Err(TurnError::Exhausted { attempts, .. }) => ("exhausted", Some(*attempts)),
        Err(TurnError::Provider { attempt, .. }) => ("provider_error", Some(*attempt)),
        Err(TurnError::Cancelled { attempt }) => ("cancelled", Some(*attempt)),
        Err(TurnError::Store(_)) => ("store_error", None),
    };
    metrics.turn(&label, outcome, attempts);
    spans::turn_ended(span, outcome, attempts);
    result
}

/// The attempt loop; `label` names the contract in metrics.
async fn attempts(input: &TurnInput<'_>, label: &str) -> Result<TurnOutcome, TurnError> {
    let mut turn = Turn::start(input, label).await?;
    let max = input.retry.max_attempts;
    let mut made = max;
    let mut budget_spent = false;
    for attempt in 1..=max {
        let wait = match turn.attempt(attempt).await? {
            Next::Done(outcome) => return Ok(*outcome),
            Next::Retry(wait) => wait,
        };
        if attempt == max {
            break;
        }
        if let Some(budget) = input.retry.max_turn_tokens
            && turn.tokens() >= budget
        {
            made = attempt;
            budget_spent = true;
            input.metrics.budget_spent(label);
            if let Some(sink) = input.events {
                sink.send(TurnEvent::BudgetSpent {
                    used: turn.tokens(),
                    budget,
                })
                .await;
            }
            turn.last_failure = format!(
                "the turn's token budget was spent ({} of {budget} tokens); last failure: {}",
                turn.tokens(),
                turn.last_failure
            );
            break;
        }
        let Wait::Delay(retry_after) = wait else {
            continue;
        };
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
    turn.finish(made, budget_spent).await
}

/// What follows an attempt.
enum Next {
    /// The turn has its final message.
    Done(Box<TurnOutcome>),
    /// Another attempt, if any are left, after `Wait`.
    Retry(Wait),
}

/// How long the next attempt waits.
enum Wait {
    /// Not at all: an aborted stream (the provider did nothing wrong), a failover (another
    /// provider).
    No,
    /// The retry delay, at least the provider's `Retry-After`.
    Delay(Option<Duration>),
}

/// A turn under way: what every attempt shares, and what the failed ones left.
struct Turn<'i, 'a> {
    input: &'i TurnInput<'a>,
    label: &'i str,
    turn_id: String,
    base: Vec<ChatMessage>,
    opening: Opening,
    /// The turn's id goes into the context the replies are checked with (question ids).
    context: Context,
    /// The function tools the contract offers in this context (question cards'
    /// present_question).
    tools: Vec<Value>,
    router: Router<'a>,
    usage: Usage,
    /// Output tokens of aborted streamed attempts, estimated from their text (the provider
    /// reports none for a stream it did not finish): they count against the token budget.
    aborted_tokens: u64,
    /// Values of invalid replies that could be read: the fallback's candidates.
    readable: Vec<Value>,
    /// The previous attempt's (bad reply, feedback): the only retry context ever sent.
    correction: Option<(String, String)>,
    last_failure: String,
    last_violations: Vec<Violation>,
}

impl<'i, 'a> Turn<'i, 'a> {
    /// Starts storing the user's message and builds what every attempt sends.
    async fn start(input: &'i TurnInput<'a>, label: &'i str) -> Result<Self, TurnError> {
        let turn_id = uuid::Uuid::now_v7().to_string();
        let base = prompt::base_messages(input).await?;
        let user = records::user_record(input, &turn_id);
        let opening = Opening::start(input, &user);
        let context = input
            .context
            .clone()
            .with(bridle_core::text::TURN_KEY, turn_id.as_str());
        let tools = input.contract.tools(&context);
        spans::turn_began(&turn_id);
        Ok(Self {
            input,
            label,
            turn_id,
            base,
            opening,
            context,
            tools,
            router: Router::new(input.models, input.model, input.retry.max_attempts),
            usage: Usage::default(),
            aborted_tokens: 0,
            readable: Vec::new(),
            correction: None,
            last_failure: String::new(),
            last_violations: Vec::new(),
        })
    }

    /// Tokens the attempts have used so far: input and output as the providers reported them,
    /// and the estimated output of aborted streams.
    fn tokens(&self) -> u64 {
        self.usage
            .input_tokens
            .saturating_add(self.usage.output_tokens)
            .saturating_add(self.aborted_tokens)
    }

    /// Runs attempt `attempt` on the router's model and stores it, in the attempt's span.
    async fn attempt(&mut self, attempt: u32) -> Result<Next, TurnError> {
        let model = self.router.current();
        let span = spans::attempt(attempt, model);
        let next = span.run(self.run_attempt(attempt)).await;
        span.end();
        next
    }

    async fn run_attempt(&mut self, attempt: u32) -> Result<Next, TurnError> {
        let input = self.input;
        let model = self.router.current();
        let moved = self.router.take_move();
        if let Some(moved) = &moved {
            self.moved(moved);
            spans::routed(moved.route.as_str());
        }
        let target = Target {
            turn_id: &self.turn_id,
            attempt,
            model,
            route: moved.map(|m| m.route),
        };
        let request = prompt::request(
            input,
            &model.settings,
            &self.tools,
            &self.base,
            self.correction.as_ref(),
        );
        spans::sending(&request.messages);
        // Built once: the body sent is exactly the body stored.
        let payload = model.provider.payload(&request, input.events.is_some());
        let started = Instant::now();
        let result = match input.events {
            None => model.provider.send(&payload.body).await.map(|c| (c, None)),
            Some(sink) => {
                let started_event = TurnEvent::AttemptStarted {
                    attempt,
                    model: model.name.clone(),
                    route: target.route.map(|r| r.as_str()),
                };
                if !sink.send(started_event).await {
                    spans::interrupted("cancelled", &[]);
                    let payload = payload.into_value();
                    return Err(cancelled(input, &mut self.opening, target, payload, None).await);
                }
                let streamed = stream_attempt(
                    model.provider.as_ref(),
                    &payload.body,
                    input.contract,
                    &self.context,
                    sink,
                    attempt,
                )
                .await;
                match streamed {
                    Streamed::Complete(completion, check) => Ok((completion, Some(check))),
                    Streamed::Failed(error) => Err(error),
                    Streamed::Cancelled(check) => {
                        spans::interrupted("cancelled", &[]);
                        let payload = payload.into_value();
                        let check = Some(*check);
                        return Err(
                            cancelled(input, &mut self.opening, target, payload, check).await
                        );
                    }
                    Streamed::Aborted { check, violations } => {
                        let record = attempt_record(
                            input,
                            target,
                            payload.into_value(),
                            started.elapsed().as_millis(),
                        );
                        return self
                            .aborted(record, *check, violations, started.elapsed())
                            .await;
                    }
                }
            }
        };
        let latency = started.elapsed();
        let record = attempt_record(input, target, payload.into_value(), latency.as_millis());
        match result {
            Ok((completion, check)) => self.answered(record, completion, check, latency).await,
            Err(error) => self.failed(record, error, latency).await,
        }
    }

    /// A streamed attempt stopped early: its reply so far already broke the contract.
    async fn aborted(
        &mut self,
        mut record: crate::store::NewMessage,
        check: StreamCheck,
        violations: Vec<Violation>,
        latency: Duration,
    ) -> Result<Next, TurnError> {
        let (input, label) = (self.input, self.label);
        let attempt = record.attempt.unwrap_or_default();
        let text = check.into_raw();
        let tokens = estimated_tokens(&text);
        self.aborted_tokens = self.aborted_tokens.saturating_add(tokens);
        input.metrics.aborted(label, tokens);
        input.metrics.attempt(
            label,
            self.router.current().provider.name(),
            attempt,
            latency,
            None,
            AttemptOutcome::Aborted {
                violations: &violations,
            },
        );
        spans::interrupted("aborted", &violations);
        let checked = Checked {
            value: None,
            violations,
            repairs: Vec::new(),
        };
        record.content = text;
        record.violations = checked.violations.clone();
        record.tokens_out = Some(tokens);
        record.interrupted = Some(Interruption::Aborted);
        self.opening.record(input.store, &mut record).await?;
        if let Some(sink) = input.events {
            sink.send(failed_event(attempt, "aborted", &checked.violations))
                .await;
        }
        self.content_failed(attempt, record.content, &checked);
        // Retried at once: the provider did nothing wrong that waiting helps.
        Ok(Next::Retry(Wait::No))
    }

    /// The model answered: the reply is checked, stored, and either final or corrected.
    async fn answered(
        &mut self,
        mut record: crate::store::NewMessage,
        mut completion: Completion,
        check: Option<Box<StreamCheck>>,
        latency: Duration,
    ) -> Result<Next, TurnError> {
        let (input, label) = (self.input, self.label);
        let attempt = record.attempt.unwrap_or_default();
        let contract = input.contract;
        let client_calls = checks::client_calls(input.passthrough, &completion);
        let checked = if client_calls.is_empty() {
            cut_at_limit(
                contract,
                &completion,
                check_whole(contract, &completion, &self.context),
            )
        } else {
            // The contract applies to content replies: a call of the client's tools is the
            // client's to run.
            Checked {
                value: Some(serde_json::json!({ "tool_calls": client_calls })),
                violations: Vec::new(),
                repairs: Vec::new(),
            }
        };
        spans::answered(&completion, &checked);
        fill_completion(&mut record, &mut completion, &checked);
        input.metrics.attempt(
            label,
            self.router.current().provider.name(),
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
            self.usage += u;
            if checked.is_valid() {
                input.metrics.completed_output(label, u.output_tokens);
            }
        }
        let message_id = self.opening.record(input.store, &mut record).await?;
        if let (Some(sink), Some(mut check)) = (input.events, check) {
            stream_verdict(sink, &mut check, &checked, attempt).await;
        }
        // The record is stored: its copy of the value is the outcome's.
        if let Some(value) = record.value.take() {
            if checked.is_valid() {
                return Ok(Next::Done(Box::new(TurnOutcome {
                    turn_id: self.turn_id.clone(),
                    user_message_id: self.opening.id().await?,
                    message_id,
                    value,
                    attempts: attempt,
                    repairs: checked.repairs,
                    fallback: false,
                    usage: self.usage,
                    model: self.router.current().name.clone(),
                    tool_calls: client_calls,
                    safety: None,
                })));
            }
            self.readable.push(value);
        }
        self.content_failed(attempt, record.content, &checked);
        Ok(Next::Retry(Wait::Delay(None)))
    }

    /// The provider call failed: a retryable error moves to a failover model (at once) or waits
    /// for the retry delay; any other ends the turn.
    async fn failed(
        &mut self,
        mut record: crate::store::NewMessage,
        error: ProviderError,
        latency: Duration,
    ) -> Result<Next, TurnError> {
        let (input, label) = (self.input, self.label);
        let attempt = record.attempt.unwrap_or_default();
        input.metrics.attempt(
            label,
            self.router.current().provider.name(),
            attempt,
            latency,
            None,
            AttemptOutcome::ProviderError(&error),
        );
        spans::failed(&error);
        record.content = error.to_string();
        record.error = Some(format!("{}: {error}", error.kind()));
        self.opening.record(input.store, &mut record).await?;
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
        self.last_failure = error.to_string();
        self.last_violations = Vec::new();
        Ok(
            match self.router.provider_failed(&error, input.retry.max_delay) {
                AfterError::Moved(_) => Next::Retry(Wait::No),
                AfterError::Wait(retry_after) => Next::Retry(Wait::Delay(retry_after)),
            },
        )
    }

    /// A content attempt failed: its reply and the feedback become the next attempt's
    /// correction, and the router may escalate.
    fn content_failed(&mut self, attempt: u32, bad_reply: String, checked: &Checked) {
        self.last_failure = summary(&checked.violations);
        self.correction = Some((bad_reply, self.input.contract.feedback(checked)));
        self.last_violations.clone_from(&checked.violations);
        let left = self.input.retry.max_attempts.saturating_sub(attempt);
        self.router.content_failed(left);
    }

    /// Counts and logs a move to another model, as the attempt that makes it starts.
    fn moved(&self, moved: &Moved) {
        self.input
            .metrics
            .routed(moved.route, &moved.from, &moved.to);
        tracing::info!(
            route = moved.route.as_str(),
            from = %moved.from,
            to = %moved.to,
            turn_id = %self.turn_id,
            "the next attempt goes to another model"
        );
    }

    /// No attempt succeeded after `made` attempts: the contract's fallback (last), else
    /// [`TurnError::Exhausted`].
    async fn finish(mut self, made: u32, budget_spent: bool) -> Result<TurnOutcome, TurnError> {
        let input = self.input;
        let candidates: Vec<&Value> = self.readable.iter().collect();
        let Some(value) = input.contract.fallback(&candidates) else {
            return Err(TurnError::Exhausted {
                attempts: made,
                budget_spent,
                violations: self.last_violations,
                reason: self.last_failure,
            });
        };
        let mut record = fallback_record(input, &self.turn_id, &value, made, &self.last_failure);
        let message_id = self.opening.record(input.store, &mut record).await?;
        Ok(TurnOutcome {
            turn_id: self.turn_id,
            user_message_id: self.opening.id().await?,
            message_id,
            value,
            attempts: made,
            repairs: Vec::new(),
            fallback: true,
            usage: self.usage,
            model: self.router.current().name.clone(),
            tool_calls: Vec::new(),
            safety: None,
        })
    }
}
