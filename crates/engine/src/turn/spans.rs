//! The spans of a turn: the turn itself (contract, outcome, attempts), each attempt in the
//! OpenTelemetry GenAI conventions (`chat {model}`: operation, provider, requested and
//! answering model, tokens; and Bridle's attempt number, outcome, repairs and violations), and
//! each store write ([`StoreWrite`]: the opening, attempts, fallback, state, status, safety
//! events). They are [`TraceSpan`]s: with telemetry off they are never built. Prompt and reply
//! text go into an attempt's span only with `[telemetry] capture_content = true`.

use crate::engine::Model;
use crate::providers::trace_context::capture_content;
use crate::providers::traces::TraceSpan;
use crate::providers::{ChatMessage, Completion, ProviderError};
use crate::store::{Store, StoreError};
use bridle_core::{Checked, Contract, Violation};
use opentelemetry::KeyValue;
use opentelemetry::trace::SpanKind;

/// The turn's span, before its outcome is known.
pub(super) fn turn(contract: &Contract, model: &Model) -> TraceSpan {
    TraceSpan::start("bridle.turn", SpanKind::Internal, || {
        vec![
            KeyValue::new("bridle.contract", contract.name().to_owned()),
            KeyValue::new("bridle.model", model.name.clone()),
        ]
    })
}

/// The turn `turn_id` began (its id is known once its opening is under way).
pub(super) fn turn_began(turn_id: &str) {
    TraceSpan::current().set_with(|| KeyValue::new("bridle.turn.id", turn_id.to_owned()));
}

/// The turn ended with `outcome` (`valid`, `fallback`, `exhausted`, …) after `attempts`.
pub(super) fn turn_ended(span: &TraceSpan, outcome: &'static str, attempts: Option<u32>) {
    if !span.is_recording() {
        return;
    }
    span.set(KeyValue::new("bridle.turn.outcome", outcome));
    if let Some(attempts) = attempts {
        span.set(KeyValue::new("bridle.turn.attempts", i64::from(attempts)));
    }
    if !matches!(outcome, "valid" | "fallback") {
        span.fail();
    }
}

/// The provider as the GenAI conventions name it (`gen_ai.provider.name`).
fn provider_name(kind: &str) -> &'static str {
    match kind {
        "openai" => "openai",
        "azure" => "azure.ai.openai",
        "anthropic" => "anthropic",
        "gemini" => "gcp.gemini",
        "mock" => "bridle.mock",
        _ => "other",
    }
}

/// Attempt `attempt`'s span, on `model`: the client span of the model call.
pub(super) fn attempt(attempt: u32, model: &Model) -> TraceSpan {
    if !crate::providers::traces::enabled() {
        return TraceSpan::none();
    }
    let name = format!("chat {}", model.settings.model);
    TraceSpan::start(name, SpanKind::Client, || {
        let provider = provider_name(model.provider.name());
        vec![
            KeyValue::new("gen_ai.operation.name", "chat"),
            KeyValue::new("gen_ai.system", provider),
            KeyValue::new("gen_ai.provider.name", provider),
            KeyValue::new("gen_ai.request.model", model.settings.model.clone()),
            KeyValue::new("bridle.model", model.name.clone()),
            KeyValue::new("bridle.attempt.number", i64::from(attempt)),
        ]
    })
}

/// The messages the attempt in force sends, when content is captured.
pub(super) fn sending(messages: &[ChatMessage]) {
    if capture_content() {
        TraceSpan::current().set_with(|| {
            let text = serde_json::to_string(messages).unwrap_or_default();
            KeyValue::new("gen_ai.input.messages", text)
        });
    }
}

/// The attempt in force went to another model than the turn's own, for `route`.
pub(super) fn routed(route: &str) {
    TraceSpan::current().set_with(|| KeyValue::new("bridle.route", route.to_owned()));
}

