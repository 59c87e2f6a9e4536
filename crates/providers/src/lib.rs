//! [`Provider`]: something that completes a chat — `openai` (any OpenAI-compatible base URL),
//! `azure` (Azure OpenAI, the same provider with deployment URLs), `anthropic`, `gemini`,
//! `mock` — behind one trait, one file each. Requests and replies use the small
//! provider-neutral types here; each provider maps them to its wire format and reports failures
//! as a [`ProviderError`] the turn loop can classify (retry, honour `Retry-After`, or stop).

pub mod anthropic;
pub mod body;
mod chat;
mod events;
pub mod gemini;
pub mod http;
pub mod mock;
pub mod openai;
pub mod trace_context;
pub mod traces;
mod utf8;

pub use anthropic::Anthropic;
pub use chat::{CallOptions, ChatMessage, ChatRequest, ResponseFormat, Role, offered_functions};
pub use gemini::Gemini;
pub use http::HttpSettings;
pub use openai::{OpenAi, OpenAiOptions};

use async_trait::async_trait;
use bridle_core::ToolCall;
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::time::Duration;

/// Tokens a call used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
}

impl From<&bridle_wire::openai::Usage> for Usage {
    fn from(usage: &bridle_wire::openai::Usage) -> Self {
        Self {
            input_tokens: usage.prompt_tokens,
            output_tokens: usage.completion_tokens,
        }
    }
}

impl From<&bridle_wire::anthropic::Usage> for Usage {
    /// The counts given; a missing one is 0.
    fn from(usage: &bridle_wire::anthropic::Usage) -> Self {
        Self {
            input_tokens: usage.input_tokens.unwrap_or(0),
            output_tokens: usage.output_tokens.unwrap_or(0),
        }
    }
}

impl From<bridle_mock::Usage> for Usage {
    fn from(usage: bridle_mock::Usage) -> Self {
        Self {
            input_tokens: usage.prompt_tokens,
            output_tokens: usage.completion_tokens,
        }
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Self) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
    }
}

/// A finished completion.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The reply text (for a forced tool call: the tool input as JSON text).
    pub content: String,
    /// The offered tools the model called (in order), arguments parsed; empty for a forced
    /// tool call, whose input is `content`.
    pub tool_calls: Vec<ToolCall>,
    /// Tokens used, when the provider says.
    pub usage: Option<Usage>,
    /// The model that answered.
    pub model: String,
    /// Why generation stopped (`stop`, `length`, …), when the provider says.
    pub finish_reason: Option<String>,
    /// The provider's response body as received (for a stream: the assembled events).
    pub raw: Value,
}

impl Completion {
    /// The reply as one text: the content, then each tool call as a `name({…})` line. What is
    /// stored as an attempt's content and shown back to the model before retry feedback.
    pub fn transcript(&self) -> String {
        if self.tool_calls.is_empty() {
            return self.content.clone();
        }
        let mut parts: Vec<String> = Vec::with_capacity(self.tool_calls.len() + 1);
        if !self.content.trim().is_empty() {
            parts.push(self.content.trim_end().to_owned());
        }
        parts.extend(self.tool_calls.iter().map(ToolCall::to_text));
        parts.join("\n\n")
    }
}

/// One event of a streamed completion.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// More reply text.
    Delta(String),
    /// A piece of a tool call (OpenAI's `delta.tool_calls[]` form, which every provider's
    /// pieces map to): the first piece of a call has its `index`, `id` and name, later ones
    /// more of its arguments' text.
    ToolCall(bridle_wire::openai::ToolCallDelta),
    /// The end: the whole completion.
    Done(Completion),
}

/// The exact request a provider sends, for the attempt store: URL, headers with secrets
/// redacted, and the JSON body — replayable as is once the key is put back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestPayload {
    /// Provider name (`openai`, `anthropic`, `mock`).
    pub provider: String,
    /// Endpoint URL.
    pub url: String,
    /// Headers sent, secrets replaced by `[REDACTED]`.
    pub headers: serde_json::Map<String, Value>,
    /// The JSON body.
    pub body: Value,
    /// What the provider did differently from what was asked, and why (absent when nothing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<PayloadNote>,
}

