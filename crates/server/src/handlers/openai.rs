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
use bridle_wire::openai::{
    self, ChatCompletion, ChatCompletionRequest, Choice, FinishReason, Model, ModelList,
    ResponseFormatKind,
};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The header naming a contract.
pub const CONTRACT_HEADER: &str = "x-bridle-contract";

/// A request body: a [`ChatCompletionRequest`] whose `model` may be left out (or `null`), as
/// OpenAI requires it but Bridle's endpoint then uses the default model.
#[derive(Debug)]
pub struct CompletionBody {
    request: ChatCompletionRequest,
    /// Whether the client named a model (else `request.model` is empty).
    model_given: bool,
}

impl<'de> Deserialize<'de> for CompletionBody {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut fields = bridle_wire::Extra::deserialize(deserializer)?;
        let model_given = !matches!(fields.get("model"), None | Some(Value::Null));
        if !model_given {
            fields.insert("model".into(), Value::String(String::new()));
        }
        let request = serde_path_to_error::deserialize(Value::Object(fields))
            .map_err(serde::de::Error::custom)?;
        Ok(Self {
            request,
            model_given,
        })
    }
}

impl CompletionBody {
    /// The model the client named, if any.
    fn model(&self) -> Option<&str> {
        self.model_given.then_some(self.request.model.as_str())
    }

    fn stream(&self) -> bool {
        self.request.stream.unwrap_or(false)
    }
}

