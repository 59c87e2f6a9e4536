//! Anthropic Messages: recorded bodies (written from the API reference) read into the wire
//! types and written back unchanged, and the fields Bridle reads.

use bridle_wire::anthropic::{
    ContentBlock, Delta, ErrorBody, Message, MessageContent, MessagesRequest, MessagesResponse,
    Role, Source, StopReason, StreamEvent, System, ThinkingKind, ToolChoiceKind, ToolResultContent,
    Usage,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Reads `text` as `T`, writes it back and checks the JSON is the same; returns the typed value.
fn round_trip<T: DeserializeOwned + Serialize>(text: &str) -> T {
    let original: Value = serde_json::from_str(text).unwrap();
    let typed: T = serde_json::from_value(original.clone()).unwrap();
    let back = serde_json::to_value(&typed).unwrap();
    assert_eq!(back, original);
    // Written as text, no key twice (a `Value` would hide a duplicate): same length.
    let written = serde_json::to_string(&typed).unwrap();
    assert_eq!(written.len(), original.to_string().len(), "{written}");
    // From text too, not only from a `Value`.
    let from_text: T = serde_json::from_str(text).unwrap();
    assert_eq!(serde_json::to_value(&from_text).unwrap(), original);
    typed
}

const REQUEST_TOOLS: &str = include_str!("../fixtures/anthropic/request_tools.json");
const REQUEST_MULTIMODAL: &str = include_str!("../fixtures/anthropic/request_multimodal.json");
const RESPONSE_TOOL_USE: &str = include_str!("../fixtures/anthropic/response_tool_use.json");
const RESPONSE_CITATIONS: &str = include_str!("../fixtures/anthropic/response_citations.json");
const STREAM: &str = include_str!("../fixtures/anthropic/stream.json");
const ERROR: &str = include_str!("../fixtures/anthropic/error.json");
const UNKNOWN_FIELDS: &str = include_str!("../fixtures/anthropic/unknown_fields.json");

#[test]
fn request_with_tools_round_trips() {
    let request: MessagesRequest = round_trip(REQUEST_TOOLS);
    assert_eq!(request.model, "claude-sonnet-4-20250514");
    assert_eq!(request.max_tokens, 1024);
    assert_eq!(
        request.system,
        Some(System::Text("You are a helpful weather assistant.".into()))
    );
    assert_eq!(request.top_k, Some(40));
    assert_eq!(request.stop_sequences.as_deref().map(<[_]>::len), Some(2));
    let choice = request.tool_choice.as_ref().unwrap();
    assert_eq!(choice.kind, ToolChoiceKind::Auto);
    assert_eq!(choice.disable_parallel_tool_use, Some(true));
    let tools = request.tools.as_ref().unwrap();
    assert_eq!(tools[0].name, "get_weather");
    assert!(tools[0].input_schema.is_some());
    assert!(tools[0].extra.contains_key("cache_control"));
    assert_eq!(tools[1].kind.as_deref(), Some("web_search_20250305"));
    assert_eq!(tools[1].extra["max_uses"], json!(5));
    assert_eq!(request.messages[1].role, Role::Assistant);
    let MessageContent::Blocks(blocks) = &request.messages[2].content else {
        panic!("tool results are blocks")
    };
    let ContentBlock::ToolResult(failed) = &blocks[1] else {
        panic!("a tool result")
    };
    assert_eq!(failed.is_error, Some(true));
    assert!(matches!(failed.content, Some(ToolResultContent::Blocks(_))));
}

#[test]
fn request_with_images_documents_and_thinking_round_trips() {
    let request: MessagesRequest = round_trip(REQUEST_MULTIMODAL);
    let thinking = request.thinking.as_ref().unwrap();
    assert_eq!(thinking.kind, ThinkingKind::Enabled);
    assert_eq!(thinking.budget_tokens, Some(10_000));
    let choice = request.tool_choice.as_ref().unwrap();
    assert_eq!(
        (choice.kind.as_str(), choice.name.as_deref()),
        ("tool", Some("record_summary"))
    );
    let Some(System::Blocks(system)) = &request.system else {
        panic!("system blocks")
    };
    assert!(
        matches!(&system[1], ContentBlock::Text(text) if text.extra.contains_key("cache_control"))
    );
    let MessageContent::Blocks(blocks) = &request.messages[0].content else {
        panic!("blocks")
    };
    let sources: Vec<&Source> = blocks
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Image(image) => Some(&image.source),
            ContentBlock::Document(document) => Some(&document.source),
            _ => None,
        })
        .collect();
    assert!(matches!(sources[0], Source::Base64(data) if data.media_type == "image/png"));
    assert!(matches!(sources[1], Source::Url(_)));
    assert!(matches!(sources[3], Source::Text(data) if data.data.starts_with("The grass")));
    assert!(matches!(sources[4], Source::Unknown(unknown) if unknown.kind == "content"));
    assert!(matches!(sources[5], Source::File(file) if file.file_id.starts_with("file_")));
    let ContentBlock::Document(document) = &blocks[2] else {
        panic!("a document")
    };
    assert_eq!(document.title.as_deref(), Some("Model card"));
    assert!(document.extra.contains_key("citations"));
    let MessageContent::Blocks(assistant) = &request.messages[1].content else {
        panic!("blocks")
    };
    assert!(matches!(&assistant[0], ContentBlock::Thinking(t) if t.signature.starts_with("EuYB")));
    assert!(matches!(&assistant[1], ContentBlock::RedactedThinking(_)));
}

