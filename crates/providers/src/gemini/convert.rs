//! [`contents`], [`tool_config`], [`generation_config`] and [`refusal`]: a provider-neutral
//! request in Gemini's terms — `system`/`developer` text as the `systemInstruction`, the
//! assistant as `model`, tool calls as `functionCall` parts, tool results as `functionResponse`
//! parts (named after the call they answer, found by its id), image data URLs and audio as
//! `inlineData`, OpenAI's `tool_choice` as a `functionCallingConfig`, the sampling options as
//! the `generationConfig` — and what Gemini cannot take, refused by name.

use super::schema::response_schema;
use crate::{ChatMessage, ChatRequest, ProviderError, Role, offered_functions};
use bridle_core::ToolCall;
use bridle_wire::Extra;
use bridle_wire::gemini::{
    Blob, Content, FunctionCall, FunctionCallingConfig, FunctionCallingMode, FunctionDeclaration,
    FunctionResponse, GenerationConfig, Part, Tool, ToolConfig,
};
use bridle_wire::openai::{self, ContentPart, PartKind, ToolChoiceMode};
use serde_json::{Map, Value};

/// The request's turns other than instructions: consecutive tool results go in one `user`
/// turn, as Gemini wants the answers to one turn's calls together.
pub(super) fn contents(request: &ChatRequest) -> Vec<Content> {
    let mut contents: Vec<Content> = Vec::with_capacity(request.messages.len());
    for (i, m) in request.messages.iter().enumerate() {
        if m.role.is_instructions() {
            continue;
        }
        if m.role == Role::Tool {
            let part = result_part(m, called_name(&request.messages[..i], m));
            match contents.last_mut() {
                Some(last) if last.parts.iter().all(|p| p.function_response.is_some()) => {
                    last.parts.push(part);
                }
                _ => contents.push(Content::new(Some("user"), vec![part])),
            }
            continue;
        }
        let mut parts: Vec<Part> = if m.parts.is_empty() {
            (!m.content.is_empty())
                .then(|| Part::text(m.content.clone()))
                .into_iter()
                .collect()
        } else {
            m.parts.iter().filter_map(part).collect()
        };
        parts.extend(m.tool_calls.iter().map(call_part));
        let role = if m.role == Role::Assistant {
            "model"
        } else {
            "user"
        };
        contents.push(Content::new(Some(role), parts));
    }
    contents
}

/// The instructions (`system` and `developer` messages) as one `systemInstruction`.
pub(super) fn system_instruction(request: &ChatRequest) -> Option<Content> {
    let text: Vec<&str> = request
        .messages
        .iter()
        .filter(|m| m.role.is_instructions())
        .map(|m| m.content.as_str())
        .collect();
    (!text.is_empty()).then(|| Content::new(None, vec![Part::text(text.join("\n\n"))]))
}

/// The offered functions as one tool of `functionDeclarations`: parameters in Gemini's schema
/// subset where they fit it, else as `parametersJsonSchema`.
pub(super) fn tools(request: &ChatRequest) -> Option<Vec<Tool>> {
    let declarations: Vec<FunctionDeclaration> = offered_functions(&request.tools)
        .map(|function| {
            let (parameters, json_schema) = match function.parameters {
                None => (None, None),
                Some(schema) => match response_schema(&schema) {
                    Ok(converted) => (Some(converted), None),
                    Err(_) => (None, Some(schema)),
                },
            };
            FunctionDeclaration {
                name: function.name,
                description: function.description,
                parameters,
                parameters_json_schema: json_schema,
                extra: Extra::new(),
            }
        })
        .collect();
    (!declarations.is_empty()).then(|| {
        vec![Tool {
            function_declarations: Some(declarations),
            extra: Extra::new(),
        }]
    })
}

