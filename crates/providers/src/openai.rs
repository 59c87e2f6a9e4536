//! [`OpenAi`]: Chat Completions against any OpenAI-compatible base URL (OpenAI, vLLM, Ollama,
//! llama.cpp server, GPUStack), non-streaming and streaming. Passes `response_format`
//! `json_schema` through when the model entry says the server supports it (Bridle validates
//! either way), and merges the system text into the first user message for models without a
//! system role. Offered function tools go out as `tools` (the choice left to the model), and
//! the calls come back from `message.tool_calls` — or, streamed, from the `delta.tool_calls`
//! pieces, joined by index.
//!
//! Azure OpenAI is this provider with an [`Azure`] setting: the same bodies and answers, sent
//! to `{base_url}/openai/deployments/{deployment}/chat/completions?api-version=…` with the key
//! in the `api-key` header; the deployment is the request's model.

use super::body::BodyEncoder;
use super::events::async_stream_events;
use super::http::{self, HttpSettings};
use super::{
    ChatRequest, Completion, EventStream, Provider, ProviderError, RequestPayload, ResponseFormat,
    Role, Usage, non_streaming, streaming,
};
use async_trait::async_trait;
use bridle_core::ToolCall;
use bridle_wire::Extra;
use bridle_wire::openai::{
    self as wire, ChatCompletion, ChatCompletionChunk, ChatCompletionRequest, ChatMessage, Content,
    Delta, ErrorBody, JsonSchemaFormat, ResponseFormatKind, StreamData, StreamOptions, Tool,
};
use futures::StreamExt;
use serde::Deserialize;
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

/// The API version an Azure provider speaks unless its entry sets `api_version`.
pub const AZURE_API_VERSION: &str = "2024-10-21";

/// How Azure OpenAI addresses a model: a deployment URL with an `api-version`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Azure {
    /// The `api-version` query parameter.
    pub api_version: String,
    /// The deployment of the model entry the provider serves (its [`Provider::endpoint`]).
    pub deployment: String,
}