#[test]
fn response_with_tool_use_round_trips() {
    let response: MessagesResponse = round_trip(RESPONSE_TOOL_USE);
    assert_eq!(response.stop_reason(), Some(&StopReason::ToolUse));
    assert_eq!(response.stop_sequence, Some(None));
    assert_eq!(
        response.text(),
        "I'll check the current weather in San Francisco for you."
    );
    let call = response.tool_uses().next().unwrap();
    assert_eq!(call.name, "get_weather");
    assert_eq!(
        call.input,
        json!({"location": "San Francisco, CA", "unit": "celsius"})
    );
    let usage = response.usage.as_ref().unwrap();
    assert_eq!(
        (usage.input_tokens, usage.output_tokens),
        (Some(472), Some(89))
    );
    assert_eq!(usage.cache_read_input_tokens, Some(Some(2048)));
    assert!(usage.extra.contains_key("cache_creation"));
}

#[test]
fn response_with_citations_and_server_tools_round_trips() {
    let response: MessagesResponse = round_trip(RESPONSE_CITATIONS);
    assert_eq!(response.stop_reason(), Some(&StopReason::EndTurn));
    let ContentBlock::Text(first) = &response.content[0] else {
        panic!("text")
    };
    assert_eq!(first.citations, Some(None));
    let ContentBlock::Text(cited) = &response.content[1] else {
        panic!("text")
    };
    let citation = &cited.citations.as_ref().unwrap().as_ref().unwrap()[0];
    assert_eq!(citation.kind, "char_location");
    assert_eq!(citation.cited_text.as_deref(), Some("The grass is green."));
    assert!(
        matches!(&response.content[2], ContentBlock::Unknown(block) if block.kind == "server_tool_use")
    );
    assert!(matches!(&response.content[3], ContentBlock::Unknown(_)));
    let usage = response.usage.as_ref().unwrap();
    assert_eq!(usage.cache_creation_input_tokens, Some(None));
}

