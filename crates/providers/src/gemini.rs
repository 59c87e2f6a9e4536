//! [`Gemini`]: Google's Gemini API, `POST {base_url}/models/{model}:generateContent` and, streamed,
//! `:streamGenerateContent?alt=sse`, the key in `x-goog-api-key`. The request is written by
//! [`convert`] (instructions as the `systemInstruction`, tool calls and results as
//! `functionCall` / `functionResponse` parts); native structured output sends the contract's
//! schema as `responseSchema` with `responseMimeType: application/json` where Gemini's schema
//! subset can say it ([`schema`]), and otherwise the contract goes in the prompt only — which
//! of the two, the stored payload's [`PayloadNote`] says. Function calls come back as
//! [`Completion::tool_calls`] (with ids: Gemini's own, else `gemini_call_{index}`), streamed
//! as whole-call [`StreamEvent::ToolCall`](crate::StreamEvent::ToolCall) pieces.

use super::body::BodyEncoder;
use super::events::async_stream_events;
use super::http::{self, HttpSettings};
use super::openai::path_segment;
use super::{
    ChatRequest, Completion, EventStream, PayloadNote, Provider, ProviderError, RequestPayload,
    ResponseFormat, StructuredOutputMode, Usage,
};
use async_trait::async_trait;
use bridle_core::ToolCall;
use bridle_wire::Extra;
use bridle_wire::gemini::{
    Candidate, ErrorBody, GenerateContentRequest, GenerateContentResponse, UsageMetadata,
};
use bridle_wire::openai::{FunctionCallDelta, ToolCallDelta, ToolKind};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

mod convert;
pub(crate) mod schema;

/// Per-model settings of a Gemini provider.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GeminiOptions {
    /// Send the contract's schema as `responseSchema` where Gemini can say it.
    pub native_structured_output: bool,
    /// The model of the entry the provider serves: where a stored body is sent again
    /// ([`Provider::send`]; Gemini's body does not name its model) and its
    /// [`Provider::endpoint`].
    pub model: String,
}

/// A Gemini API provider.
#[derive(Debug, Clone)]
pub struct Gemini {
    settings: HttpSettings,
    options: GeminiOptions,
    client: reqwest::Client,
    encoder: Arc<BodyEncoder>,
}

impl Gemini {
    /// A provider for `settings` with `options`.
    pub fn new(settings: HttpSettings, options: GeminiOptions) -> Result<Self, ProviderError> {
        let client = http::client(&settings)?;
        Ok(Self {
            settings,
            options,
            client,
            encoder: Arc::default(),
        })
    }

    /// The body for `request`, and how structured output went out when it was asked for.
    fn body(&self, request: &ChatRequest) -> (Value, Option<PayloadNote>) {
        let mut generation = convert::generation_config(request);
        let mut note = None;
        if self.options.native_structured_output {
            match &request.response_format {
                Some(ResponseFormat::JsonSchema { schema, .. }) => {
                    let (mode, reason) = match schema::response_schema(schema) {
                        Ok(converted) => {
                            generation.response_mime_type = Some("application/json".into());
                            generation.response_schema = Some(converted);
                            (StructuredOutputMode::Native, None)
                        }
                        Err(reason) => (StructuredOutputMode::PromptOnly, Some(reason)),
                    };
                    note = Some(PayloadNote::StructuredOutput { mode, reason });
                }
                Some(ResponseFormat::JsonObject) => {
                    generation.response_mime_type = Some("application/json".into());
                }
                None => {}
            }
        }
        let body = GenerateContentRequest {
            contents: convert::contents(request),
            system_instruction: convert::system_instruction(request),
            tools: convert::tools(request),
            tool_config: convert::tool_config(request),
            generation_config: (generation != bridle_wire::gemini::GenerationConfig::default())
                .then_some(generation),
            extra: Extra::new(),
        };
        // Stored as a JSON value and sent from it, as the other providers do.
        (serde_json::to_value(body).unwrap_or(Value::Null), note)
    }

    /// The URL of `model`'s `method` (`generateContent`, `streamGenerateContent`), with
    /// `alt=sse` for a stream (`stored`: secret-looking query values redacted).
    fn url(&self, model: &str, stream: bool, stored: bool) -> String {
        let model = path_segment(model.strip_prefix("models/").unwrap_or(model));
        let (method, fixed): (&str, &[(&str, &str)]) = if stream {
            ("streamGenerateContent", &[("alt", "sse")])
        } else {
            ("generateContent", &[])
        };
        let path = format!("models/{model}:{method}");
        if stored {
            self.settings.stored_url(&path, fixed)
        } else {
            self.settings.url_with(&path, fixed)
        }
    }

