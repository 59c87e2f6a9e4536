//! [`Anthropic`]: the Messages API, non-streaming and streaming. System text goes in the
//! top-level `system`; structured output is asked for through a forced tool call (`respond`,
//! whose `input_schema` is the contract's schema) when the model entry enables it, and the
//! tool input becomes the reply text. Offered function tools (not forced) go out as
//! `{name, description, input_schema}` with the choice left to the model; their `tool_use`
//! blocks come back as [`Completion::tool_calls`], streamed ones assembled from their
//! `input_json_delta` pieces.

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
    encoder: Arc<BodyEncoder>,
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
            encoder: Arc::default(),
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
        let mut tools: Vec<Value> = request.tools.iter().filter_map(tool_of).collect();
        if self.tool_output
            && let Some(ResponseFormat::JsonSchema { schema, .. }) = &request.response_format
        {
            tools.insert(
                0,
                json!({"name": TOOL_NAME, "description": "Give the reply as structured data.", "input_schema": schema}),
            );
            body["tool_choice"] = json!({"type": "tool", "name": TOOL_NAME});
        }
        if !tools.is_empty() {
            body["tools"] = Value::Array(tools);
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
            self.settings.url("messages"),
            body,
            &self.encoder,
        )?
        .header("anthropic-version", ANTHROPIC_VERSION);
        if let Some(key) = &self.settings.api_key {
            builder = builder.header("x-api-key", key);
        }
        http::send(builder, self.settings.timeout, deadline).await
    }

    /// Posts a non-streaming `body` and reads the completion (`model`: the model asked for,
    /// used when the answer does not name one).
    async fn complete_body(&self, body: &Value, model: &str) -> Result<Completion, ProviderError> {
        let response = self.post(body, http::Deadline::Whole).await?;
        let raw = http::json_body(response, self.settings.timeout).await?;
        if raw.get("content").is_none() {
            return Err(ProviderError::Decode("the answer has no content".into()));
        }
        let usage = raw.get("usage").map(|u| Usage {
            input_tokens: u.get("input_tokens").and_then(Value::as_u64).unwrap_or(0),
            output_tokens: u.get("output_tokens").and_then(Value::as_u64).unwrap_or(0),
        });
        let forced = forced_tool(body);
        Ok(Completion {
            content: content_of(&raw, forced),
            tool_calls: tool_calls_of(&raw, forced),
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

/// An OpenAI function tool body as an Anthropic tool: `{name, description, input_schema}`.
fn tool_of(tool: &Value) -> Option<Value> {
    let function = tool.get("function")?;
    let name = function.get("name").and_then(Value::as_str)?;
    let mut out = json!({
        "name": name,
        "input_schema": function.get("parameters").cloned().unwrap_or_else(|| json!({"type": "object"})),
    });
    if let Some(description) = function.get("description").and_then(Value::as_str) {
        out["description"] = json!(description);
    }
    Some(out)
}

/// The tool a request body forces (`tool_choice: {"type": "tool", "name"}`), if any.
fn forced_tool(body: &Value) -> Option<&str> {
    let choice = body.get("tool_choice")?;
    (choice.get("type").and_then(Value::as_str) == Some("tool"))
        .then(|| choice.get("name").and_then(Value::as_str))
        .flatten()
}

fn is_tool_use(block: &Value) -> bool {
    block.get("type").and_then(Value::as_str) == Some("tool_use")
}

/// The reply text of a Messages response: text blocks joined, or the forced tool's input as
/// JSON (`forced`: the tool the request forced; a response without one also counts the first
/// `tool_use` block named `respond`, as a stored body may come from an older request).
fn content_of(raw: &Value, forced: Option<&str>) -> String {
    let Some(blocks) = raw.get("content").and_then(Value::as_array) else {
        return String::new();
    };
    let forced = forced.unwrap_or(TOOL_NAME);
    if let Some(input) = blocks
        .iter()
        .find(|b| is_tool_use(b) && b.get("name").and_then(Value::as_str) == Some(forced))
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

/// The `tool_use` blocks of a Messages response other than the forced tool's, as calls.
fn tool_calls_of(raw: &Value, forced: Option<&str>) -> Vec<ToolCall> {
    let Some(blocks) = raw.get("content").and_then(Value::as_array) else {
        return Vec::new();
    };
    let forced = forced.unwrap_or(TOOL_NAME);
    blocks
        .iter()
        .filter(|b| is_tool_use(b))
        .filter_map(|b| {
            let name = b.get("name").and_then(Value::as_str)?;
            (name != forced)
                .then(|| ToolCall::new(name, b.get("input").cloned().unwrap_or_else(|| json!({}))))
        })
        .collect()
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

    async fn send_stream(&self, body: &Value) -> Result<EventStream, ProviderError> {
        let (body, fallback_model) = streaming(body, false);
        let forced = forced_tool(&body).unwrap_or(TOOL_NAME).to_owned();
        let response = self.post(&body, http::Deadline::Headers).await?;
        let mut events = http::sse(response, self.settings.timeout);
        Ok(async_stream_events(move |tx| async move {
            let (mut content, mut usage, mut model, mut stop) =
                (String::new(), Usage::default(), None, None);
            // Offered (not forced) tool_use blocks by index: name and input JSON so far.
            let mut calls: BTreeMap<u64, (String, String)> = BTreeMap::new();
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
                    "content_block_start" => {
                        let block = data.get("content_block").unwrap_or(&Value::Null);
                        let name = block.get("name").and_then(Value::as_str).unwrap_or("");
                        if is_tool_use(block) && name != forced {
                            let index = data.get("index").and_then(Value::as_u64).unwrap_or(0);
                            calls.insert(index, (name.to_owned(), String::new()));
                        }
                    }
                    "content_block_delta" => {
                        let index = data.get("index").and_then(Value::as_u64).unwrap_or(0);
                        if let Some((_, input)) = calls.get_mut(&index) {
                            if let Some(piece) =
                                data.pointer("/delta/partial_json").and_then(Value::as_str)
                            {
                                input.push_str(piece);
                            }
                            continue;
                        }
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
                        let tool_calls: Vec<ToolCall> = calls
                            .into_values()
                            .map(|(name, input)| ToolCall::from_text(name, &input))
                            .collect();
                        let mut raw = json!({"type": "message.stream", "content": content, "stop_reason": stop, "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}});
                        if !tool_calls.is_empty() {
                            raw["tool_calls"] = json!(tool_calls);
                        }
                        let done = Completion {
                            content,
                            tool_calls,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ChatMessage;

    fn provider(tool_output: bool) -> Anthropic {
        let settings = HttpSettings {
            base_url: "http://127.0.0.1:9/v1".into(),
            api_key: None,
            timeout: std::time::Duration::from_secs(1),
        };
        Anthropic::new(settings, tool_output).unwrap()
    }

    fn request(tools: Vec<Value>, format: Option<ResponseFormat>) -> ChatRequest {
        ChatRequest {
            model: "m".into(),
            messages: vec![
                ChatMessage::new(Role::System, "rules"),
                ChatMessage::new(Role::User, "hi"),
            ],
            temperature: None,
            max_tokens: None,
            response_format: format,
            tools,
        }
    }

    #[test]
    fn offered_tools_become_anthropic_tools_and_the_forced_one_stays_first() {
        let tool = bridle_core::cards::present_question_tool();
        let body = provider(false).body(&request(vec![tool.clone()], None), false);
        assert_eq!(body["tools"][0]["name"], "present_question");
        assert_eq!(
            body["tools"][0]["input_schema"],
            tool["function"]["parameters"]
        );
        assert!(body["tools"][0]["description"].is_string());
        assert!(body.get("tool_choice").is_none(), "the model chooses");

        let schema = json!({"type": "object"});
        let format = Some(ResponseFormat::JsonSchema {
            name: "c".into(),
            schema: schema.clone(),
        });
        let body = provider(true).body(&request(Vec::new(), format.clone()), false);
        assert_eq!(
            body["tools"],
            json!([{"name": "respond", "description": "Give the reply as structured data.", "input_schema": schema}])
        );
        assert_eq!(forced_tool(&body), Some("respond"));
        let both = provider(true).body(&request(vec![tool], format), false);
        assert_eq!(both["tools"].as_array().unwrap().len(), 2);
        assert_eq!(both["tools"][0]["name"], "respond");
        assert!(
            provider(false)
                .body(&request(Vec::new(), None), false)
                .get("tools")
                .is_none()
        );
    }

    #[test]
    fn tool_use_blocks_are_calls_unless_forced() {
        let raw = json!({"content": [
            {"type": "text", "text": "Let me ask."},
            {"type": "tool_use", "id": "t1", "name": "present_question", "input": {"question": "Which?"}},
            {"type": "tool_use", "id": "t2", "name": "other", "input": {}}
        ]});
        assert_eq!(content_of(&raw, None), "Let me ask.");
        assert_eq!(
            tool_calls_of(&raw, None),
            [
                ToolCall::new("present_question", json!({"question": "Which?"})),
                ToolCall::new("other", json!({})),
            ]
        );
        let forced = json!({"content": [
            {"type": "tool_use", "id": "t1", "name": "respond", "input": {"a": 1}}
        ]});
        assert_eq!(content_of(&forced, Some("respond")), "{\"a\":1}");
        assert!(tool_calls_of(&forced, Some("respond")).is_empty());
        assert_eq!(content_of(&forced, None), "{\"a\":1}");
    }
}