/// OpenAI's `tool_choice` as a `functionCallingConfig`: `none` → `NONE`, `auto` → `AUTO`,
/// `required` → `ANY`, a named function → `ANY` allowing that one.
pub(super) fn tool_config(request: &ChatRequest) -> Option<ToolConfig> {
    let (mode, allowed) = match request.tool_choice.as_ref()? {
        openai::ToolChoice::Mode(ToolChoiceMode::None) => (FunctionCallingMode::None, None),
        openai::ToolChoice::Mode(ToolChoiceMode::Required) => (FunctionCallingMode::Any, None),
        openai::ToolChoice::Mode(_) => (FunctionCallingMode::Auto, None),
        openai::ToolChoice::Named(named) => (
            FunctionCallingMode::Any,
            named.function.as_ref().map(|f| vec![f.name.clone()]),
        ),
    };
    Some(ToolConfig {
        function_calling_config: Some(FunctionCallingConfig {
            mode: Some(mode),
            allowed_function_names: allowed,
            extra: Extra::new(),
        }),
        extra: Extra::new(),
    })
}

/// The sampling options as a `generationConfig` (none when nothing is set).
pub(super) fn generation_config(request: &ChatRequest) -> GenerationConfig {
    let options = &request.options;
    GenerationConfig {
        temperature: request.temperature,
        top_p: options.top_p,
        max_output_tokens: request.max_tokens,
        stop_sequences: options.stop.is_some().then(|| options.stop_sequences()),
        seed: options.seed,
        presence_penalty: options.presence_penalty,
        frequency_penalty: options.frequency_penalty,
        ..GenerationConfig::default()
    }
}

/// The name of the function the call `result` answers: the latest earlier assistant call
/// with its id.
fn called_name<'m>(before: &'m [ChatMessage], result: &ChatMessage) -> Option<&'m str> {
    let id = result.tool_call_id.as_deref()?;
    before
        .iter()
        .rev()
        .flat_map(|m| m.tool_calls.iter())
        .find(|call| call.id == id)
        .map(|call| call.name.as_str())
}

/// A call id as Gemini is sent it: none for an id Bridle made (Gemini gave none).
fn sent_id(id: &str) -> Option<String> {
    (!id.is_empty() && !id.starts_with(super::MADE_ID_PREFIX)).then(|| id.to_owned())
}

/// A tool result as a `functionResponse` part: a JSON object result as it is, any other
/// result (JSON or text) as `{"result": …}`.
fn result_part(m: &ChatMessage, name: Option<&str>) -> Part {
    let response = match serde_json::from_str::<Value>(&m.content) {
        Ok(Value::Object(object)) => Value::Object(object),
        Ok(other) => Value::Object(Map::from_iter([("result".to_owned(), other)])),
        Err(_) => Value::Object(Map::from_iter([(
            "result".to_owned(),
            Value::String(m.content.clone()),
        )])),
    };
    Part {
        function_response: Some(FunctionResponse {
            id: m.tool_call_id.as_deref().and_then(sent_id),
            name: name.unwrap_or_default().to_owned(),
            response,
            extra: Extra::new(),
        }),
        ..Part::default()
    }
}

/// An assistant's call as a `functionCall` part (arguments that are not an object go as an
/// object holding them).
fn call_part(call: &ToolCall) -> Part {
    let args = match &call.arguments {
        Value::Object(_) => call.arguments.clone(),
        other => Value::Object(Map::from_iter([("arguments".to_owned(), other.clone())])),
    };
    Part {
        function_call: Some(FunctionCall {
            id: sent_id(&call.id),
            name: call.name.clone(),
            args: Some(args),
            extra: Extra::new(),
        }),
        ..Part::default()
    }
}

/// A content part as a Gemini part: text, an image given as a `data:` URL, or audio, as
/// `inlineData`. Others are refused by [`refusal`] before a body is built.
fn part(part: &ContentPart) -> Option<Part> {
    let inline = |mime_type: String, data: String| Part {
        inline_data: Some(Blob {
            mime_type,
            data,
            extra: Extra::new(),
        }),
        ..Part::default()
    };
    match part.kind {
        PartKind::Text => Some(Part::text(part.text.clone().unwrap_or_default())),
        PartKind::ImageUrl => {
            let url = &part.image_url.as_ref()?.url;
            let (mime, data) = url.strip_prefix("data:")?.split_once(";base64,")?;
            Some(inline(mime.to_owned(), data.to_owned()))
        }
        PartKind::InputAudio => {
            let audio = part.input_audio.as_ref()?;
            Some(inline(
                format!("audio/{}", audio.format),
                audio.data.clone(),
            ))
        }
        _ => None,
    }
}