/// An OpenAI-compatible Chat Completions provider.
#[derive(Debug, Clone)]
pub struct OpenAi {
    settings: HttpSettings,
    options: OpenAiOptions,
    azure: Option<Azure>,
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
            azure: None,
            client,
            encoder: Arc::default(),
        })
    }

    /// An Azure OpenAI provider: OpenAI's bodies sent to deployment URLs, the key in
    /// `api-key`.
    pub fn azure(
        settings: HttpSettings,
        options: OpenAiOptions,
        azure: Azure,
    ) -> Result<Self, ProviderError> {
        Ok(Self {
            azure: Some(azure),
            ..Self::new(settings, options)?
        })
    }

    /// The URL a request for `model` goes to (`stored`: secret-looking query values
    /// redacted).
    fn url(&self, model: &str, stored: bool) -> String {
        let (path, fixed) = match &self.azure {
            None => ("chat/completions".to_owned(), Vec::new()),
            Some(azure) => (
                format!(
                    "openai/deployments/{}/chat/completions",
                    path_segment(model)
                ),
                vec![("api-version", azure.api_version.as_str())],
            ),
        };
        if stored {
            self.settings.stored_url(&path, &fixed)
        } else {
            self.settings.url_with(&path, &fixed)
        }
    }

    fn body(&self, request: &ChatRequest, stream: bool) -> Value {
        let mut messages: Vec<ChatMessage> = Vec::with_capacity(request.messages.len());
        let mut pending_system: Vec<&str> = Vec::new();
        for message in &request.messages {
            if self.options.merge_system && message.role.is_instructions() {
                pending_system.push(&message.content);
                continue;
            }
            let mut wire = wire_message(message);
            if self.options.merge_system && message.role == Role::User && !pending_system.is_empty()
            {
                let system = pending_system.join("\n\n");
                pending_system.clear();
                wire.content = Some(Some(match wire.content.flatten() {
                    Some(Content::Parts(mut parts)) => {
                        parts.insert(0, wire::ContentPart::text(system));
                        Content::Parts(parts)
                    }
                    other => Content::Text(format!(
                        "{system}\n\n{}",
                        other.map(|c| c.text()).unwrap_or_default()
                    )),
                }));
            }
            messages.push(wire);
        }
        if !pending_system.is_empty() {
            messages.insert(
                0,
                ChatMessage::new(wire::Role::User, pending_system.join("\n\n")),
            );
        }
        let mut body = ChatCompletionRequest::new(request.model.clone(), messages);
        body.stream = Some(stream);
        body.temperature = request.temperature;
        body.max_tokens = request.max_tokens;
        if stream {
            body.stream_options = Some(StreamOptions {
                include_usage: Some(true),
                extra: Extra::new(),
            });
        }
        if !request.tools.is_empty() {
            body.tools = Some(
                request
                    .tools
                    .iter()
                    .filter_map(|tool| Tool::deserialize(tool).ok())
                    .collect(),
            );
        }
        body.tool_choice.clone_from(&request.tool_choice);
        if self.options.native_structured_output {
            body.response_format = request.response_format.as_ref().map(response_format);
        }
        with_options(&mut body, &request.options);
        // The body is stored as a JSON value and sent from it (`BodyEncoder` writes its long
        // texts from their kept escaped form); the typed request only builds it.
        serde_json::to_value(body).unwrap_or(Value::Null)
    }

    async fn post(
        &self,
        body: &Value,
        model: &str,
        deadline: http::Deadline,
    ) -> Result<reqwest::Response, ProviderError> {
        let builder = http::post_json(&self.client, self.url(model, false), body, &self.encoder)?;
        let mut builder = self.settings.with_headers(builder);
        if let Some(key) = &self.settings.api_key {
            builder = match self.azure {
                Some(_) => builder.header("api-key", key),
                None => builder.bearer_auth(key),
            };
        }
        http::send(builder, self.settings.timeout, deadline, error_message).await
    }

    /// Posts a non-streaming `body` and reads the completion (`model`: the model asked for,
    /// used when the answer does not name one).
    async fn complete_body(&self, body: &Value, model: &str) -> Result<Completion, ProviderError> {
        let response = self.post(body, model, http::Deadline::Whole).await?;
        let raw = http::json_body(response, self.settings.timeout).await?;
        completion_of(raw, model)
    }
}

/// The completion of a Chat Completions answer `raw` (kept as it came), read as a
/// [`ChatCompletion`] (`model`: the model asked for, used when the answer names none).
fn completion_of(raw: Value, model: &str) -> Result<Completion, ProviderError> {
    let answer = ChatCompletion::deserialize(&raw)
        .map_err(|e| ProviderError::Decode(format!("the answer could not be read: {e}")))?;
    let usage = answer.usage.as_ref().map(Usage::from);
    let model = Some(answer.model)
        .filter(|named| !named.is_empty())
        .unwrap_or_else(|| model.to_owned());
    let choice = answer
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| ProviderError::Decode("the answer has no choices[0]".into()))?;
    Ok(Completion {
        tool_calls: calls_of(choice.message.tool_calls.as_deref().unwrap_or_default()),
        content: content_of(choice.message),
        usage,
        model,
        finish_reason: choice
            .finish_reason
            .flatten()
            .map(|reason| reason.as_str().to_owned()),
        raw,
    })
}

/// A message as Chat Completions writes it: the content as a string or as its parts, an
/// assistant's tool calls (`content: null` when it says nothing besides), a tool result's
/// call id, the participant's name.
fn wire_message(message: &crate::ChatMessage) -> ChatMessage {
    let mut wire = if message.parts.is_empty() {
        ChatMessage::new(message.role.into(), message.content.clone())
    } else {
        let mut wire = ChatMessage::new(message.role.into(), "");
        wire.content = Some(Some(Content::Parts(message.parts.clone())));
        wire
    };
    if !message.tool_calls.is_empty() {
        if message.content.is_empty() && message.parts.is_empty() {
            wire.content = Some(None);
        }
        wire.tool_calls = Some(message.tool_calls.iter().map(wire_call).collect());
    }
    wire.tool_call_id.clone_from(&message.tool_call_id);
    wire.name.clone_from(&message.name);
    wire.extra.clone_from(&message.extra);
    wire
}

