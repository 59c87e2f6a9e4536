//! The OpenAI-compatible endpoint: `POST /v1/chat/completions` and `GET /v1/models`.
//!
//! A request names its contract with the header `x-bridle-contract: NAME`, or brings a
//! `response_format: {"type": "json_schema", …}` (its schema becomes the contract), or asks for
//! `{"type": "json_object"}` ("a valid JSON object"); Bridle then enforces it (repair + retry)
//! and the standard response body carries valid JSON content, with attempts and repairs in
//! `x-bridle-*` headers. A request with none of these passes through to the model unchanged.
//! `stream: true` is answered as `chat.completion.chunk` events (`openai_stream.rs`): the
//! validated value once the turn is done, or — for a plain request — the model's stream as it
//! comes.

use super::bodies::BridleExtension;
use super::openai_passthrough::passthrough;
pub use super::openai_request::CompletionBody;
use super::openai_request::{call_context, check_lengths, contract_for, messages};
use super::openai_stream;
use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::extract::ApiJson;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};
use bridle_core::ToolCall;
use bridle_engine::providers::CallOptions;
use bridle_engine::{ChatCall, Passthrough, TurnOutcome};
use bridle_wire::openai::{self, ChatCompletion, Choice, FinishReason, Model, ModelList};

pub async fn completions(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    ApiJson(body): ApiJson<CompletionBody>,
) -> Result<Response, ApiError> {
    state.admit(&caller.user_id).await?;
    // Every call is a conversation of its own (a new one is recorded for an enforced call),
    // so it holds one of the user's concurrent-conversation slots while it runs — until its
    // relayed stream ends, for a streamed pass-through.
    let lease = state
        .hold(&caller.user_id, &format!("openai-{}", uuid::Uuid::now_v7()))
        .await?;
    let chat = messages(&body)?;
    check_lengths(&chat, state.settings.max_message_chars)?;
    let model_name = body.model();
    let upstream = known_model(&state, model_name)?;
    let Some(contract) = contract_for(&state, &headers, &body)? else {
        let mut response = passthrough(&state, &body, chat, lease).await?;
        add_upstream_header(&mut response, &upstream);
        return Ok(response);
    };
    let context = call_context(&headers, &body, state.settings.max_context_bytes)?;
    let passthrough = Passthrough {
        tools: body.tools()?,
        tool_choice: body.request.tool_choice.clone(),
        options: CallOptions::of(&body.request),
    };
    let ids = crate::request_id::current();
    let call = ChatCall {
        user_id: &caller.user_id,
        contract: &contract,
        messages: &chat,
        model: model_name,
        context: &context,
        passthrough: &passthrough,
        ids: ids.as_ref(),
    };
    let (conversation, outcome) = state
        .engine
        .complete_chat(call)
        .await
        .map_err(ApiError::from_enforced)?;
    // The configured model that answered (after an escalation or a failover, not the one
    // asked for), and its provider's own name for it.
    let model = outcome.model.clone();
    let upstream = known_model(&state, Some(&model)).unwrap_or(upstream);
    let content = (outcome.tool_calls.is_empty()).then(|| outcome.value.to_string());
    let bridle = serde_json::to_value(BridleExtension {
        contract: contract.name(),
        conversation_id: &conversation.id,
        turn_id: &outcome.turn_id,
        value: &outcome.value,
        attempts: outcome.attempts,
        repairs: &outcome.repairs,
        fallback: outcome.fallback,
    })
    .ok();
    let mut response = if body.stream() {
        let chunks = chunks(&body, format!("chatcmpl-{}", outcome.turn_id), model);
        let reply = match &content {
            Some(text) => openai_stream::Reply::Text(text),
            None => openai_stream::Reply::ToolCalls(&outcome.tool_calls),
        };
        openai_stream::validated(&chunks, reply, outcome.usage, bridle)
    } else {
        let finish = if content.is_some() {
            FinishReason::Stop
        } else {
            FinishReason::ToolCalls
        };
        let message = assistant_message(content, &outcome.tool_calls);
        let mut answer = completion(
            format!("chatcmpl-{}", outcome.turn_id),
            model,
            message,
            finish,
            outcome.usage,
        );
        if let Some(bridle) = bridle {
            answer.extra.insert("bridle".into(), bridle);
        }
        Json(answer).into_response()
    };
    add_bridle_headers(&mut response, &outcome, contract.name(), &conversation.id);
    add_upstream_header(&mut response, &upstream);
    Ok(response)
}

