//! The Gemini front end: [`parse`] reads a `POST …/models/{model}:generateContent` (or
//! `:streamGenerateContent?alt=sse`) body — `systemInstruction`, `contents` of `user` / `model`
//! turns whose `functionCall` parts are read as the model's calls and `functionResponse` parts
//! as tool messages, `tools[].functionDeclarations` (offered unless `toolConfig` says `NONE`),
//! a forced call through `toolConfig.functionCallingConfig` `ANY` (+ `allowedFunctionNames`),
//! and `generationConfig.responseSchema` with `responseMimeType: application/json` as native
//! structured output — into a [`Call`]; [`render`] writes a [`MockReply`] as a
//! `GenerateContentResponse` (calls as `functionCall` parts without ids, as Gemini often sends
//! them) or as SSE events each holding one, the last with `finishReason` and `usageMetadata`;
//! [`error`] writes Gemini's error body.
//!
//! Bodies are read and written as [`bridle_wire::gemini`] types. Gemini's schemas (OpenAPI
//! subset: `type` in capitals, `nullable`) are read back as JSON Schema for the model.

use crate::request::{
    CallMade, MockCall, MockMessage, MockReply, MockRequest, MockTool, ReplyFormat, Role,
    StopReason, Usage,
};
use crate::server::{Call, Rendered};
use crate::stream::deltas;
use bridle_wire::Extra;
use bridle_wire::gemini::{
    Candidate, Content, ErrorBody, FinishReason, FunctionCall, FunctionCallingMode,
    GenerateContentRequest, GenerateContentResponse, Part, UsageMetadata,
};
use serde::Deserialize;
use serde_json::{Map, Value};