#[test]
fn stream_events_round_trip() {
    let events: Vec<Value> = serde_json::from_str(STREAM).unwrap();
    let mut typed = Vec::new();
    for event in &events {
        typed.push(round_trip::<StreamEvent>(&event.to_string()));
    }
    let names: Vec<&str> = typed.iter().map(StreamEvent::event_name).collect();
    assert_eq!(names[0], "message_start");
    assert_eq!(names[6], "ping");
    assert_eq!(names[names.len() - 1], "future_event");
    let StreamEvent::MessageStart(start) = &typed[0] else {
        panic!("message_start")
    };
    assert_eq!(start.message.stop_reason, Some(None));
    assert!(start.message.content.is_empty());
    let mut text = String::new();
    let mut input = String::new();
    for event in &typed {
        if let StreamEvent::ContentBlockDelta(delta) = event {
            match &delta.delta {
                Delta::TextDelta(piece) => text.push_str(&piece.text),
                Delta::InputJsonDelta(piece) => input.push_str(&piece.partial_json),
                Delta::ThinkingDelta(_) | Delta::SignatureDelta(_) => {}
                Delta::Unknown(unknown) => assert_eq!(unknown.kind, "citations_delta"),
            }
        }
    }
    assert_eq!(text, "Okay, let's check the weather.");
    assert_eq!(
        serde_json::from_str::<Value>(&input).unwrap(),
        json!({"location": "San Francisco, CA"})
    );
    let StreamEvent::ContentBlockStart(tool) = &typed[10] else {
        panic!("content_block_start")
    };
    assert!(matches!(&tool.content_block, ContentBlock::ToolUse(call) if call.input == json!({})));
    let StreamEvent::MessageDelta(end) = &typed[16] else {
        panic!("message_delta")
    };
    assert_eq!(end.delta.stop_reason, Some(Some(StopReason::ToolUse)));
    assert_eq!(end.usage.as_ref().unwrap().output_tokens, Some(89));
    let StreamEvent::Error(error) = &typed[18] else {
        panic!("error")
    };
    assert_eq!(error.error.kind, "overloaded_error");
}

#[test]
fn error_body_round_trips() {
    let error: ErrorBody = round_trip(ERROR);
    assert_eq!(error.error.kind, "overloaded_error");
    assert_eq!(error.error.message, "Overloaded");
    assert_eq!(
        error.extra["request_id"],
        json!("req_011CSHoEeqs5C35K2UUqR7Fy")
    );
    let made = serde_json::to_value(ErrorBody::new(
        "invalid_request_error",
        "max_tokens: required",
    ))
    .unwrap();
    assert_eq!(
        made,
        json!({"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: required"}})
    );
}

#[test]
fn unknown_fields_and_values_survive_at_every_level() {
    let request: MessagesRequest = round_trip(UNKNOWN_FIELDS);
    assert_eq!(request.extra["service_tier"], json!("auto"));
    assert!(request.extra.contains_key("future_top_level"));
    let metadata = request.metadata.as_ref().unwrap();
    assert_eq!(metadata.user_id, Some(None));
    assert!(metadata.extra.contains_key("trace"));
    let thinking = request.thinking.as_ref().unwrap();
    assert_eq!(thinking.kind, ThinkingKind::Other("adaptive".into()));
    assert_eq!(
        request.tool_choice.as_ref().unwrap().kind,
        ToolChoiceKind::Other("someday".into())
    );
    let message = &request.messages[0];
    assert_eq!(message.extra["pinned"], json!(true));
    let MessageContent::Blocks(blocks) = &message.content else {
        panic!("blocks")
    };
    let ContentBlock::Text(text) = &blocks[0] else {
        panic!("text")
    };
    assert_eq!(text.extra["future_part_field"], json!(7));
    let ContentBlock::Image(image) = &blocks[1] else {
        panic!("image")
    };
    assert_eq!(image.extra["alt"], json!("a dot"));
    assert!(
        matches!(&image.source, Source::Base64(data) if data.extra.contains_key("future_source_field"))
    );
    assert!(matches!(&blocks[2], ContentBlock::Unknown(block) if block.kind == "search_result"));
    assert_eq!(request.messages[1].role, Role::Other("system_v2".into()));
}

#[test]
fn a_known_block_with_a_missing_field_is_an_error_not_an_unknown_block() {
    let broken = json!({"type": "tool_use", "id": "toolu_1", "name": "f"});
    let error = serde_json::from_value::<ContentBlock>(broken).unwrap_err();
    assert!(
        error.to_string().contains("missing field `input`"),
        "{error}"
    );
    let untyped = serde_json::from_value::<ContentBlock>(json!({"text": "no type"})).unwrap_err();
    assert!(untyped.to_string().contains("`type`"), "{untyped}");
}

