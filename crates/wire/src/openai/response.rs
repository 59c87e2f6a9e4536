//! The answers of `POST /v1/chat/completions` (a whole completion or its stream chunks), the
//! error body of every endpoint, and the models list of `GET /v1/models`.
//!
//! Answers are read as OpenAI-compatible servers write them, not only as OpenAI does: the
//! fields Bridle does not need (`id`, `object`, `created`, a choice's `index`, `total_tokens`)
//! and the token counts may be missing (they read as empty or zero), a tool call piece may come
//! without its `index` ([`ToolCallDelta::UNINDEXED`]), and an error body may be `{"error":
//! "text"}`. Written, every field is there.

use serde::{Deserialize, Serialize};

use super::{ChatMessage, Nullable, Role, ToolKind, nullable, string_enum};
use crate::Extra;

/// A whole (non-streamed) completion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatCompletion {
    /// The completion's id (`chatcmpl-…`); empty when a server leaves it out.
    #[serde(default)]
    pub id: String,
    /// Always `chat.completion`; empty when a server leaves it out.
    #[serde(default)]
    pub object: String,
    /// Unix time of creation, in seconds; 0 when a server leaves it out.
    #[serde(default)]
    pub created: u64,
    /// The model that answered; empty when a server leaves it out.
    #[serde(default)]
    pub model: String,
    /// The generated choices (one unless the request set `n`); read as none when missing.
    #[serde(default)]
    pub choices: Vec<Choice>,
    /// Token counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The backend configuration's fingerprint. [`Nullable`].
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable"
    )]
    pub system_fingerprint: Nullable<String>,
    /// The service tier that served the request. [`Nullable`].
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable"
    )]
    pub service_tier: Nullable<String>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One choice of a [`ChatCompletion`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    /// The choice's index (0 when missing).
    #[serde(default)]
    pub index: u32,
    /// The generated assistant message (an assistant message without content when missing).
    #[serde(default = "no_message")]
    pub message: ChatMessage,
    /// Why generation stopped. [`Nullable`] (always set by OpenAI, but not by every
    /// compatible server).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable"
    )]
    pub finish_reason: Nullable<FinishReason>,
    /// Log probabilities, when asked for. [`Nullable`]: `null` otherwise.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable"
    )]
    pub logprobs: Nullable<ChoiceLogprobs>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The message of a choice that came without one: an assistant's, with no content.
fn no_message() -> ChatMessage {
    ChatMessage {
        content: None,
        ..ChatMessage::new(Role::Assistant, "")
    }
}

string_enum! {
    /// Why generation stopped.
    pub enum FinishReason {
        /// A natural end or a stop sequence.
        Stop = "stop",
        /// The token cap.
        Length = "length",
        /// The model called tools.
        ToolCalls = "tool_calls",
        /// Content was filtered.
        ContentFilter = "content_filter",
        /// The model called a legacy function.
        FunctionCall = "function_call",
    }
}

/// The log probabilities of a choice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChoiceLogprobs {
    /// Of the content tokens. [`Nullable`].
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable"
    )]
    pub content: Nullable<Vec<TokenLogprob>>,
    /// Of the refusal tokens. [`Nullable`].
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable"
    )]
    pub refusal: Nullable<Vec<TokenLogprob>>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The log probability of one output token, with the most likely alternatives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenLogprob {
    /// The token.
    pub token: String,
    /// Its log probability.
    pub logprob: f64,
    /// Its UTF-8 bytes. [`Nullable`].
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable"
    )]
    pub bytes: Nullable<Vec<u8>>,
    /// The most likely tokens at this position.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_logprobs: Option<Vec<TopLogprob>>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One of the most likely tokens at a position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopLogprob {
    /// The token.
    pub token: String,
    /// Its log probability.
    pub logprob: f64,
    /// Its UTF-8 bytes. [`Nullable`].
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable"
    )]
    pub bytes: Nullable<Vec<u8>>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Token counts of a completion (a count a server leaves out reads as 0).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the prompt.
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Tokens generated.
    #[serde(default)]
    pub completion_tokens: u64,
    /// Their sum.
    #[serde(default)]
    pub total_tokens: u64,
    /// A breakdown of the prompt tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
    /// A breakdown of the generated tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens_details: Option<CompletionTokensDetails>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Usage {
    /// Counts with no details: `total_tokens` is the sum.
    #[must_use]
    pub fn new(prompt_tokens: u64, completion_tokens: u64) -> Self {
        Self {
            prompt_tokens,
            completion_tokens,
            total_tokens: prompt_tokens + completion_tokens,
            prompt_tokens_details: None,
            completion_tokens_details: None,
            extra: Extra::new(),
        }
    }
}