/// A note a provider leaves in a stored [`RequestPayload`]: how it carried out a part of the
/// request its format says in its own way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PayloadNote {
    /// Native structured output was asked for (the model entry's `native_structured_output`
    /// and a JSON Schema): whether the schema went out natively or the contract is in the
    /// prompt only.
    StructuredOutput {
        /// How.
        mode: StructuredOutputMode,
        /// Why it is prompt-only: the schema keyword the provider's format cannot say.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

/// How structured output went out ([`PayloadNote::StructuredOutput`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StructuredOutputMode {
    /// The schema was sent in the provider's native form.
    Native,
    /// Only the prompt states the contract (the schema cannot be said natively).
    PromptOnly,
}

impl RequestPayload {
    /// The payload as a JSON object, moving its parts (no copy of the body).
    pub fn into_value(self) -> Value {
        let mut map = serde_json::Map::with_capacity(5);
        map.insert("provider".into(), Value::String(self.provider));
        map.insert("url".into(), Value::String(self.url));
        map.insert("headers".into(), Value::Object(self.headers));
        map.insert("body".into(), self.body);
        if !self.notes.is_empty() {
            map.insert(
                "notes".into(),
                serde_json::to_value(self.notes).unwrap_or(Value::Null),
            );
        }
        Value::Object(map)
    }
}

/// Why a provider call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProviderError {
    /// No answer in time.
    #[error("the provider did not answer within {0:?}")]
    Timeout(Duration),
    /// Could not connect, or the connection broke.
    #[error("connection to the provider failed: {0}")]
    Connection(String),
    /// The provider answered with an error status.
    #[error("the provider answered HTTP {status}: {message}")]
    Status {
        /// HTTP status.
        status: u16,
        /// `Retry-After`, when sent with a 429 or 503.
        retry_after: Option<Duration>,
        /// The provider's error message (or body excerpt).
        message: String,
    },
    /// The answer could not be read.
    #[error("the provider's answer could not be read: {0}")]
    Decode(String),
    /// A stream broke off before its end.
    #[error("the provider's stream broke off: {0}")]
    Stream(String),
    /// The request asks for something this provider's API cannot say (checked before any
    /// call, see [`Provider::check`]).
    #[error("{message}")]
    Unsupported {
        /// The request field (`seed`, `messages[2].content`, …).
        field: String,
        /// What cannot be done, for the caller.
        message: String,
    },
}

impl ProviderError {
    /// Whether another attempt may succeed: timeouts, connection errors, broken streams,
    /// unreadable answers, 408/409/429 and 5xx. Other 4xx (401, 400, 404, …) end the turn.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Timeout(_) | Self::Connection(_) | Self::Decode(_) | Self::Stream(_) => true,
            Self::Status { status, .. } => matches!(status, 408 | 409 | 429) || *status >= 500,
            Self::Unsupported { .. } => false,
        }
    }

    /// How long the provider asked to wait (429/503 `Retry-After`).
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// Short kind name for metrics and the store.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Timeout(_) => "timeout",
            Self::Connection(_) => "connection",
            Self::Status { .. } => "status",
            Self::Decode(_) => "decode",
            Self::Stream(_) => "stream",
            Self::Unsupported { .. } => "unsupported",
        }
    }
}

/// A stream of completion events.
pub type EventStream = BoxStream<'static, Result<StreamEvent, ProviderError>>;

/// Something that completes a chat.
#[async_trait]
pub trait Provider: Send + Sync + fmt::Debug {
    /// Provider name (`openai`, `anthropic`, `mock`).
    fn name(&self) -> &str;

    /// Refuses a request that asks what this provider's API cannot say (a `seed`, `n: 2`, an
    /// audio part, …) with [`ProviderError::Unsupported`] naming the field — so that nothing a
    /// caller sent is silently dropped. Bridle's own turns always pass.
    fn check(&self, request: &ChatRequest) -> Result<(), ProviderError> {
        let _ = request;
        Ok(())
    }

    /// The answer `raw` (a [`Completion::raw`] of this provider) as an OpenAI Chat Completion,
    /// when this provider speaks that format: every choice, `logprobs` and all, as it came.
    /// `None` for other formats (the caller builds one from the [`Completion`]).
    fn openai_answer(&self, raw: &Value) -> Option<bridle_wire::openai::ChatCompletion> {
        let _ = raw;
        None
    }

    /// The request this provider would send for `request`, secrets redacted.
    fn payload(&self, request: &ChatRequest, stream: bool) -> RequestPayload;

    /// One completion.
    async fn complete(&self, request: &ChatRequest) -> Result<Completion, ProviderError>;

