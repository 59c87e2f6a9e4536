//! The spans of a turn: the turn itself (contract, outcome, attempts), each attempt in the
//! OpenTelemetry GenAI conventions (`chat {model}`: operation, provider, requested and
//! answering model, tokens; and Bridle's attempt number, outcome, repairs and violations), and
//! each store write ([`StoreWrite`]: the opening, attempts, fallback, state, status, safety
//! events). They go to the telemetry layer only (target
//! [`SPAN_TARGET`]); with telemetry off they are never built. Prompt and reply text go into an
//! attempt's span only with `[telemetry] capture_content = true`.

use crate::engine::Model;
use crate::providers::trace_context::{SPAN_TARGET, capture_content};
use crate::providers::{ChatMessage, Completion, ProviderError};
use crate::store::{Store, StoreError};
use bridle_core::{Checked, Contract, Violation};
use tracing::field::Empty;
use tracing::{Instrument as _, Span};

/// The turn's span, before its outcome is known.
pub(super) fn turn(contract: &Contract, model: &Model) -> Span {
    tracing::info_span!(
        target: SPAN_TARGET,
        "bridle.turn",
        bridle.contract = contract.name(),
        bridle.model = model.name.as_str(),
        bridle.turn.id = Empty,
        bridle.turn.outcome = Empty,
        bridle.turn.attempts = Empty,
        otel.status_code = Empty,
    )
}

/// The turn ended with `outcome` (`valid`, `fallback`, `exhausted`, …) after `attempts`.
pub(super) fn turn_ended(span: &Span, outcome: &str, attempts: Option<u32>) {
    span.record("bridle.turn.outcome", outcome);
    if let Some(attempts) = attempts {
        span.record("bridle.turn.attempts", i64::from(attempts));
    }
    if !matches!(outcome, "valid" | "fallback") {
        span.record("otel.status_code", "ERROR");
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

/// Attempt `attempt`'s span, on `model`.
pub(super) fn attempt(attempt: u32, model: &Model) -> Span {
    let provider = provider_name(model.provider.name());
    let span = tracing::info_span!(
        target: SPAN_TARGET,
        "chat",
        otel.name = format!("chat {}", model.settings.model),
        otel.kind = "client",
        otel.status_code = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.system = provider,
        gen_ai.provider.name = provider,
        gen_ai.request.model = model.settings.model.as_str(),
        server.address = Empty,
        server.port = Empty,
        http.response.status_code = Empty,
        gen_ai.response.model = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.input.messages = Empty,
        gen_ai.output.messages = Empty,
        bridle.model = model.name.as_str(),
        bridle.attempt.number = i64::from(attempt),
        bridle.attempt.outcome = Empty,
        bridle.route = Empty,
        bridle.repairs = Empty,
        bridle.violations = Empty,
        error.type = Empty,
    );
    span
}

/// The messages the attempt in force sends, when content is captured.
pub(super) fn sending(messages: &[ChatMessage]) {
    let span = Span::current();
    if capture_content() && !span.is_disabled() {
        let text = serde_json::to_string(messages).unwrap_or_default();
        span.record("gen_ai.input.messages", text);
    }
}

/// The attempt in force went to another model than the turn's own, for `route`.
pub(super) fn routed(route: &str) {
    Span::current().record("bridle.route", route);
}

/// The attempt in force was answered: the answering model, tokens, verdict.
pub(super) fn answered(completion: &Completion, checked: &Checked) {
    let span = Span::current();
    if span.is_disabled() {
        return;
    }
    if !completion.model.is_empty() {
        span.record("gen_ai.response.model", completion.model.as_str());
    }
    if let Some(usage) = completion.usage {
        span.record("gen_ai.usage.input_tokens", int(usage.input_tokens));
        span.record("gen_ai.usage.output_tokens", int(usage.output_tokens));
    }
    let outcome = if checked.is_valid() {
        "valid"
    } else {
        "invalid"
    };
    span.record("bridle.attempt.outcome", outcome);
    span.record("bridle.repairs", count(checked.repairs.len()));
    span.record("bridle.violations", count(checked.violations.len()));
    if capture_content() {
        span.record("gen_ai.output.messages", completion.transcript());
    }
}

/// The attempt in force failed at the provider.
pub(super) fn failed(error: &ProviderError) {
    let span = Span::current();
    span.record("bridle.attempt.outcome", "provider_error");
    span.record("error.type", error.kind());
    span.record("otel.status_code", "ERROR");
}

/// The attempt in force was stopped early (`aborted`, with its proven violations) or by the
/// client going away (`cancelled`).
pub(super) fn interrupted(outcome: &'static str, violations: &[Violation]) {
    let span = Span::current();
    span.record("bridle.attempt.outcome", outcome);
    span.record("bridle.violations", count(violations.len()));
}

/// `n` as the signed integer OpenTelemetry attributes hold (the bridge records unsigned ones
/// as text).
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

    /// The span of this write to `store` (disabled when telemetry is off), a child of the
    /// span in force.
    pub(crate) fn span(self, store: &dyn Store) -> Span {
        tracing::info_span!(
            target: SPAN_TARGET,
            "bridle.store.write",
            db.system.name = db_system(store.backend()),
            db.operation.name = self.operation,
            db.collection.name = self.collection,
            bridle.record = self.record,
            otel.status_code = Empty,
        )
    }

    /// Runs `write` (this write, to `store`) in its span; a failure marks the span.
    pub(crate) async fn traced<T>(
        self,
        store: &dyn Store,
        write: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let span = self.span(store);
        if span.is_disabled() {
            return write.await;
        }
        let result = write.instrument(span.clone()).await;
        failed_write(&span, &result);
        result
    }
}

/// Marks `span` failed when `result` is an error.
pub(crate) fn failed_write<T>(span: &Span, result: &Result<T, StoreError>) {
    if result.is_err() {
        span.record("otel.status_code", "ERROR");
    }
}

/// The store's backend as the database conventions name it (`db.system.name`).
fn db_system(backend: &str) -> &'static str {
    match backend {
        "sqlite" => "sqlite",
        "postgres" => "postgresql",
        _ => "other_sql",
    }
}
