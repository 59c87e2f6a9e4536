//! The OpenAI Chat Completions front end: [`parse`] reads a `POST /v1/chat/completions` body
//! into a [`Call`], [`render`] writes a [`MockReply`] as a `chat.completion` object or as
//! `chat.completion.chunk` SSE events ending in `data: [DONE]`, and [`error`] writes
//! OpenAI-shaped error bodies. Function `tools` are read (none with `tool_choice: "none"`), and
//! calls are written as `message.tool_calls` — streamed as `delta.tool_calls` pieces. Streamed
//! content comes in deltas of the configured size, or in the pieces a script set.

use crate::request::{
    MockCall, MockMessage, MockReply, MockRequest, MockTool, ReplyFormat, Role, StopReason, Usage,
};
use crate::server::{Call, Rendered, unix_time};
use crate::stream::{deltas, pieces};
use serde_json::{Value, json};

/// Reads a Chat Completions request; the error is a message for a 400.
pub(crate) fn parse(body: &Value) -> Result<Call, String> {
    let body = body
        .as_object()
        .ok_or("the request body must be a JSON object")?;
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .ok_or("you must provide a model parameter (a string)")?;
    let raw_messages = body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("'messages' is a required property and must be an array")?;
    if raw_messages.is_empty() {
        return Err("'messages' must contain at least one message".into());
    }
    let mut messages = Vec::with_capacity(raw_messages.len());
    for (i, message) in raw_messages.iter().enumerate() {
        let role = match message.get("role").and_then(Value::as_str) {
            Some("system" | "developer") => Role::System,
            Some("user" | "tool" | "function") => Role::User,
            Some("assistant") => Role::Assistant,
            Some(other) => return Err(format!("messages[{i}].role {other:?} is not supported")),
            None => return Err(format!("messages[{i}].role is required")),
        };
        let content = match message.get("content") {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            None | Some(Value::Null) if role == Role::Assistant => String::new(),
            _ => {
                return Err(format!(
                    "messages[{i}].content must be a string or an array of parts"
                ));
            }
        };
        messages.push(MockMessage { role, content });
    }
    let format = match body.get("response_format") {
        None | Some(Value::Null) => ReplyFormat::Free,
        Some(format) => match format.get("type").and_then(Value::as_str) {
            Some("text") => ReplyFormat::Free,
            Some("json_object") => ReplyFormat::JsonObject,
            Some("json_schema") => {
                let schema = format
                    .pointer("/json_schema/schema")
                    .filter(|s| s.is_object() || s.is_boolean())
                    .ok_or(
                        "response_format.json_schema.schema is required (a JSON Schema object)",
                    )?;
                ReplyFormat::JsonSchema {
                    schema: schema.clone(),
                }
            }
            _ => {
                return Err(
                    "response_format.type must be one of text, json_object, json_schema".into(),
                );
            }
        },
    };
    let flag = |v: Option<&Value>, name: &str| match v {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(format!("'{name}' must be a boolean")),
    };
    let stream = flag(body.get("stream"), "stream")?;
    let include_usage = flag(
        body.get("stream_options")
            .and_then(|o| o.get("include_usage")),
        "stream_options.include_usage",
    )?;
    Ok(Call {
        request: MockRequest {
            model: model.to_owned(),
            messages,
            format,
            stream,
            tools: tools(body.get("tools"), body.get("tool_choice"))?,
        },
        include_usage,
    })
}

/// The function tools offered; none when `tool_choice` is `"none"`.
fn tools(tools: Option<&Value>, choice: Option<&Value>) -> Result<Vec<MockTool>, String> {
    let tools = match tools {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(tools)) => tools,
        Some(_) => return Err("'tools' must be an array".into()),
    };
    if choice.and_then(Value::as_str) == Some("none") {
        return Ok(Vec::new());
    }
    tools
        .iter()
        .enumerate()
        .filter(|(_, t)| t.get("type").and_then(Value::as_str) == Some("function"))
        .map(|(i, t)| {
            let name = t
                .pointer("/function/name")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("tools[{i}].function.name is required"))?;
            Ok(MockTool {
                name: name.to_owned(),
                parameters: t
                    .pointer("/function/parameters")
                    .cloned()
                    .unwrap_or(Value::Null),
            })
        })
        .collect()
}

/// A call as a message's `tool_calls` entry (`arguments` as JSON text).
fn tool_call(id: &str, index: usize, call: &MockCall) -> Value {
    json!({
        "id": format!("call_mock_{id}_{index}"),
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments.to_string()},
    })
}

