//! The OpenAI Chat Completions front end: [`parse`] reads a `POST /v1/chat/completions` body
//! into a [`Call`], [`render`] writes a [`MockReply`] as a `chat.completion` object or as
//! `chat.completion.chunk` SSE events ending in `data: [DONE]`, and [`error`] writes
//! OpenAI-shaped error bodies.

use crate::request::{MockMessage, MockReply, MockRequest, ReplyFormat, Role, StopReason, Usage};
use crate::server::{Call, Rendered, pieces, unix_time};
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
        },
        include_usage,
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

/// The reply as a completion object or as SSE events.
pub(crate) fn render(reply: &MockReply, call: &Call) -> Rendered {
    let model = call.request.model.as_str();
    let id = format!("chatcmpl-mock-{}", reply.info().id);
    let (content, usage, finish, broken) = match reply {
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
        MockReply::Text {
            content,
            usage,
            stop,
            ..
        } => (content.clone(), usage, finish_reason(*stop), false),
        MockReply::ToolCall { input, usage, .. } => (input.to_string(), usage, "stop", false),
        MockReply::BrokenStream { content, usage, .. } => (content.clone(), usage, "stop", true),
    };
    let created = unix_time();
    if !call.request.stream {
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
                    "message": {"role": "assistant", "content": content, "refusal": null},
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
    let parts = pieces(&content);
    let sent = if broken { parts.len() / 2 } else { parts.len() };
    for piece in parts.iter().take(sent) {
        frames.push(delta(json!({"content": piece}), Value::Null));
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
}