    async fn post(
        &self,
        body: &Value,
        model: &str,
        deadline: http::Deadline,
    ) -> Result<reqwest::Response, ProviderError> {
        let stream = deadline == http::Deadline::Headers;
        let url = self.url(model, stream, false);
        let builder = http::post_json(&self.client, url, body, &self.encoder)?;
        let mut builder = self.settings.with_headers(builder);
        if let Some(key) = &self.settings.api_key {
            builder = builder.header("x-goog-api-key", key);
        }
        http::send(builder, self.settings.timeout, deadline, error_message).await
    }

    async fn complete_body(&self, body: &Value, model: &str) -> Result<Completion, ProviderError> {
        let response = self.post(body, model, http::Deadline::Whole).await?;
        let raw = http::json_body(response, self.settings.timeout).await?;
        completion_of(raw, model)
    }

    async fn stream_body(&self, body: &Value, model: &str) -> Result<EventStream, ProviderError> {
        let response = self.post(body, model, http::Deadline::Headers).await?;
        let mut events = http::sse(response, self.settings.timeout);
        let mut read = StreamRead::new(model.to_owned());
        Ok(async_stream_events(move |tx| async move {
            while let Some(event) = events.next().await {
                let answer = event.and_then(|event| {
                    serde_json::from_str::<GenerateContentResponse>(&event.data).map_err(|e| {
                        ProviderError::Decode(format!("stream event could not be read: {e}"))
                    })
                });
                let (text, pieces) = match answer {
                    Ok(answer) => read.take(answer),
                    Err(e) => return tx.error(e).await,
                };
                if !text.is_empty() && !tx.delta(&text).await {
                    return;
                }
                for piece in pieces {
                    if !tx.tool_call(piece).await {
                        return;
                    }
                }
            }
            if read.finish.is_some() {
                tx.done(read.done()).await;
            } else {
                let cut = "the stream ended before a finishReason";
                tx.error(ProviderError::Stream(cut.into())).await;
            }
        }))
    }
}

/// The message of an error body, read as [`ErrorBody`]; none when it has none.
fn error_message(body: &str) -> Option<String> {
    serde_json::from_str::<ErrorBody>(body)
        .ok()
        .map(|body| body.error.message)
        .filter(|message| !message.is_empty())
}

/// How the ids Bridle makes for calls Gemini sent without one start (never sent back).
pub(crate) const MADE_ID_PREFIX: &str = "gemini_call_";

/// The id of a reply's `index`th call when Gemini gives none: the same for the same reply.
fn call_id(given: Option<&str>, index: usize) -> String {
    given
        .filter(|id| !id.is_empty())
        .map_or_else(|| format!("{MADE_ID_PREFIX}{index}"), str::to_owned)
}

/// A candidate's reply text (thoughts left out) and function calls.
fn read_candidate(candidate: Option<&Candidate>, first_call: usize) -> (String, Vec<ToolCall>) {
    let Some(content) = candidate.and_then(|c| c.content.as_ref()) else {
        return (String::new(), Vec::new());
    };
    let calls = content
        .parts
        .iter()
        .filter_map(|part| part.function_call.as_ref())
        .filter(|call| !call.name.is_empty())
        .enumerate()
        .map(|(i, call)| {
            let arguments = call.args.clone().unwrap_or_else(|| json!({}));
            ToolCall::new(&call.name, arguments)
                .with_id(call_id(call.id.as_deref(), first_call + i))
        })
        .collect();
    (content.text(), calls)
}

fn usage_of(usage: &UsageMetadata) -> Usage {
    Usage {
        input_tokens: usage.prompt_token_count.unwrap_or(0),
        output_tokens: usage.candidates_token_count.unwrap_or(0),
    }
}

/// The completion of a `generateContent` answer `raw` (kept as it came).
fn completion_of(raw: Value, model: &str) -> Result<Completion, ProviderError> {
    let answer = GenerateContentResponse::deserialize(&raw)
        .map_err(|e| ProviderError::Decode(format!("the answer could not be read: {e}")))?;
    let candidate = answer.candidates.first().ok_or_else(|| {
        ProviderError::Decode("the answer has no candidates (the prompt may be blocked)".into())
    })?;
    let (content, tool_calls) = read_candidate(Some(candidate), 0);
    Ok(Completion {
        content,
        tool_calls,
        usage: answer.usage_metadata.as_ref().map(usage_of),
        model: answer
            .model_version
            .clone()
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| model.to_owned()),
        finish_reason: candidate
            .finish_reason
            .as_ref()
            .map(|r| r.as_str().to_owned()),
        raw,
    })
}

