//! The Anthropic Messages front end: [`parse`] reads a `POST /v1/messages` body (top-level
//! `system`, `messages` with text / `tool_use` / `tool_result` blocks — the calls of an
//! assistant message and the results in a user message read as typed calls and tool messages —
//! `max_tokens`, `tools` with a forced `tool_choice` (`tool`, or `any`: a call of the first
//! tool), or offered to the model's choice) into a [`Call`], [`render`]
//! writes a [`MockReply`] as a `message` object (calls as `tool_use` blocks after the text) or
//! as the `message_start` … `message_stop` SSE events, and [`error`] writes Anthropic-shaped
//! error bodies.
//!
//! Bodies are read and written as [`bridle_wire::anthropic`] types; the raw body is read
//! only to name why one that does not parse is refused (the same messages as ever).

use crate::request::{
    CallMade, MockMessage, MockReply, MockRequest, MockTool, ReplyFormat, Role, StopReason,
};
use crate::server::{Call, Rendered};
use crate::stream::deltas;
use bridle_wire::Extra;
use bridle_wire::anthropic::{
    self as wire, ContentBlock, ContentBlockDeltaEvent, ContentBlockStartEvent,
    ContentBlockStopEvent, Delta, ErrorBody, InputJsonDelta, MessageContent, MessageDelta,
    MessageDeltaEvent, MessageStartEvent, MessagesRequest, MessagesResponse, StreamEvent, System,
    TextDelta, ToolChoiceKind, ToolResultContent,
};
use serde::Deserialize;
use serde_json::Value;

/// Reads a Messages request; the error is a message for a 400.
pub(crate) fn parse(body: &Value) -> Result<Call, String> {
    let request = MessagesRequest::deserialize(body).map_err(|e| refusal(body, &e))?;
    if request.max_tokens < 1 {
        return Err("max_tokens: field required (an integer of at least 1)".into());
    }
    if request.messages.is_empty() {
        return Err("messages: at least one message is required".into());
    }
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    match &request.system {
        None => {}
        Some(System::Text(text)) => messages.push(MockMessage::new(Role::System, text.clone())),
        Some(System::Blocks(blocks)) => {
            messages.push(MockMessage::new(Role::System, text_of(blocks)));
        }
    }
    for (i, message) in request.messages.iter().enumerate() {
        let role = match &message.role {
            wire::Role::User => Role::User,
            wire::Role::Assistant => Role::Assistant,
            wire::Role::Other(_) => {
                return Err(format!(
                    "messages.{i}.role: must be \"user\" or \"assistant\""
                ));
            }
        };
        match &message.content {
            MessageContent::Text(text) => messages.push(MockMessage::new(role, text.clone())),
            MessageContent::Blocks(blocks) => read_blocks(role, blocks, &mut messages),
        }
    }
    let choice = request.tool_choice.as_ref().map(|c| &c.kind);
    let format = match &request.tool_choice {
        Some(forced) if forced.kind == ToolChoiceKind::Tool => {
            let name = forced
                .name
                .as_deref()
                .ok_or("tool_choice.name: field required")?;
            let schema = request
                .tools
                .iter()
                .flatten()
                .find(|t| t.name == name)
                .and_then(|tool| tool.input_schema.as_ref())
                .ok_or_else(|| format!("tool_choice names {name:?}, which is not among tools"))?;
            ReplyFormat::Tool {
                name: name.to_owned(),
                schema: schema.clone(),
            }
        }
        Some(any) if any.kind == ToolChoiceKind::Any => {
            if request.tools.as_ref().is_none_or(Vec::is_empty) {
                return Err("tool_choice: {\"type\": \"any\"} needs at least one tool".into());
            }
            ReplyFormat::Call { name: None }
        }
        _ => ReplyFormat::Free,
    };
    // Tools are offered unless the choice is none.
    let offered = choice != Some(&ToolChoiceKind::None);
    let tools = match &request.tools {
        Some(tools) if offered => tools
            .iter()
            .map(|t| MockTool {
                name: t.name.clone(),
                parameters: t.input_schema.clone().unwrap_or(Value::Null),
            })
            .collect(),
        _ => Vec::new(),
    };
    Ok(Call {
        request: MockRequest {
            model: request.model.clone(),
            messages,
            format,
            stream: request.stream.unwrap_or(false),
            tools,
        },
        include_usage: true,
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
        return "model: field required (a string)".into();
    }
    if body
        .get("max_tokens")
        .and_then(Value::as_u64)
        .is_none_or(|n| n < 1)
    {
        return "max_tokens: field required (an integer of at least 1)".into();
    }
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return "messages: field required (an array)".into();
    };
    if messages.is_empty() {
        return "messages: at least one message is required".into();
    }
    let text_or_blocks = |v: Option<&Value>| matches!(v, Some(Value::String(_) | Value::Array(_)));
    if !matches!(body.get("system"), None | Some(Value::Null))
        && !text_or_blocks(body.get("system"))
    {
        return "system: must be a string or an array of text blocks".into();
    }
    for (i, message) in messages.iter().enumerate() {
        if !matches!(
            message.get("role").and_then(Value::as_str),
            Some("user" | "assistant")
        ) {
            return format!("messages.{i}.role: must be \"user\" or \"assistant\"");
        }
        if !text_or_blocks(message.get("content")) {
            return format!("messages.{i}.content: must be a string or an array of blocks");
        }
    }
    if !matches!(
        body.get("stream"),
        None | Some(Value::Null | Value::Bool(_))
    ) {
        return "stream: must be a boolean".into();
    }
    format!("the request body is not a Messages request: {error}")
}

