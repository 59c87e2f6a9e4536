//! The OpenAI Chat Completions front end: [`parse`] reads a `POST /v1/chat/completions` body
//! into a [`Call`], [`render`] writes a [`MockReply`] as a `chat.completion` object or as
//! `chat.completion.chunk` SSE events ending in `data: [DONE]`, and [`error`] writes
//! OpenAI-shaped error bodies. Function `tools` are read (none with `tool_choice: "none"`), and
//! calls are written as `message.tool_calls` — streamed as `delta.tool_calls` pieces. Streamed
//! content comes in deltas of the configured size, or in the pieces a script set.
//!
//! Bodies are read and written as [`bridle_wire::openai`] types; the raw body is read
//! only to name why one that does not parse is refused (the same messages as ever).

use crate::request::{
    MockCall, MockMessage, MockReply, MockRequest, MockTool, ReplyFormat, Role, StopReason, Usage,
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
            wire::Role::User | wire::Role::Tool | wire::Role::Function => Role::User,
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
        messages.push(MockMessage { role, content });
    }
    let format = match &request.response_format {
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
    };
    Ok(Call {
        request: MockRequest {
            model: request.model.clone(),
            messages,
            format,
            stream: request.stream.unwrap_or(false),
            tools: tools(&request)?,
        },
        include_usage: request.include_usage(),
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

/// The id of a reply's `index`th call.
fn call_id(id: &str, index: usize) -> String {
    format!("call_mock_{id}_{index}")
}

/// A call as a message's `tool_calls` entry (`arguments` as JSON text).
fn tool_call(id: &str, index: usize, call: &MockCall) -> ToolCall {
    ToolCall {
        id: call_id(id, index),
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
        MockReply::BrokenStream { content, usage, .. } => (
            content.clone(),
            &no_calls,
            usage,
            FinishReason::Stop,
            true,
            None,
        ),
    };
    let reply_id = reply.info().id.as_str();
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
                    .map(|(i, c)| tool_call(reply_id, i, c))
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
    let mut frames = vec![delta(
        Delta {
            role: Some(wire::Role::Assistant),
            ..text("")
        },
        None,
    )];
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
        let first = call_delta(Some(call_id(reply_id, index)), Some(c.name.clone()), "");
        frames.push(delta(first, None));
        let arguments = c.arguments.to_string();
        for piece in pieces(&arguments, piece_chars) {
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
mod tests {
    use super::*;
    use serde_json::json;

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

    pub(super) fn call_reply() -> MockReply {
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

    pub(super) fn call_of(stream: bool) -> Call {
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

#[cfg(test)]
mod wire_tests {
    use super::tests::{call_of, call_reply};
    use super::*;
    use serde_json::json;

    /// A frame's JSON with its `created` (the clock) taken out.
    fn data(frame: &str) -> Value {
        let mut value: Value =
            serde_json::from_str(frame.strip_prefix("data: ").unwrap().trim_end()).unwrap();
        // Written with its keys in order, as a `Value` writes them.
        assert_eq!(format!("data: {value}\n\n"), frame);
        value.as_object_mut().unwrap().remove("created");
        value
    }

    #[test]
    fn completions_chunks_and_errors_are_written_exactly_as_before() {
        let arguments = json!({"question": "Which?", "options": ["a", "b"]}).to_string();
        let mut call = call_of(false);
        let Rendered::Json { body, .. } = render(&call_reply(), &call, 100) else {
            panic!("not JSON")
        };
        let mut body = body;
        body.as_object_mut().unwrap().remove("created");
        assert_eq!(
            body,
            json!({"id": "chatcmpl-mock-abc", "object": "chat.completion", "model": "m",
                "choices": [{"index": 0, "logprobs": null, "finish_reason": "tool_calls",
                    "message": {"role": "assistant", "content": "Let me ask.", "refusal": null,
                        "tool_calls": [{"id": "call_mock_abc_0", "type": "function",
                            "function": {"name": "present_question", "arguments": arguments}}]}}],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
                "system_fingerprint": "bridle-mock"})
        );
        call.request.stream = true;
        call.include_usage = true;
        let Rendered::Events { frames, broken } = render(&call_reply(), &call, 100) else {
            panic!("not events")
        };
        assert!(!broken);
        let chunk = |delta: Value, finish: Value| {
            json!({"id": "chatcmpl-mock-abc", "object": "chat.completion.chunk", "model": "m",
                "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]})
        };
        let expected = [
            chunk(json!({"role": "assistant", "content": ""}), Value::Null),
            chunk(json!({"content": "Let me ask."}), Value::Null),
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_mock_abc_0", "type": "function",
                    "function": {"name": "present_question", "arguments": ""}}]}),
                Value::Null,
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}),
                Value::Null,
            ),
            chunk(json!({}), json!("tool_calls")),
            json!({"id": "chatcmpl-mock-abc", "object": "chat.completion.chunk", "model": "m",
                "choices": [],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}),
        ];
        assert_eq!(frames.len(), expected.len() + 1);
        for (frame, expected) in frames.iter().zip(expected) {
            assert_eq!(data(frame), expected);
        }
        assert_eq!(frames.last().unwrap(), "data: [DONE]\n\n");
        assert_eq!(
            error(429, "slow down"),
            json!({"error": {"message": "slow down", "type": "requests", "param": null,
                "code": "rate_limit_exceeded"}})
        );
        assert_eq!(
            error(400, "bad")["error"],
            json!({"message": "bad", "type": "invalid_request_error", "param": null, "code": null})
        );
    }

    #[test]
    fn refusals_keep_their_messages() {
        let user = json!([{"role": "user", "content": "x"}]);
        let cases = [
            (json!([]), "the request body must be a JSON object"),
            (
                json!({"messages": user}),
                "you must provide a model parameter (a string)",
            ),
            (
                json!({"model": "m"}),
                "'messages' is a required property and must be an array",
            ),
            (
                json!({"model": "m", "messages": []}),
                "'messages' must contain at least one message",
            ),
            (
                json!({"model": "m", "messages": [{"content": "x"}]}),
                "messages[0].role is required",
            ),
            (
                json!({"model": "m", "messages": [{"role": "wizard", "content": "x"}]}),
                "messages[0].role \"wizard\" is not supported",
            ),
            (
                json!({"model": "m", "messages": [{"role": "user", "content": 5}]}),
                "messages[0].content must be a string or an array of parts",
            ),
            (
                json!({"model": "m", "messages": [{"role": "user"}]}),
                "messages[0].content must be a string or an array of parts",
            ),
            (
                json!({"model": "m", "messages": user, "stream": "yes"}),
                "'stream' must be a boolean",
            ),
            (
                json!({"model": "m", "messages": user, "stream_options": {"include_usage": 1}}),
                "'stream_options.include_usage' must be a boolean",
            ),
            (
                json!({"model": "m", "messages": user, "response_format": {"type": "json_schema"}}),
                "response_format.json_schema.schema is required (a JSON Schema object)",
            ),
            (
                json!({"model": "m", "messages": user, "response_format": {"type": "yaml"}}),
                "response_format.type must be one of text, json_object, json_schema",
            ),
            (
                json!({"model": "m", "messages": user, "tools": {}}),
                "'tools' must be an array",
            ),
            (
                json!({"model": "m", "messages": user, "tools": [{"type": "function", "function": {}}]}),
                "tools[0].function.name is required",
            ),
        ];
        for (body, message) in cases {
            assert_eq!(parse(&body).err().as_deref(), Some(message), "{body}");
        }
    }
}