/// A streamed reply as read so far, event by event.
#[derive(Debug)]
struct StreamRead {
    fallback_model: String,
    content: String,
    calls: Vec<ToolCall>,
    usage: Option<Usage>,
    model: Option<String>,
    finish: Option<String>,
    events: u64,
}

impl StreamRead {
    fn new(fallback_model: String) -> Self {
        Self {
            fallback_model,
            content: String::new(),
            calls: Vec::new(),
            usage: None,
            model: None,
            finish: None,
            events: 0,
        }
    }

    /// Takes one event: the text it adds and its calls as pieces (each call whole).
    fn take(&mut self, answer: GenerateContentResponse) -> (String, Vec<ToolCallDelta>) {
        self.events += 1;
        if let Some(usage) = &answer.usage_metadata {
            self.usage = Some(usage_of(usage));
        }
        if self.model.is_none() {
            self.model = answer.model_version.clone().filter(|m| !m.is_empty());
        }
        let candidate = answer.candidates.first();
        if let Some(reason) = candidate.and_then(|c| c.finish_reason.as_ref()) {
            self.finish = Some(reason.as_str().to_owned());
        }
        let (text, calls) = read_candidate(candidate, self.calls.len());
        self.content.push_str(&text);
        let first = self.calls.len();
        let pieces = calls
            .iter()
            .enumerate()
            .map(|(i, call)| ToolCallDelta {
                index: u32::try_from(first + i).unwrap_or(u32::MAX),
                id: Some(call.id.clone()),
                kind: Some(ToolKind::Function),
                function: Some(FunctionCallDelta {
                    name: Some(call.name.clone()),
                    arguments: Some(call.arguments_text()),
                    extra: Extra::new(),
                }),
                extra: Extra::new(),
            })
            .collect();
        self.calls.extend(calls);
        (text, pieces)
    }

    /// The completion at the stream's end; its raw answer sums the stream up.
    fn done(self) -> Completion {
        let usage = self.usage.map(|u| {
            json!({"promptTokenCount": u.input_tokens, "candidatesTokenCount": u.output_tokens})
        });
        let mut raw = json!({"object": "gemini.stream", "events": self.events,
            "content": self.content, "finishReason": self.finish, "usageMetadata": usage});
        if !self.calls.is_empty() {
            raw["tool_calls"] = json!(self.calls);
        }
        Completion {
            content: self.content,
            tool_calls: self.calls,
            usage: self.usage,
            model: self.model.unwrap_or(self.fallback_model),
            finish_reason: self.finish,
            raw,
        }
    }
}

#[async_trait]
impl Provider for Gemini {
    fn name(&self) -> &str {
        "gemini"
    }

    fn check(&self, request: &ChatRequest) -> Result<(), ProviderError> {
        convert::refusal(request).map_or(Ok(()), Err)
    }

    /// The stored URL is `generateContent`'s (a stream went to `streamGenerateContent` with
    /// `alt=sse`, the body the same).
    fn payload(&self, request: &ChatRequest, stream: bool) -> RequestPayload {
        let _ = stream;
        let mut headers = http::stored_headers(&[
            ("content-type", Some("application/json")),
            ("x-goog-api-key", self.settings.api_key.as_deref()),
        ]);
        headers.extend(self.settings.stored_extra_headers());
        let (body, note) = self.body(request);
        RequestPayload {
            provider: self.name().to_owned(),
            url: self.url(&request.model, false, true),
            headers,
            body,
            notes: note.into_iter().collect(),
        }
    }

    async fn complete(&self, request: &ChatRequest) -> Result<Completion, ProviderError> {
        self.complete_body(&self.body(request).0, &request.model)
            .await
    }

    async fn stream(&self, request: &ChatRequest) -> Result<EventStream, ProviderError> {
        self.stream_body(&self.body(request).0, &request.model)
            .await
    }

    fn endpoint(&self) -> String {
        self.url(&self.options.model, false, true)
    }

    async fn send(&self, body: &Value) -> Result<Completion, ProviderError> {
        self.complete_body(body, &self.options.model).await
    }

    async fn send_stream(&self, body: &Value) -> Result<EventStream, ProviderError> {
        self.stream_body(body, &self.options.model).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ChatMessage, Role};

