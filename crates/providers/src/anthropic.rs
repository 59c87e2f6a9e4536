//! [`Anthropic`]: the Messages API, non-streaming and streaming. System text goes in the
//! top-level `system`; structured output is asked for through a forced tool call (`respond`,
//! whose `input_schema` is the contract's schema) when the model entry enables it, and the
//! tool input becomes the reply text. Offered function tools (not forced) go out as
//! `{name, description, input_schema}` with the choice left to the model; their `tool_use`
//! blocks come back as [`Completion::tool_calls`], streamed ones assembled from their
//! `input_json_delta` pieces.

use super::body::BodyEncoder;
use super::events::async_stream_events;
use super::http::{self, HttpSettings, SseEvent};
use super::{
    ChatRequest, Completion, EventStream, Provider, ProviderError, RequestPayload, ResponseFormat,
    Usage, non_streaming, offered_functions, streaming,
};
use async_trait::async_trait;
use bridle_core::ToolCall;
use bridle_wire::Extra;
use bridle_wire::anthropic::{
    ContentBlock, Delta, ErrorBody, Message, MessagesRequest, MessagesResponse, Metadata,
    StreamEvent, System, Tool, ToolChoice, ToolChoiceKind,
};
use bridle_wire::openai::FunctionDefinition;
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

mod convert;

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
            .filter(|m| m.role.is_instructions())
            .map(|m| m.content.as_str())
            .collect();
        let messages: Vec<Message> = convert::messages(request);
        let mut tools: Vec<Tool> = offered_functions(&request.tools).map(tool_of).collect();
        let mut tool_choice = convert::tool_choice(request);
        if self.tool_output
            && let Some(ResponseFormat::JsonSchema { schema, .. }) = &request.response_format
        {
            tools.insert(0, respond_tool(schema));
            tool_choice = Some(ToolChoice {
                kind: ToolChoiceKind::Tool,
                name: Some(TOOL_NAME.to_owned()),
                disable_parallel_tool_use: None,
                extra: Extra::new(),
            });
        }
        let body = MessagesRequest {
            model: request.model.clone(),
            max_tokens: u64::from(request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
            messages,
            system: (!system.is_empty()).then(|| System::Text(system.join("\n\n"))),
            temperature: request.temperature,
            top_p: request.options.top_p,
            top_k: None,
            stop_sequences: request
                .options
                .stop
                .is_some()
                .then(|| request.options.stop_sequences()),
            stream: stream.then_some(true),
            metadata: request.options.user.as_ref().map(|user| Metadata {
                user_id: Some(Some(user.clone())),
                extra: Extra::new(),
            }),
            tools: (!tools.is_empty()).then_some(tools),
            tool_choice,
            thinking: None,
            extra: Extra::new(),
        };
        // The body is stored as a JSON value and sent from it (`BodyEncoder` writes its long
        // texts from their kept escaped form); the typed request only builds it.
        serde_json::to_value(body).unwrap_or(Value::Null)
    }

    async fn post(
        &self,
        body: &Value,
        deadline: http::Deadline,
    ) -> Result<reqwest::Response, ProviderError> {
        let builder = http::post_json(
            &self.client,
            self.settings.url("messages"),
            body,
            &self.encoder,
        )?;
        let mut builder = self
            .settings
            .with_headers(builder)
            .header("anthropic-version", ANTHROPIC_VERSION);
        if let Some(key) = &self.settings.api_key {
            builder = builder.header("x-api-key", key);
        }
        http::send(builder, self.settings.timeout, deadline, error_message).await
    }

    /// Posts a non-streaming `body` and reads the completion (`model`: the model asked for,
    /// used when the answer does not name one).
    async fn complete_body(&self, body: &Value, model: &str) -> Result<Completion, ProviderError> {
        let response = self.post(body, http::Deadline::Whole).await?;
        let raw = http::json_body(response, self.settings.timeout).await?;
        completion_of(raw, forced_tool(body), model)
    }
}

/// The completion of a Messages answer `raw` (kept as it came), read as a [`MessagesResponse`]
/// (`forced`: the tool the request forced; `model`: the model asked for, used when the answer
/// names none).
fn completion_of(
    raw: Value,
    forced: Option<&str>,
    model: &str,
) -> Result<Completion, ProviderError> {
    let answer = MessagesResponse::deserialize(&raw)
        .map_err(|e| ProviderError::Decode(format!("the answer could not be read: {e}")))?;
    Ok(Completion {
        content: content_of(&answer, forced),
        tool_calls: tool_calls_of(&answer, forced),
        usage: answer.usage.as_ref().map(Usage::from),
        model: if answer.model.is_empty() {
            model.to_owned()
        } else {
            answer.model.clone()
        },
        finish_reason: answer.stop_reason().map(|r| r.as_str().to_owned()),
        raw,
    })
}