/// `usage.prompt_tokens_details`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptTokensDetails {
    /// Prompt tokens read from the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// Audio prompt tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio_tokens: Option<u64>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `usage.completion_tokens_details`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompletionTokensDetails {
    /// Tokens spent reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    /// Audio tokens generated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio_tokens: Option<u64>,
    /// Tokens of a prediction that appeared in the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_prediction_tokens: Option<u64>,
    /// Tokens of a prediction that did not (still billed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected_prediction_tokens: Option<u64>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One chunk of a streamed completion (the data of one server-sent event).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatCompletionChunk {
    /// The completion's id, the same in every chunk (empty when missing).
    #[serde(default)]
    pub id: String,
    /// Always `chat.completion.chunk` (empty when missing).
    #[serde(default)]
    pub object: String,
    /// Unix time of creation, in seconds, the same in every chunk (0 when missing).
    #[serde(default)]
    pub created: u64,
    /// The model that answers (empty when missing).
    #[serde(default)]
    pub model: String,
    /// The choices' deltas; empty in the final usage chunk (and when missing).
    #[serde(default)]
    pub choices: Vec<ChunkChoice>,
    /// Token counts: only in the last chunk when `stream_options.include_usage` is set.
    /// [`Nullable`]: the other chunks then carry `"usage": null`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable"
    )]
    pub usage: Nullable<Usage>,
    /// The backend configuration's fingerprint. [`Nullable`].
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable"
    )]
    pub system_fingerprint: Nullable<String>,
    /// The service tier that serves the request. [`Nullable`].
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable"
    )]
    pub service_tier: Nullable<String>,
    /// Fields not modelled here (e.g. `obfuscation`).
    #[serde(flatten)]
    pub extra: Extra,
}

/// One choice's delta in a [`ChatCompletionChunk`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkChoice {
    /// The choice's index (0 when missing).
    #[serde(default)]
    pub index: u32,
    /// What this chunk adds to the choice's message (nothing when missing).
    #[serde(default)]
    pub delta: Delta,
    /// Why generation stopped: `null` until the choice's last chunk. [`Nullable`].
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable"
    )]
    pub finish_reason: Nullable<FinishReason>,
    /// Log probabilities of this chunk's tokens. [`Nullable`].
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable"
    )]
    pub logprobs: Nullable<ChoiceLogprobs>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A piece of an assistant message.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Delta {
    /// The role, in the first chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// A piece of the content. [`Nullable`].
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable"
    )]
    pub content: Nullable<String>,
    /// A piece of a refusal. [`Nullable`].
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable"
    )]
    pub refusal: Nullable<String>,
    /// Pieces of tool calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallDelta>>,
    /// Fields not modelled here (e.g. a legacy `function_call`).
    #[serde(flatten)]
    pub extra: Extra,
}

