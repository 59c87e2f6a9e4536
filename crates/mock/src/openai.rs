//! The OpenAI Chat Completions front end: [`parse`] reads a `POST /v1/chat/completions` body
//! into a [`Call`], [`render`] writes a [`MockReply`] as a `chat.completion` object or as
//! `chat.completion.chunk` SSE events ending in `data: [DONE]`, and [`error`] writes
//! OpenAI-shaped error bodies. Function `tools` are read (none with `tool_choice: "none"`), a
//! named or `"required"` `tool_choice` forces a call ([`ReplyFormat::Call`]), and `tool`
//! messages and an assistant message's `tool_calls` are read as typed results and calls. Calls
//! are written as `message.tool_calls` — streamed as `delta.tool_calls` pieces. Streamed
//! content comes in deltas of the configured size, or in the pieces a script set.
//!
//! Bodies are read and written as [`bridle_wire::openai`] types; the raw body is read
//! only to name why one that does not parse is refused (the same messages as ever).

use crate::request::{
    CallMade, MockCall, MockMessage, MockReply, MockRequest, MockTool, ReplyFormat, Role,
    StopReason, Usage, quoted,
};
use crate::server::{Call, Rendered, unix_time};
use crate::stream::{deltas, pieces};
use bridle_wire::openai::{
    self as wire, ChatCompletion, ChatCompletionChunk, ChatCompletionRequest, ChatMessage, Choice,
    ChunkChoice, Content, Delta, ErrorBody, ErrorCode, FinishReason, FunctionCall,
    FunctionCallDelta, ResponseFormatKind, ToolCall, ToolCallDelta, ToolChoice, ToolChoiceMode,
    ToolKind,
};
use serde::Deserialize;
use serde_json::Value;

/// Reads a Chat Completions request; the error is a message for a 400.
pub(crate) fn parse(body: &Value) -> Result<Call, String> {
    let request = ChatCompletionRequest::deserialize(body).map_err(|e| refusal(body, &e))?;
    if request.messages.is_empty() {
        return Err("'messages' must contain at least one message".into());
    }
    let mut messages = Vec::with_capacity(request.messages.len());
    for (i, message) in request.messages.iter().enumerate() {
        let role = match &message.role {
            wire::Role::System | wire::Role::Developer => Role::System,
            wire::Role::User => Role::User,
            wire::Role::Tool | wire::Role::Function => Role::Tool,
            wire::Role::Assistant => Role::Assistant,
            wire::Role::Other(other) => {
                return Err(format!("messages[{i}].role {other:?} is not supported"));
            }
        };
        let content = match message.content() {
            Some(Content::Text(text)) => text.clone(),
            // Every part's text, whatever its kind, as the mock always read it.
            Some(Content::Parts(parts)) => parts
                .iter()
                .filter_map(|p| p.text.as_deref())
                .collect::<Vec<_>>()
                .join("\n"),
            None if role == Role::Assistant => String::new(),
            None => {
                return Err(format!(
                    "messages[{i}].content must be a string or an array of parts"
                ));
            }
        };
        let calls = message
            .tool_calls
            .iter()
            .flatten()
            .filter_map(|call| {
                let function = call.function.as_ref()?;
                // Arguments that are not JSON text are kept as the text they are.
                let arguments = serde_json::from_str(&function.arguments)
                    .unwrap_or_else(|_| Value::String(function.arguments.clone()));
                Some(CallMade {
                    id: call.id.clone(),
                    name: function.name.clone(),
                    arguments,
                })
            })
            .collect();
        messages.push(MockMessage {
            role,
            content,
            calls,
            call_id: message.tool_call_id.clone(),
        });
    }
    let tools = tools(&request)?;
    let format = match forced(&request, &tools)? {
        Some(forced) => forced,
        None => format(&request)?,
    };
    Ok(Call {
        request: MockRequest {
            model: request.model.clone(),
            messages,
            format,
            stream: request.stream.unwrap_or(false),
            tools,
        },
        include_usage: request.include_usage(),
    })
}