/// The message of an error body, read as [`ErrorBody`] (`{"type": "error", "error":
/// {"type", "message"}}`, or `{"error": "…"}` as a proxy may answer); none when it has none.
fn error_message(body: &str) -> Option<String> {
    serde_json::from_str::<ErrorBody>(body)
        .ok()
        .map(|body| body.error.message)
        .filter(|message| !message.is_empty())
}

/// An offered function as an Anthropic tool: `{name, description, input_schema}` (any object
/// when the function declares no parameters).
fn tool_of(function: FunctionDefinition) -> Tool {
    Tool {
        kind: None,
        name: function.name,
        description: function.description,
        input_schema: Some(
            function
                .parameters
                .unwrap_or_else(|| json!({"type": "object"})),
        ),
        extra: Extra::new(),
    }
}

/// The forced tool whose input is the structured reply, its input schema `schema`.
fn respond_tool(schema: &Value) -> Tool {
    Tool {
        kind: None,
        name: TOOL_NAME.to_owned(),
        description: Some("Give the reply as structured data.".to_owned()),
        input_schema: Some(schema.clone()),
        extra: Extra::new(),
    }
}

/// The structured-output tool a request body forces (`tool_choice: {"type": "tool", "name":
/// "respond"}`), if it does: its input is the reply. A tool a caller forces (a pass-through
/// with a named `tool_choice`) is a call like any other. The body is the stored one, sent
/// again as it is: read as the JSON value it is kept as.
fn forced_tool(body: &Value) -> Option<&str> {
    let choice = &body["tool_choice"];
    (choice["type"] == "tool")
        .then(|| choice["name"].as_str())?
        .filter(|name| *name == TOOL_NAME)
}

/// The reply text of a Messages response: text blocks joined, or the forced tool's input as
/// JSON (`forced`: the tool the request forced; a response without one also counts the first
/// `tool_use` block named `respond`, as a stored body may come from an older request).
fn content_of(answer: &MessagesResponse, forced: Option<&str>) -> String {
    let forced = forced.unwrap_or(TOOL_NAME);
    match answer.tool_uses().find(|call| call.name == forced) {
        Some(call) => call.input.to_string(),
        None => answer.text(),
    }
}

/// The `tool_use` blocks of a Messages response other than the forced tool's, as calls (those
/// without a name skipped).
fn tool_calls_of(answer: &MessagesResponse, forced: Option<&str>) -> Vec<ToolCall> {
    let forced = forced.unwrap_or(TOOL_NAME);
    answer
        .tool_uses()
        .filter(|call| !call.name.is_empty() && call.name != forced)
        .map(|call| ToolCall::new(&call.name, call.input.clone()).with_id(&call.id))
        .collect()
}

/// A tool call piece in OpenAI's form: the `index`-th call of the reply, its id and name
/// (first piece) or more of its arguments.
fn call_piece(
    index: usize,
    start: Option<(String, String)>,
    arguments: Option<String>,
) -> bridle_wire::openai::ToolCallDelta {
    let (id, name) = start.unzip();
    bridle_wire::openai::ToolCallDelta {
        index: u32::try_from(index).unwrap_or(u32::MAX),
        kind: id
            .is_some()
            .then_some(bridle_wire::openai::ToolKind::Function),
        id,
        function: Some(bridle_wire::openai::FunctionCallDelta {
            name,
            arguments: arguments.or_else(|| Some(String::new())),
            extra: Extra::new(),
        }),
        extra: Extra::new(),
    }
}

/// Reads one server-sent event's data as a stream event; data without a `type` takes the
/// event's name as its type.
fn read_event(event: SseEvent) -> Result<StreamEvent, ProviderError> {
    let mut data: Extra = serde_json::from_str(&event.data)
        .map_err(|e| ProviderError::Decode(format!("stream event is not JSON: {e}")))?;
    let kind = data.entry("type").or_insert(Value::Null);
    if !kind.is_string() {
        *kind = Value::String(event.event);
    }
    StreamEvent::deserialize(Value::Object(data))
        .map_err(|e| ProviderError::Decode(format!("stream event could not be read: {e}")))
}

/// What one stream event means for the reader.
#[derive(Debug)]
enum Next {
    /// Nothing to pass on.
    Nothing,
    /// More reply text.
    Delta(String),
    /// A piece of an offered tool's call.
    ToolCall(bridle_wire::openai::ToolCallDelta),
    /// The end: the whole completion.
    Done(Completion),
}