/// What in `request` Gemini cannot say, as the error naming it: options it has no field for
/// (`n` above 1, `logprobs`, `parallel_tool_calls: false`, `reasoning_effort`, fields Bridle
/// does not know), a message's unknown fields, content parts other than text, data-URL images
/// and audio, a tool result whose call is not in the conversation (Gemini needs the
/// function's name), and a `tool_choice` that names no function.
pub(super) fn refusal(request: &ChatRequest) -> Option<ProviderError> {
    let unsupported = |field: String, what: &str| ProviderError::Unsupported {
        message: format!("the gemini provider cannot honour {what}"),
        field,
    };
    if let Some(name) = request.options.beyond_basics().into_iter().find(|name| {
        !matches!(
            name.as_str(),
            "top_p" | "seed" | "presence_penalty" | "frequency_penalty"
        )
    }) {
        return Some(unsupported(name.clone(), &format!("`{name}`")));
    }
    for (i, m) in request.messages.iter().enumerate() {
        for (j, p) in m.parts.iter().enumerate() {
            if part(p).is_none() {
                let what = if p.kind == PartKind::ImageUrl {
                    "an image URL that is not a data: URL".to_owned()
                } else {
                    format!("a content part of type `{}`", p.kind.as_str())
                };
                return Some(unsupported(format!("messages[{i}].content[{j}]"), &what));
            }
        }
        if m.role == Role::Tool && called_name(&request.messages[..i], m).is_none() {
            return Some(unsupported(
                format!("messages[{i}].tool_call_id"),
                "a tool result whose call is not in the conversation (Gemini needs the function's name)",
            ));
        }
    }
    request.foreign_refusal("gemini")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CallOptions;
    use serde_json::json;

    fn content_part(value: Value) -> ContentPart {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_tool_round_trip_becomes_function_call_and_response_parts() {
        let mut assistant = ChatMessage::new(Role::Assistant, "Let me look.");
        assistant.tool_calls = vec![
            ToolCall::new("get_weather", json!({"city": "Oslo"})).with_id("call_1"),
            ToolCall::new("get_time", json!({})).with_id("call_2"),
        ];
        let mut first = ChatMessage::new(Role::Tool, "{\"temp\": 3}");
        first.tool_call_id = Some("call_1".into());
        let mut second = ChatMessage::new(Role::Tool, "12:00");
        second.tool_call_id = Some("call_2".into());
        let request = ChatRequest {
            messages: vec![
                ChatMessage::new(Role::System, "be brief"),
                ChatMessage::new(Role::Developer, "in English"),
                ChatMessage::new(Role::User, "weather?"),
                assistant,
                first,
                second,
            ],
            ..ChatRequest::default()
        };
        assert!(refusal(&request).is_none());
        assert_eq!(
            serde_json::to_value(system_instruction(&request)).unwrap(),
            json!({"parts": [{"text": "be brief\n\nin English"}]})
        );
        assert_eq!(
            serde_json::to_value(contents(&request)).unwrap(),
            json!([
                {"role": "user", "parts": [{"text": "weather?"}]},
                {"role": "model", "parts": [
                    {"text": "Let me look."},
                    {"functionCall": {"id": "call_1", "name": "get_weather", "args": {"city": "Oslo"}}},
                    {"functionCall": {"id": "call_2", "name": "get_time", "args": {}}}
                ]},
                {"role": "user", "parts": [
                    {"functionResponse": {"id": "call_1", "name": "get_weather", "response": {"temp": 3}}},
                    {"functionResponse": {"id": "call_2", "name": "get_time", "response": {"result": "12:00"}}}
                ]}
            ])
        );
    }

    #[test]
    fn ids_bridle_made_for_gemini_s_calls_are_not_sent_back() {
        let mut assistant = ChatMessage::new(Role::Assistant, "");
        assistant.tool_calls = vec![ToolCall::new("f", json!({})).with_id("gemini_call_0")];
        let mut result = ChatMessage::new(Role::Tool, "ok");
        result.tool_call_id = Some("gemini_call_0".into());
        let request = ChatRequest {
            messages: vec![ChatMessage::new(Role::User, "go"), assistant, result],
            ..ChatRequest::default()
        };
        assert!(refusal(&request).is_none());
        assert_eq!(
            serde_json::to_value(&contents(&request)[1..]).unwrap(),
            json!([
                {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"result": "ok"}}}]}
            ])
        );
    }

    #[test]
    fn images_and_audio_become_inline_data() {
        let mut user = ChatMessage::new(Role::User, "what is this?");
        user.parts = vec![
            ContentPart::text("what is this?"),
            content_part(
                json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}),
            ),
            content_part(
                json!({"type": "input_audio", "input_audio": {"data": "BBBB", "format": "wav"}}),
            ),
        ];
        let request = ChatRequest {
            messages: vec![user],
            ..ChatRequest::default()
        };
        assert!(refusal(&request).is_none());
        assert_eq!(
            serde_json::to_value(&contents(&request)[0].parts).unwrap(),
            json!([
                {"text": "what is this?"},
                {"inlineData": {"mimeType": "image/png", "data": "AAAA"}},
                {"inlineData": {"mimeType": "audio/wav", "data": "BBBB"}}
            ])
        );
    }

    #[test]
    fn what_gemini_cannot_say_is_refused_by_name() {
        let field = |request: &ChatRequest| match refusal(request) {
            Some(ProviderError::Unsupported { field, .. }) => Some(field),
            _ => None,
        };
        let with = |options: CallOptions| ChatRequest {
            options,
            ..ChatRequest::default()
        };
        for (options, name) in [
            (
                CallOptions {
                    n: Some(2),
                    ..CallOptions::default()
                },
                "n",
            ),
            (
                CallOptions {
                    logprobs: Some(true),
                    ..CallOptions::default()
                },
                "logprobs",
            ),
            (
                CallOptions {
                    parallel_tool_calls: Some(false),
                    ..CallOptions::default()
                },
                "parallel_tool_calls",
            ),
        ] {
            assert_eq!(field(&with(options)), Some(name.to_owned()));
        }
        // Gemini has these.
        let honoured = with(CallOptions {
            top_p: Some(0.5),
            seed: Some(7),
            stop: Some(openai::Stop::One("END".into())),
            presence_penalty: Some(0.1),
            n: Some(1),
            ..CallOptions::default()
        });
        assert_eq!(field(&honoured), None);
        let config = serde_json::to_value(generation_config(&honoured)).unwrap();
        assert_eq!(
            config,
            json!({"topP": 0.5, "seed": 7, "stopSequences": ["END"], "presencePenalty": 0.1})
        );

        let mut user = ChatMessage::new(Role::User, "");
        user.parts = vec![content_part(
            json!({"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}),
        )];
        let mut orphan = ChatMessage::new(Role::Tool, "{}");
        orphan.tool_call_id = Some("call_9".into());
        let request = |messages| ChatRequest {
            messages,
            ..ChatRequest::default()
        };
        assert_eq!(
            field(&request(vec![user])),
            Some("messages[0].content[0]".into())
        );
        assert_eq!(
            field(&request(vec![ChatMessage::new(Role::User, "hi"), orphan])),
            Some("messages[1].tool_call_id".into())
        );
    }

    #[test]
    fn tool_choice_maps_to_function_calling_modes() {
        let config = |value: Value| {
            let request = ChatRequest {
                tool_choice: Some(serde_json::from_value(value).unwrap()),
                ..ChatRequest::default()
            };
            serde_json::to_value(tool_config(&request)).unwrap()
        };
        assert_eq!(
            config(json!("required")),
            json!({"functionCallingConfig": {"mode": "ANY"}})
        );
        assert_eq!(
            config(json!("none")),
            json!({"functionCallingConfig": {"mode": "NONE"}})
        );
        assert_eq!(
            config(json!({"type": "function", "function": {"name": "f"}})),
            json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["f"]}})
        );
    }
}
