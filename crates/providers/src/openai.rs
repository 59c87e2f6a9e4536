//! [`OpenAi`]: Chat Completions against any OpenAI-compatible base URL (OpenAI, vLLM, Ollama,
//! llama.cpp server, GPUStack), non-streaming and streaming. Passes `response_format`
//! `json_schema` through when the model entry says the server supports it (Bridle validates
//! either way), and merges the system text into the first user message for models without a
//! system role. Offered function tools go out as `tools` (the choice left to the model), and
//! the calls come back from `message.tool_calls` — or, streamed, from the `delta.tool_calls`
//! pieces, joined by index.

use super::body::BodyEncoder;
use super::events::async_stream_events;
use super::http::{self, HttpSettings};
use super::{
    ChatRequest, Completion, EventStream, Provider, ProviderError, RequestPayload, ResponseFormat,
    Role, Usage, non_streaming, streaming,
};
use async_trait::async_trait;
use bridle_core::ToolCall;
use futures::StreamExt;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Per-model behaviour of an OpenAI-compatible server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OpenAiOptions {
    /// Send `response_format: {"type": "json_schema", …}` (native structured output).
    pub native_structured_output: bool,
    /// The model has no system role: put the system text at the start of the first user message.
    pub merge_system: bool,
}

/// An OpenAI-compatible Chat Completions provider.
#[derive(Debug, Clone)]
pub struct OpenAi {
    settings: HttpSettings,
    options: OpenAiOptions,
    client: reqwest::Client,
    encoder: Arc<BodyEncoder>,
}

impl OpenAi {
    /// A provider for `settings` with `options`.
    pub fn new(settings: HttpSettings, options: OpenAiOptions) -> Result<Self, ProviderError> {
        let client = http::client(&settings)?;
        Ok(Self {
            settings,
            options,
            client,
            encoder: Arc::default(),
        })
    }

    fn body(&self, request: &ChatRequest, stream: bool) -> Value {
        let mut messages: Vec<Value> = Vec::with_capacity(request.messages.len());
        let mut pending_system: Vec<&str> = Vec::new();
        for message in &request.messages {
            if self.options.merge_system && message.role == Role::System {
                pending_system.push(&message.content);
                continue;
            }
            let content = if self.options.merge_system
                && message.role == Role::User
                && !pending_system.is_empty()
            {
                let merged = format!("{}\n\n{}", pending_system.join("\n\n"), message.content);
                pending_system.clear();
                merged
            } else {
                message.content.clone()
            };
            messages.push(json!({"role": message.role.as_str(), "content": content}));
        }
        if !pending_system.is_empty() {
            messages.insert(
                0,
                json!({"role": "user", "content": pending_system.join("\n\n")}),
            );
        }
        let mut body = json!({"model": request.model, "messages": messages, "stream": stream});
        if let Some(t) = request.temperature {
            body["temperature"] = json!(t);
        }
        if let Some(m) = request.max_tokens {
            body["max_tokens"] = json!(m);
        }
        if stream {
            body["stream_options"] = json!({"include_usage": true});
        }
        if !request.tools.is_empty() {
            body["tools"] = Value::Array(request.tools.clone());
        }
        if self.options.native_structured_output {
            match &request.response_format {
                Some(ResponseFormat::JsonSchema { name, schema }) => {
                    body["response_format"] = json!({"type": "json_schema", "json_schema": {"name": schema_name(name), "schema": schema, "strict": false}});
                }
                Some(ResponseFormat::JsonObject) => {
                    body["response_format"] = json!({"type": "json_object"})
                }
                None => {}
            }
        }
        body
    }

    async fn post(
        &self,
        body: &Value,
        deadline: http::Deadline,
    ) -> Result<reqwest::Response, ProviderError> {
        let mut builder = http::post_json(
            &self.client,
            self.settings.url("chat/completions"),
            body,
            &self.encoder,
        )?;
        if let Some(key) = &self.settings.api_key {
            builder = builder.bearer_auth(key);
        }
        http::send(builder, self.settings.timeout, deadline).await
    }

    /// Posts a non-streaming `body` and reads the completion (`model`: the model asked for,
    /// used when the answer does not name one).
    async fn complete_body(&self, body: &Value, model: &str) -> Result<Completion, ProviderError> {
        let response = self.post(body, http::Deadline::Whole).await?;
        let raw = http::json_body(response, self.settings.timeout).await?;
        let choice = raw
            .pointer("/choices/0")
            .ok_or_else(|| ProviderError::Decode("the answer has no choices[0]".into()))?;
        let content = match choice.pointer("/message/content") {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        let tool_calls = choice.get("message").map(tool_calls_of).unwrap_or_default();
        Ok(Completion {
            content,
            tool_calls,
            usage: usage_of(&raw),
            model: raw
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or(model)
                .to_owned(),
            finish_reason: choice
                .get("finish_reason")
                .and_then(Value::as_str)
                .map(str::to_owned),
            raw,
        })
    }
}

/// OpenAI accepts `^[a-zA-Z0-9_-]{1,64}$` as a schema name.
fn schema_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if cleaned.is_empty() {
        "reply".to_owned()
    } else {
        cleaned
    }
}