#[test]
fn a_request_without_max_tokens_is_refused() {
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "x"}]});
    assert!(serde_json::from_value::<MessagesRequest>(body).is_err());
}

#[test]
fn an_integer_temperature_is_read_and_written_as_the_same_number() {
    let body = json!({"model": "m", "max_tokens": 5, "temperature": 1,
                      "messages": [{"role": "user", "content": "x"}]});
    let request: MessagesRequest = serde_json::from_value(body).unwrap();
    assert_eq!(request.temperature, Some(1.0));
    assert!(
        serde_json::to_string(&request)
            .unwrap()
            .contains(r#""temperature":1.0"#)
    );
}

#[test]
fn built_values_write_the_shapes_the_api_expects() {
    let message = Message::text(Role::User, "hi");
    assert_eq!(
        serde_json::to_value(&message).unwrap(),
        json!({"role": "user", "content": "hi"})
    );
    let call = ContentBlock::tool_use("toolu_1", "respond", json!({"a": 1}));
    assert_eq!(
        serde_json::to_value(&call).unwrap(),
        json!({"type": "tool_use", "id": "toolu_1", "name": "respond", "input": {"a": 1}})
    );
    let result = ContentBlock::tool_result("toolu_1", "bad");
    assert_eq!(
        serde_json::to_value(&result).unwrap(),
        json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": "bad"})
    );
    assert_eq!(
        serde_json::to_value(Usage::new(3, 4)).unwrap(),
        json!({"input_tokens": 3, "output_tokens": 4})
    );
    let stop = StreamEvent::MessageStop(Default::default());
    assert_eq!(
        stop.to_sse().unwrap(),
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
    );
}

#[test]
fn replies_of_compatible_servers_are_read_leniently() {
    // No id, type, role or model; a call without an id, one without a name; an unknown stop
    // reason.
    let reply: MessagesResponse = serde_json::from_value(json!({"content": [
        {"type": "tool_use", "name": "f", "input": {}},
        {"type": "tool_use", "id": "t2", "input": {"a": 1}}
    ], "stop_reason": "model_context_window_exceeded"}))
    .unwrap();
    assert_eq!((reply.id.as_str(), reply.model.as_str()), ("", ""));
    assert_eq!(reply.role, Role::Assistant);
    let calls: Vec<_> = reply.tool_uses().collect();
    assert_eq!((calls[0].id.as_str(), calls[1].name.as_str()), ("", ""));
    assert_eq!(
        reply.stop_reason(),
        Some(&StopReason::Other("model_context_window_exceeded".into()))
    );
    // Stream events without an index, a message delta without a delta, an error without one.
    let event: StreamEvent = serde_json::from_value(
        json!({"type": "content_block_delta", "delta": {"type": "text_delta", "text": "x"}}),
    )
    .unwrap();
    assert!(matches!(event, StreamEvent::ContentBlockDelta(d) if d.index == 0));
    let event: StreamEvent =
        serde_json::from_value(json!({"type": "message_delta", "usage": {"output_tokens": 3}}))
            .unwrap();
    assert!(matches!(event, StreamEvent::MessageDelta(d) if d.delta.stop_reason.is_none()));
    let event: StreamEvent = serde_json::from_value(json!({"type": "error"})).unwrap();
    assert!(matches!(event, StreamEvent::Error(e) if e.error.message.is_empty()));
}

#[test]
fn an_error_body_may_be_a_bare_text_or_leave_its_types_out() {
    let body: ErrorBody = serde_json::from_value(json!({"error": "from a proxy"})).unwrap();
    assert_eq!(body.error.message, "from a proxy");
    let body: ErrorBody = serde_json::from_value(json!({"error": {"message": "m"}})).unwrap();
    assert_eq!((body.kind.as_str(), body.error.kind.as_str()), ("", ""));
    let body: ErrorBody = serde_json::from_value(json!({"error": {"type": "x"}})).unwrap();
    assert_eq!(body.error.message, "");
    assert!(serde_json::from_value::<ErrorBody>(json!({"detail": "x"})).is_err());
}
