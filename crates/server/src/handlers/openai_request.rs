//! [`CompletionBody`]: a `POST /v1/chat/completions` body, and what the endpoint reads from
//! it — the chat as provider-neutral [`ChatMessage`]s (roles, text, content parts, an
//! assistant's tool calls, a tool's result), the pass-through [`ChatRequest`] with the
//! caller's tools, tool choice and options, the contract the call asks for (header,
//! `response_format`), and an enforced call's context (`metadata`, `x-bridle-context`).

use crate::AppState;
use crate::error::ApiError;
use axum::http::HeaderMap;
use bridle_core::{Contract, ToolCall};
use bridle_engine::providers::{CallOptions, ChatMessage, ChatRequest, Role};
use bridle_engine::turn_context::APP_STATE_KEY;
use bridle_wire::openai::{self, ChatCompletionRequest, Content, ResponseFormatKind};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The header naming a contract.
pub const CONTRACT_HEADER: &str = "x-bridle-contract";

/// A request body: a [`ChatCompletionRequest`] whose `model` may be left out (or `null`), as
/// OpenAI requires it but Bridle's endpoint then uses the default model.
#[derive(Debug)]
pub struct CompletionBody {
    pub(super) request: ChatCompletionRequest,
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
    pub(super) fn model(&self) -> Option<&str> {
        self.model_given.then_some(self.request.model.as_str())
    }

    pub(super) fn stream(&self) -> bool {
        self.request.stream.unwrap_or(false)
    }

    /// The client's function tools as the provider-neutral request carries them.
    pub(super) fn tools(&self) -> Result<Vec<Value>, ApiError> {
        self.request
            .tools
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, tool)| {
                if tool.kind != openai::ToolKind::Function || tool.function.is_none() {
                    return Err(ApiError::UnsupportedParameter {
                        message: "only function tools are supported".into(),
                        param: format!("tools[{i}]"),
                    });
                }
                serde_json::to_value(tool).map_err(|e| ApiError::Internal(e.to_string()))
            })
            .collect()
    }
}

/// The chat of a request, provider-neutral. Refused (400): no messages, a legacy `function`
/// message or an unknown role, a missing `content` (but for an assistant's tool calls), a
/// `tool` message without its `tool_call_id`.
pub(super) fn messages(body: &CompletionBody) -> Result<Vec<ChatMessage>, ApiError> {
    if body.request.messages.is_empty() {
        return Err(ApiError::BadRequest("messages must not be empty".into()));
    }
    body.request
        .messages
        .iter()
        .enumerate()
        .map(|(i, m)| message(i, m))
        .collect()
}

fn message(i: usize, m: &openai::ChatMessage) -> Result<ChatMessage, ApiError> {
    let role = match &m.role {
        openai::Role::System => Role::System,
        openai::Role::Developer => Role::Developer,
        openai::Role::User => Role::User,
        openai::Role::Assistant => Role::Assistant,
        openai::Role::Tool => Role::Tool,
        other => {
            return Err(ApiError::BadRequest(format!(
                "messages[{i}]: unsupported message role {:?}",
                cut(other.as_str())
            )));
        }
    };
    let calls = m.tool_calls.as_deref().unwrap_or_default();
    // OpenAI requires the key; an assistant's may be `null` (or absent) next to tool calls.
    if m.content.is_none() && (role != Role::Assistant || calls.is_empty()) {
        return Err(ApiError::BadRequest(format!(
            "messages[{i}]: content is missing"
        )));
    }
    if role == Role::Tool && m.tool_call_id.as_deref().is_none_or(str::is_empty) {
        return Err(ApiError::BadRequest(format!(
            "messages[{i}]: a tool message needs the tool_call_id it answers"
        )));
    }
    let mut message = ChatMessage::new(role, m.text());
    if let Some(Content::Parts(parts)) = m.content() {
        message.parts.clone_from(parts);
    }
    message.tool_calls = calls
        .iter()
        .enumerate()
        .map(|(j, call)| {
            let function =
                call.function
                    .as_ref()
                    .ok_or_else(|| ApiError::UnsupportedParameter {
                        message: "only function tool calls are supported".into(),
                        param: format!("messages[{i}].tool_calls[{j}]"),
                    })?;
            Ok(ToolCall::from_text(&function.name, &function.arguments).with_id(&call.id))
        })
        .collect::<Result<_, ApiError>>()?;
    message.tool_call_id.clone_from(&m.tool_call_id);
    message.name.clone_from(&m.name);
    message.extra.clone_from(&m.extra);
    // Kept as they came too: an assistant message sent back from an answer has them.
    if let Some(refusal) = &m.refusal {
        let refusal = refusal.clone().map_or(Value::Null, Value::String);
        message.extra.insert("refusal".into(), refusal);
    }
    match &m.function_call {
        Some(Some(_)) => {
            return Err(ApiError::UnsupportedParameter {
                message: "the legacy function_call is not supported; use tool_calls".into(),
                param: format!("messages[{i}].function_call"),
            });
        }
        Some(None) => {
            message.extra.insert("function_call".into(), Value::Null);
        }
        None => {}
    }
    Ok(message)
}

