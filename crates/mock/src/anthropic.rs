//! The Anthropic Messages front end: [`parse`] reads a `POST /v1/messages` body (top-level
//! `system`, `messages` with text / `tool_use` / `tool_result` blocks, `max_tokens`, `tools`
//! with a forced `tool_choice`, or offered to the model's choice) into a [`Call`], [`render`]
//! writes a [`MockReply`] as a `message` object (calls as `tool_use` blocks after the text) or
//! as the `message_start` … `message_stop` SSE events, and [`error`] writes Anthropic-shaped
//! error bodies.

use crate::request::{
    MockMessage, MockReply, MockRequest, MockTool, ReplyFormat, Role, StopReason, Usage,
};
use crate::server::{Call, Rendered};
use crate::stream::deltas;
use serde_json::{Value, json};

/// Reads a Messages request; the error is a message for a 400.
pub(crate) fn parse(body: &Value) -> Result<Call, String> {
    let body = body
        .as_object()
        .ok_or("the request body must be a JSON object")?;
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .ok_or("model: field required (a string)")?;
    match body.get("max_tokens").and_then(Value::as_u64) {
        Some(n) if n >= 1 => {}
        _ => return Err("max_tokens: field required (an integer of at least 1)".into()),
    }
    let raw_messages = body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("messages: field required (an array)")?;
    if raw_messages.is_empty() {
        return Err("messages: at least one message is required".into());
    }
    let mut messages = Vec::with_capacity(raw_messages.len() + 1);
    match body.get("system") {
        None | Some(Value::Null) => {}
        Some(system) => messages.push(MockMessage {
            role: Role::System,
            content: text_of(system)
                .ok_or("system: must be a string or an array of text blocks")?,
        }),
    }
    for (i, message) in raw_messages.iter().enumerate() {
        let role = match message.get("role").and_then(Value::as_str) {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            _ => {
                return Err(format!(
                    "messages.{i}.role: must be \"user\" or \"assistant\""
                ));
            }
        };
        let content = message.get("content").and_then(text_of).ok_or_else(|| {
            format!("messages.{i}.content: must be a string or an array of blocks")
        })?;
        messages.push(MockMessage { role, content });
    }
    let format = match body.get("tool_choice") {
        Some(choice) if choice.get("type").and_then(Value::as_str) == Some("tool") => {
            let name = choice
                .get("name")
                .and_then(Value::as_str)
                .ok_or("tool_choice.name: field required")?;
            let schema = body
                .get("tools")
                .and_then(Value::as_array)
                .and_then(|tools| {
                    tools
                        .iter()
                        .find(|t| t.get("name").and_then(Value::as_str) == Some(name))
                })
                .and_then(|tool| tool.get("input_schema"))
                .ok_or_else(|| format!("tool_choice names {name:?}, which is not among tools"))?;
            ReplyFormat::Tool {
                name: name.to_owned(),
                schema: schema.clone(),
            }
        }
        _ => ReplyFormat::Free,
    };
    let stream = match body.get("stream") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("stream: must be a boolean".into()),
    };
    // Tools are offered (to the model's choice) unless one is forced or the choice is none.
    let offered = match (&format, body.get("tool_choice")) {
        (ReplyFormat::Tool { .. }, _) => false,
        (_, Some(choice)) => choice.get("type").and_then(Value::as_str) != Some("none"),
        (_, None) => true,
    };
    let tools = match body.get("tools") {
        Some(Value::Array(tools)) if offered => tools
            .iter()
            .filter_map(|t| {
                Some(MockTool {
                    name: t.get("name").and_then(Value::as_str)?.to_owned(),
                    parameters: t.get("input_schema").cloned().unwrap_or(Value::Null),
                })
            })
            .collect(),
        _ => Vec::new(),
    };
    Ok(Call {
        request: MockRequest {
            model: model.to_owned(),
            messages,
            format,
            stream,
            tools,
        },
        include_usage: true,
    })
}

/// The text of a string or of an array of blocks (`text`, `tool_use` input as JSON,
/// `tool_result` content), parts joined by newlines.
fn text_of(content: &Value) -> Option<String> {
    match content {
        Value::String(text) => Some(text.clone()),
        Value::Array(blocks) => Some(
            blocks
                .iter()
                .filter_map(|block| match block.get("type").and_then(Value::as_str) {
                    Some("text") => block.get("text").and_then(Value::as_str).map(str::to_owned),
                    Some("tool_use") => block.get("input").map(Value::to_string),
                    Some("tool_result") => block.get("content").and_then(text_of),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        _ => None,
    }
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
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

fn frame(event: &str, data: &Value) -> String {
    format!("event: {event}\ndata: {data}\n\n")
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
                blocks.push((text_block(content), content.clone(), pieces.as_deref()));
            }
            for (i, call) in calls.iter().enumerate() {
                let block = tool_block(&format!("{id}_{i}"), &call.name, &call.arguments);
                blocks.push((block, call.arguments.to_string(), None));
            }
            (blocks, usage, "tool_use", false)
        }
        MockReply::Text {
            content,
            usage,
            stop,
            pieces,
            ..
        } => (
            vec![(text_block(content), content.clone(), pieces.as_deref())],
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
                "tool_use",
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
                None => text_block(content),
            };
            (
                vec![(block, content.clone(), None)],
                usage,
                "end_turn",
                true,
            )
        }
    };
    let message = |content: Value, stop: Value, usage: Value| {
        json!({
            "id": format!("msg_mock_{id}"),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": null,
            "usage": usage,
        })
    };
    if !call.request.stream {
        return Rendered::Json {
            status: 200,
            retry_after: None,
            body: message(
                blocks.iter().map(|(block, ..)| block.clone()).collect(),
                json!(stop),
                usage_json(usage),
            ),
        };
    }
    let start_usage = json!({"input_tokens": usage.prompt_tokens, "output_tokens": 1});
    let mut frames = vec![frame(
        "message_start",
        &json!({"type": "message_start", "message": message(json!([]), Value::Null, start_usage)}),
    )];
    for (index, (block, streamed, scripted)) in blocks.iter().enumerate() {
        let is_tool = block.get("type") == Some(&json!("tool_use"));
        let start_block = if is_tool {
            let mut empty = block.clone();
            if let Some(object) = empty.as_object_mut() {
                object.insert("input".into(), json!({}));
            }
            empty
        } else {
            text_block("")
        };
        frames.push(frame(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": start_block}),
        ));
        let parts = deltas(streamed, *scripted, piece_chars);
        let sent = if broken { parts.len() / 2 } else { parts.len() };
        for piece in parts.iter().take(sent) {
            let delta = if is_tool {
                json!({"type": "input_json_delta", "partial_json": piece})
            } else {
                json!({"type": "text_delta", "text": piece})
            };
            frames.push(frame(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        if broken {
            break;
        }
        frames.push(frame(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
    }
    if !broken {
        frames.push(frame(
            "message_delta",
            &json!({"type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": null},
                    "usage": {"output_tokens": usage.completion_tokens}}),
        ));
        frames.push(frame("message_stop", &json!({"type": "message_stop"})));
    }
    Rendered::Events { frames, broken }
}

fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

fn tool_block(id: &str, name: &str, input: &Value) -> Value {
    json!({"type": "tool_use", "id": format!("toolu_mock_{id}"), "name": name, "input": input})
}

fn usage_json(usage: &Usage) -> Value {
    json!({"input_tokens": usage.prompt_tokens, "output_tokens": usage.completion_tokens})
}

fn stop_reason(stop: StopReason) -> &'static str {
    match stop {
        StopReason::End => "end_turn",
        StopReason::Length => "max_tokens",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
