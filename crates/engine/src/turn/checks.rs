//! The verdicts of one attempt — [`check_whole`] (the reply's check, tool calls included),
//! [`cut_at_limit`] (a reply stopped at the output token limit), the streamed verdict and
//! `attempt_failed` events, and [`summary`], the failure in one line.

use crate::events::{EventSink, TurnEvent};
use crate::providers::Completion;
use bridle_core::{Checked, Context, Contract, Rule, StreamCheck, Violation};

/// The calls of the client's own tools in a reply (all of the reply's calls when any is one
/// of them: the client gets the reply's calls whole), or none.
pub(super) fn client_calls(
    passthrough: Option<&crate::Passthrough>,
    completion: &Completion,
) -> Vec<bridle_core::ToolCall> {
    let Some(passthrough) = passthrough else {
        return Vec::new();
    };
    let names: Vec<String> = passthrough.tool_names().collect();
    if completion
        .tool_calls
        .iter()
        .any(|call| names.contains(&call.name))
    {
        completion.tool_calls.clone()
    } else {
        Vec::new()
    }
}

/// The reply's check. Text and tool calls together are the reply, and are stored together
/// ([`Completion::transcript`]): past the contract's `max_bytes` they are too large, as the
/// text alone would be.
pub(super) fn check_whole(
    contract: &Contract,
    completion: &Completion,
    context: &Context,
) -> Checked {
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
pub(super) fn cut_at_limit(
    contract: &Contract,
    completion: &Completion,
    mut checked: Checked,
) -> Checked {
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
pub(super) async fn stream_verdict(
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

pub(super) fn failed_event(
    attempt: u32,
    reason: &'static str,
    violations: &[Violation],
) -> TurnEvent {
    TurnEvent::AttemptFailed {
        attempt,
        reason,
        violations: violations.to_vec(),
        message: summary(violations),
    }
}

/// The first violations in one line, for the turn's error text.
pub(super) fn summary(violations: &[Violation]) -> String {
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
