//! The Anthropic Messages front end: [`parse`] reads a `POST /v1/messages` body (top-level
//! `system`, `messages` with text / `tool_use` / `tool_result` blocks, `max_tokens`, `tools`
//! with a forced `tool_choice`, or offered to the model's choice) into a [`Call`], [`render`]
//! writes a [`MockReply`] as a `message` object (calls as `tool_use` blocks after the text) or
//! as the `message_start` … `message_stop` SSE events, and [`error`] writes Anthropic-shaped
//! error bodies.
//!
//! Bodies are read and written as [`bridle_wire::anthropic`] types; the raw body is read
//! only to name why one that does not parse is refused (the same messages as ever).

use crate::request::{
    MockMessage, MockReply, MockRequest, MockTool, ReplyFormat, Role, StopReason,
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
        let content = match &message.content {
            MessageContent::Text(text) => text.clone(),
            MessageContent::Blocks(blocks) => text_of(blocks),
        };
        messages.push(MockMessage { role, content });
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
        _ => ReplyFormat::Free,
    };
    // Tools are offered (to the model's choice) unless one is forced or the choice is none.
    let offered = match (&format, choice) {
        (ReplyFormat::Tool { .. }, _) => false,
        (_, Some(kind)) => *kind != ToolChoiceKind::None,
        (_, None) => true,
    };
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

/// The text of blocks (`text`, `tool_use` input as JSON, `tool_result` content), parts joined
/// by newlines.
fn text_of(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.clone()),
            ContentBlock::ToolUse(call) => Some(call.input.to_string()),
            ContentBlock::ToolResult(result) => match &result.content {
                Some(ToolResultContent::Text(text)) => Some(text.clone()),
                Some(ToolResultContent::Blocks(blocks)) => Some(text_of(blocks)),
                None => None,
            },
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
mod tests {
    use super::*;
    use crate::request::Usage;
    use serde_json::json;

