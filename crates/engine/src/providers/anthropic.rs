//! [`Anthropic`]: the Messages API, non-streaming and streaming. System text goes in the
//! top-level `system`; structured output is asked for through a forced tool call (`respond`,
//! whose `input_schema` is the contract's schema) when the model entry enables it, and the
//! tool input becomes the reply text.

use super::events::async_stream_events;
use super::http::{self, HttpSettings};
use super::{
    ChatRequest, Completion, EventStream, Provider, ProviderError, RequestPayload, ResponseFormat,
    Role, Usage, non_streaming,
};
use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{Value, json};

/// The API version header Bridle speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// `max_tokens` is required by the API; used when the request sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;
/// The forced tool's name.
pub const TOOL_NAME: &str = "respond";

/// An Anthropic Messages API provider.
#[derive(Debug, Clone)]
pub struct Anthropic {
    settings: HttpSettings,
    tool_output: bool,
    client: reqwest::Client,
}

impl Anthropic {
    /// A provider for `settings`; `tool_output` asks for structured output through a forced
    /// tool call when the request has a JSON Schema.
    pub fn new(settings: HttpSettings, tool_output: bool) -> Result<Self, ProviderError> {
        let client = http::client(&settings)?;
        Ok(Self {
            settings,
            tool_output,
            client,
        })
    }

    fn body(&self, request: &ChatRequest, stream: bool) -> Value {
        let system: Vec<&str> = request
            .messages
            .iter()
            .filter(|m| m.role == Role::System)
            .map(|m| m.content.as_str())
            .collect();
        let messages: Vec<Value> = request
            .messages
            .iter()
            .filter(|m| m.role != Role::System)
            .map(|m| json!({"role": m.role.as_str(), "content": m.content}))
            .collect();
        let mut body = json!({
            "model": request.model,
            "max_tokens": request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            "messages": messages,
        });
        if !system.is_empty() {
            body["system"] = json!(system.join("\n\n"));
        }
        if let Some(t) = request.temperature {
            body["temperature"] = json!(t);
        }
        if stream {
            body["stream"] = json!(true);
        }
        if self.tool_output
            && let Some(ResponseFormat::JsonSchema { schema, .. }) = &request.response_format
        {
            body["tools"] = json!([{"name": TOOL_NAME, "description": "Give the reply as structured data.", "input_schema": schema}]);
            body["tool_choice"] = json!({"type": "tool", "name": TOOL_NAME});
        }
        body
    }

    async fn post(&self, body: &Value) -> Result<reqwest::Response, ProviderError> {
        let mut builder = self
            .client
            .post(self.settings.url("messages"))
            .header("anthropic-version", ANTHROPIC_VERSION)
            .json(body);
        if let Some(key) = &self.settings.api_key {
            builder = builder.header("x-api-key", key);
        }
        http::send(builder, self.settings.timeout).await
    }

    /// Posts a non-streaming `body` and reads the completion (`model`: the model asked for,
    /// used when the answer does not name one).
    async fn complete_body(&self, body: &Value, model: &str) -> Result<Completion, ProviderError> {
        let response = self.post(body).await?;
        let raw = http::json_body(response, self.settings.timeout).await?;
        if raw.get("content").is_none() {
            return Err(ProviderError::Decode("the answer has no content".into()));
        }
        let usage = raw.get("usage").map(|u| Usage {
            input_tokens: u.get("input_tokens").and_then(Value::as_u64).unwrap_or(0),
            output_tokens: u.get("output_tokens").and_then(Value::as_u64).unwrap_or(0),
        });
        Ok(Completion {
            content: content_of(&raw),
            usage,
            model: raw
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or(model)
                .to_owned(),
            finish_reason: raw
                .get("stop_reason")
                .and_then(Value::as_str)
                .map(str::to_owned),
            raw,
        })
    }
}

