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

use super::openai_stream;
use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::extract::ApiJson;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};
use bridle_core::Contract;
use bridle_engine::TurnOutcome;
use bridle_engine::providers::{ChatMessage, ChatRequest, Role};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

/// The header naming a contract.
pub const CONTRACT_HEADER: &str = "x-bridle-contract";

#[derive(Debug, Deserialize)]
pub struct CompletionBody {
    model: Option<String>,
    messages: Vec<WireMessage>,
    #[serde(default)]
    stream: bool,
    stream_options: Option<Value>,
    response_format: Option<Value>,
    temperature: Option<f64>,
    max_tokens: Option<u32>,
    max_completion_tokens: Option<u32>,
}

#[derive(Debug, Deserialize)]
pub struct WireMessage {
    role: String,
    content: Value,
}

/// Text of an OpenAI message content: a string, or the text parts of a content array.
fn text_of(content: &Value) -> Result<String, ApiError> {
    match content {
        Value::String(s) => Ok(s.clone()),
        Value::Null => Ok(String::new()),
        Value::Array(parts) => Ok(parts
            .iter()
            .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")),
        _ => Err(ApiError::BadRequest(
            "message content must be a string or an array of parts".into(),
        )),
    }
}

fn messages(body: &CompletionBody) -> Result<Vec<ChatMessage>, ApiError> {
    if body.messages.is_empty() {
        return Err(ApiError::BadRequest("messages must not be empty".into()));
    }
    body.messages
        .iter()
        .map(|m| {
            let role = match m.role.as_str() {
                "system" | "developer" => Role::System,
                "user" => Role::User,
                "assistant" => Role::Assistant,
                other => {
                    return Err(ApiError::BadRequest(format!(
                        "unsupported message role {other:?}"
                    )));
                }
            };
            Ok(ChatMessage::new(role, text_of(&m.content)?))
        })
        .collect()
}

/// Whether `name` is a schema name OpenAI accepts: 1-64 ASCII letters, digits, `_` and `-`.
fn valid_schema_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The name an inline schema's contract is recorded under: `inline:NAME`. A loaded contract's
/// name never holds a `:`, so an inline schema can never pass for one in the record, the
/// metrics (all `inline`), the statistics or the admin filters.
fn inline_name(name: &str) -> String {
    format!("inline:{name}")
}

/// The contract a request asks for, if any.
fn contract_for(
    state: &AppState,
    headers: &HeaderMap,
    body: &CompletionBody,
) -> Result<Option<Arc<Contract>>, ApiError> {
    if let Some(name) = headers.get(CONTRACT_HEADER) {
        let name = name
            .to_str()
            .map_err(|_| ApiError::BadRequest(format!("{CONTRACT_HEADER} must be text")))?;
        return Ok(Some(
            state
                .engine
                .contracts()
                .get(name.trim())
                .map_err(|e| ApiError::BadRequest(e.to_string()))?,
        ));
    }
    let Some(format) = &body.response_format else {
        return Ok(None);
    };
    match format.get("type").and_then(Value::as_str) {
        Some("json_schema") => {
            let spec = format.get("json_schema").ok_or_else(|| {
                ApiError::BadRequest("response_format.json_schema is missing".into())
            })?;
            let schema = spec.get("schema").cloned().ok_or_else(|| {
                ApiError::BadRequest("response_format.json_schema.schema is missing".into())
            })?;
            let name = match spec.get("name") {
                None => "response_format",
                Some(Value::String(name)) if valid_schema_name(name) => name,
                Some(_) => {
                    return Err(ApiError::BadRequest(
                        "response_format.json_schema.name must be 1-64 letters, digits, '_' or '-'"
                            .into(),
                    ));
                }
            };
            let contract = Contract::from_schema(&inline_name(name), schema)
                .map_err(|e| ApiError::BadRequest(format!("response_format schema: {e}")))?;
            Ok(Some(Arc::new(contract)))
        }
        Some("json_object") => Ok(Some(Arc::new(
            Contract::from_schema(&inline_name("json_object"), json!({"type": "object"}))
                .map_err(|e| ApiError::Internal(e.to_string()))?,
        ))),
        Some("text") | None => Ok(None),
        Some(other) => Err(ApiError::BadRequest(format!(
            "unsupported response_format type {other:?}"
        ))),
    }
}

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
    let longest = chat
        .iter()
        .map(|m| m.content.chars().count())
        .max()
        .unwrap_or(0);
    if longest > state.settings.max_message_chars {
        return Err(ApiError::Unprocessable(format!(
            "a message has {longest} characters; the limit is {}",
            state.settings.max_message_chars
        )));
    }
    let model_name = body
        .model
        .as_deref()
        .filter(|m| state.engine.model(Some(m)).is_ok());
    let Some(contract) = contract_for(&state, &headers, &body)? else {
        return passthrough(&state, model_name, &body, chat, lease).await;
    };
    let (conversation, outcome) = state
        .engine
        .complete_chat(&caller.user_id, &contract, &chat, model_name)
        .await?;
    let model = body
        .model
        .clone()
        .unwrap_or_else(|| state.engine.config().default_model.clone());
    let content = outcome.value.to_string();
    let mut response = if body.stream {
        let chunks = chunks(&body, format!("chatcmpl-{}", outcome.turn_id), model);
        openai_stream::validated(&chunks, &content, outcome.usage)
    } else {
        Json(completion_body(
            &outcome.turn_id,
            &model,
            &content,
            &outcome,
        ))
        .into_response()
    };
    let extra = [
        ("x-bridle-attempts", outcome.attempts.to_string()),
        (
            "x-bridle-repairs",
            outcome
                .repairs
                .iter()
                .map(|r| r.kind.as_str())
                .collect::<Vec<_>>()
                .join(","),
        ),
        ("x-bridle-fallback", outcome.fallback.to_string()),
        ("x-bridle-contract", contract.name().to_owned()),
        ("x-bridle-conversation", conversation.id.clone()),
    ];
    for (name, value) in extra {
        if let Ok(value) = HeaderValue::from_str(&value) {
            response
                .headers_mut()
                .insert(HeaderName::from_static(name), value);
        }
    }
    Ok(response)
}