/// A tool call as Chat Completions writes it.
pub(crate) fn wire_call(call: &ToolCall) -> wire::ToolCall {
    wire::ToolCall {
        id: call.id.clone(),
        kind: wire::ToolKind::Function,
        function: Some(wire::FunctionCall {
            name: call.name.clone(),
            arguments: call.arguments_text(),
            extra: Extra::new(),
        }),
        extra: Extra::new(),
    }
}

/// The caller's options, written under their own names (a field the request already has is
/// not overwritten by an unknown one of the same name).
fn with_options(body: &mut ChatCompletionRequest, options: &crate::CallOptions) {
    body.top_p = options.top_p;
    body.stop.clone_from(&options.stop);
    body.seed = options.seed;
    body.n = options.n;
    body.user.clone_from(&options.user);
    body.presence_penalty = options.presence_penalty;
    body.frequency_penalty = options.frequency_penalty;
    body.logprobs = options.logprobs;
    body.top_logprobs = options.top_logprobs;
    body.parallel_tool_calls = options.parallel_tool_calls;
    body.reasoning_effort.clone_from(&options.reasoning_effort);
    body.metadata.clone_from(&options.metadata);
    body.store = options.store;
    body.extra.clone_from(&options.extra);
}

/// The `response_format` asking for `format`: a JSON Schema (named as OpenAI accepts, not
/// strict: Bridle validates) or any JSON object.
fn response_format(format: &ResponseFormat) -> wire::ResponseFormat {
    let (kind, json_schema) = match format {
        ResponseFormat::JsonSchema { name, schema } => (
            ResponseFormatKind::JsonSchema,
            Some(JsonSchemaFormat {
                name: Some(schema_name(name)),
                description: None,
                schema: Some(schema.clone()),
                strict: Some(Some(false)),
                extra: Extra::new(),
            }),
        ),
        ResponseFormat::JsonObject => (ResponseFormatKind::JsonObject, None),
    };
    wire::ResponseFormat {
        kind,
        json_schema,
        extra: Extra::new(),
    }
}

/// The reply text of a completion's message: its string content; none (or `null`) is empty,
/// and content parts are taken as their JSON text.
fn content_of(message: ChatMessage) -> String {
    match message.content.flatten() {
        None => String::new(),
        Some(Content::Text(text)) => text,
        Some(parts) => serde_json::to_value(parts)
            .map(|value| value.to_string())
            .unwrap_or_default(),
    }
}

/// The message of an error body, read as [`ErrorBody`] (`{"error": {"message": …}}`, or
/// `{"error": "…"}` as some compatible servers answer).
fn error_message(body: &str) -> Option<String> {
    serde_json::from_str::<ErrorBody>(body)
        .ok()
        .map(|body| body.error.message)
}

