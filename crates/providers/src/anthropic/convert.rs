//! [`messages`], [`tool_choice`] and [`refusal`]: what the Messages API takes from a
//! provider-neutral request beyond plain text — content parts as blocks (`text`, and images as
//! `base64` or `url` sources), an assistant's tool calls as `tool_use` blocks, a tool's result
//! as a `tool_result` block of a `user` message, OpenAI's `tool_choice` and
//! `parallel_tool_calls` as Anthropic's choice — and what it cannot take, refused by name.

use crate::{ChatMessage, ChatRequest, ProviderError, Role};
use bridle_wire::Extra;
use bridle_wire::anthropic::{
    ContentBlock, DataSource, ImageBlock, Message, MessageContent, Source, ToolChoice,
    ToolChoiceKind, UrlSource,
};
use bridle_wire::openai::{self, ContentPart, PartKind, ToolChoiceMode};
use serde_json::{Map, Value};

/// The request's messages other than `system` ones, in the Messages API's form.
pub(super) fn messages(request: &ChatRequest) -> Vec<Message> {
    request
        .messages
        .iter()
        .filter(|m| !m.role.is_instructions())
        .map(message)
        .collect()
}

fn message(m: &ChatMessage) -> Message {
    if m.role == Role::Tool {
        let result = ContentBlock::tool_result(
            m.tool_call_id.clone().unwrap_or_default(),
            m.content.clone(),
        );
        return blocks(Role::Tool, vec![result]);
    }
    if m.parts.is_empty() && m.tool_calls.is_empty() {
        return Message::text(m.role.into(), m.content.clone());
    }
    let mut content: Vec<ContentBlock> = if m.parts.is_empty() {
        (!m.content.is_empty())
            .then(|| ContentBlock::text(m.content.clone()))
            .into_iter()
            .collect()
    } else {
        m.parts.iter().filter_map(block).collect()
    };
    content.extend(m.tool_calls.iter().map(|call| {
        // `input` must be an object: arguments that are not one (text the model left broken)
        // go as an object holding that text.
        let input = match &call.arguments {
            Value::Object(_) => call.arguments.clone(),
            other => Value::Object(Map::from_iter([("arguments".to_owned(), other.clone())])),
        };
        ContentBlock::tool_use(call.id.clone(), call.name.clone(), input)
    }));
    blocks(m.role, content)
}

fn blocks(role: Role, content: Vec<ContentBlock>) -> Message {
    Message {
        role: role.into(),
        content: MessageContent::Blocks(content),
        extra: Extra::new(),
    }
}

/// A content part as a block: `text`, or an `image_url` whose URL is a `data:` URL (a
/// `base64` source) or an `http(s)` address (a `url` source). Others are refused by
/// [`refusal`] before a body is built.
fn block(part: &ContentPart) -> Option<ContentBlock> {
    match part.kind {
        PartKind::Text => Some(ContentBlock::text(part.text.clone().unwrap_or_default())),
        PartKind::ImageUrl => {
            let source = image_source(&part.image_url.as_ref()?.url)?;
            Some(ContentBlock::Image(ImageBlock {
                source,
                extra: Extra::new(),
            }))
        }
        _ => None,
    }
}

/// The source of an image at `url`: `data:MEDIA;base64,DATA` or an `http(s)` address.
fn image_source(url: &str) -> Option<Source> {
    if let Some(data) = url.strip_prefix("data:") {
        let (media_type, data) = data.split_once(";base64,")?;
        return Some(Source::Base64(DataSource {
            media_type: media_type.to_owned(),
            data: data.to_owned(),
            extra: Extra::new(),
        }));
    }
    (url.starts_with("https://") || url.starts_with("http://")).then(|| {
        Source::Url(UrlSource {
            url: url.to_owned(),
            extra: Extra::new(),
        })
    })
}

/// OpenAI's `tool_choice` (and `parallel_tool_calls: false`) as Anthropic's: `none`, `auto`,
/// `required` → `any`, a named function → `tool`.
pub(super) fn tool_choice(request: &ChatRequest) -> Option<ToolChoice> {
    let single = (request.options.parallel_tool_calls == Some(false)).then_some(true);
    let (kind, name) = match &request.tool_choice {
        None if single.is_some() => (ToolChoiceKind::Auto, None),
        None => return None,
        Some(openai::ToolChoice::Mode(ToolChoiceMode::None)) => (ToolChoiceKind::None, None),
        Some(openai::ToolChoice::Mode(ToolChoiceMode::Required)) => (ToolChoiceKind::Any, None),
        Some(openai::ToolChoice::Mode(_)) => (ToolChoiceKind::Auto, None),
        Some(openai::ToolChoice::Named(named)) => (
            ToolChoiceKind::Tool,
            named.function.as_ref().map(|f| f.name.clone()),
        ),
    };
    Some(ToolChoice {
        kind,
        name,
        // `none` takes no such flag.
        disable_parallel_tool_use: single.filter(|_| kind_takes_flag(&request.tool_choice)),
        extra: Extra::new(),
    })
}

fn kind_takes_flag(choice: &Option<openai::ToolChoice>) -> bool {
    !matches!(choice, Some(openai::ToolChoice::Mode(ToolChoiceMode::None)))
}