fn completion_body(id: &str, model: &str, content: &str, outcome: &TurnOutcome) -> Value {
    json!({
        "id": format!("chatcmpl-{id}"),
        "object": "chat.completion",
        "created": created(),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop", "logprobs": null}],
        "usage": {
            "prompt_tokens": outcome.usage.input_tokens,
            "completion_tokens": outcome.usage.output_tokens,
            "total_tokens": outcome.usage.input_tokens + outcome.usage.output_tokens
        }
    })
}

fn created() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// How the chunks of a streamed answer to `body` are written.
fn chunks(body: &CompletionBody, id: String, model: String) -> openai_stream::Chunks {
    openai_stream::Chunks {
        id,
        model,
        created: created(),
        include_usage: body
            .stream_options
            .as_ref()
            .and_then(|o| o.get("include_usage"))
            .and_then(Value::as_bool)
            .unwrap_or(false),
    }
}

fn upstream_error(e: &bridle_engine::providers::ProviderError) -> ApiError {
    tracing::warn!(error = %e, "a passed-through call failed");
    let message = crate::error::provider_message(e);
    match e {
        bridle_engine::providers::ProviderError::Status { status, .. } if *status == 429 => {
            ApiError::RateLimited {
                message,
                retry_after: e.retry_after().unwrap_or(std::time::Duration::from_secs(1)),
            }
        }
        _ => ApiError::Upstream(message),
    }
}

async fn passthrough(
    state: &AppState,
    model_name: Option<&str>,
    body: &CompletionBody,
    chat: Vec<ChatMessage>,
    lease: Option<crate::limits::Lease>,
) -> Result<Response, ApiError> {
    let model = state.engine.model(model_name)?;
    let request = ChatRequest {
        model: model.settings.model.clone(),
        messages: chat,
        temperature: body.temperature.or(model.settings.temperature),
        max_tokens: body
            .max_completion_tokens
            .or(body.max_tokens)
            .or(model.settings.max_tokens),
        response_format: None,
        tools: Vec::new(),
    };
    if body.stream {
        let events = model
            .provider
            .stream(&request)
            .await
            .map_err(|e| upstream_error(&e))?;
        let name = body.model.clone().unwrap_or(request.model);
        let id = format!("chatcmpl-{}", uuid::Uuid::now_v7());
        let mut response = openai_stream::relay(chunks(body, id, name), events, lease);
        response.headers_mut().insert(
            HeaderName::from_static("x-bridle-contract"),
            HeaderValue::from_static("none"),
        );
        return Ok(response);
    }
    let completion = model
        .provider
        .complete(&request)
        .await
        .map_err(|e| upstream_error(&e))?;
    let usage = completion.usage.unwrap_or_default();
    let name = body.model.clone().unwrap_or(completion.model.clone());
    let value = json!({
        "id": format!("chatcmpl-{}", created()),
        "object": "chat.completion",
        "created": created(),
        "model": name,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": completion.content}, "finish_reason": completion.finish_reason.unwrap_or_else(|| "stop".into()), "logprobs": null}],
        "usage": {"prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens, "total_tokens": usage.input_tokens + usage.output_tokens}
    });
    let mut response = Json(value).into_response();
    response.headers_mut().insert(
        HeaderName::from_static("x-bridle-contract"),
        HeaderValue::from_static("none"),
    );
    Ok(response)
}

pub async fn models(State(state): State<AppState>, _caller: Caller) -> Json<Value> {
    let data: Vec<Value> = state
        .engine
        .config()
        .models
        .keys()
        .map(|name| json!({"id": name, "object": "model", "created": 0, "owned_by": "bridle"}))
        .collect();
    Json(json!({"object": "list", "data": data}))
}