/// `name` as one URL path segment: letters, digits, `-`, `_` and `.` as they are, every other
/// byte percent-encoded (and the dots of `.` or `..`, which would climb the path).
pub(crate) fn path_segment(name: &str) -> String {
    use std::fmt::Write as _;
    let only_dots = name.bytes().all(|b| b == b'.');
    let mut out = String::with_capacity(name.len());
    for byte in name.bytes() {
        let kept = byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.');
        if kept && !(only_dots && byte == b'.') {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
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

/// The calls of a Chat Completions message (its `tool_calls[].function`), the arguments given
/// as JSON text (the wire type reads an object as its text, which parses back to the object).
/// Entries without a function or a name are skipped.
fn calls_of(calls: &[wire::ToolCall]) -> Vec<ToolCall> {
    calls
        .iter()
        .filter_map(|call| Some((&call.id, call.function.as_ref()?)))
        .filter(|(_, function)| !function.name.is_empty())
        .map(|(id, function)| ToolCall::from_text(&function.name, &function.arguments).with_id(id))
        .collect()
}

/// Tool calls streamed as `delta.tool_calls[{index, function: {name, arguments}}]` pieces:
/// the name and the arguments text of each index are concatenated (a piece without an index
/// goes by its place in its chunk).
#[derive(Debug, Default)]
struct StreamedCalls(BTreeMap<u64, StreamedCall>);

/// One streamed tool call as assembled so far.
#[derive(Debug, Default)]
struct StreamedCall {
    id: String,
    name: String,
    arguments: String,
}

impl StreamedCalls {
    /// Takes the tool call pieces of one chunk's `delta`; returns them with their index
    /// filled in (a piece without one goes by its place in its chunk).
    fn add(&mut self, delta: &Delta) -> Vec<wire::ToolCallDelta> {
        let mut pieces = Vec::new();
        for (position, piece) in delta.tool_calls.iter().flatten().enumerate() {
            let index = piece.index().map_or(position as u64, u64::from);
            let call = self.0.entry(index).or_default();
            if let Some(id) = &piece.id {
                call.id.push_str(id);
            }
            if let Some(function) = &piece.function {
                call.name.push_str(function.name.as_deref().unwrap_or(""));
                call.arguments
                    .push_str(function.arguments.as_deref().unwrap_or(""));
            }
            let mut piece = piece.clone();
            piece.index = u32::try_from(index).unwrap_or(u32::MAX);
            pieces.push(piece);
        }
        pieces
    }

    /// The assembled calls, in index order (nameless ones skipped).
    fn calls(&self) -> Vec<ToolCall> {
        self.0
            .values()
            .filter(|call| !call.name.is_empty())
            .map(|call| ToolCall::from_text(&call.name, &call.arguments).with_id(&call.id))
            .collect()
    }

    /// The assembled calls as the `tool_calls` of a message, for the stored raw answer.
    fn raw(&self) -> Value {
        self.0
            .iter()
            .map(|(index, call)| {
                json!({"index": index, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}})
            })
            .collect()
    }
}

/// Reads the data of one stream event: a chunk or an error. An error's message is the
/// provider's; data that is neither says what is wrong with it as a chunk.
fn read_chunk(data: &str) -> Result<StreamData, ProviderError> {
    serde_json::from_str(data).map_err(|_| {
        let reason = serde_json::from_str::<ChatCompletionChunk>(data)
            .err()
            .map_or_else(String::new, |e| e.to_string());
        ProviderError::Decode(format!("stream chunk could not be read: {reason}"))
    })
}

#[async_trait]
impl Provider for OpenAi {
    fn name(&self) -> &str {
        if self.azure.is_some() {
            "azure"
        } else {
            "openai"
        }
    }

    fn payload(&self, request: &ChatRequest, stream: bool) -> RequestPayload {
        let key = self.settings.api_key.as_deref();
        let bearer = key.map(|k| format!("Bearer {k}"));
        let auth = match self.azure {
            Some(_) => ("api-key", key),
            None => ("authorization", bearer.as_deref()),
        };
        let mut headers = http::stored_headers(&[("content-type", Some("application/json")), auth]);
        headers.extend(self.settings.stored_extra_headers());
        RequestPayload {
            provider: self.name().to_owned(),
            url: self.url(&request.model, true),
            headers,
            body: self.body(request, stream),
            notes: Vec::new(),
        }
    }

    async fn complete(&self, request: &ChatRequest) -> Result<Completion, ProviderError> {
        self.complete_body(&self.body(request, false), &request.model)
            .await
    }

    fn endpoint(&self) -> String {
        let deployment = self.azure.as_ref().map_or("", |a| a.deployment.as_str());
        self.url(deployment, true)
    }

    fn openai_answer(&self, raw: &Value) -> Option<ChatCompletion> {
        ChatCompletion::deserialize(raw)
            .ok()
            .filter(|answer| !answer.choices.is_empty())
    }

    async fn send(&self, body: &Value) -> Result<Completion, ProviderError> {
        let (body, model) = non_streaming(body);
        self.complete_body(&body, model).await
    }

    async fn send_stream(&self, body: &Value) -> Result<EventStream, ProviderError> {
        let (body, fallback_model) = streaming(body, true);
        let response = self
            .post(&body, &fallback_model, http::Deadline::Headers)
            .await?;
        let mut events = http::sse(response, self.settings.timeout);
        let stream = async_stream_events(move |tx| async move {
            let mut read = StreamRead::default();
            while let Some(event) = events.next().await {
                let event = match event {
                    Ok(event) => event,
                    Err(e) => return tx.error(e).await,
                };
                if event.data.trim() == "[DONE]" {
                    return tx.done(read.done(fallback_model)).await;
                }
                let chunk = match read_chunk(&event.data) {
                    Ok(StreamData::Chunk(chunk)) => chunk,
                    Ok(StreamData::Error(body)) => {
                        return tx.error(ProviderError::Stream(body.error.message)).await;
                    }
                    Err(e) => return tx.error(e).await,
                };
                let (text, pieces) = read.take(chunk);
                if let Some(text) = text
                    && !tx.delta(&text).await
                {
                    return;
                }
                for piece in pieces {
                    if !tx.tool_call(piece).await {
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

/// A streamed completion as read so far, chunk by chunk.
#[derive(Debug, Default)]
struct StreamRead {
    content: String,
    usage: Option<Usage>,
    /// The model the first chunk that names one names.
    model: Option<String>,
    finish: Option<String>,
    calls: StreamedCalls,
    chunks: u64,
}

impl StreamRead {
    /// Takes one chunk (its first choice); returns the reply text it adds, if any, and its
    /// tool call pieces.
    fn take(&mut self, chunk: ChatCompletionChunk) -> (Option<String>, Vec<wire::ToolCallDelta>) {
        self.chunks += 1;
        if self.model.is_none() && !chunk.model.is_empty() {
            self.model = Some(chunk.model);
        }
        if let Some(Some(usage)) = &chunk.usage {
            self.usage = Some(Usage::from(usage));
        }
        let Some(choice) = chunk.choices.into_iter().next() else {
            return (None, Vec::new());
        };
        if let Some(Some(reason)) = &choice.finish_reason {
            self.finish = Some(reason.as_str().to_owned());
        }
        let pieces = self.calls.add(&choice.delta);
        let text = choice
            .delta
            .content
            .flatten()
            .filter(|text| !text.is_empty());
        if let Some(text) = &text {
            self.content.push_str(text);
        }
        (text, pieces)
    }

    /// The completion at `[DONE]` (`fallback_model`: the model asked for, when no chunk named
    /// one); its raw answer sums the stream up.
    fn done(self, fallback_model: String) -> Completion {
        let usage = self.usage.map(
            |u| json!({"prompt_tokens": u.input_tokens, "completion_tokens": u.output_tokens}),
        );
        let mut raw = json!({"object": "chat.completion.stream", "chunks": self.chunks, "content": self.content, "finish_reason": self.finish, "usage": usage});
        if !self.calls.0.is_empty() {
            raw["tool_calls"] = self.calls.raw();
        }
        Completion {
            content: self.content,
            tool_calls: self.calls.calls(),
            usage: self.usage,
            model: self.model.unwrap_or(fallback_model),
            finish_reason: self.finish,
            raw,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calls of a message given as JSON: its `tool_calls` read through the wire type.
    fn tool_calls_of(message: &Value) -> Vec<ToolCall> {
        let calls: Option<Vec<wire::ToolCall>> =
            Option::deserialize(&message["tool_calls"]).unwrap();
        calls_of(calls.as_deref().unwrap_or_default())
    }

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
                ToolCall::new("present_question", json!({"question": "Which?"})).with_id("call_1"),
                ToolCall::new("present_question", json!("{\"question\": ")).with_id("call_2"),
                ToolCall::new("f", json!({"a": 1})).with_id("call_3"),
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
            calls.add(&serde_json::from_value(delta).unwrap());
        }
        assert_eq!(
            calls.calls(),
            [
                ToolCall::new("present_question", json!({"question": "Which?"})).with_id("call_1"),
                ToolCall::new("other", json!({})).with_id("call_2"),
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
                ..HttpSettings::default()
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
            ..ChatRequest::default()
        };
        let body = provider.body(&request, false);
        assert_eq!(body["tools"], json!([tool]));
        assert!(body.get("tool_choice").is_none());
        request.tools.clear();
        assert!(provider.body(&request, true).get("tools").is_none());
    }

    #[test]
    fn a_completion_from_a_lenient_server_is_read_through_the_wire_type() {
        // No id, object, created, model or usage; an unknown finish reason; arguments as an
        // object, as `null`, missing; a call without a name or a type; content `null`.
        let raw = json!({
            "choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
                {"function": {"name": "f", "arguments": {"a": [1, 2.5, null]}}},
                {"id": "c2", "function": {"name": "g", "arguments": null}},
                {"id": "c3", "type": "function", "function": {"name": "h"}},
                {"id": "c4", "type": "function", "function": {"arguments": "{}"}}
            ]}, "finish_reason": "eos_token", "vendor": {"x": 1}}],
            "x_trace": "abc"
        });
        let completion = completion_of(raw.clone(), "asked").unwrap();
        assert_eq!(completion.content, "");
        assert_eq!(
            completion.tool_calls,
            [
                ToolCall::new("f", json!({"a": [1, 2.5, null]})),
                ToolCall::new("g", json!({})).with_id("c2"),
                ToolCall::new("h", json!({})).with_id("c3"),
            ]
        );
        assert_eq!(completion.usage, None, "no usage is no usage, not zero");
        assert_eq!(completion.finish_reason.as_deref(), Some("eos_token"));
        assert_eq!(completion.model, "asked");
        assert_eq!(completion.raw, raw, "the raw answer is kept as it came");

        let named = json!({"model": "m-1", "choices": [{"message": {"role": "assistant", "content": "hi"},
            "finish_reason": null}], "usage": {"prompt_tokens": 3, "completion_tokens": 2}});
        let completion = completion_of(named, "asked").unwrap();
        assert_eq!(
            (completion.content.as_str(), completion.model.as_str()),
            ("hi", "m-1")
        );
        assert_eq!(completion.finish_reason, None);
        assert_eq!(
            completion.usage,
            Some(Usage {
                input_tokens: 3,
                output_tokens: 2
            }),
            "a usage without total_tokens"
        );
        let no_choice = completion_of(json!({"choices": []}), "m").unwrap_err();
        assert_eq!(
            no_choice,
            ProviderError::Decode("the answer has no choices[0]".into())
        );
    }

    #[test]
    fn a_stream_is_read_chunk_by_chunk_through_the_wire_type() {
        let mut read = StreamRead::default();
        let chunks = [
            // No id, no model in the first chunk, `usage: null`.
            json!({"choices": [{"delta": {"role": "assistant", "content": "He"}}], "usage": null}),
            json!({"model": "m-2", "choices": [{"index": 0, "delta": {"content": "llo"}, "finish_reason": null}]}),
            // Two whole calls in one chunk, without an index: by their place.
            json!({"choices": [{"delta": {"content": null, "tool_calls": [
                {"function": {"name": "a", "arguments": "{\"x\":1}"}},
                {"function": {"name": "b", "arguments": ""}}
            ]}}]}),
            json!({"choices": [{"delta": {}, "finish_reason": "end_of_turn"}]}),
        ];
        let mut deltas = Vec::new();
        for chunk in chunks {
            let chunk: ChatCompletionChunk = serde_json::from_value(chunk).unwrap();
            deltas.extend(read.take(chunk).0);
        }
        assert_eq!(deltas, ["He", "llo"]);
        let done = read.done("asked".into());
        assert_eq!(done.content, "Hello");
        assert_eq!(done.model, "m-2");
        assert_eq!(done.usage, None, "a null usage is none");
        assert_eq!(done.finish_reason.as_deref(), Some("end_of_turn"));
        assert_eq!(
            done.tool_calls,
            [
                ToolCall::new("a", json!({"x": 1})),
                ToolCall::new("b", json!({}))
            ]
        );
        assert_eq!(done.raw["chunks"], 4);
    }

    #[test]
    fn stream_data_is_a_chunk_or_an_error() {
        let error = read_chunk(
            r#"{"error": {"message": "overloaded", "type": "server_error", "code": 529}}"#,
        );
        assert!(
            matches!(&error, Ok(StreamData::Error(body)) if body.error.message == "overloaded"),
            "{error:?}"
        );
        assert!(matches!(read_chunk("{}"), Ok(StreamData::Chunk(_))));
        let Err(ProviderError::Decode(text)) = read_chunk("not json") else {
            panic!("data that is not JSON cannot be read")
        };
        assert!(
            text.starts_with("stream chunk could not be read: "),
            "{text}"
        );
    }

    #[test]
    fn error_bodies_are_read_through_the_wire_type() {
        assert_eq!(
            error_message(
                r#"{"error": {"message": "Invalid key", "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}}"#
            )
            .as_deref(),
            Some("Invalid key")
        );
        assert_eq!(
            error_message(r#"{"error": "model 'x' not found"}"#).as_deref(),
            Some("model 'x' not found"),
            "as Ollama and llama.cpp answer"
        );
        // Not the error form: the caller shows an excerpt of the body instead.
        assert_eq!(error_message("<html>502 Bad Gateway</html>"), None);
        assert_eq!(error_message(r#"{"error": {"type": "x"}}"#), None);
        assert_eq!(error_message(r#"{"detail": "no"}"#), None);
    }

    #[test]
    fn the_typed_body_is_the_body_written_by_hand() {
        let provider = OpenAi::new(
            HttpSettings {
                base_url: "http://127.0.0.1:9/v1".into(),
                api_key: None,
                timeout: std::time::Duration::from_secs(1),
                ..HttpSettings::default()
            },
            OpenAiOptions {
                native_structured_output: true,
                merge_system: false,
            },
        )
        .unwrap();
        let tool = bridle_core::cards::present_question_tool();
        let request = ChatRequest {
            model: "m".into(),
            messages: vec![
                super::super::ChatMessage::new(Role::System, "rules"),
                super::super::ChatMessage::new(Role::User, "hi"),
                super::super::ChatMessage::new(Role::Assistant, "{}"),
            ],
            temperature: Some(0.2),
            max_tokens: Some(100),
            response_format: Some(ResponseFormat::JsonSchema {
                name: "a b".into(),
                schema: json!({"type": "object"}),
            }),
            tools: vec![tool.clone()],
            ..ChatRequest::default()
        };
        assert_eq!(
            provider.body(&request, true),
            json!({"model": "m", "stream": true, "temperature": 0.2, "max_tokens": 100,
                "messages": [{"role": "system", "content": "rules"}, {"role": "user", "content": "hi"},
                             {"role": "assistant", "content": "{}"}],
                "stream_options": {"include_usage": true}, "tools": [tool],
                "response_format": {"type": "json_schema", "json_schema": {"name": "a_b", "schema": {"type": "object"}, "strict": false}}})
        );
        let mut plain = request.clone();
        plain.response_format = Some(ResponseFormat::JsonObject);
        plain.tools.clear();
        assert_eq!(
            provider.body(&plain, false),
            json!({"model": "m", "stream": false, "temperature": 0.2, "max_tokens": 100,
                "messages": [{"role": "system", "content": "rules"}, {"role": "user", "content": "hi"},
                             {"role": "assistant", "content": "{}"}],
                "response_format": {"type": "json_object"}})
        );
    }
}