/// The call a `tool_choice` forces (named, or `"required"`: the first tool), checked against
/// the offered `tools` as OpenAI does; `None` for `"auto"`, `"none"` or no choice.
fn forced(
    request: &ChatCompletionRequest,
    tools: &[MockTool],
) -> Result<Option<ReplyFormat>, String> {
    match &request.tool_choice {
        None | Some(ToolChoice::Mode(ToolChoiceMode::Auto | ToolChoiceMode::None)) => Ok(None),
        Some(ToolChoice::Mode(ToolChoiceMode::Required)) if tools.is_empty() => Err(
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified."
                .into(),
        ),
        Some(ToolChoice::Mode(ToolChoiceMode::Required)) => Ok(Some(ReplyFormat::Call { name: None })),
        Some(ToolChoice::Mode(ToolChoiceMode::Other(other))) => Err(format!(
            "Invalid value for 'tool_choice': {} (expected \"none\", \"auto\", \"required\" or a named function)",
            quoted(other)
        )),
        Some(ToolChoice::Named(named)) => {
            let name = match (&named.kind, &named.function) {
                (ToolKind::Function, Some(function)) => &function.name,
                (ToolKind::Function, None) => {
                    return Err("tool_choice.function.name is required".into());
                }
                _ => {
                    return Err(
                        "tool_choice: the mock forces function tools only ({\"type\": \"function\", ...})"
                            .into(),
                    );
                }
            };
            if !tools.iter().any(|t| t.name == *name) {
                return Err(format!(
                    "Invalid value for 'tool_choice': no function named {} is among 'tools'",
                    quoted(name)
                ));
            }
            Ok(Some(ReplyFormat::Call {
                name: Some(name.clone()),
            }))
        }
    }
}

/// The reply format `response_format` asks for.
fn format(request: &ChatCompletionRequest) -> Result<ReplyFormat, String> {
    Ok(match &request.response_format {
        None => ReplyFormat::Free,
        Some(format) => match &format.kind {
            ResponseFormatKind::Text => ReplyFormat::Free,
            ResponseFormatKind::JsonObject => ReplyFormat::JsonObject,
            ResponseFormatKind::JsonSchema => {
                let schema = format
                    .json_schema
                    .as_ref()
                    .and_then(|f| f.schema.as_ref())
                    .filter(|s| s.is_object() || s.is_boolean())
                    .ok_or(
                        "response_format.json_schema.schema is required (a JSON Schema object)",
                    )?;
                ReplyFormat::JsonSchema {
                    schema: schema.clone(),
                }
            }
            ResponseFormatKind::Other(_) => {
                return Err(
                    "response_format.type must be one of text, json_object, json_schema".into(),
                );
            }
        },
    })
}

/// Why a body the typed request does not read is refused: the first of the checks a client
/// can act on, in the order they were always made (read from the raw body, since it did not
/// parse), else serde's own message.
fn refusal(body: &Value, error: &serde_json::Error) -> String {
    let Some(body) = body.as_object() else {
        return "the request body must be a JSON object".into();
    };
    if !body.get("model").is_some_and(Value::is_string) {
        return "you must provide a model parameter (a string)".into();
    }
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return "'messages' is a required property and must be an array".into();
    };
    if messages.is_empty() {
        return "'messages' must contain at least one message".into();
    }
    for (i, message) in messages.iter().enumerate() {
        match message.get("role").and_then(Value::as_str) {
            None => return format!("messages[{i}].role is required"),
            Some("system" | "developer" | "user" | "tool" | "function" | "assistant") => {}
            Some(other) => return format!("messages[{i}].role {other:?} is not supported"),
        }
        if !matches!(
            message.get("content"),
            None | Some(Value::String(_) | Value::Array(_))
        ) {
            return format!("messages[{i}].content must be a string or an array of parts");
        }
    }
    if let Some(format) = body.get("response_format").filter(|f| !f.is_null()) {
        match format.get("type").and_then(Value::as_str) {
            Some("text" | "json_object") => {}
            Some("json_schema") => {
                let schema = format.pointer("/json_schema/schema");
                if !schema.is_some_and(|s| s.is_object() || s.is_boolean()) {
                    return "response_format.json_schema.schema is required (a JSON Schema object)"
                        .into();
                }
            }
            _ => {
                return "response_format.type must be one of text, json_object, json_schema".into();
            }
        }
    }
    let flag = |v: Option<&Value>| matches!(v, None | Some(Value::Null | Value::Bool(_)));
    if !flag(body.get("stream")) {
        return "'stream' must be a boolean".into();
    }
    if !flag(
        body.get("stream_options")
            .and_then(|o| o.get("include_usage")),
    ) {
        return "'stream_options.include_usage' must be a boolean".into();
    }
    match body.get("tools") {
        None | Some(Value::Null) => {}
        Some(Value::Array(tools)) => {
            let choice = body.get("tool_choice").and_then(Value::as_str);
            for (i, tool) in tools.iter().enumerate() {
                let function = tool.get("type").and_then(Value::as_str) == Some("function");
                let named = tool.pointer("/function/name").is_some_and(Value::is_string);
                if choice != Some("none") && function && !named {
                    return format!("tools[{i}].function.name is required");
                }
            }
        }
        Some(_) => return "'tools' must be an array".into(),
    }
    format!("the request body is not a Chat Completions request: {error}")
}