    #[test]
    fn requests_are_read_with_blocks_and_forced_tools() {
        let call = parse(&json!({
            "model": "claude-x",
            "max_tokens": 100,
            "system": [{"type": "text", "text": "rules"}],
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "reply", "input": {"a": 1}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "bad"},
                                             {"type": "text", "text": "Your previous reply did not meet the contract"}]}
            ],
            "tools": [{"name": "reply", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "tool", "name": "reply"}
        }))
        .unwrap();
        let messages = &call.request.messages;
        assert_eq!(
            (messages[0].role, messages[0].content.as_str()),
            (Role::System, "rules")
        );
        assert_eq!(messages[2].content, "{\"a\":1}");
        assert!(messages[3].is_feedback());
        assert!(matches!(&call.request.format, ReplyFormat::Tool { name, .. } if name == "reply"));
        let bad = [
            json!({"model": "m", "messages": [{"role": "user", "content": "x"}]}),
            json!({"model": "m", "max_tokens": 0, "messages": [{"role": "user", "content": "x"}]}),
            json!({"model": "m", "max_tokens": 5, "messages": []}),
            json!({"model": "m", "max_tokens": 5, "messages": [{"role": "system", "content": "x"}]}),
            json!({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": 1}]}),
            json!({"model": "m", "max_tokens": 5, "system": 3, "messages": [{"role": "user", "content": "x"}]}),
            json!({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}],
                   "tool_choice": {"type": "tool", "name": "nope"}}),
            json!({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}),
        ];
        for body in bad {
            assert!(parse(&body).is_err(), "{body}");
        }
    }

    #[test]
    fn offered_tools_are_read_and_calls_written_as_tool_use_blocks() {
        let body = |stream: bool, choice: Value| {
            json!({
                "model": "m", "max_tokens": 10, "stream": stream,
                "messages": [{"role": "user", "content": "hi"}],
                "tools": [{"name": "present_question", "input_schema": {"type": "object"}}],
                "tool_choice": choice
            })
        };
        let call = parse(&body(false, json!({"type": "auto"}))).unwrap();
        assert_eq!(call.request.tools[0].name, "present_question");
        assert_eq!(call.request.format, ReplyFormat::Free);
        let forced = parse(&body(
            false,
            json!({"type": "tool", "name": "present_question"}),
        ))
        .unwrap();
        assert!(forced.request.tools.is_empty());
        assert!(
            parse(&body(false, json!({"type": "none"})))
                .unwrap()
                .request
                .tools
                .is_empty()
        );

        let reply = MockReply::Text {
            content: "Let me ask.".into(),
            calls: vec![crate::request::MockCall {
                name: "present_question".into(),
                arguments: json!({"question": "Which?"}),
            }],
            usage: Usage::default(),
            stop: StopReason::End,
            fault: None,
            pieces: None,
            info: crate::request::ReplyInfo {
                id: "abc".into(),
                attempt: 1,
                delay: std::time::Duration::ZERO,
                target: None,
            },
        };
        let Rendered::Json { body: message, .. } = render(&reply, &call, 6) else {
            panic!("not JSON")
        };
        assert_eq!(message["stop_reason"], "tool_use");
        assert_eq!(message["content"][0]["text"], "Let me ask.");
        assert_eq!(message["content"][1]["type"], "tool_use");
        assert_eq!(message["content"][1]["input"]["question"], "Which?");

        let streamed = parse(&body(true, json!({"type": "auto"}))).unwrap();
        let Rendered::Events { frames, .. } = render(&reply, &streamed, 6) else {
            panic!("not events")
        };
        let (mut text, mut input) = (String::new(), String::new());
        for frame in &frames {
            let data = frame
                .lines()
                .find_map(|l| l.strip_prefix("data: "))
                .unwrap();
            let event: Value = serde_json::from_str(data).unwrap();
            match (
                event["index"].as_u64(),
                event.pointer("/delta/type").and_then(Value::as_str),
            ) {
                (Some(0), Some("text_delta")) => {
                    text.push_str(event["delta"]["text"].as_str().unwrap())
                }
                (Some(1), Some("input_json_delta")) => {
                    input.push_str(event["delta"]["partial_json"].as_str().unwrap());
                }
                (_, Some(other)) => panic!("unexpected delta {other} in {event}"),
                _ => {}
            }
        }
        assert_eq!(text, "Let me ask.");
        assert_eq!(
            serde_json::from_str::<Value>(&input).unwrap(),
            json!({"question": "Which?"})
        );
    }

    #[test]
    fn text_and_tool_input_deltas_follow_the_piece_size_or_the_scripted_pieces() {
        let info = crate::request::ReplyInfo {
            id: "abc".into(),
            attempt: 1,
            delay: std::time::Duration::ZERO,
            target: None,
        };
        let text = |pieces: Option<&[&str]>| MockReply::Text {
            content: "Hello there.".into(),
            calls: Vec::new(),
            usage: Usage::default(),
            stop: StopReason::End,
            fault: None,
            pieces: pieces.map(|p| p.iter().map(|s| (*s).to_owned()).collect()),
            info: info.clone(),
        };
        let tool = |pieces: Option<&[&str]>| MockReply::ToolCall {
            name: "reply".into(),
            input: json!({"a": "bc"}),
            usage: Usage::default(),
            fault: None,
            pieces: pieces.map(|p| p.iter().map(|s| (*s).to_owned()).collect()),
            info: info.clone(),
        };
        // (reply, piece chars, the deltas streamed)
        let cases: [(MockReply, usize, &[&str]); 5] = [
            (text(None), 6, &["Hello ", "there."]),
            (text(None), 5, &["Hello", " ther", "e."]),
            (text(Some(&["H", "ello there."])), 5, &["H", "ello there."]),
            (tool(None), 4, &[r#"{"a""#, r#":"bc"#, r#""}"#]),
            (
                tool(Some(&["{ \"a\"", ": \"bc\" }"])),
                4,
                &["{ \"a\"", ": \"bc\" }"],
            ),
        ];
        let call = parse(&json!({"model": "m", "max_tokens": 5, "stream": true,
                                 "messages": [{"role": "user", "content": "x"}]}))
        .unwrap();
        for (reply, chars, expected) in cases {
            let Rendered::Events { frames, .. } = render(&reply, &call, chars) else {
                panic!("not events")
            };
            let deltas: Vec<String> = frames
                .iter()
                .filter_map(|frame| {
                    let data = frame.lines().find_map(|l| l.strip_prefix("data: "))?;
                    let event: Value = serde_json::from_str(data).ok()?;
                    let delta = event.get("delta")?;
                    delta
                        .get("text")
                        .or_else(|| delta.get("partial_json"))
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                })
                .collect();
            assert_eq!(deltas, expected, "{chars}");
        }
    }
}

#[cfg(test)]
mod wire_tests {
    use super::*;
    use crate::request::{MockCall, ReplyInfo, Usage};
    use serde_json::json;

    fn reply() -> MockReply {
        MockReply::Text {
            content: "Hi.".into(),
            calls: vec![MockCall {
                name: "ask".into(),
                arguments: json!({"q": 1}),
            }],
            usage: Usage {
                prompt_tokens: 7,
                completion_tokens: 3,
            },
            stop: StopReason::End,
            fault: None,
            pieces: None,
            info: ReplyInfo {
                id: "abc".into(),
                attempt: 1,
                delay: std::time::Duration::ZERO,
                target: None,
            },
        }
    }

    #[test]
    fn messages_events_and_errors_are_written_exactly_as_before() {
        let body = |stream: bool| {
            json!({"model": "m", "max_tokens": 5, "stream": stream,
                   "messages": [{"role": "user", "content": "x"}]})
        };
        let message = |content: Value, stop: Value, usage: Value| {
            json!({"id": "msg_mock_abc", "type": "message", "role": "assistant", "model": "m",
                   "content": content, "stop_reason": stop, "stop_sequence": null, "usage": usage})
        };
        let text = json!({"type": "text", "text": "Hi."});
        let tool = |input: Value| json!({"type": "tool_use", "id": "toolu_mock_abc_0", "name": "ask", "input": input});
        let Rendered::Json { body: whole, .. } =
            render(&reply(), &parse(&body(false)).unwrap(), 100)
        else {
            panic!("not JSON")
        };
        assert_eq!(
            whole,
            message(
                json!([text, tool(json!({"q": 1}))]),
                json!("tool_use"),
                json!({"input_tokens": 7, "output_tokens": 3})
            )
        );
        let Rendered::Events { frames, .. } = render(&reply(), &parse(&body(true)).unwrap(), 100)
        else {
            panic!("not events")
        };
        let expected = [
            (
                "message_start",
                json!({"type": "message_start", "message": message(json!([]),
                Value::Null, json!({"input_tokens": 7, "output_tokens": 1}))}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": "Hi."}}),
            ),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 1,
                "content_block": tool(json!({}))}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": "{\"q\":1}"}}),
            ),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 1}),
            ),
            (
                "message_delta",
                json!({"type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": null},
                "usage": {"output_tokens": 3}}),
            ),
            ("message_stop", json!({"type": "message_stop"})),
        ];
        assert_eq!(frames.len(), expected.len());
        for (frame, (event, data)) in frames.iter().zip(expected) {
            assert_eq!(frame, &format!("event: {event}\ndata: {data}\n\n"));
        }
        assert_eq!(
            error(529, "busy"),
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}})
        );
    }

    #[test]
    fn refusals_keep_their_messages() {
        let user = json!([{"role": "user", "content": "x"}]);
        let cases = [
            (json!(1), "the request body must be a JSON object"),
            (
                json!({"max_tokens": 5, "messages": user}),
                "model: field required (a string)",
            ),
            (
                json!({"model": "m", "messages": user}),
                "max_tokens: field required (an integer of at least 1)",
            ),
            (
                json!({"model": "m", "max_tokens": 0, "messages": user}),
                "max_tokens: field required (an integer of at least 1)",
            ),
            (
                json!({"model": "m", "max_tokens": 5}),
                "messages: field required (an array)",
            ),
            (
                json!({"model": "m", "max_tokens": 5, "messages": []}),
                "messages: at least one message is required",
            ),
            (
                json!({"model": "m", "max_tokens": 5, "system": 3, "messages": user}),
                "system: must be a string or an array of text blocks",
            ),
            (
                json!({"model": "m", "max_tokens": 5, "messages": [{"role": "system", "content": "x"}]}),
                "messages.0.role: must be \"user\" or \"assistant\"",
            ),
            (
                json!({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": 1}]}),
                "messages.0.content: must be a string or an array of blocks",
            ),
            (
                json!({"model": "m", "max_tokens": 5, "messages": user, "tool_choice": {"type": "tool"}}),
                "tool_choice.name: field required",
            ),
            (
                json!({"model": "m", "max_tokens": 5, "messages": user,
                       "tool_choice": {"type": "tool", "name": "nope"}}),
                "tool_choice names \"nope\", which is not among tools",
            ),
            (
                json!({"model": "m", "max_tokens": 5, "messages": user, "stream": 1}),
                "stream: must be a boolean",
            ),
        ];
        for (body, message) in cases {
            assert_eq!(parse(&body).err().as_deref(), Some(message), "{body}");
        }
    }
}
