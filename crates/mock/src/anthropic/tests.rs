//! Tests of the Anthropic front end: requests read (blocks, tools, tool choices, tool results)
//! and refused with their messages, messages and events written (tool_use blocks, deltas).

use super::*;
use crate::request::Usage;
use serde_json::json;

#[test]
fn requests_are_read_with_blocks_calls_results_and_forced_tools() {
    let call = parse(&json!({
        "model": "claude-x",
        "max_tokens": 100,
        "system": [{"type": "text", "text": "rules"}],
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "Let me see."},
                                              {"type": "tool_use", "id": "t", "name": "reply", "input": {"a": 1}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "bad"},
                                         {"type": "text", "text": "Your previous reply did not meet the contract"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "u", "name": "reply", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u",
                                          "content": [{"type": "text", "text": "sunny"}]}]}
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
    // The assistant's text, and its tool_use blocks as typed calls.
    assert_eq!(messages[2].content, "Let me see.");
    assert_eq!(
        messages[2].calls,
        [CallMade {
            id: "t".into(),
            name: "reply".into(),
            arguments: json!({"a": 1})
        }]
    );
    // Results first, as tool messages naming their call; then the message's own text.
    assert_eq!(messages[3], MockMessage::tool_result("t", "bad"));
    assert!(messages[4].is_feedback());
    assert_eq!(messages[5].calls[0].id, "u");
    // A message of results only is nothing but its tool messages.
    assert_eq!(messages.len(), 7);
    assert_eq!(messages[6], MockMessage::tool_result("u", "sunny"));
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
        json!({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}],
               "tool_choice": {"type": "any"}}),
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
    assert!(
        matches!(&forced.request.format, ReplyFormat::Tool { name, .. } if name == "present_question")
    );
    assert_eq!(forced.request.tools.len(), 1);
    let any = parse(&body(false, json!({"type": "any"}))).unwrap();
    assert_eq!(any.request.format, ReplyFormat::Call { name: None });
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

mod wire_tests {
    use super::super::*;
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