/// The function tools offered; none when `tool_choice` is `"none"`.
fn tools(request: &ChatCompletionRequest) -> Result<Vec<MockTool>, String> {
    let Some(tools) = &request.tools else {
        return Ok(Vec::new());
    };
    if matches!(
        request.tool_choice,
        Some(ToolChoice::Mode(ToolChoiceMode::None))
    ) {
        return Ok(Vec::new());
    }
    tools
        .iter()
        .enumerate()
        .filter(|(_, t)| t.kind == ToolKind::Function)
        .map(|(i, t)| {
            let function = t
                .function
                .as_ref()
                .ok_or_else(|| format!("tools[{i}].function.name is required"))?;
            Ok(MockTool {
                name: function.name.clone(),
                parameters: function.parameters.clone().unwrap_or(Value::Null),
            })
        })
        .collect()
}

/// The calls `reply` makes, with the ids of their `tool_calls` entries (for the request log).
pub(crate) fn calls_made(reply: &MockReply) -> Vec<CallMade> {
    match reply {
        // Written as content, not as a call (a forced tool's input is Anthropic's form).
        MockReply::ToolCall { .. } => Vec::new(),
        _ => reply.calls(|i| reply.info().call_id(i)),
    }
}

/// A call as a message's `tool_calls` entry (`arguments` as JSON text).
fn tool_call(id: String, call: &MockCall) -> ToolCall {
    ToolCall {
        id,
        kind: ToolKind::Function,
        function: Some(FunctionCall {
            name: call.name.clone(),
            arguments: call.arguments.to_string(),
            extra: wire_extra(),
        }),
        extra: wire_extra(),
    }
}

fn wire_extra() -> bridle_wire::Extra {
    bridle_wire::Extra::new()
}

/// An OpenAI error body.
pub(crate) fn error(status: u16, message: &str) -> Value {
    let (kind, code) = match status {
        400 => ("invalid_request_error", None),
        401 => ("invalid_request_error", Some("invalid_api_key")),
        404 => ("invalid_request_error", Some("unknown_url")),
        429 => ("requests", Some("rate_limit_exceeded")),
        _ => ("server_error", None),
    };
    let code = code.map(|c| ErrorCode::Text(c.to_owned()));
    to_json(&ErrorBody::new(message, kind, None, code))
}

/// A wire value as JSON (infallible for these types: string keys, no non-finite floats).
fn to_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

fn usage_of(usage: &Usage) -> wire::Usage {
    wire::Usage::new(usage.prompt_tokens, usage.completion_tokens)
}