/// The reply text of a Messages response: text blocks joined, or the forced tool's input as JSON.
fn content_of(raw: &Value) -> String {
    let Some(blocks) = raw.get("content").and_then(Value::as_array) else {
        return String::new();
    };
    if let Some(input) = blocks
        .iter()
        .find(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
        .and_then(|b| b.get("input"))
    {
        return input.to_string();
    }
    blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("")
}

#[async_trait]
impl Provider for Anthropic {
    fn name(&self) -> &str {
        "anthropic"
    }

    fn payload(&self, request: &ChatRequest, stream: bool) -> RequestPayload {
        RequestPayload {
            provider: self.name().to_owned(),
            url: self.endpoint(),
            headers: http::stored_headers(&[
                ("content-type", Some("application/json")),
                ("anthropic-version", Some(ANTHROPIC_VERSION)),
                ("x-api-key", self.settings.api_key.as_deref()),
            ]),
            body: self.body(request, stream),
        }
    }

    async fn complete(&self, request: &ChatRequest) -> Result<Completion, ProviderError> {
        self.complete_body(&self.body(request, false), &request.model)
            .await
    }

    fn endpoint(&self) -> String {
        self.settings.url("messages")
    }

    async fn send(&self, body: &Value) -> Result<Completion, ProviderError> {
        let (body, model) = non_streaming(body);
        self.complete_body(&body, model).await
    }

    async fn stream(&self, request: &ChatRequest) -> Result<EventStream, ProviderError> {
        let response = self.post(&self.body(request, true)).await?;
        let mut events = http::sse(response, self.settings.timeout);
        let fallback_model = request.model.clone();
        Ok(async_stream_events(move |tx| async move {
            let (mut content, mut usage, mut model, mut stop) =
                (String::new(), Usage::default(), None, None);
            while let Some(event) = events.next().await {
                let event = match event {
                    Ok(event) => event,
                    Err(e) => return tx.error(e).await,
                };
                let data: Value = match serde_json::from_str(&event.data) {
                    Ok(v) => v,
                    Err(e) => {
                        return tx
                            .error(ProviderError::Decode(format!(
                                "stream event is not JSON: {e}"
                            )))
                            .await;
                    }
                };
                let kind = data
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or(event.event.as_str());
                match kind {
                    "message_start" => {
                        model = data
                            .pointer("/message/model")
                            .and_then(Value::as_str)
                            .map(str::to_owned);
                        usage.input_tokens = data
                            .pointer("/message/usage/input_tokens")
                            .and_then(Value::as_u64)
                            .unwrap_or(0);
                    }
                    "content_block_delta" => {
                        let piece = data
                            .pointer("/delta/text")
                            .or_else(|| data.pointer("/delta/partial_json"))
                            .and_then(Value::as_str)
                            .unwrap_or("");
                        if !piece.is_empty() {
                            content.push_str(piece);
                            if !tx.delta(piece).await {
                                return;
                            }
                        }
                    }
                    "message_delta" => {
                        if let Some(out) =
                            data.pointer("/usage/output_tokens").and_then(Value::as_u64)
                        {
                            usage.output_tokens = out;
                        }
                        stop = data
                            .pointer("/delta/stop_reason")
                            .and_then(Value::as_str)
                            .map(str::to_owned);
                    }
                    "message_stop" => {
                        let raw = json!({"type": "message.stream", "content": content, "stop_reason": stop, "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}});
                        let done = Completion {
                            content,
                            usage: Some(usage),
                            model: model.unwrap_or(fallback_model),
                            finish_reason: stop,
                            raw,
                        };
                        return tx.done(done).await;
                    }
                    "error" => {
                        let message = data
                            .pointer("/error/message")
                            .and_then(Value::as_str)
                            .unwrap_or("stream error");
                        return tx.error(ProviderError::Stream(message.to_owned())).await;
                    }
                    _ => {}
                }
            }
            tx.error(ProviderError::Stream(
                "the stream ended before message_stop".into(),
            ))
            .await;
        }))
    }
}