/// Reads a `generateContent` request for `model` (`stream`: `streamGenerateContent`); the
/// error is a message for a 400.
pub(crate) fn parse(body: &Value, model: &str, stream: bool) -> Result<Call, String> {
    let request = GenerateContentRequest::deserialize(body)
        .map_err(|e| format!("Invalid JSON payload received: {e}"))?;
    if request.contents.is_empty() {
        return Err("* GenerateContentRequest.contents: contents is not specified".into());
    }
    let mut messages = Vec::with_capacity(request.contents.len() + 1);
    if let Some(system) = &request.system_instruction {
        messages.push(MockMessage::new(Role::System, system.text()));
    }
    for (i, content) in request.contents.iter().enumerate() {
        let role = match content.role.as_deref() {
            None | Some("user") => Role::User,
            Some("model") => Role::Assistant,
            Some(other) => {
                return Err(format!(
                    "* GenerateContentRequest.contents[{i}].role: {other:?} is not user or model"
                ));
            }
        };
        read_parts(role, &content.parts, &mut messages);
    }
    let config = request
        .tool_config
        .as_ref()
        .and_then(|c| c.function_calling_config.as_ref());
    let mode = config.and_then(|c| c.mode.clone());
    let tools: Vec<MockTool> = if mode == Some(FunctionCallingMode::None) {
        Vec::new()
    } else {
        request
            .tools
            .iter()
            .flatten()
            .flat_map(|tool| tool.function_declarations.iter().flatten())
            .map(|declaration| MockTool {
                name: declaration.name.clone(),
                parameters: declaration
                    .parameters
                    .as_ref()
                    .map(json_schema)
                    .or_else(|| declaration.parameters_json_schema.clone())
                    .unwrap_or(Value::Null),
            })
            .collect()
    };
    let format = if mode == Some(FunctionCallingMode::Any) {
        if tools.is_empty() {
            return Err(
                "* GenerateContentRequest.tool_config: mode ANY needs function declarations".into(),
            );
        }
        let allowed = config.and_then(|c| c.allowed_function_names.as_ref());
        let name = allowed.and_then(|names| names.first()).cloned();
        if let Some(name) = &name
            && !tools.iter().any(|t| t.name == *name)
        {
            return Err(format!(
                "* GenerateContentRequest.tool_config.function_calling_config.allowed_function_names: {name:?} is not a declared function"
            ));
        }
        ReplyFormat::Call { name }
    } else {
        format(&request)
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

/// Native structured output asked through `generationConfig`.
fn format(request: &GenerateContentRequest) -> ReplyFormat {
    let Some(config) = &request.generation_config else {
        return ReplyFormat::Free;
    };
    if config.response_mime_type.as_deref() != Some("application/json") {
        return ReplyFormat::Free;
    }
    match &config.response_schema {
        Some(schema) => ReplyFormat::JsonSchema {
            schema: json_schema(schema),
        },
        None => ReplyFormat::JsonObject,
    }
}

/// The messages one turn's parts make: each `functionResponse` a tool message (first), then
/// the turn itself — its text, and a model turn's `functionCall`s as its calls — unless it
/// held nothing but responses.
fn read_parts(role: Role, parts: &[Part], messages: &mut Vec<MockMessage>) {
    let mut calls = Vec::new();
    let mut results = 0;
    for part in parts {
        if let Some(response) = &part.function_response {
            // `{"result": …}` (how a result that is not an object goes) is read as that result.
            let result = match &response.response {
                Value::Object(map) if map.len() == 1 => map.get("result"),
                _ => None,
            };
            let content = match result {
                Some(Value::String(text)) => text.clone(),
                Some(other) => other.to_string(),
                None => response.response.to_string(),
            };
            let id = response.id.clone().unwrap_or_else(|| response.name.clone());
            messages.push(MockMessage::tool_result(id, content));
            results += 1;
        }
        if let Some(call) = &part.function_call {
            calls.push(CallMade {
                id: call.id.clone().unwrap_or_default(),
                name: call.name.clone(),
                arguments: call
                    .args
                    .clone()
                    .unwrap_or_else(|| Value::Object(Map::new())),
            });
        }
    }
    if results < parts.len() || parts.is_empty() {
        let text = Content::new(None, parts.to_vec()).text();
        messages.push(MockMessage {
            calls,
            ..MockMessage::new(role, text)
        });
    }
}

/// A Gemini schema (OpenAPI subset) as JSON Schema: `type` in lower case, `nullable: true` as
/// a `null` type too; everything else as it is.
fn json_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => {
            let nullable = map.get("nullable") == Some(&Value::Bool(true));
            let mut out = Map::with_capacity(map.len());
            for (key, value) in map {
                match key.as_str() {
                    "nullable" => {}
                    "type" => {
                        let kind = Value::String(value.as_str().unwrap_or("").to_lowercase());
                        let kind = if nullable {
                            Value::Array(vec![kind, Value::String("null".into())])
                        } else {
                            kind
                        };
                        out.insert(key.clone(), kind);
                    }
                    "properties" => {
                        let properties = match value {
                            Value::Object(p) => p
                                .iter()
                                .map(|(name, s)| (name.clone(), json_schema(s)))
                                .collect(),
                            _ => Map::new(),
                        };
                        out.insert(key.clone(), Value::Object(properties));
                    }
                    "items" => {
                        out.insert(key.clone(), json_schema(value));
                    }
                    "anyOf" => {
                        let options = match value {
                            Value::Array(o) => o.iter().map(json_schema).collect(),
                            _ => Vec::new(),
                        };
                        out.insert(key.clone(), Value::Array(options));
                    }
                    _ => {
                        out.insert(key.clone(), value.clone());
                    }
                }
            }
            if nullable && let Some(Value::Array(values)) = out.get_mut("enum") {
                values.push(Value::Null);
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

/// A Gemini error body.
pub(crate) fn error(status: u16, message: &str) -> Value {
    to_json(&ErrorBody::new(status, message))
}

/// A wire value as JSON (infallible for these types).
fn to_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// The calls `reply` makes, with the ids the Bridle provider gives calls Gemini sent without
/// one (`gemini_call_{index}`), for the request log.
pub(crate) fn calls_made(reply: &MockReply) -> Vec<CallMade> {
    reply.calls(|i| format!("gemini_call_{i}"))
}

fn call_part(call: &MockCall) -> Part {
    Part {
        function_call: Some(FunctionCall {
            id: None,
            name: call.name.clone(),
            args: Some(call.arguments.clone()),
            extra: Extra::new(),
        }),
        ..Part::default()
    }
}

/// One answer (or stream event) of `parts`, with `finish` and `usage` when given.
fn answer(
    model: &str,
    parts: Vec<Part>,
    finish: Option<FinishReason>,
    usage: Option<&Usage>,
) -> Value {
    to_json(&GenerateContentResponse {
        candidates: vec![Candidate {
            content: Some(Content::new(Some("model"), parts)),
            finish_reason: finish,
            index: Some(0),
            extra: Extra::new(),
        }],
        usage_metadata: usage.map(|u| UsageMetadata {
            prompt_token_count: Some(u.prompt_tokens),
            candidates_token_count: Some(u.completion_tokens),
            total_token_count: Some(u.prompt_tokens + u.completion_tokens),
            extra: Extra::new(),
        }),
        model_version: Some(model.to_owned()),
        response_id: None,
        extra: Extra::new(),
    })
}

/// The reply as a `GenerateContentResponse`, or as SSE events: the text in deltas of
/// `piece_chars` characters (or the script's pieces), then the calls, the last event with
/// `finishReason` and `usageMetadata`; a broken stream stops halfway, with no finish.
pub(crate) fn render(reply: &MockReply, call: &Call, piece_chars: usize) -> Rendered {
    let model = call.request.model.as_str();
    let owned_calls;
    let (content, calls, usage, finish, broken, scripted): (
        &str,
        &[MockCall],
        &Usage,
        FinishReason,
        bool,
        Option<&[String]>,
    ) = match reply {
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
        MockReply::Corrupt { reply, .. } => return render(reply, call, piece_chars),
        MockReply::Text {
            content,
            calls,
            usage,
            stop,
            pieces,
            ..
        } => (
            content,
            calls,
            usage,
            finish_reason(*stop),
            false,
            pieces.as_deref(),
        ),
        MockReply::ToolCall {
            name, input, usage, ..
        } => {
            owned_calls = vec![MockCall {
                name: name.clone(),
                arguments: input.clone(),
            }];
            ("", &owned_calls, usage, FinishReason::Stop, false, None)
        }
        MockReply::BrokenStream { content, usage, .. } => {
            (content, &[], usage, FinishReason::Stop, true, None)
        }
    };
    if !call.request.stream {
        let mut parts: Vec<Part> = Vec::with_capacity(calls.len() + 1);
        if !content.is_empty() {
            parts.push(Part::text(content));
        }
        parts.extend(calls.iter().map(call_part));
        return Rendered::Json {
            status: 200,
            retry_after: None,
            body: answer(model, parts, Some(finish), Some(usage)),
        };
    }
    let frame = |value: Value| format!("data: {value}\n\n");
    let pieces = deltas(content, scripted, piece_chars);
    let sent = if broken {
        pieces.len() / 2
    } else {
        pieces.len()
    };
    let mut frames: Vec<String> = pieces
        .iter()
        .take(sent)
        .map(|piece| frame(answer(model, vec![Part::text(*piece)], None, None)))
        .collect();
    if !broken {
        let parts = calls.iter().map(call_part).collect();
        frames.push(frame(answer(model, parts, Some(finish), Some(usage))));
    }
    Rendered::Events { frames, broken }
}

fn finish_reason(stop: StopReason) -> FinishReason {
    match stop {
        StopReason::End => FinishReason::Stop,
        StopReason::Length => FinishReason::MaxTokens,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_request_is_read_as_the_model_s_request() {
        let body = json!({
            "systemInstruction": {"parts": [{"text": "rules"}]},
            "contents": [
                {"role": "user", "parts": [{"text": "weather?"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {"result": "3 C"}}}]}
            ],
            "tools": [{"functionDeclarations": [{"name": "get_weather",
                "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING", "nullable": true}}}}]}],
            "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}}
        });
        let call = parse(&body, "gemini-x", true).unwrap();
        let request = call.request;
        assert_eq!(request.model, "gemini-x");
        assert!(request.stream);
        assert_eq!(request.messages[0], MockMessage::new(Role::System, "rules"));
        assert_eq!(request.messages[2].calls[0].name, "get_weather");
        assert_eq!(
            request.messages[3],
            MockMessage::tool_result("get_weather", "3 C")
        );
        assert_eq!(
            request.format,
            ReplyFormat::Call {
                name: Some("get_weather".into())
            }
        );
        assert_eq!(
            request.tools[0].parameters,
            json!({"type": "object", "properties": {"city": {"type": ["string", "null"]}}})
        );
        let unknown = json!({"contents": [{"parts": [{"text": "x"}]}], "tools": [{"functionDeclarations": [{"name": "f"}]}],
            "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["g"]}}});
        assert!(parse(&unknown, "m", false).unwrap_err().contains("\"g\""));
        assert!(parse(&json!({"contents": []}), "m", false).is_err());
    }

    #[test]
    fn a_response_schema_is_native_structured_output() {
        let body = json!({"contents": [{"parts": [{"text": "x"}]}],
            "generationConfig": {"responseMimeType": "application/json",
                "responseSchema": {"type": "OBJECT", "properties": {"a": {"type": "STRING", "enum": ["x"]}}}}});
        assert_eq!(
            parse(&body, "m", false).unwrap().request.format,
            ReplyFormat::JsonSchema {
                schema: json!({"type": "object", "properties": {"a": {"type": "string", "enum": ["x"]}}})
            }
        );
    }
}