/// The reply as a completion object or as SSE events, content and tool-call arguments
/// streamed `piece_chars` characters a delta (or in the reply's scripted pieces).
pub(crate) fn render(reply: &MockReply, call: &Call, piece_chars: usize) -> Rendered {
    let model = call.request.model.as_str();
    let id = format!("chatcmpl-mock-{}", reply.info().id);
    let no_calls = Vec::new();
    let broken_call;
    let (content, calls, usage, finish, broken, scripted) = match reply {
        MockReply::Http {
            status,
            retry_after,
            message,
            ..
        } => {
            return Rendered::Json {
                status: *status,
                retry_after: *retry_after,
                body: error(*status, message),
            };
        }
        MockReply::Reset { .. } => return Rendered::Reset,
        // Rendered as it would have been; the server spoils the bytes.
        MockReply::Corrupt { reply, .. } => return render(reply, call, piece_chars),
        MockReply::Text {
            content,
            calls,
            usage,
            stop,
            pieces,
            ..
        } => {
            let finish = if calls.is_empty() {
                finish_reason(*stop)
            } else {
                FinishReason::ToolCalls
            };
            (
                content.clone(),
                calls,
                usage,
                finish,
                false,
                pieces.as_deref(),
            )
        }
        MockReply::ToolCall {
            input,
            usage,
            pieces,
            ..
        } => {
            // Scripted pieces carry the input's JSON text as the script wrote it.
            let text = pieces
                .as_ref()
                .map_or_else(|| input.to_string(), |p| p.concat());
            (
                text,
                &no_calls,
                usage,
                FinishReason::Stop,
                false,
                pieces.as_deref(),
            )
        }
        // A forced call's stream breaks off inside its arguments.
        MockReply::BrokenStream {
            tool: Some(name),
            content,
            usage,
            ..
        } => {
            broken_call = vec![MockCall {
                name: name.clone(),
                arguments: serde_json::from_str(content)
                    .unwrap_or_else(|_| Value::String(content.clone())),
            }];
            (
                String::new(),
                &broken_call,
                usage,
                FinishReason::ToolCalls,
                true,
                None,
            )
        }
        MockReply::BrokenStream { content, usage, .. } => (
            content.clone(),
            &no_calls,
            usage,
            FinishReason::Stop,
            true,
            None,
        ),
    };
    let created = unix_time();
    if !call.request.stream {
        let mut message = ChatMessage::new(wire::Role::Assistant, content.clone());
        message.refusal = Some(None);
        if !calls.is_empty() {
            if content.is_empty() {
                message.content = Some(None);
            }
            message.tool_calls = Some(
                calls
                    .iter()
                    .enumerate()
                    .map(|(i, c)| tool_call(reply.info().call_id(i), c))
                    .collect(),
            );
        }
        let completion = ChatCompletion {
            id,
            object: "chat.completion".into(),
            created,
            model: model.to_owned(),
            choices: vec![Choice {
                index: 0,
                message,
                finish_reason: Some(Some(finish)),
                logprobs: Some(None),
                extra: wire_extra(),
            }],
            usage: Some(usage_of(usage)),
            system_fingerprint: Some(Some("bridle-mock".into())),
            service_tier: None,
            extra: wire_extra(),
        };
        return Rendered::Json {
            status: 200,
            retry_after: None,
            body: to_json(&completion),
        };
    }
    let chunk = |choices: Vec<ChunkChoice>, usage: Option<wire::Usage>| {
        let event = ChatCompletionChunk {
            id: id.clone(),
            object: "chat.completion.chunk".into(),
            created,
            model: model.to_owned(),
            choices,
            usage: usage.map(Some),
            system_fingerprint: None,
            service_tier: None,
            extra: wire_extra(),
        };
        // Through `Value`, so that keys are written in the order they always were.
        format!("data: {}\n\n", to_json(&event))
    };
    let delta = |delta: Delta, finish: Option<FinishReason>| {
        let choice = ChunkChoice {
            index: 0,
            delta,
            finish_reason: Some(finish),
            logprobs: Some(None),
            extra: wire_extra(),
        };
        chunk(vec![choice], None)
    };
    let text = |content: &str| Delta {
        content: Some(Some(content.to_owned())),
        ..Delta::default()
    };
    // A reply that only calls tools starts with `content: null`, as OpenAI's does (a client
    // that adds the deltas up ends with `null` content, as when not streamed).
    let first = Delta {
        role: Some(wire::Role::Assistant),
        content: Some((!content.is_empty() || calls.is_empty()).then(String::new)),
        ..Delta::default()
    };
    let mut frames = vec![delta(first, None)];
    let parts = deltas(&content, scripted, piece_chars);
    let sent = if broken { parts.len() / 2 } else { parts.len() };
    for piece in parts.iter().take(sent) {
        frames.push(delta(text(piece), None));
    }
    for (index, c) in calls.iter().enumerate() {
        let call_delta = |id: Option<String>, name: Option<String>, arguments: &str| Delta {
            tool_calls: Some(vec![ToolCallDelta {
                index: u32::try_from(index).unwrap_or(u32::MAX),
                kind: id.as_ref().map(|_| ToolKind::Function),
                id,
                function: Some(FunctionCallDelta {
                    name,
                    arguments: Some(arguments.to_owned()),
                    extra: wire_extra(),
                }),
                extra: wire_extra(),
            }]),
            ..Delta::default()
        };
        let first = call_delta(Some(reply.info().call_id(index)), Some(c.name.clone()), "");
        frames.push(delta(first, None));
        let arguments = c.arguments.to_string();
        let parts = pieces(&arguments, piece_chars);
        let sent = if broken { parts.len() / 2 } else { parts.len() };
        for piece in parts.into_iter().take(sent) {
            frames.push(delta(call_delta(None, None, piece), None));
        }
    }
    if !broken {
        frames.push(delta(Delta::default(), Some(finish)));
        if call.include_usage {
            frames.push(chunk(Vec::new(), Some(usage_of(usage))));
        }
        frames.push("data: [DONE]\n\n".to_owned());
    }
    Rendered::Events { frames, broken }
}

fn finish_reason(stop: StopReason) -> FinishReason {
    match stop {
        StopReason::End => FinishReason::Stop,
        StopReason::Length => FinishReason::Length,
    }
}
#[cfg(test)]
mod tests;