/// What in `request` the Messages API cannot say, as the error naming it: options it has no
/// field for (`seed`, `n` above 1, `logprobs`, penalties, `reasoning_effort`, fields Bridle
/// does not know), content parts other than text and images (`input_audio`, `file`), images
/// whose URL is neither `data:` nor `http(s)`, and a `tool_choice` of another kind.
pub(super) fn refusal(request: &ChatRequest) -> Option<ProviderError> {
    let unsupported = |field: String, what: &str| ProviderError::Unsupported {
        message: format!("the anthropic provider cannot honour {what}"),
        field,
    };
    if let Some(name) = request
        .options
        .beyond_basics()
        .into_iter()
        .find(|name| !matches!(name.as_str(), "top_p" | "parallel_tool_calls"))
    {
        return Some(unsupported(name.clone(), &format!("`{name}`")));
    }
    for (i, m) in request.messages.iter().enumerate() {
        for (j, part) in m.parts.iter().enumerate() {
            if block(part).is_none() {
                let what = if part.kind == PartKind::ImageUrl {
                    "an image URL that is neither a data: URL nor http(s)".to_owned()
                } else {
                    format!("a content part of type `{}`", part.kind.as_str())
                };
                return Some(unsupported(format!("messages[{i}].content[{j}]"), &what));
            }
        }
    }
    request.foreign_refusal("anthropic")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CallOptions;
    use bridle_core::ToolCall;
    use serde_json::json;

    fn part(value: Value) -> ContentPart {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_tool_round_trip_becomes_tool_use_and_tool_result_blocks() {
        let mut assistant = ChatMessage::new(Role::Assistant, "");
        assistant.tool_calls =
            vec![ToolCall::new("get_weather", json!({"city": "Oslo"})).with_id("call_1")];
        let mut result = ChatMessage::new(Role::Tool, "{\"temp\": 3}");
        result.tool_call_id = Some("call_1".into());
        let request = ChatRequest {
            messages: vec![
                ChatMessage::new(Role::System, "be brief"),
                ChatMessage::new(Role::User, "weather?"),
                assistant,
                result,
            ],
            ..ChatRequest::default()
        };
        let wire = serde_json::to_value(messages(&request)).unwrap();
        assert_eq!(
            wire,
            json!([
                {"role": "user", "content": "weather?"},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Oslo"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_1", "content": "{\"temp\": 3}"}
                ]}
            ])
        );
    }

    #[test]
    fn images_become_base64_or_url_sources() {
        let mut user = ChatMessage::new(Role::User, "what is this?");
        user.parts = vec![
            ContentPart::text("what is this?"),
            part(json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}})),
            part(json!({"type": "image_url", "image_url": {"url": "https://example.com/a.png"}})),
        ];
        let request = ChatRequest {
            messages: vec![user],
            ..ChatRequest::default()
        };
        assert!(refusal(&request).is_none());
        let wire = serde_json::to_value(messages(&request)).unwrap();
        assert_eq!(
            wire[0]["content"],
            json!([
                {"type": "text", "text": "what is this?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
                {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}
            ])
        );
    }

    #[test]
    fn what_anthropic_cannot_say_is_refused_by_name() {
        let with = |options: CallOptions| ChatRequest {
            options,
            ..ChatRequest::default()
        };
        let field = |request: &ChatRequest| match refusal(request) {
            Some(ProviderError::Unsupported { field, .. }) => Some(field),
            _ => None,
        };
        assert_eq!(
            field(&with(CallOptions {
                seed: Some(7),
                ..CallOptions::default()
            })),
            Some("seed".into())
        );
        assert_eq!(
            field(&with(CallOptions {
                n: Some(2),
                ..CallOptions::default()
            })),
            Some("n".into())
        );
        // Anthropic has these.
        assert_eq!(
            field(&with(CallOptions {
                top_p: Some(0.5),
                stop: Some(openai::Stop::One("END".into())),
                user: Some("u1".into()),
                n: Some(1),
                parallel_tool_calls: Some(false),
                ..CallOptions::default()
            })),
            None
        );
        let mut audio = ChatMessage::new(Role::User, "");
        audio.parts = vec![part(
            json!({"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}),
        )];
        let request = ChatRequest {
            messages: vec![ChatMessage::new(Role::User, "hi"), audio],
            ..ChatRequest::default()
        };
        assert_eq!(field(&request), Some("messages[1].content[0]".into()));
    }

    #[test]
    fn tool_choice_maps_to_anthropic_kinds() {
        let choice = |value: Value, parallel: Option<bool>| {
            let request = ChatRequest {
                tool_choice: Some(serde_json::from_value(value).unwrap()),
                options: CallOptions {
                    parallel_tool_calls: parallel,
                    ..CallOptions::default()
                },
                ..ChatRequest::default()
            };
            serde_json::to_value(tool_choice(&request)).unwrap()
        };
        assert_eq!(choice(json!("required"), None), json!({"type": "any"}));
        assert_eq!(choice(json!("none"), Some(false)), json!({"type": "none"}));
        assert_eq!(
            choice(
                json!({"type": "function", "function": {"name": "f"}}),
                Some(false)
            ),
            json!({"type": "tool", "name": "f", "disable_parallel_tool_use": true})
        );
    }
}