/// The messages one message's blocks make: each `tool_result` a tool message (first, as
/// Anthropic puts them), then the message itself — its text blocks joined, and an assistant's
/// `tool_use` blocks as its calls — unless it held nothing but results.
fn read_blocks(role: Role, blocks: &[ContentBlock], messages: &mut Vec<MockMessage>) {
    let mut calls = Vec::new();
    let mut results = 0;
    for block in blocks {
        match block {
            ContentBlock::ToolResult(result) => {
                let content = match &result.content {
                    Some(ToolResultContent::Text(text)) => text.clone(),
                    Some(ToolResultContent::Blocks(blocks)) => text_of(blocks),
                    None => String::new(),
                };
                messages.push(MockMessage::tool_result(
                    result.tool_use_id.clone(),
                    content,
                ));
                results += 1;
            }
            ContentBlock::ToolUse(call) => calls.push(CallMade {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.input.clone(),
            }),
            _ => {}
        }
    }
    let text = text_of(blocks);
    if results < blocks.len() || blocks.is_empty() {
        messages.push(MockMessage {
            calls,
            ..MockMessage::new(role, text)
        });
    }
}

/// The text of the `text` blocks, joined by newlines.
fn text_of(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.clone()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// An Anthropic error body.
pub(crate) fn error(status: u16, message: &str) -> Value {
    let kind = match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        404 => "not_found_error",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    };
    to_json(&ErrorBody::new(kind, message))
}

/// A wire value as JSON (infallible for these types: string keys, no non-finite floats).
fn to_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// An SSE frame of `event`, its data written through `Value` so that keys come in the order
/// they always did.
fn frame(event: &StreamEvent) -> String {
    format!(
        "event: {}\ndata: {}\n\n",
        event.event_name(),
        to_json(event)
    )
}