/// An OpenAI error body.
pub(crate) fn error(status: u16, message: &str) -> Value {
    let (kind, code) = match status {
        400 => ("invalid_request_error", Value::Null),
        401 => ("invalid_request_error", json!("invalid_api_key")),
        404 => ("invalid_request_error", json!("unknown_url")),
        429 => ("requests", json!("rate_limit_exceeded")),
        _ => ("server_error", Value::Null),
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

fn usage_json(usage: &Usage) -> Value {
    json!({
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
    })
}

/// The reply as a completion object or as SSE events, content and tool-call arguments
/// streamed `piece_chars` characters a delta (or in the reply's scripted pieces).
pub(crate) fn render(reply: &MockReply, call: &Call, piece_chars: usize) -> Rendered {
    let model = call.request.model.as_str();
    let id = format!("chatcmpl-mock-{}", reply.info().id);
    let no_calls = Vec::new();
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
                "tool_calls"
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
            (text, &no_calls, usage, "stop", false, pieces.as_deref())
        }
        MockReply::BrokenStream { content, usage, .. } => {
            (content.clone(), &no_calls, usage, "stop", true, None)
        }
    };
    let reply_id = reply.info().id.as_str();
    let created = unix_time();
    if !call.request.stream {
        let mut message = json!({"role": "assistant", "content": content, "refusal": null});
        if !calls.is_empty() {
            if content.is_empty() {
                message["content"] = Value::Null;
            }
            message["tool_calls"] = calls
                .iter()
                .enumerate()
                .map(|(i, c)| tool_call(reply_id, i, c))
                .collect();
        }
        return Rendered::Json {
            status: 200,
            retry_after: None,
            body: json!({
                "id": id,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [{
                    "index": 0,
                    "message": message,
                    "logprobs": null,
                    "finish_reason": finish,
                }],
                "usage": usage_json(usage),
                "system_fingerprint": "bridle-mock",
            }),
        };
    }
    let chunk = |choices: Value, usage: Option<Value>| {
        let mut event = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": choices,
        });
        if let (Some(usage), Some(object)) = (usage, event.as_object_mut()) {
            object.insert("usage".into(), usage);
        }
        format!("data: {event}\n\n")
    };
    let delta = |delta: Value, finish: Value| {
        let choice =
            json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]);
        chunk(choice, None)
    };
    let mut frames = vec![delta(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    let parts = deltas(&content, scripted, piece_chars);
    let sent = if broken { parts.len() / 2 } else { parts.len() };
    for piece in parts.iter().take(sent) {
        frames.push(delta(json!({"content": piece}), Value::Null));
    }
    for (index, c) in calls.iter().enumerate() {
        let mut first = tool_call(reply_id, index, c);
        first["index"] = json!(index);
        first["function"]["arguments"] = json!("");
        frames.push(delta(json!({"tool_calls": [first]}), Value::Null));
        let arguments = c.arguments.to_string();
        for piece in pieces(&arguments, piece_chars) {
            frames.push(delta(
                json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                Value::Null,
            ));
        }
    }
    if !broken {
        frames.push(delta(json!({}), json!(finish)));
        if call.include_usage {
            frames.push(chunk(json!([]), Some(usage_json(usage))));
        }
        frames.push("data: [DONE]\n\n".to_owned());
    }
    Rendered::Events { frames, broken }
}

fn finish_reason(stop: StopReason) -> &'static str {
    match stop {
        StopReason::End => "stop",
        StopReason::Length => "length",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_read_and_bad_ones_refused_with_a_reason() {
        let call = parse(&json!({
            "model": "gpt-x",
            "messages": [
                {"role": "developer", "content": [{"type": "text", "text": "be brief"}]},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": null}
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": {"type": "object"}}}
        }))
        .unwrap();
        assert!(call.request.stream && call.include_usage);
        assert_eq!(call.request.messages[0].role, Role::System);
        assert_eq!(call.request.messages[0].content, "be brief");
        assert!(matches!(
            call.request.format,
            ReplyFormat::JsonSchema { .. }
        ));
        let bad = [
            json!([]),
            json!({"messages": []}),
            json!({"model": "m"}),
            json!({"model": "m", "messages": []}),
            json!({"model": "m", "messages": [{"content": "x"}]}),
            json!({"model": "m", "messages": [{"role": "wizard", "content": "x"}]}),
            json!({"model": "m", "messages": [{"role": "user", "content": 5}]}),
            json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": "yes"}),
            json!({"model": "m", "messages": [{"role": "user", "content": "x"}],
                   "response_format": {"type": "json_schema"}}),
            json!({"model": "m", "messages": [{"role": "user", "content": "x"}],
                   "response_format": {"type": "yaml"}}),
        ];
        for body in bad {
            assert!(parse(&body).is_err(), "{body}");
        }
    }

    fn call_reply() -> MockReply {
        MockReply::Text {
            content: "Let me ask.".into(),
            calls: vec![MockCall {
                name: "present_question".into(),
                arguments: json!({"question": "Which?", "options": ["a", "b"]}),
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
        }
    }

    fn call_of(stream: bool) -> Call {
        parse(&json!({
            "model": "m",
            "messages": [{"role": "user", "content": "hi"}],
            "stream": stream,
            "tools": [{"type": "function", "function": {"name": "present_question", "parameters": {"type": "object"}}}]
        }))
        .unwrap()
    }

    #[test]
    fn tools_are_read_and_calls_written_whole_and_streamed() {
        let call = call_of(false);
        assert_eq!(call.request.tools[0].name, "present_question");
        let none = parse(&json!({
            "model": "m", "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "none"
        }))
        .unwrap();
        assert!(none.request.tools.is_empty());
        assert!(
            parse(
                &json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": {}})
            )
            .is_err()
        );

        let Rendered::Json { body, .. } = render(&call_reply(), &call, 6) else {
            panic!("not JSON")
        };
        let choice = &body["choices"][0];
        assert_eq!(choice["finish_reason"], "tool_calls");
        assert_eq!(choice["message"]["content"], "Let me ask.");
        let function = &choice["message"]["tool_calls"][0]["function"];
        assert_eq!(function["name"], "present_question");
        let arguments: Value =
            serde_json::from_str(function["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(arguments["question"], "Which?");

        let Rendered::Events { frames, .. } = render(&call_reply(), &call_of(true), 6) else {
            panic!("not events")
        };
        let (mut name, mut joined) = (String::new(), String::new());
        for frame in &frames {
            let Ok(chunk) =
                serde_json::from_str::<Value>(frame.trim().trim_start_matches("data: "))
            else {
                continue;
            };
            for piece in chunk
                .pointer("/choices/0/delta/tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                assert_eq!(piece["index"], 0);
                name.push_str(
                    piece
                        .pointer("/function/name")
                        .and_then(Value::as_str)
                        .unwrap_or(""),
                );
                joined.push_str(
                    piece
                        .pointer("/function/arguments")
                        .and_then(Value::as_str)
                        .unwrap_or(""),
                );
            }
        }
        assert_eq!(name, "present_question");
        assert_eq!(serde_json::from_str::<Value>(&joined).unwrap(), arguments);
    }

    /// The content deltas and the tool-call argument pieces of streamed frames.
    fn streamed(frames: &[String]) -> (Vec<String>, Vec<String>) {
        let (mut content, mut arguments) = (Vec::new(), Vec::new());
        for frame in frames {
            let Ok(chunk) =
                serde_json::from_str::<Value>(frame.trim().trim_start_matches("data: "))
            else {
                continue;
            };
            let delta = &chunk["choices"][0]["delta"];
            if let Some(text) = delta["content"].as_str().filter(|t| !t.is_empty()) {
                content.push(text.to_owned());
            }
            if let Some(piece) = delta
                .pointer("/tool_calls/0/function/arguments")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
            {
                arguments.push(piece.to_owned());
            }
        }
        (content, arguments)
    }

    #[test]
    fn deltas_follow_the_piece_size_or_the_scripted_pieces() {
        let scripted = |reply: MockReply, pieces: &[&str]| match reply {
            MockReply::Text {
                content,
                calls,
                usage,
                stop,
                fault,
                info,
                ..
            } => MockReply::Text {
                content,
                calls,
                usage,
                stop,
                fault,
                pieces: Some(pieces.iter().map(|p| (*p).to_owned()).collect()),
                info,
            },
            other => other,
        };
        // (reply, piece chars, content deltas, every argument piece at most this long)
        let cases: [(MockReply, usize, &[&str], usize); 4] = [
            (call_reply(), 6, &["Let me", " ask."], 6),
            (
                call_reply(),
                1,
                &["L", "e", "t", " ", "m", "e", " ", "a", "s", "k", "."],
                1,
            ),
            (call_reply(), 100, &["Let me ask."], 100),
            (
                scripted(call_reply(), &["Le", "t me ask", "."]),
                2,
                &["Le", "t me ask", "."],
                2,
            ),
        ];
        for (reply, chars, expected, longest) in cases {
            let Rendered::Events { frames, broken } = render(&reply, &call_of(true), chars) else {
                panic!("not events")
            };
            assert!(!broken);
            let (content, arguments) = streamed(&frames);
            assert_eq!(content, expected, "{chars}");
            assert!(
                arguments.iter().all(|a| a.chars().count() <= longest),
                "{arguments:?}"
            );
            let joined: Value = serde_json::from_str(&arguments.concat()).unwrap();
            assert_eq!(joined["question"], "Which?");
        }
        // Not streamed: the pieces' concatenation is the content.
        let whole = scripted(call_reply(), &["Let me", " ask."]);
        let Rendered::Json { body, .. } = render(&whole, &call_of(false), 6) else {
            panic!("not JSON")
        };
        assert_eq!(body["choices"][0]["message"]["content"], "Let me ask.");
    }
}