    /// A streamed completion: deltas, then `Done` with the whole completion.
    async fn stream(&self, request: &ChatRequest) -> Result<EventStream, ProviderError> {
        self.send_stream(&self.payload(request, true).body).await
    }

    /// Where this provider sends requests (the `url` of its [`RequestPayload`]s).
    fn endpoint(&self) -> String;

    /// Sends a request body this provider produced (the [`RequestPayload::body`] of
    /// [`Provider::payload`], fresh or stored) with this provider's credentials, and reads the
    /// answer. Always non-streaming: a body made for a stream is sent with streaming off.
    /// The turn loop builds the payload once, stores it and sends it with this; replays send
    /// a stored one again.
    async fn send(&self, body: &Value) -> Result<Completion, ProviderError>;

    /// Sends a request body this provider produced for a stream (the body of
    /// `payload(request, true)`, fresh or stored) and returns its events: deltas, then `Done`.
    /// A body made without streaming is sent streaming. Dropping the stream cancels the
    /// upstream request (its connection is closed).
    async fn send_stream(&self, body: &Value) -> Result<EventStream, ProviderError>;
}

/// A body to send streaming, and the model it asks for: borrowed as it is when it already asks
/// for a stream; otherwise a copy with `stream: true` (and, with `usage_option`, OpenAI's
/// `stream_options.include_usage`).
pub fn streaming(body: &Value, usage_option: bool) -> (std::borrow::Cow<'_, Value>, String) {
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if body.get("stream") == Some(&Value::Bool(true)) {
        return (std::borrow::Cow::Borrowed(body), model);
    }
    let mut copy = body.clone();
    if let Some(map) = copy.as_object_mut() {
        map.insert("stream".into(), Value::Bool(true));
        if usage_option {
            map.insert(
                "stream_options".into(),
                serde_json::json!({"include_usage": true}),
            );
        }
    }
    (std::borrow::Cow::Owned(copy), model)
}

/// A body to send non-streaming, and the model it asks for (empty when it names none).
/// The body is borrowed as it is unless it asks for a stream; then a copy has `stream: false`
/// and no `stream_options` — so the turn loop's fresh bodies are never copied.
pub fn non_streaming(body: &Value) -> (std::borrow::Cow<'_, Value>, &str) {
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let streams =
        body.get("stream") == Some(&Value::Bool(true)) || body.get("stream_options").is_some();
    if !streams {
        return (std::borrow::Cow::Borrowed(body), model);
    }
    let mut copy = body.clone();
    if let Some(map) = copy.as_object_mut() {
        map.remove("stream_options");
        map.insert("stream".into(), Value::Bool(false));
    }
    (std::borrow::Cow::Owned(copy), model)
}

/// Parses a `Retry-After` header value given in seconds (the HTTP-date form is rare from
/// LLM APIs and is read as "no hint").
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let seconds: f64 = value.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds.min(3600.0)))
}

/// The placeholder that replaces secrets in stored payloads.
pub const REDACTED: &str = "[REDACTED]";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_classification_follows_status() {
        let status = |s| ProviderError::Status {
            status: s,
            retry_after: None,
            message: String::new(),
        };
        for s in [408, 409, 429, 500, 502, 503, 504] {
            assert!(status(s).is_retryable(), "{s}");
        }
        for s in [400, 401, 403, 404, 422] {
            assert!(!status(s).is_retryable(), "{s}");
        }
        assert!(ProviderError::Timeout(Duration::from_secs(1)).is_retryable());
    }

    #[test]
    fn a_transcript_shows_the_text_then_the_calls() {
        let mut completion = Completion {
            content: "Let me ask.\n".into(),
            tool_calls: Vec::new(),
            usage: None,
            model: "m".into(),
            finish_reason: None,
            raw: Value::Null,
        };
        assert_eq!(completion.transcript(), "Let me ask.\n");
        completion.tool_calls = vec![
            ToolCall::new(
                "present_question",
                serde_json::json!({"question": "Which?"}),
            ),
            ToolCall::from_text("present_question", "{broken"),
        ];
        assert_eq!(
            completion.transcript(),
            "Let me ask.\n\npresent_question({\"question\":\"Which?\"})\n\npresent_question({broken)"
        );
        completion.content = "  ".into();
        assert!(completion.transcript().starts_with("present_question("));
    }

    #[test]
    fn retry_after_is_read_in_seconds() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after(" 0.5 "), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after("-1"), None);
    }
}