/// A piece of a tool call: the first names it (`id`, `type`, `function.name`), the following
/// ones add to its `function.arguments`. `index` tells which call a piece belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallDelta {
    /// Which tool call of the message this piece belongs to; [`Self::UNINDEXED`] when the
    /// piece came without an `index` (as from some compatible servers; a reader then goes by
    /// the piece's place in its chunk), and then written without one.
    #[serde(
        default = "ToolCallDelta::unindexed",
        skip_serializing_if = "ToolCallDelta::is_unindexed"
    )]
    pub index: u32,
    /// The call's id (first piece).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The call's kind (first piece).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ToolKind>,
    /// The function's name and a piece of its arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<FunctionCallDelta>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ToolCallDelta {
    /// The `index` of a piece that came without one.
    pub const UNINDEXED: u32 = u32::MAX;

    fn unindexed() -> u32 {
        Self::UNINDEXED
    }

    fn is_unindexed(index: &u32) -> bool {
        *index == Self::UNINDEXED
    }

    /// The piece's `index`, if it came with one.
    #[must_use]
    pub fn index(&self) -> Option<u32> {
        (self.index != Self::UNINDEXED).then_some(self.index)
    }
}

/// A piece of a function call.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct FunctionCallDelta {
    /// The function's name (first piece).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A piece of the arguments string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The body of an error answer: `{"error": {…}}`. Also read from `{"error": "text"}`, as some
/// compatible servers (Ollama, llama.cpp) answer: the text is the error's `message` (and the
/// body is written back in OpenAI's form).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// The error.
    #[serde(deserialize_with = "error_or_text")]
    pub error: ApiError,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ErrorBody {
    /// An error with `message` and `type`, `param` and `code` set (`null` when `None`).
    #[must_use]
    pub fn new(
        message: impl Into<String>,
        kind: impl Into<String>,
        param: Option<String>,
        code: Option<ErrorCode>,
    ) -> Self {
        Self {
            error: ApiError {
                message: message.into(),
                kind: Some(Some(kind.into())),
                param: Some(param),
                code: Some(code),
                extra: Extra::new(),
            },
            extra: Extra::new(),
        }
    }
}

/// Reads an [`ErrorBody`]'s `error`: an object, or a bare text taken as its message.
fn error_or_text<'de, D>(deserializer: D) -> Result<ApiError, D::Error>
where
    D: serde::Deserializer<'de>,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Form {
        Object(ApiError),
        Text(String),
    }
    Ok(match Form::deserialize(deserializer)? {
        Form::Object(error) => error,
        Form::Text(message) => ApiError {
            message,
            kind: None,
            param: None,
            code: None,
            extra: Extra::new(),
        },
    })
}

/// The data of one server-sent event of a streamed completion: a chunk, or the error a server
/// sends in place of one when it fails mid-stream (`{"error": {"message": …}}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // read per event and taken apart at once: no box per chunk
pub enum StreamData {
    /// An error: the stream ends with it.
    Error(ErrorBody),
    /// A chunk.
    Chunk(ChatCompletionChunk),
}

/// The error of an [`ErrorBody`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiError {
    /// What went wrong, for humans.
    pub message: String,
    /// The error's class (`invalid_request_error`, …). [`Nullable`].
    #[serde(
        rename = "type",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable"
    )]
    pub kind: Nullable<String>,
    /// The request parameter at fault. [`Nullable`]: usually `null`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable"
    )]
    pub param: Nullable<String>,
    /// A machine-readable code. [`Nullable`].
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable"
    )]
    pub code: Nullable<ErrorCode>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// An error's `code`: a string for OpenAI, a number for some compatible servers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ErrorCode {
    /// A string code (`invalid_api_key`, `rate_limit_exceeded`, …).
    Text(String),
    /// A numeric code.
    Number(i64),
}

/// The answer of `GET /v1/models`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelList {
    /// Always `list`.
    pub object: String,
    /// The models.
    pub data: Vec<Model>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One model of a [`ModelList`] (also the answer of `GET /v1/models/{model}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// The model's id, as requests name it.
    pub id: String,
    /// Always `model`.
    pub object: String,
    /// Unix time of creation, in seconds.
    pub created: u64,
    /// The owning organisation.
    pub owned_by: String,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}