/// A streamed reply as read so far, event by event.
#[derive(Debug)]
struct StreamRead {
    /// The tool the request forced (its input is the reply text).
    forced: String,
    /// The model asked for, used when `message_start` names none.
    fallback_model: String,
    content: String,
    usage: Usage,
    model: Option<String>,
    stop: Option<String>,
    /// Offered (not forced) tool_use blocks by block index: id, name and input JSON so far.
    calls: BTreeMap<u64, (String, String, String)>,
}

impl StreamRead {
    fn new(forced: String, fallback_model: String) -> Self {
        Self {
            forced,
            fallback_model,
            content: String::new(),
            usage: Usage::default(),
            model: None,
            stop: None,
            calls: BTreeMap::new(),
        }
    }

    /// Takes one event: an `error` event ends the stream with its message.
    fn take(&mut self, event: StreamEvent) -> Result<Next, ProviderError> {
        match event {
            StreamEvent::MessageStart(start) => {
                self.model = Some(start.message.model).filter(|model| !model.is_empty());
                self.usage.input_tokens = start
                    .message
                    .usage
                    .and_then(|usage| usage.input_tokens)
                    .unwrap_or(0);
            }
            StreamEvent::ContentBlockStart(start) => {
                if let ContentBlock::ToolUse(call) = start.content_block
                    && call.name != self.forced
                {
                    let piece = call_piece(
                        self.calls.len(),
                        Some((call.id.clone(), call.name.clone())),
                        None,
                    );
                    self.calls
                        .insert(start.index, (call.id, call.name, String::new()));
                    return Ok(Next::ToolCall(piece));
                }
            }
            StreamEvent::ContentBlockDelta(piece) => {
                if let Some(position) = self.calls.keys().position(|k| *k == piece.index)
                    && let Some((_, _, input)) = self.calls.get_mut(&piece.index)
                {
                    if let Delta::InputJsonDelta(json) = piece.delta {
                        input.push_str(&json.partial_json);
                        return Ok(Next::ToolCall(call_piece(
                            position,
                            None,
                            Some(json.partial_json),
                        )));
                    }
                    return Ok(Next::Nothing);
                }
                let text = match piece.delta {
                    Delta::TextDelta(text) => text.text,
                    Delta::InputJsonDelta(json) => json.partial_json,
                    _ => String::new(),
                };
                if !text.is_empty() {
                    self.content.push_str(&text);
                    return Ok(Next::Delta(text));
                }
            }
            StreamEvent::MessageDelta(delta) => {
                if let Some(out) = delta.usage.and_then(|usage| usage.output_tokens) {
                    self.usage.output_tokens = out;
                }
                self.stop = delta
                    .delta
                    .stop_reason
                    .flatten()
                    .map(|reason| reason.as_str().to_owned());
            }
            StreamEvent::MessageStop(_) => return Ok(Next::Done(self.done())),
            StreamEvent::Error(error) => {
                let message = Some(error.error.message).filter(|m| !m.is_empty());
                return Err(ProviderError::Stream(
                    message.unwrap_or_else(|| "stream error".into()),
                ));
            }
            _ => {}
        }
        Ok(Next::Nothing)
    }

