//! [`passthrough`]: a call without a contract goes to the model as the client wrote it — the
//! chat with its content parts, tool calls and tool results, the client's tools and tool
//! choice, `stop`, `seed`, `n`, `logprobs`, `user`, `metadata` and fields Bridle does not
//! model — with only the model's name changed to the provider's. What the provider cannot
//! honour is a 400 naming the field (never a silent drop). The answer comes back as the
//! provider gave it when it speaks OpenAI's format (every choice, `logprobs`), else built from
//! its reply: text, tool calls (with their ids) and the finish reason in OpenAI's words.

use super::openai::{add_contract_none, assistant_message, chunks, completion as completion_body};
use super::openai_request::{CompletionBody, passthrough_request};
use super::openai_stream;
use crate::AppState;
use crate::error::ApiError;
use axum::Json;
use axum::response::{IntoResponse, Response};
use bridle_engine::providers::{ChatMessage, Completion, Provider};
use bridle_wire::openai::{ChatCompletion, FinishReason};

/// Answers a plain call (see the module docs); `lease` is held until a relayed stream ends.
pub(super) async fn passthrough(
    state: &AppState,
    body: &CompletionBody,
    chat: Vec<ChatMessage>,
    lease: Option<crate::limits::Lease>,
) -> Result<Response, ApiError> {
    let model = state.engine.model(body.model())?;
    let request = passthrough_request(body, model, chat)?;
    model.provider.check(&request)?;
    let name = body.model().map_or_else(
        || state.engine.config().default_model.clone(),
        str::to_owned,
    );
    if body.stream() {
        refuse_in_stream(&request)?;
        let events = model.provider.stream(&request).await?;
        let id = format!("chatcmpl-{}", uuid::Uuid::now_v7());
        let mut response = openai_stream::relay(chunks(body, id, name), events, lease);
        add_contract_none(&mut response);
        return Ok(response);
    }
    let completion = model.provider.complete(&request).await?;
    let answer = answer(model.provider.as_ref(), completion, name);
    let mut response = Json(answer).into_response();
    add_contract_none(&mut response);
    Ok(response)
}

/// What a relayed stream cannot carry: more than one choice, log probabilities (its chunks
/// hold the first choice's text and tool calls).
fn refuse_in_stream(request: &bridle_engine::providers::ChatRequest) -> Result<(), ApiError> {
    let refused = |param: &str| {
        Err(ApiError::UnsupportedParameter {
            message: format!("`{param}` is not supported with stream: true on this endpoint"),
            param: param.to_owned(),
        })
    };
    if request.options.n.is_some_and(|n| n > 1) {
        return refused("n");
    }
    if request.options.logprobs == Some(true) {
        return refused("logprobs");
    }
    Ok(())
}

/// The completion as OpenAI's answer, named `name` (the configured model the client asked
/// for).
fn answer(provider: &dyn Provider, completion: Completion, name: String) -> ChatCompletion {
    if let Some(mut answer) = provider.openai_answer(&completion.raw) {
        answer.model = name;
        return answer;
    }
    let finish = FinishReason::from(finish_of(&completion));
    let text = (!completion.content.is_empty() || completion.tool_calls.is_empty())
        .then_some(completion.content);
    let message = assistant_message(text, &completion.tool_calls);
    completion_body(
        format!("chatcmpl-{}", uuid::Uuid::now_v7()),
        name,
        message,
        finish,
        completion.usage.unwrap_or_default(),
    )
}

/// Why a completion stopped, in OpenAI's words: `tool_calls` whenever it calls tools (Gemini
/// says `STOP` then), else [`openai_finish`].
pub(super) fn finish_of(completion: &Completion) -> &str {
    match openai_finish(completion.finish_reason.as_deref()) {
        "stop" if !completion.tool_calls.is_empty() => "tool_calls",
        other => other,
    }
}

/// A provider's finish reason in OpenAI's words: Anthropic's `end_turn` and `stop_sequence`
/// are `stop`, `max_tokens` is `length`, `tool_use` is `tool_calls`, `refusal` is
/// `content_filter`; Gemini's `STOP`, `MAX_TOKENS` and `SAFETY` likewise. Others as they came
/// (none: `stop`).
fn openai_finish(reason: Option<&str>) -> &str {
    match reason {
        None | Some("end_turn" | "stop_sequence" | "STOP" | "pause_turn") => "stop",
        Some("max_tokens" | "MAX_TOKENS") => "length",
        Some("tool_use") => "tool_calls",
        Some("refusal" | "SAFETY" | "RECITATION" | "PROHIBITED_CONTENT" | "BLOCKLIST" | "SPII") => {
            "content_filter"
        }
        Some(other) => other,
    }
}