/// The upstream model's name for the configured model `name` (the default model when the
/// request names none); 404 `model_not_found` for a name that is not configured, as OpenAI
/// answers — never a silent fallback to another model.
fn known_model(state: &AppState, name: Option<&str>) -> Result<String, ApiError> {
    match state.engine.model(name) {
        Ok(model) => Ok(model.settings.model.clone()),
        Err(_) => {
            let name: String = name.unwrap_or_default().chars().take(100).collect();
            Err(ApiError::ModelNotFound(format!(
                "the model {name:?} does not exist; GET /v1/models lists the models this gateway serves"
            )))
        }
    }
}

/// `x-bridle-upstream-model`: the provider's own name for the model that answered (the
/// completion's `model` is the configured name the client asked for).
fn add_upstream_header(response: &mut Response, upstream: &str) {
    if let Ok(value) = HeaderValue::from_str(upstream) {
        response
            .headers_mut()
            .insert(HeaderName::from_static("x-bridle-upstream-model"), value);
    }
}

/// What Bridle did with an enforced call, in `x-bridle-…` headers: attempts, repairs made,
/// whether the answer is the contract's fallback, the contract and the recorded conversation.
fn add_bridle_headers(
    response: &mut Response,
    outcome: &TurnOutcome,
    contract: &str,
    conversation: &str,
) {
    let repairs: Vec<&str> = outcome.repairs.iter().map(|r| r.kind.as_str()).collect();
    let extra = [
        ("x-bridle-attempts", outcome.attempts.to_string()),
        ("x-bridle-repairs", repairs.join(",")),
        ("x-bridle-fallback", outcome.fallback.to_string()),
        ("x-bridle-contract", contract.to_owned()),
        ("x-bridle-conversation", conversation.to_owned()),
    ];
    for (name, value) in extra {
        if let Ok(value) = HeaderValue::from_str(&value) {
            response
                .headers_mut()
                .insert(HeaderName::from_static(name), value);
        }
    }
}

/// The assistant's message: its text (`content`), or — with `None` — `content: null` beside
/// the tool `calls` (with their ids).
pub(super) fn assistant_message(
    content: Option<String>,
    calls: &[ToolCall],
) -> openai::ChatMessage {
    let mut message =
        openai::ChatMessage::new(openai::Role::Assistant, content.unwrap_or_default());
    message.refusal = Some(None);
    if !calls.is_empty() {
        if message.text().is_empty() {
            message.content = Some(None);
        }
        message.tool_calls = Some(calls.iter().map(wire_call).collect());
    }
    message
}

/// A tool call as Chat Completions writes it.
pub(super) fn wire_call(call: &ToolCall) -> openai::ToolCall {
    openai::ToolCall {
        id: call.id.clone(),
        kind: openai::ToolKind::Function,
        function: Some(openai::FunctionCall {
            name: call.name.clone(),
            arguments: call.arguments_text(),
            extra: bridle_wire::Extra::new(),
        }),
        extra: bridle_wire::Extra::new(),
    }
}

/// A whole completion: one choice, the assistant's `message`.
pub(super) fn completion(
    id: String,
    model: String,
    message: openai::ChatMessage,
    finish: FinishReason,
    usage: bridle_engine::providers::Usage,
) -> ChatCompletion {
    ChatCompletion {
        id,
        object: "chat.completion".into(),
        created: created(),
        model,
        choices: vec![Choice {
            index: 0,
            message,
            finish_reason: Some(Some(finish)),
            logprobs: Some(None),
            extra: bridle_wire::Extra::new(),
        }],
        usage: Some(wire_usage(usage)),
        system_fingerprint: None,
        service_tier: None,
        extra: bridle_wire::Extra::new(),
    }
}

/// The engine's token counts as OpenAI's `usage`.
pub(super) fn wire_usage(usage: bridle_engine::providers::Usage) -> openai::Usage {
    openai::Usage::new(usage.input_tokens, usage.output_tokens)
}

pub(super) fn created() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// How the chunks of a streamed answer to `body` are written.
pub(super) fn chunks(body: &CompletionBody, id: String, model: String) -> openai_stream::Chunks {
    openai_stream::Chunks {
        id,
        model,
        created: created(),
        include_usage: body.request.include_usage(),
    }
}

/// `x-bridle-contract: none`: the call was passed through without a contract.
pub(super) fn add_contract_none(response: &mut Response) {
    response.headers_mut().insert(
        HeaderName::from_static("x-bridle-contract"),
        HeaderValue::from_static("none"),
    );
}

pub async fn models(State(state): State<AppState>, _caller: Caller) -> Json<ModelList> {
    let data = state
        .engine
        .config()
        .models
        .keys()
        .map(|name| Model {
            id: name.clone(),
            object: "model".into(),
            created: 0,
            owned_by: "bridle".into(),
            extra: bridle_wire::Extra::new(),
        })
        .collect();
    Json(ModelList {
        object: "list".into(),
        data,
        extra: bridle_wire::Extra::new(),
    })
}