    /// The completion at `message_stop`; its raw answer sums the stream up.
    fn done(&mut self) -> Completion {
        let tool_calls: Vec<ToolCall> = std::mem::take(&mut self.calls)
            .into_values()
            .map(|(id, name, input)| ToolCall::from_text(name, &input).with_id(id))
            .collect();
        let (content, usage, stop) = (
            std::mem::take(&mut self.content),
            self.usage,
            self.stop.take(),
        );
        let mut raw = json!({"type": "message.stream", "content": content, "stop_reason": stop, "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}});
        if !tool_calls.is_empty() {
            raw["tool_calls"] = json!(tool_calls);
        }
        Completion {
            content,
            tool_calls,
            usage: Some(usage),
            model: self
                .model
                .take()
                .unwrap_or_else(|| std::mem::take(&mut self.fallback_model)),
            finish_reason: stop,
            raw,
        }
    }
}

#[async_trait]
impl Provider for Anthropic {
    fn name(&self) -> &str {
        "anthropic"
    }

    fn check(&self, request: &ChatRequest) -> Result<(), ProviderError> {
        convert::refusal(request).map_or(Ok(()), Err)
    }

    fn payload(&self, request: &ChatRequest, stream: bool) -> RequestPayload {
        let mut headers = http::stored_headers(&[
            ("content-type", Some("application/json")),
            ("anthropic-version", Some(ANTHROPIC_VERSION)),
            ("x-api-key", self.settings.api_key.as_deref()),
        ]);
        headers.extend(self.settings.stored_extra_headers());
        RequestPayload {
            provider: self.name().to_owned(),
            url: self.endpoint(),
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
        self.settings.stored_url("messages", &[])
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
            let mut read = StreamRead::new(forced, fallback_model);
            while let Some(event) = events.next().await {
                let next = event
                    .and_then(read_event)
                    .and_then(|event| read.take(event));
                match next {
                    Ok(Next::Nothing) => {}
                    Ok(Next::Delta(text)) => {
                        if !tx.delta(&text).await {
                            return;
                        }
                    }
                    Ok(Next::ToolCall(piece)) => {
                        if !tx.tool_call(piece).await {
                            return;
                        }
                    }
                    Ok(Next::Done(completion)) => return tx.done(completion).await,
                    Err(e) => return tx.error(e).await,
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
    use crate::{ChatMessage, Role};

    /// A response given as JSON, read through the wire type.
    fn read(raw: &Value) -> MessagesResponse {
        MessagesResponse::deserialize(raw).unwrap()
    }

    fn content_of(raw: &Value, forced: Option<&str>) -> String {
        super::content_of(&read(raw), forced)
    }

    fn tool_calls_of(raw: &Value, forced: Option<&str>) -> Vec<ToolCall> {
        super::tool_calls_of(&read(raw), forced)
    }

    fn provider(tool_output: bool) -> Anthropic {
        let settings = HttpSettings {
            base_url: "http://127.0.0.1:9/v1".into(),
            api_key: None,
            timeout: std::time::Duration::from_secs(1),
            ..HttpSettings::default()
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
            ..ChatRequest::default()
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
                ToolCall::new("present_question", json!({"question": "Which?"})).with_id("t1"),
                ToolCall::new("other", json!({})).with_id("t2"),
            ]
        );
        let forced = json!({"content": [
            {"type": "tool_use", "id": "t1", "name": "respond", "input": {"a": 1}}
        ]});
        assert_eq!(content_of(&forced, Some("respond")), "{\"a\":1}");
        assert!(tool_calls_of(&forced, Some("respond")).is_empty());
        assert_eq!(content_of(&forced, None), "{\"a\":1}");
    }

    #[test]
    fn a_reply_from_a_lenient_server_is_read_through_the_wire_type() {
        // No id, type, role, model or usage; an unknown stop reason; an unknown block; a call
        // without an id, one without a name.
        let raw = json!({"content": [
            {"type": "text", "text": "Let me ask."},
            {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {}},
            {"type": "tool_use", "name": "present_question", "input": {"question": "Which?"}},
            {"type": "tool_use", "id": "t2", "input": {}}
        ], "stop_reason": "model_context_window_exceeded"});
        let completion = completion_of(raw.clone(), None, "asked").unwrap();
        assert_eq!(completion.content, "Let me ask.");
        assert_eq!(
            completion.tool_calls,
            [ToolCall::new(
                "present_question",
                json!({"question": "Which?"})
            )]
        );
        assert_eq!(completion.usage, None);
        assert_eq!(
            completion.finish_reason.as_deref(),
            Some("model_context_window_exceeded")
        );
        assert_eq!(completion.model, "asked");
        assert_eq!(completion.raw, raw);

        let counted = json!({"model": "claude-x", "content": [], "stop_reason": null,
                             "usage": {"output_tokens": 7}});
        let completion = completion_of(counted, None, "asked").unwrap();
        assert_eq!(completion.model, "claude-x");
        assert_eq!(completion.finish_reason, None);
        assert_eq!(
            completion.usage,
            Some(Usage {
                input_tokens: 0,
                output_tokens: 7
            })
        );
        let Err(ProviderError::Decode(text)) = completion_of(json!({"id": "m"}), None, "asked")
        else {
            panic!("an answer without content cannot be read")
        };
        assert!(text.contains("content"), "{text}");
    }

    /// The events of `frames` (`(event name, data)`) read one by one until one ends the stream.
    fn read_stream(frames: &[(&str, Value)]) -> (Vec<String>, Result<Completion, ProviderError>) {
        let mut read = StreamRead::new(TOOL_NAME.into(), "asked".into());
        let mut deltas = Vec::new();
        for (name, data) in frames {
            let event = SseEvent {
                event: (*name).to_owned(),
                data: data.to_string(),
            };
            match read_event(event).and_then(|event| read.take(event)) {
                Ok(Next::Nothing) => {}
                Ok(Next::Delta(text)) => deltas.push(text),
                Ok(Next::ToolCall(_)) => {}
                Ok(Next::Done(completion)) => return (deltas, Ok(completion)),
                Err(e) => return (deltas, Err(e)),
            }
        }
        (deltas, Err(ProviderError::Stream("no end".into())))
    }

    #[test]
    fn a_stream_is_read_event_by_event_through_the_wire_type() {
        let text_delta = |t: &str| json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}});
        let (deltas, done) = read_stream(&[
            // The data of this one names no type: the event's name is its type.
            (
                "message_start",
                json!({"message": {"model": "claude-x", "content": [], "usage": {"input_tokens": 5}}}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ),
            ("ping", json!({"type": "ping"})),
            ("content_block_delta", text_delta("Hel")),
            ("content_block_delta", text_delta("lo")),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 1,
                "content_block": {"type": "tool_use", "id": "t1", "name": "present_question", "input": {}}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": "{\"question\":"}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": " \"Which?\"}"}}),
            ),
            ("some_new_event", json!({"type": "some_new_event", "x": 1})),
            (
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "a_new_reason"},
                "usage": {"output_tokens": 9}}),
            ),
            ("message_stop", json!({"type": "message_stop"})),
        ]);
        let done = done.unwrap();
        assert_eq!(deltas, ["Hel", "lo"]);
        assert_eq!(done.content, "Hello");
        assert_eq!(done.model, "claude-x");
        assert_eq!(done.finish_reason.as_deref(), Some("a_new_reason"));
        assert_eq!(
            done.usage,
            Some(Usage {
                input_tokens: 5,
                output_tokens: 9
            })
        );
        assert_eq!(
            done.tool_calls,
            [ToolCall::new("present_question", json!({"question": "Which?"})).with_id("t1")]
        );
    }

    #[test]
    fn an_error_event_mid_stream_ends_it_with_its_message() {
        let start = (
            "message_start",
            json!({"type": "message_start", "message": {"id": "m", "type": "message",
            "role": "assistant", "model": "claude-x", "content": [], "stop_reason": null, "usage": {"input_tokens": 5}}}),
        );
        let text = (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}),
        );
        let overloaded = (
            "error",
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        );
        let (deltas, end) = read_stream(&[start.clone(), text.clone(), overloaded]);
        assert_eq!(deltas, ["Hi"]);
        assert_eq!(end.unwrap_err(), ProviderError::Stream("Overloaded".into()));
        for bare in [
            json!({"type": "error"}),
            json!({"error": {"type": "overloaded_error"}}),
        ] {
            let (_, end) = read_stream(&[start.clone(), ("error", bare)]);
            assert_eq!(
                end.unwrap_err(),
                ProviderError::Stream("stream error".into())
            );
        }
        let (_, end) = read_stream(&[start, ("content_block_delta", json!([1]))]);
        assert!(matches!(end, Err(ProviderError::Decode(_))), "{end:?}");
    }

    #[test]
    fn error_bodies_are_read_through_the_wire_type() {
        assert_eq!(
            error_message(
                r#"{"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}, "request_id": "req_1"}"#
            )
            .as_deref(),
            Some("invalid x-api-key")
        );
        assert_eq!(
            error_message(r#"{"error": {"message": "no type"}}"#).as_deref(),
            Some("no type")
        );
        assert_eq!(
            error_message(r#"{"error": "from a proxy"}"#).as_deref(),
            Some("from a proxy")
        );
        assert_eq!(error_message("upstream connect error"), None);
        assert_eq!(error_message(r#"{"error": {"type": "x"}}"#), None);
    }

    #[test]
    fn the_typed_body_is_the_body_written_by_hand() {
        let tool = bridle_core::cards::present_question_tool();
        let format = Some(ResponseFormat::JsonSchema {
            name: "c".into(),
            schema: json!({"type": "object"}),
        });
        let mut request = request(vec![tool.clone()], format);
        request
            .messages
            .push(ChatMessage::new(Role::Assistant, "{}"));
        request.temperature = Some(0.5);
        assert_eq!(
            provider(true).body(&request, true),
            json!({"model": "m", "max_tokens": DEFAULT_MAX_TOKENS, "system": "rules", "stream": true,
                "temperature": 0.5,
                "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "{}"}],
                "tools": [
                    {"name": "respond", "description": "Give the reply as structured data.", "input_schema": {"type": "object"}},
                    {"name": "present_question", "description": tool["function"]["description"],
                     "input_schema": tool["function"]["parameters"]}
                ],
                "tool_choice": {"type": "tool", "name": "respond"}})
        );
    }
}