/// The attempt in force was answered: the answering model, tokens, verdict.
pub(super) fn answered(completion: &Completion, checked: &Checked) {
    let span = TraceSpan::current();
    if !span.is_recording() {
        return;
    }
    if !completion.model.is_empty() {
        span.set(KeyValue::new(
            "gen_ai.response.model",
            completion.model.clone(),
        ));
    }
    if let Some(usage) = completion.usage {
        span.set(KeyValue::new(
            "gen_ai.usage.input_tokens",
            int(usage.input_tokens),
        ));
        span.set(KeyValue::new(
            "gen_ai.usage.output_tokens",
            int(usage.output_tokens),
        ));
    }
    let outcome = if checked.is_valid() {
        "valid"
    } else {
        "invalid"
    };
    span.set(KeyValue::new("bridle.attempt.outcome", outcome));
    span.set(KeyValue::new(
        "bridle.repairs",
        count(checked.repairs.len()),
    ));
    span.set(KeyValue::new(
        "bridle.violations",
        count(checked.violations.len()),
    ));
    if capture_content() {
        span.set(KeyValue::new(
            "gen_ai.output.messages",
            completion.transcript(),
        ));
    }
}

/// The attempt in force failed at the provider.
pub(super) fn failed(error: &ProviderError) {
    let span = TraceSpan::current();
    if !span.is_recording() {
        return;
    }
    span.set(KeyValue::new("bridle.attempt.outcome", "provider_error"));
    span.set(KeyValue::new("error.type", error.kind()));
    span.fail();
}

/// The attempt in force was stopped early (`aborted`, with its proven violations) or by the
/// client going away (`cancelled`).
pub(super) fn interrupted(outcome: &'static str, violations: &[Violation]) {
    let span = TraceSpan::current();
    if !span.is_recording() {
        return;
    }
    span.set(KeyValue::new("bridle.attempt.outcome", outcome));
    span.set(KeyValue::new("bridle.violations", count(violations.len())));
}

/// `n` as the signed integer OpenTelemetry attributes hold.
fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// One write of a turn to the store, in the OpenTelemetry database conventions
/// (`db.system.name`, `db.operation.name`, `db.collection.name`) and Bridle's `bridle.record`:
/// what was written.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StoreWrite {
    operation: &'static str,
    collection: &'static str,
    record: &'static str,
}

impl StoreWrite {
    /// The user's message, with the conversation when the turn starts it (the turn's opening).
    pub(crate) const USER: Self = Self::insert("messages", "user");
    /// An attempt's record.
    pub(crate) const ATTEMPT: Self = Self::insert("messages", "attempt");
    /// The fallback's record.
    pub(crate) const FALLBACK: Self = Self::insert("messages", "fallback");
    /// The conversation's state after a valid reply.
    pub(crate) const STATE: Self = Self::update("conversations", "state");
    /// The conversation's status (blocked by the safety policy).
    pub(crate) const STATUS: Self = Self::update("conversations", "status");
    /// A safety event.
    pub(crate) const SAFETY_EVENT: Self = Self::insert("safety_events", "safety_event");

    const fn insert(collection: &'static str, record: &'static str) -> Self {
        Self {
            operation: "insert",
            collection,
            record,
        }
    }

    const fn update(collection: &'static str, record: &'static str) -> Self {
        Self {
            operation: "update",
            collection,
            record,
        }
    }

    /// The span of this write to `store` (nothing when telemetry is off), a child of the span
    /// in force.
    pub(crate) fn span(self, store: &dyn Store) -> TraceSpan {
        TraceSpan::start("bridle.store.write", SpanKind::Internal, || {
            vec![
                KeyValue::new("db.system.name", db_system(store.backend())),
                KeyValue::new("db.operation.name", self.operation),
                KeyValue::new("db.collection.name", self.collection),
                KeyValue::new("bridle.record", self.record),
            ]
        })
    }

    /// Runs `write` (this write, to `store`) in its span; a failure marks the span. The write
    /// itself begins no spans, so its future is not wrapped: the span is begun before it and
    /// ended after it.
    pub(crate) async fn traced<T>(
        self,
        store: &dyn Store,
        write: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let span = self.span(store);
        let result = write.await;
        written(&span, &result);
        result
    }
}

/// Ends the span of a write that gave `result`, marked failed when it is an error.
pub(crate) fn written<T>(span: &TraceSpan, result: &Result<T, StoreError>) {
    if result.is_err() {
        span.fail();
    }
    span.end();
}

/// The store's backend as the database conventions name it (`db.system.name`).
fn db_system(backend: &str) -> &'static str {
    match backend {
        "sqlite" => "sqlite",
        "postgres" => "postgresql",
        _ => "other_sql",
    }
}