/// The request a plain (not enforced) call sends: the chat, the client's tools, tool choice
/// and options as they came; the model's configured temperature and token cap where the
/// client gives none.
pub(super) fn passthrough_request(
    body: &CompletionBody,
    model: &bridle_engine::Model,
    messages: Vec<ChatMessage>,
) -> Result<ChatRequest, ApiError> {
    Ok(ChatRequest {
        model: model.settings.model.clone(),
        messages,
        temperature: body.request.temperature.or(model.settings.temperature),
        max_tokens: body
            .request
            .max_output_tokens()
            .or(model.settings.max_tokens),
        response_format: None,
        tools: body.tools()?,
        tool_choice: body.request.tool_choice.clone(),
        options: CallOptions::of(&body.request),
    })
}

/// Refuses a chat with a message past `max_chars` characters of text (422).
pub(super) fn check_lengths(chat: &[ChatMessage], max_chars: usize) -> Result<(), ApiError> {
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

/// A name the client chose, as an error message quotes it: at most 40 characters.
fn cut(name: &str) -> String {
    name.chars().take(40).collect()
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
pub(super) fn contract_for(
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
            // A client's schema: its warnings (at most 20, each bounded) go to the debug log,
            // not the operator's warnings.
            for warning in contract.warnings() {
                tracing::debug!(warning = %warning, "response_format schema");
            }
            Ok(Some(Arc::new(contract)))
        }
        ResponseFormatKind::JsonObject => Ok(Some(Arc::new(
            Contract::from_schema(&inline_name("json_object"), json!({"type": "object"}))
                .map_err(|e| ApiError::Internal(e.to_string()))?,
        ))),
        ResponseFormatKind::Text => Ok(None),
        ResponseFormatKind::Other(other) => Err(ApiError::BadRequest(format!(
            "unsupported response_format type {:?}",
            cut(other)
        ))),
    }
}

/// An enforced call's context: the request's `metadata`, with the JSON object of the
/// `x-bridle-context` header over it (`{"page": "tables_list", "mode": "discovery"}`) — the
/// facts a conversation of the native API has. Values are strings, but the application's state
/// (`app_state`, an object); together at most `max_bytes` of JSON (422 beyond, like a
/// conversation's context).
pub(super) fn call_context(
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
                "x-bridle-context must be a JSON object whose values are strings (app_state: an object)"
                    .into(),
            )
        };
        let text = header.to_str().map_err(|_| refused())?;
        let Ok(Value::Object(given)) = serde_json::from_str::<Value>(text) else {
            return Err(refused());
        };
        let fits = |(key, value): (&String, &Value)| {
            value.is_string() || (key == APP_STATE_KEY && value.is_object())
        };
        if !given.iter().all(fits) {
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