    fn provider(native: bool) -> Gemini {
        let settings = HttpSettings {
            base_url: "https://g.example/v1beta".into(),
            api_key: Some("AIza-secret".into()),
            timeout: std::time::Duration::from_secs(1),
            headers: vec![("X-Team".into(), "blue".into())],
            query: vec![("foo".into(), "bar baz".into())],
        };
        let options = GeminiOptions {
            native_structured_output: native,
            model: "gemini-2.5-flash".into(),
        };
        Gemini::new(settings, options).unwrap()
    }

    fn request(schema: Value) -> ChatRequest {
        ChatRequest {
            model: "gemini-2.5-flash".into(),
            messages: vec![
                ChatMessage::new(Role::System, "rules"),
                ChatMessage::new(Role::User, "hi"),
                ChatMessage::new(Role::Assistant, "{}"),
            ],
            temperature: Some(0.2),
            max_tokens: Some(100),
            response_format: Some(ResponseFormat::JsonSchema {
                name: "r".into(),
                schema,
            }),
            ..ChatRequest::default()
        }
    }

    #[test]
    fn the_payload_says_whether_the_schema_went_out_natively() {
        let plain = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        let payload = provider(true).payload(&request(plain), false);
        assert_eq!(
            payload.url,
            "https://g.example/v1beta/models/gemini-2.5-flash:generateContent?foo=bar+baz"
        );
        assert_eq!(payload.headers["x-goog-api-key"], crate::REDACTED);
        assert_eq!(payload.headers["X-Team"], "blue");
        assert_eq!(
            payload.body,
            json!({
                "contents": [{"role": "user", "parts": [{"text": "hi"}]},
                             {"role": "model", "parts": [{"text": "{}"}]}],
                "systemInstruction": {"parts": [{"text": "rules"}]},
                "generationConfig": {"temperature": 0.2, "maxOutputTokens": 100,
                    "responseMimeType": "application/json",
                    "responseSchema": {"type": "OBJECT", "properties": {"a": {"type": "STRING"}}}}
            })
        );
        assert_eq!(
            payload.notes,
            [PayloadNote::StructuredOutput {
                mode: StructuredOutputMode::Native,
                reason: None
            }]
        );
        let stored = payload.into_value();
        assert_eq!(stored["notes"][0]["mode"], "native");

        let unsayable =
            json!({"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}]}}});
        let payload = provider(true).payload(&request(unsayable.clone()), true);
        assert!(
            payload.body["generationConfig"]
                .get("responseSchema")
                .is_none()
        );
        assert_eq!(
            payload.notes,
            [PayloadNote::StructuredOutput {
                mode: StructuredOutputMode::PromptOnly,
                reason: Some("`oneOf` at /properties/a".into())
            }]
        );
        let payload = provider(false).payload(&request(unsayable), false);
        assert!(payload.notes.is_empty(), "nothing asked natively");
    }

    #[test]
    fn calls_without_ids_get_stable_ones_and_usage_is_read() {
        let raw = json!({
            "candidates": [{"content": {"role": "model", "parts": [
                {"text": "Checking."},
                {"functionCall": {"name": "f", "args": {"a": 1}}},
                {"functionCall": {"id": "g-1", "name": "g"}}
            ]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 7},
            "modelVersion": "gemini-2.5-flash-001"
        });
        let completion = completion_of(raw.clone(), "asked").unwrap();
        assert_eq!(completion.content, "Checking.");
        assert_eq!(
            completion.tool_calls,
            [
                ToolCall::new("f", json!({"a": 1})).with_id("gemini_call_0"),
                ToolCall::new("g", json!({})).with_id("g-1"),
            ]
        );
        assert_eq!(completion.finish_reason.as_deref(), Some("STOP"));
        assert_eq!(completion.model, "gemini-2.5-flash-001");
        assert_eq!(
            completion.usage,
            Some(Usage {
                input_tokens: 5,
                output_tokens: 7
            })
        );
        assert_eq!(completion_of(raw.clone(), "asked").unwrap(), completion);
        let blocked = completion_of(json!({"promptFeedback": {"blockReason": "SAFETY"}}), "m");
        assert!(matches!(blocked, Err(ProviderError::Decode(_))));
    }

    #[test]
    fn error_bodies_are_read_through_the_wire_type() {
        assert_eq!(
            error_message(
                r#"{"error": {"code": 400, "message": "API key not valid", "status": "INVALID_ARGUMENT"}}"#
            )
            .as_deref(),
            Some("API key not valid")
        );
        assert_eq!(error_message("<html>502</html>"), None);
    }
}
