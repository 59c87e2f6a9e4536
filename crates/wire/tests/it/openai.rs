//! OpenAI Chat Completions: round trips of recorded bodies, and the fields Bridle reads.

use bridle_wire::openai::{
    ChatCompletion, ChatCompletionChunk, ChatCompletionRequest, ChatMessage, Content, ErrorBody,
    ErrorCode, FinishReason, ModelList, PartKind, ReasoningEffort, ResponseFormatKind, Role, Stop,
    StreamData, ToolCallDelta, ToolChoice, ToolChoiceMode, ToolKind, Usage,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The fixture `name` of `tests/fixtures/openai/`, as JSON.
fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/openai/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Parses `value` as a `T`, writes it back, and asserts nothing was lost or added.
fn round_trip<T: Serialize + DeserializeOwned>(value: &Value) -> T {
    let typed: T = serde_json::from_value(value.clone()).unwrap();
    assert_eq!(&serde_json::to_value(&typed).unwrap(), value);
    // And through text too, the way a body travels.
    let text = serde_json::to_string(&typed).unwrap();
    let again: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(&again, value);
    typed
}

#[test]
fn a_full_request_round_trips() {
    round_trip::<ChatCompletionRequest>(&fixture("request_full.json"));
}

#[test]
fn a_simple_request_round_trips() {
    round_trip::<ChatCompletionRequest>(&fixture("request_simple.json"));
}

#[test]
fn completions_round_trip() {
    round_trip::<ChatCompletion>(&fixture("completion_text.json"));
    round_trip::<ChatCompletion>(&fixture("completion_tool_calls.json"));
}

#[test]
fn stream_chunks_round_trip() {
    let Value::Array(chunks) = fixture("stream_chunks.json") else {
        panic!("an array of chunks")
    };
    for chunk in &chunks {
        round_trip::<ChatCompletionChunk>(chunk);
    }
}

#[test]
fn error_bodies_round_trip() {
    let Value::Array(errors) = fixture("errors.json") else {
        panic!("an array of errors")
    };
    for error in &errors {
        round_trip::<ErrorBody>(error);
    }
}

#[test]
fn the_models_list_round_trips() {
    let list: ModelList = round_trip(&fixture("models.json"));
    assert_eq!(list.data[0].id, "gpt-4o-mini");
    assert_eq!(list.data[2].owned_by, "bridle");
    assert!(list.data[2].extra.contains_key("permission"));
}

#[test]
fn unknown_fields_and_values_survive_at_every_level() {
    let request: ChatCompletionRequest = round_trip(&fixture("request_unknown_fields.json"));
    // Top level.
    assert_eq!(
        request.extra["vendor_options"],
        json!({"cache": {"ttl": 300}, "priority": 3})
    );
    assert_eq!(request.extra["safety_identifier"], json!("u-hash-91"));
    assert_eq!(
        request.reasoning_effort,
        Some(ReasoningEffort::Other("ultra".into()))
    );
    assert_eq!(
        request.tool_choice,
        Some(ToolChoice::Mode(ToolChoiceMode::Other("sometimes".into())))
    );
    assert_eq!(
        request.stream_options.as_ref().unwrap().extra["include_obfuscation"],
        json!(false)
    );
    let format = request.response_format.as_ref().unwrap();
    assert_eq!(format.kind, ResponseFormatKind::Other("grammar".into()));
    assert!(format.extra.contains_key("grammar"));
    // Inside a message.
    let user = &request.messages[0];
    assert_eq!(user.extra["x_trace"], json!("abc"));
    assert_eq!(request.messages[1].role, Role::Other("critic".into()));
    assert_eq!(
        request.messages[2].extra["audio"],
        json!({"id": "audio_abc123"})
    );
    // Inside a content part, and a part of an unknown kind.
    let Some(Content::Parts(parts)) = user.content() else {
        panic!("parts")
    };
    assert_eq!(
        parts[0].extra["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert_eq!(parts[1].kind, PartKind::Other("video_url".into()));
    assert_eq!(
        parts[1].extra["video_url"],
        json!({"url": "https://example.com/clip.mp4"})
    );
}

#[test]
fn the_fields_bridle_reads_from_a_request() {
    let request: ChatCompletionRequest =
        serde_json::from_value(fixture("request_full.json")).unwrap();
    assert_eq!(request.model, "gpt-4o-2024-08-06");
    assert_eq!(request.temperature, Some(0.2));
    assert_eq!(request.max_output_tokens(), Some(1024));
    assert_eq!(request.stream, Some(true));
    assert!(request.include_usage());
    assert_eq!(
        request.stop,
        Some(Stop::Many(vec!["\n\nUser:".into(), "<|end|>".into()]))
    );
    let roles: Vec<&str> = request.messages.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(
        roles,
        [
            "developer",
            "system",
            "user",
            "assistant",
            "tool",
            "tool",
            "assistant",
            "function",
            "assistant",
            "user"
        ]
    );
    assert_eq!(request.messages[1].text(), "Today is 2026-11-27.");
    assert_eq!(
        request.messages[2].text(),
        "What is in this picture, and what's the weather there?"
    );
    let Some(Content::Parts(parts)) = request.messages[2].content() else {
        panic!("parts")
    };
    let image = parts[1].image_url.as_ref().unwrap();
    assert_eq!(image.detail.as_deref(), Some("high"));
    assert_eq!(parts[3].input_audio.as_ref().unwrap().format, "wav");
    assert_eq!(
        parts[5].file.as_ref().unwrap().file_id.as_deref(),
        Some("file-6F2ksmvXxt4VdoqmHRw6kL")
    );
    // The assistant's explicit `content: null` is kept apart from an absent content.
    let assistant = &request.messages[3];
    assert_eq!(assistant.content, Some(None));
    assert_eq!(
        request.messages[4].tool_call_id.as_deref(),
        Some("call_abc123")
    );
    let calls = assistant.tool_calls.as_ref().unwrap();
    let function = calls[0].function.as_ref().unwrap();
    assert_eq!(function.name, "get_weather");
    assert_eq!(
        serde_json::from_str::<Value>(&function.arguments).unwrap(),
        json!({"location": "Madison, WI", "unit": "celsius"})
    );
    let format = request.response_format.as_ref().unwrap();
    assert_eq!(format.kind, ResponseFormatKind::JsonSchema);
    let spec = format.json_schema.as_ref().unwrap();
    assert_eq!(spec.name.as_deref(), Some("trip_summary"));
    assert_eq!(spec.strict, Some(Some(true)));
    assert_eq!(spec.schema.as_ref().unwrap()["required"][0], "place");
    let tools = request.tools.as_ref().unwrap();
    assert_eq!(tools[0].function.as_ref().unwrap().name, "get_weather");
    assert_eq!(tools[1].function.as_ref().unwrap().strict, Some(None));
    let Some(ToolChoice::Named(named)) = &request.tool_choice else {
        panic!("a named tool choice")
    };
    assert_eq!(named.function.as_ref().unwrap().name, "get_weather");
    assert_eq!(
        request.extra["logit_bias"],
        json!({"50256": -100, "1734": 5})
    );
    assert_eq!(request.reasoning_effort, Some(ReasoningEffort::Medium));
}

#[test]
fn a_simple_requests_string_stop_and_mode_tool_choice() {
    let request: ChatCompletionRequest =
        serde_json::from_value(fixture("request_simple.json")).unwrap();
    assert_eq!(request.stop, Some(Stop::One("END".into())));
    assert_eq!(
        request.tool_choice,
        Some(ToolChoice::Mode(ToolChoiceMode::Auto))
    );
    assert_eq!(
        request.response_format.as_ref().unwrap().kind,
        ResponseFormatKind::JsonObject
    );
    assert!(!request.include_usage());
}

#[test]
fn the_fields_bridle_reads_from_a_completion() {
    let completion: ChatCompletion =
        serde_json::from_value(fixture("completion_tool_calls.json")).unwrap();
    let choice = &completion.choices[0];
    assert_eq!(choice.finish_reason, Some(Some(FinishReason::ToolCalls)));
    assert_eq!(choice.message.role, Role::Assistant);
    assert_eq!(choice.message.content, Some(None));
    let calls = choice.message.tool_calls.as_ref().unwrap();
    // Arguments stay the string the model wrote, even when it is not valid JSON.
    assert_eq!(
        calls[1].function.as_ref().unwrap().arguments,
        "{\"location\": \"Paris\""
    );
    let logprobs = choice.logprobs.clone().flatten().unwrap();
    let token = &logprobs.content.flatten().unwrap()[0];
    assert_eq!(token.top_logprobs.as_ref().unwrap()[1].bytes, Some(None));
    assert_eq!(
        completion.choices[1].message.refusal,
        Some(Some("I can't help with that.".into()))
    );
    let usage = completion.usage.as_ref().unwrap();
    assert_eq!((usage.prompt_tokens, usage.completion_tokens), (82, 17));
    assert_eq!(
        usage.prompt_tokens_details.as_ref().unwrap().cached_tokens,
        Some(64)
    );
    assert_eq!(
        completion.system_fingerprint,
        Some(Some("fp_44709d6fcb".into()))
    );
}

#[test]
fn stream_chunks_rebuild_the_tool_calls_and_the_usage() {
    let Value::Array(values) = fixture("stream_chunks.json") else {
        panic!("an array of chunks")
    };
    let chunks: Vec<ChatCompletionChunk> = values
        .into_iter()
        .map(|v| serde_json::from_value(v).unwrap())
        .collect();
    assert_eq!(chunks[0].choices[0].delta.role, Some(Role::Assistant));
    assert_eq!(chunks[0].usage, Some(None));
    assert_eq!(chunks[0].extra["obfuscation"], json!("x9Ab"));
    let mut calls: Vec<(String, String)> = Vec::new();
    let mut finish = None;
    for chunk in &chunks {
        for choice in &chunk.choices {
            for piece in choice.delta.tool_calls.iter().flatten() {
                let index = piece.index as usize;
                if calls.len() <= index {
                    calls.resize(index + 1, Default::default());
                }
                let function = piece.function.clone().unwrap_or_default();
                calls[index]
                    .0
                    .push_str(function.name.as_deref().unwrap_or(""));
                calls[index]
                    .1
                    .push_str(function.arguments.as_deref().unwrap_or(""));
            }
            if let Some(Some(reason)) = &choice.finish_reason {
                finish = Some(reason.clone());
            }
        }
    }
    assert_eq!(
        calls,
        [
            ("get_weather".into(), "{\"location\": \"Paris\"}".into()),
            ("get_time".into(), "{}".into())
        ]
    );
    assert_eq!(finish, Some(FinishReason::ToolCalls));
    let last = chunks.last().unwrap();
    assert!(last.choices.is_empty());
    let usage = last.usage.clone().flatten().unwrap();
    assert_eq!(usage.total_tokens, 21);
}

#[test]
fn error_bodies_keep_their_nulls_and_codes() {
    let Value::Array(values) = fixture("errors.json") else {
        panic!("an array of errors")
    };
    let errors: Vec<ErrorBody> = values
        .into_iter()
        .map(|v| serde_json::from_value(v).unwrap())
        .collect();
    assert_eq!(errors[0].error.param, Some(None));
    assert_eq!(
        errors[0].error.code,
        Some(Some(ErrorCode::Text("invalid_api_key".into())))
    );
    assert_eq!(
        errors[1].error.param,
        Some(Some("messages[0].content".into()))
    );
    assert_eq!(errors[3].error.code, Some(None));
    assert_eq!(errors[4].error.param, None);
    assert_eq!(errors[4].error.code, Some(Some(ErrorCode::Number(503))));
}

#[test]
fn bodies_built_in_code_are_what_the_api_expects() {
    let mut message = ChatMessage::new(Role::Assistant, "hi");
    message.refusal = Some(None);
    assert_eq!(
        serde_json::to_value(&message).unwrap(),
        json!({"role": "assistant", "content": "hi", "refusal": null})
    );
    let request = ChatCompletionRequest::new("m", vec![ChatMessage::new(Role::User, "x")]);
    assert_eq!(
        serde_json::to_value(&request).unwrap(),
        json!({"model": "m", "messages": [{"role": "user", "content": "x"}]})
    );
    assert_eq!(
        serde_json::to_value(Usage::new(3, 4)).unwrap(),
        json!({"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7})
    );
    assert_eq!(
        serde_json::to_value(ErrorBody::new("bad", "invalid_request_error", None, None)).unwrap(),
        json!({"error": {"message": "bad", "type": "invalid_request_error", "param": null, "code": null}})
    );
}

#[test]
fn a_string_value_is_read_from_its_wire_text() {
    assert_eq!(FinishReason::from("stop"), FinishReason::Stop);
    assert_eq!(FinishReason::from("length"), FinishReason::Length);
    assert_eq!(
        FinishReason::from("paused"),
        FinishReason::Other("paused".into())
    );
    assert_eq!(Role::from("developer"), Role::Developer);
}

#[test]
fn answers_of_compatible_servers_are_read_leniently() {
    // No id, object, created or model; a usage without total_tokens; a choice without index
    // and message; tool calls without id and type, with arguments as an object and as null.
    let completion: ChatCompletion = serde_json::from_value(json!({
        "choices": [
            {"message": {"role": "assistant", "content": null, "tool_calls": [
                {"function": {"name": "f", "arguments": {"a": 1}}},
                {"function": {"name": "g", "arguments": null}},
                {"function": {"arguments": "{}"}}
            ]}, "finish_reason": "eos"},
            {"finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2}
    }))
    .unwrap();
    assert_eq!((completion.id.as_str(), completion.created), ("", 0));
    assert_eq!(completion.model, "");
    let calls = completion.choices[0].message.tool_calls.as_ref().unwrap();
    let function = |i: usize| calls[i].function.as_ref().unwrap();
    assert_eq!(function(0).arguments, "{\"a\":1}");
    assert_eq!(function(1).arguments, "");
    assert_eq!((function(2).name.as_str(), calls[2].id.as_str()), ("", ""));
    assert_eq!(calls[0].kind, ToolKind::Function);
    assert_eq!(
        completion.choices[0].finish_reason,
        Some(Some(FinishReason::Other("eos".into())))
    );
    assert_eq!(completion.choices[1].message.role, Role::Assistant);
    assert_eq!(completion.choices[1].message.content, None);
    let usage = completion.usage.unwrap();
    assert_eq!((usage.prompt_tokens, usage.total_tokens), (3, 0));

    // A chunk with no more than a delta; pieces of tool calls without an index.
    let chunk: ChatCompletionChunk = serde_json::from_value(json!({"choices": [{"delta": {
        "tool_calls": [{"function": {"name": "f"}}, {"index": 2, "function": {"arguments": "{}"}}]
    }}]}))
    .unwrap();
    let pieces = chunk.choices[0].delta.tool_calls.as_ref().unwrap();
    assert_eq!(pieces[0].index, ToolCallDelta::UNINDEXED);
    assert_eq!((pieces[0].index(), pieces[1].index()), (None, Some(2)));
    // Written back, a piece without an index still has none.
    assert_eq!(
        serde_json::to_value(&pieces[0]).unwrap(),
        json!({"function": {"name": "f"}})
    );
    assert!(matches!(
        serde_json::from_value::<StreamData>(chunk_json()),
        Ok(StreamData::Chunk(_))
    ));
    assert!(matches!(
        serde_json::from_value::<StreamData>(json!({"error": {"message": "overloaded"}})),
        Ok(StreamData::Error(body)) if body.error.message == "overloaded"
    ));
}

/// A chunk as OpenAI writes it.
fn chunk_json() -> Value {
    json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
           "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": null}]})
}

#[test]
fn an_error_body_may_be_a_bare_text() {
    let body: ErrorBody = serde_json::from_value(json!({"error": "model 'x' not found"})).unwrap();
    assert_eq!(body.error.message, "model 'x' not found");
    assert_eq!(body.error.kind, None);
    assert!(serde_json::from_value::<ErrorBody>(json!({"error": {"type": "x"}})).is_err());
    assert!(serde_json::from_value::<ErrorBody>(json!({"detail": "x"})).is_err());
}
