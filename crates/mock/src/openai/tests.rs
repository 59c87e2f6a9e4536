//! Tests of the OpenAI front end: requests read (tools, tool choices, tool messages) and
//! refused with their messages, completions and chunks written (calls, deltas), byte for byte.

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
        parse(&json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": {}}))
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
    let arguments: Value = serde_json::from_str(function["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments["question"], "Which?");

    let Rendered::Events { frames, .. } = render(&call_reply(), &call_of(true), 6) else {
        panic!("not events")
    };
    let (mut name, mut joined) = (String::new(), String::new());
    for frame in &frames {
        let Ok(chunk) = serde_json::from_str::<Value>(frame.trim().trim_start_matches("data: "))
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
        let Ok(chunk) = serde_json::from_str::<Value>(frame.trim().trim_start_matches("data: "))
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

fn with_choice(choice: Value) -> Result<Call, String> {
    parse(&json!({
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},
                  {"type": "function", "function": {"name": "get_time"}}],
        "response_format": {"type": "json_object"},
        "tool_choice": choice
    }))
}

#[test]
fn tool_choices_force_a_call_or_leave_it_to_the_model() {
    let named = json!({"type": "function", "function": {"name": "get_time"}});
    let cases = [
        (
            named,
            ReplyFormat::Call {
                name: Some("get_time".into()),
            },
            2,
        ),
        (json!("required"), ReplyFormat::Call { name: None }, 2),
        (json!("auto"), ReplyFormat::JsonObject, 2),
        (Value::Null, ReplyFormat::JsonObject, 2),
        (json!("none"), ReplyFormat::JsonObject, 0),
    ];
    for (choice, format, tools) in cases {
        let call = with_choice(choice.clone()).unwrap();
        assert_eq!(call.request.format, format, "{choice}");
        assert_eq!(call.request.tools.len(), tools, "{choice}");
    }
    assert_eq!(call_of(false).request.tools[0].parameters["type"], "object");
    let refused = [
        (
            json!({"type": "function", "function": {"name": "get_stock"}}),
            "no function named \"get_stock\" is among 'tools'",
        ),
        (
            json!({"type": "function"}),
            "tool_choice.function.name is required",
        ),
        (
            json!({"type": "custom", "custom": {"name": "x"}}),
            "function tools only",
        ),
        (json!("sometimes"), "\"sometimes\""),
    ];
    for (choice, message) in refused {
        let error = with_choice(choice.clone()).err().unwrap();
        assert!(error.contains(message), "{choice}: {error}");
    }
    // A hostile name is not echoed whole.
    let long = "x".repeat(100_000);
    let error = with_choice(json!({"type": "function", "function": {"name": long}}))
        .err()
        .unwrap();
    assert!(
        error.len() < 300 && error.contains("xxx\"…"),
        "{}",
        error.len()
    );
    let no_tools = parse(&json!({"model": "m", "tool_choice": "required",
                                 "messages": [{"role": "user", "content": "x"}]}));
    assert!(
        no_tools
            .err()
            .unwrap()
            .contains("only allowed when 'tools' are specified")
    );
}

#[test]
fn assistant_calls_and_tool_messages_are_read_as_typed_calls_and_results() {
    let call = parse(&json!({
        "model": "m",
        "messages": [
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}},
                {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": "not json"}}
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "4 degrees"},
            {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "noon"}]}
        ]
    }))
    .unwrap();
    let messages = &call.request.messages;
    assert_eq!(messages[1].role, Role::Assistant);
    assert_eq!(
        messages[1].calls,
        [
            CallMade {
                id: "call_1".into(),
                name: "get_weather".into(),
                arguments: json!({"city": "Oslo"}),
            },
            CallMade {
                id: "call_2".into(),
                name: "get_time".into(),
                arguments: json!("not json"),
            },
        ]
    );
    assert_eq!(messages[2], MockMessage::tool_result("call_1", "4 degrees"));
    assert_eq!(messages[3], MockMessage::tool_result("call_2", "noon"));
}

#[test]
fn a_call_without_text_has_null_content_and_a_broken_one_stops_inside_its_arguments() {
    let info = crate::request::ReplyInfo {
        id: "abc".into(),
        attempt: 1,
        delay: std::time::Duration::ZERO,
        target: None,
    };
    let arguments = json!({"city": "Oslo", "unit": "celsius"});
    let reply = MockReply::Text {
        content: String::new(),
        calls: vec![MockCall {
            name: "get_weather".into(),
            arguments: arguments.clone(),
        }],
        usage: Usage::default(),
        stop: StopReason::End,
        fault: None,
        pieces: None,
        info: info.clone(),
    };
    let Rendered::Json { body, .. } = render(&reply, &call_of(false), 6) else {
        panic!("not JSON")
    };
    let message = &body["choices"][0]["message"];
    assert_eq!(message["content"], Value::Null);
    assert_eq!(message["tool_calls"][0]["id"], "call_mock_abc_0");
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");

    let broken = MockReply::BrokenStream {
        content: arguments.to_string(),
        tool: Some("get_weather".into()),
        usage: Usage::default(),
        info,
    };
    let Rendered::Events { frames, broken } = render(&broken, &call_of(true), 4) else {
        panic!("not events")
    };
    assert!(broken);
    let first: Value = serde_json::from_str(frames[0].trim().trim_start_matches("data: ")).unwrap();
    assert_eq!(
        first["choices"][0]["delta"],
        json!({"role": "assistant", "content": null})
    );
    let (content, pieces) = streamed(&frames);
    assert!(content.is_empty());
    let sent = pieces.concat();
    assert!(!sent.is_empty() && arguments.to_string().starts_with(&sent));
    assert!(sent.len() < arguments.to_string().len());
    assert!(
        frames
            .iter()
            .all(|f| !f.contains("finish_reason\":\"") && !f.contains("[DONE]"))
    );
}

mod wire_tests {
    use super::super::*;
    use super::{call_of, call_reply};
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