fn messages(body: &CompletionBody) -> Result<Vec<ChatMessage>, ApiError> {
    if body.request.messages.is_empty() {
        return Err(ApiError::BadRequest("messages must not be empty".into()));
    }
    body.request
        .messages
        .iter()
        .map(|m| {
            let role = match &m.role {
                openai::Role::System | openai::Role::Developer => Role::System,
                openai::Role::User => Role::User,
                openai::Role::Assistant => Role::Assistant,
                other => {
                    return Err(ApiError::BadRequest(format!(
                        "unsupported message role {:?}",
                        other.as_str()
                    )));
                }
            };
            // OpenAI requires the key (an assistant's may be `null`).
            if m.content.is_none() {
                return Err(ApiError::BadRequest("message content is missing".into()));
            }
            Ok(ChatMessage::new(role, m.text()))
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
    let Some(format) = &body.request.response_format else {
        return Ok(None);
    };
    match &format.kind {
        ResponseFormatKind::JsonSchema => {
            let spec = format.json_schema.as_ref().ok_or_else(|| {
                ApiError::BadRequest("response_format.json_schema is missing".into())
            })?;
            let schema = spec.schema.clone().ok_or_else(|| {
                ApiError::BadRequest("response_format.json_schema.schema is missing".into())
            })?;
            let name = match spec.name.as_deref() {
                None => "response_format",
                Some(name) if valid_schema_name(name) => name,
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
        ResponseFormatKind::JsonObject => Ok(Some(Arc::new(
            Contract::from_schema(&inline_name("json_object"), json!({"type": "object"}))
                .map_err(|e| ApiError::Internal(e.to_string()))?,
        ))),
        ResponseFormatKind::Text => Ok(None),
        ResponseFormatKind::Other(other) => Err(ApiError::BadRequest(format!(
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
    check_lengths(&chat, state.settings.max_message_chars)?;
    let model_name = body.model();
    let upstream = known_model(&state, model_name)?;
    let Some(contract) = contract_for(&state, &headers, &body)? else {
        let mut response = passthrough(&state, model_name, &body, chat, lease).await?;
        add_upstream_header(&mut response, &upstream);
        return Ok(response);
    };
    let context = call_context(&headers, &body, state.settings.max_context_bytes)?;
    let (conversation, outcome) = state
        .engine
        .complete_chat(&caller.user_id, &contract, &chat, model_name, context)
        .await
        .map_err(ApiError::from_enforced)?;
    let model = model_name.map_or_else(
        || state.engine.config().default_model.clone(),
        str::to_owned,
    );
    let content = outcome.value.to_string();
    let mut response = if body.stream() {
        let chunks = chunks(&body, format!("chatcmpl-{}", outcome.turn_id), model);
        openai_stream::validated(&chunks, &content, outcome.usage)
    } else {
        let mut answer = completion(
            format!("chatcmpl-{}", outcome.turn_id),
            model,
            content,
            FinishReason::Stop,
            outcome.usage,
        );
        let bridle = BridleExtension {
            contract: contract.name(),
            conversation_id: &conversation.id,
            turn_id: &outcome.turn_id,
            value: &outcome.value,
            attempts: outcome.attempts,
            repairs: &outcome.repairs,
            fallback: outcome.fallback,
        };
        if let Ok(bridle) = serde_json::to_value(bridle) {
            answer.extra.insert("bridle".into(), bridle);
        }
        Json(answer).into_response()
    };
    add_bridle_headers(&mut response, &outcome, contract.name(), &conversation.id);
    add_upstream_header(&mut response, &upstream);
    Ok(response)
}

/// An enforced call's context: the request's `metadata`, with the JSON object of the
/// `x-bridle-context` header over it (`{"page": "tables_list", "mode": "discovery"}`) — the
/// facts a conversation of the native API has. Values are strings; together at most
/// `max_bytes` of JSON (422 beyond, like a conversation's context).
fn call_context(
    headers: &HeaderMap,
    body: &CompletionBody,
    max_bytes: usize,
) -> Result<Map<String, Value>, ApiError> {
    let mut context: Map<String, Value> = body
        .request
        .metadata
        .iter()
        .flatten()
        .map(|(key, value)| (key.clone(), Value::String(value.clone())))
        .collect();
    if let Some(header) = headers.get("x-bridle-context") {
        let refused = || {
            ApiError::BadRequest(
                "x-bridle-context must be a JSON object whose values are strings".into(),
            )
        };
        let text = header.to_str().map_err(|_| refused())?;
        let Ok(Value::Object(given)) = serde_json::from_str::<Value>(text) else {
            return Err(refused());
        };
        if !given.values().all(Value::is_string) {
            return Err(refused());
        }
        context.extend(given);
    }
    let bytes = serde_json::to_vec(&context).map_or(usize::MAX, |v| v.len());
    if bytes > max_bytes {
        return Err(ApiError::Unprocessable(format!(
            "the context takes {bytes} bytes as JSON; the limit is {max_bytes}"
        )));
    }
    Ok(context)
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

/// Refuses a chat with a message past `max_chars` characters (422).
fn check_lengths(chat: &[ChatMessage], max_chars: usize) -> Result<(), ApiError> {
    let longest = chat
        .iter()
        .map(|m| m.content.chars().count())
        .max()
        .unwrap_or(0);
    if longest > max_chars {
        return Err(ApiError::Unprocessable(format!(
            "a message has {longest} characters; the limit is {max_chars}"
        )));
    }
    Ok(())
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

/// A whole completion: one choice, the assistant's `content`.
fn completion(
    id: String,
    model: String,
    content: String,
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
            message: openai::ChatMessage::new(openai::Role::Assistant, content),
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
        include_usage: body.request.include_usage(),
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
        temperature: body.request.temperature.or(model.settings.temperature),
        max_tokens: body
            .request
            .max_output_tokens()
            .or(model.settings.max_tokens),
        response_format: None,
        tools: Vec::new(),
    };
    if body.stream() {
        let events = model
            .provider
            .stream(&request)
            .await
            .map_err(|e| upstream_error(&e))?;
        let name = body.model().map_or(request.model, str::to_owned);
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
    let finish = completion.finish_reason.as_deref().unwrap_or("stop").into();
    let value = self::completion(
        format!("chatcmpl-{}", created()),
        body.model().map_or(completion.model, str::to_owned),
        completion.content,
        finish,
        completion.usage.unwrap_or_default(),
    );
    let mut response = Json(value).into_response();
    response.headers_mut().insert(
        HeaderName::from_static("x-bridle-contract"),
        HeaderValue::from_static("none"),
    );
    Ok(response)
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