/// The calls of a Chat Completions message: `tool_calls[].function.{name, arguments}`, the
/// arguments given as JSON text (an object is taken as it is). Entries without a name are
/// skipped.
fn tool_calls_of(message: &Value) -> Vec<ToolCall> {
    let Some(calls) = message.get("tool_calls").and_then(Value::as_array) else {
        return Vec::new();
    };
    calls
        .iter()
        .filter_map(|call| {
            let function = call.get("function")?;
            let name = function.get("name").and_then(Value::as_str)?;
            Some(match function.get("arguments") {
                Some(Value::String(text)) => ToolCall::from_text(name, text),
                None | Some(Value::Null) => ToolCall::from_text(name, ""),
                Some(other) => ToolCall::new(name, other.clone()),
            })
        })
        .collect()
}

/// Tool calls streamed as `delta.tool_calls[{index, function: {name, arguments}}]` pieces:
/// the name and the arguments text of each index are concatenated.
#[derive(Debug, Default)]
struct StreamedCalls(BTreeMap<u64, (String, String)>);

impl StreamedCalls {
    /// Takes the tool call pieces of one chunk's `delta`.
    fn add(&mut self, delta: &Value) {
        let Some(pieces) = delta.get("tool_calls").and_then(Value::as_array) else {
            return;
        };
        for (position, piece) in pieces.iter().enumerate() {
            let index = piece
                .get("index")
                .and_then(Value::as_u64)
                .unwrap_or(position as u64);
            let (name, arguments) = self.0.entry(index).or_default();
            let text = |key: &str| {
                piece
                    .pointer(&format!("/function/{key}"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
            };
            name.push_str(text("name"));
            arguments.push_str(text("arguments"));
        }
    }

    /// The assembled calls, in index order (nameless ones skipped).
    fn calls(&self) -> Vec<ToolCall> {
        self.0
            .values()
            .filter(|(name, _)| !name.is_empty())
            .map(|(name, arguments)| ToolCall::from_text(name, arguments))
            .collect()
    }

    /// The assembled calls as the `tool_calls` of a message, for the stored raw answer.
    fn raw(&self) -> Value {
        self.0
            .iter()
            .map(|(index, (name, arguments))| {
                json!({"index": index, "type": "function", "function": {"name": name, "arguments": arguments}})
            })
            .collect()
    }
}

fn usage_of(value: &Value) -> Option<Usage> {
    let usage = value.get("usage")?;
    Some(Usage {
        input_tokens: usage
            .get("prompt_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        output_tokens: usage
            .get("completion_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
    })
}

#[async_trait]
impl Provider for OpenAi {
    fn name(&self) -> &str {
        "openai"
    }

    fn payload(&self, request: &ChatRequest, stream: bool) -> RequestPayload {
        let auth = self
            .settings
            .api_key
            .as_ref()
            .map(|k| format!("Bearer {k}"));
        RequestPayload {
            provider: self.name().to_owned(),
            url: self.endpoint(),
            headers: http::stored_headers(&[
                ("content-type", Some("application/json")),
                ("authorization", auth.as_deref()),
            ]),
            body: self.body(request, stream),
        }
    }

    async fn complete(&self, request: &ChatRequest) -> Result<Completion, ProviderError> {
        self.complete_body(&self.body(request, false), &request.model)
            .await
    }

    fn endpoint(&self) -> String {
        self.settings.url("chat/completions")
    }

    async fn send(&self, body: &Value) -> Result<Completion, ProviderError> {
        let (body, model) = non_streaming(body);
        self.complete_body(&body, model).await
    }

    async fn send_stream(&self, body: &Value) -> Result<EventStream, ProviderError> {
        let (body, fallback_model) = streaming(body, true);
        let response = self.post(&body, http::Deadline::Headers).await?;
        let mut events = http::sse(response, self.settings.timeout);
        let stream = async_stream_events(move |tx| async move {
            let (mut content, mut usage, mut model, mut finish) = (String::new(), None, None, None);
            let mut calls = StreamedCalls::default();
            let mut chunks = 0u64;
            while let Some(event) = events.next().await {
                let event = match event {
                    Ok(event) => event,
                    Err(e) => return tx.error(e).await,
                };
                if event.data.trim() == "[DONE]" {
                    let mut raw = json!({"object": "chat.completion.stream", "chunks": chunks, "content": content, "finish_reason": finish, "usage": usage.map(|u: Usage| json!({"prompt_tokens": u.input_tokens, "completion_tokens": u.output_tokens}))});
                    if !calls.0.is_empty() {
                        raw["tool_calls"] = calls.raw();
                    }
                    let done = Completion {
                        content,
                        tool_calls: calls.calls(),
                        usage,
                        model: model.unwrap_or(fallback_model),
                        finish_reason: finish,
                        raw,
                    };
                    return tx.done(done).await;
                }
                let chunk: Value = match serde_json::from_str(&event.data) {
                    Ok(v) => v,
                    Err(e) => {
                        return tx
                            .error(ProviderError::Decode(format!(
                                "stream chunk is not JSON: {e}"
                            )))
                            .await;
                    }
                };
                if let Some(message) = chunk.pointer("/error/message").and_then(Value::as_str) {
                    return tx.error(ProviderError::Stream(message.to_owned())).await;
                }
                chunks += 1;
                if model.is_none() {
                    model = chunk
                        .get("model")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                }
                if let Some(u) = usage_of(&chunk) {
                    usage = Some(u);
                }
                if let Some(reason) = chunk
                    .pointer("/choices/0/finish_reason")
                    .and_then(Value::as_str)
                {
                    finish = Some(reason.to_owned());
                }
                if let Some(delta) = chunk.pointer("/choices/0/delta") {
                    calls.add(delta);
                }
                if let Some(delta) = chunk
                    .pointer("/choices/0/delta/content")
                    .and_then(Value::as_str)
                    && !delta.is_empty()
                {
                    content.push_str(delta);
                    if !tx.delta(delta).await {
                        return;
                    }
                }
            }
            tx.error(ProviderError::Stream(
                "the stream ended before [DONE]".into(),
            ))
            .await;
        });
        Ok(stream)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_calls_are_read_from_the_message() {
        let message = json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "present_question", "arguments": "{\"question\": \"Which?\"}"}},
                {"id": "call_2", "type": "function",
                 "function": {"name": "present_question", "arguments": "{\"question\": "}},
                {"id": "call_3", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}},
                {"id": "call_4", "type": "function", "function": {"arguments": "{}"}}
            ]
        });
        let calls = tool_calls_of(&message);
        assert_eq!(
            calls,
            [
                ToolCall::new("present_question", json!({"question": "Which?"})),
                ToolCall::new("present_question", json!("{\"question\": ")),
                ToolCall::new("f", json!({"a": 1})),
            ]
        );
        assert!(tool_calls_of(&json!({"content": "hi"})).is_empty());
    }

    #[test]
    fn streamed_tool_call_pieces_are_joined_by_index() {
        let mut calls = StreamedCalls::default();
        for delta in [
            json!({"role": "assistant", "content": ""}),
            json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                   "function": {"name": "present_question", "arguments": ""}}]}),
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"question\":"}}]}),
            json!({"tool_calls": [{"index": 1, "id": "call_2", "type": "function",
                                   "function": {"name": "other", "arguments": "{}"}}]}),
            json!({"tool_calls": [{"index": 0, "function": {"arguments": " \"Which?\"}"}}]}),
            json!({}),
        ] {
            calls.add(&delta);
        }
        assert_eq!(
            calls.calls(),
            [
                ToolCall::new("present_question", json!({"question": "Which?"})),
                ToolCall::new("other", json!({})),
            ]
        );
        assert_eq!(
            calls.raw()[0]["function"]["arguments"],
            "{\"question\": \"Which?\"}"
        );
    }

    #[test]
    fn offered_tools_are_sent_without_forcing_a_choice() {
        let provider = OpenAi::new(
            HttpSettings {
                base_url: "http://127.0.0.1:9/v1".into(),
                api_key: None,
                timeout: std::time::Duration::from_secs(1),
            },
            OpenAiOptions::default(),
        )
        .unwrap();
        let tool = bridle_core::cards::present_question_tool();
        let mut request = ChatRequest {
            model: "m".into(),
            messages: vec![super::super::ChatMessage::new(Role::User, "hi")],
            temperature: None,
            max_tokens: None,
            response_format: None,
            tools: vec![tool.clone()],
        };
        let body = provider.body(&request, false);
        assert_eq!(body["tools"], json!([tool]));
        assert!(body.get("tool_choice").is_none());
        request.tools.clear();
        assert!(provider.body(&request, true).get("tools").is_none());
    }
}