/// The reply as a `message` object or as SSE events, text and tool input streamed
/// `piece_chars` characters a delta (or in the reply's scripted pieces).
pub(crate) fn render(reply: &MockReply, call: &Call, piece_chars: usize) -> Rendered {
    let model = call.request.model.as_str();
    let id = reply.info().id.clone();
    // (the blocks with their streamed text and its scripted pieces, usage, stop reason, broken)
    let (blocks, usage, stop, broken) = match reply {
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
            pieces,
            ..
        } if !calls.is_empty() => {
            let mut blocks = Vec::with_capacity(calls.len() + 1);
            if !content.is_empty() {
                blocks.push((
                    ContentBlock::text(content.clone()),
                    content.clone(),
                    pieces.as_deref(),
                ));
            }
            for (i, call) in calls.iter().enumerate() {
                let block = tool_block(&format!("{id}_{i}"), &call.name, &call.arguments);
                blocks.push((block, call.arguments.to_string(), None));
            }
            (blocks, usage, wire::StopReason::ToolUse, false)
        }
        MockReply::Text {
            content,
            usage,
            stop,
            pieces,
            ..
        } => (
            vec![(
                ContentBlock::text(content.clone()),
                content.clone(),
                pieces.as_deref(),
            )],
            usage,
            stop_reason(*stop),
            false,
        ),
        MockReply::ToolCall {
            name,
            input,
            usage,
            pieces,
            ..
        } => {
            // Scripted pieces carry the input's JSON text as the script wrote it.
            let streamed = pieces
                .as_ref()
                .map_or_else(|| input.to_string(), |p| p.concat());
            (
                vec![(tool_block(&id, name, input), streamed, pieces.as_deref())],
                usage,
                wire::StopReason::ToolUse,
                false,
            )
        }
        MockReply::BrokenStream {
            content,
            tool,
            usage,
            ..
        } => {
            let block = match tool {
                Some(name) => tool_block(&id, name, &Value::Object(Default::default())),
                None => ContentBlock::text(content.clone()),
            };
            (
                vec![(block, content.clone(), None)],
                usage,
                wire::StopReason::EndTurn,
                true,
            )
        }
    };
    let message = |content: Vec<ContentBlock>,
                   stop: Option<wire::StopReason>,
                   usage: wire::Usage| MessagesResponse {
        id: format!("msg_mock_{id}"),
        kind: "message".into(),
        role: wire::Role::Assistant,
        model: model.to_owned(),
        content,
        stop_reason: Some(stop),
        stop_sequence: Some(None),
        usage: Some(usage),
        extra: Extra::new(),
    };
    let whole_usage = wire::Usage::new(usage.prompt_tokens, usage.completion_tokens);
    if !call.request.stream {
        let blocks = blocks.iter().map(|(block, ..)| block.clone()).collect();
        return Rendered::Json {
            status: 200,
            retry_after: None,
            body: to_json(&message(blocks, Some(stop), whole_usage)),
        };
    }
    let start_usage = wire::Usage::new(usage.prompt_tokens, 1);
    let mut frames = vec![frame(&StreamEvent::MessageStart(MessageStartEvent {
        message: message(Vec::new(), None, start_usage),
        extra: Extra::new(),
    }))];
    for (index, (block, streamed, scripted)) in blocks.iter().enumerate() {
        let index = index as u64;
        let (start_block, is_tool) = match block {
            ContentBlock::ToolUse(tool) => {
                let mut empty = tool.clone();
                empty.input = Value::Object(Default::default());
                (ContentBlock::ToolUse(empty), true)
            }
            _ => (ContentBlock::text(""), false),
        };
        frames.push(frame(&StreamEvent::ContentBlockStart(
            ContentBlockStartEvent {
                index,
                content_block: start_block,
                extra: Extra::new(),
            },
        )));
        let parts = deltas(streamed, *scripted, piece_chars);
        let sent = if broken { parts.len() / 2 } else { parts.len() };
        for piece in parts.iter().take(sent) {
            let delta = if is_tool {
                Delta::InputJsonDelta(InputJsonDelta {
                    partial_json: (*piece).to_owned(),
                    extra: Extra::new(),
                })
            } else {
                Delta::TextDelta(TextDelta {
                    text: (*piece).to_owned(),
                    extra: Extra::new(),
                })
            };
            frames.push(frame(&StreamEvent::ContentBlockDelta(
                ContentBlockDeltaEvent {
                    index,
                    delta,
                    extra: Extra::new(),
                },
            )));
        }
        if broken {
            break;
        }
        frames.push(frame(&StreamEvent::ContentBlockStop(
            ContentBlockStopEvent {
                index,
                extra: Extra::new(),
            },
        )));
    }
    if !broken {
        frames.push(frame(&StreamEvent::MessageDelta(MessageDeltaEvent {
            delta: MessageDelta {
                stop_reason: Some(Some(stop)),
                stop_sequence: Some(None),
                extra: Extra::new(),
            },
            usage: Some(wire::Usage {
                output_tokens: Some(usage.completion_tokens),
                ..wire::Usage::default()
            }),
            extra: Extra::new(),
        })));
        frames.push(frame(&StreamEvent::MessageStop(Extra::new())));
    }
    Rendered::Events { frames, broken }
}

/// The calls `reply` makes, with the ids of their `tool_use` blocks (for the request log).
pub(crate) fn calls_made(reply: &MockReply) -> Vec<CallMade> {
    let id = &reply.info().id;
    match reply {
        MockReply::ToolCall { .. } => reply.calls(|_| format!("toolu_mock_{id}")),
        _ => reply.calls(|i| format!("toolu_mock_{id}_{i}")),
    }
}

fn tool_block(id: &str, name: &str, input: &Value) -> ContentBlock {
    ContentBlock::tool_use(format!("toolu_mock_{id}"), name, input.clone())
}

fn stop_reason(stop: StopReason) -> wire::StopReason {
    match stop {
        StopReason::End => wire::StopReason::EndTurn,
        StopReason::Length => wire::StopReason::MaxTokens,
    }
}
#[cfg(test)]
mod tests;
