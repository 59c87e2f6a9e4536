//! The request body of `POST /v1/chat/completions` and the messages, content parts, tools and
//! formats it carries.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Nullable, nullable, string_enum};
use crate::Extra;

/// A Chat Completions request.
///
/// Typed: the fields Bridle reads or writes, and the common sampling and tool fields. Left in
/// [`extra`](Self::extra): `logit_bias`, `audio`, `modalities`, `prediction`, `web_search_options`,
/// `service_tier`, `prompt_cache_key` and whatever the API adds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatCompletionRequest {
    /// The model to call.
    pub model: String,
    /// The conversation so far.
    pub messages: Vec<ChatMessage>,
    /// Sampling temperature, 0 to 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling mass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Legacy cap on generated tokens (superseded by `max_completion_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Cap on generated tokens, reasoning tokens included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<u32>,
    /// How many choices to generate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<u32>,
    /// Up to four sequences where generation stops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Stop>,
    /// Whether to answer with a server-sent-event stream of [`ChatCompletionChunk`]s.
    ///
    /// [`ChatCompletionChunk`]: super::ChatCompletionChunk
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// Options of a streamed answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
    /// The shape the answer must take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat>,
    /// The tools the model may call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// Whether and which tool the model must call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Whether the model may call several tools in one turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// Seed for (best-effort) deterministic sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// An end-user id (deprecated by the API in favour of `safety_identifier`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Penalty on tokens already present, -2 to 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f64>,
    /// Penalty on tokens by their frequency so far, -2 to 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f64>,
    /// Whether to return the log probabilities of the output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<bool>,
    /// How many most likely tokens to return at each position (needs `logprobs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_logprobs: Option<u32>,
    /// Up to 16 string key-value pairs stored with the completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<BTreeMap<String, String>>,
    /// Whether OpenAI stores the completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<bool>,
    /// How hard a reasoning model thinks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Fields not modelled here, kept as they came.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ChatCompletionRequest {
    /// A request for `model` with `messages` and nothing else set.
    #[must_use]
    pub fn new(model: impl Into<String>, messages: Vec<ChatMessage>) -> Self {
        Self {
            model: model.into(),
            messages,
            temperature: None,
            top_p: None,
            max_tokens: None,
            max_completion_tokens: None,
            n: None,
            stop: None,
            stream: None,
            stream_options: None,
            response_format: None,
            tools: None,
            tool_choice: None,
            parallel_tool_calls: None,
            seed: None,
            user: None,
            presence_penalty: None,
            frequency_penalty: None,
            logprobs: None,
            top_logprobs: None,
            metadata: None,
            store: None,
            reasoning_effort: None,
            extra: Extra::new(),
        }
    }

    /// The token cap the client asked for: `max_completion_tokens`, else `max_tokens`.
    #[must_use]
    pub fn max_output_tokens(&self) -> Option<u32> {
        self.max_completion_tokens.or(self.max_tokens)
    }

    /// Whether a streamed answer must end with a usage chunk (`stream_options.include_usage`).
    #[must_use]
    pub fn include_usage(&self) -> bool {
        self.stream_options
            .as_ref()
            .and_then(|o| o.include_usage)
            .unwrap_or(false)
    }
}

/// `stop`: one sequence or several.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Stop {
    /// A single stop sequence.
    One(String),
    /// Several stop sequences.
    Many(Vec<String>),
}

/// `stream_options`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StreamOptions {
    /// Whether the stream ends with a chunk holding the usage (and no choices).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_usage: Option<bool>,
    /// Fields not modelled here (e.g. `include_obfuscation`).
    #[serde(flatten)]
    pub extra: Extra,
}

string_enum! {
    /// `reasoning_effort` of a reasoning model.
    pub enum ReasoningEffort {
        /// No reasoning.
        None = "none",
        /// Minimal reasoning.
        Minimal = "minimal",
        /// Low effort.
        Low = "low",
        /// Medium effort (the default).
        Medium = "medium",
        /// High effort.
        High = "high",
    }
}

string_enum! {
    /// The author of a message.
    pub enum Role {
        /// Instructions (older models).
        System = "system",
        /// Instructions (reasoning models; replaces `system`).
        Developer = "developer",
        /// The end user.
        User = "user",
        /// The model.
        Assistant = "assistant",
        /// A tool's result, answering a tool call.
        Tool = "tool",
        /// A legacy function's result (deprecated by `tool`).
        Function = "function",
    }
}

/// A message of the conversation, any role.
///
/// One struct for all roles (rather than an enum by role) so that an unknown role is kept and
/// the same type serves requests and a response's message. Which fields a role uses: `content`
/// (all; an assistant's may be `null` when it calls tools), `name` (system, developer, user,
/// assistant, function), `tool_calls` and `refusal` (assistant), `tool_call_id` (tool),
/// `function_call` (legacy assistant).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Who wrote the message.
    pub role: Role,
    /// The message's content. [`Nullable`]: an assistant message that calls tools carries
    /// `"content": null`, which a round trip keeps.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable"
    )]
    pub content: Nullable<Content>,
    /// A name telling participants of the same role apart (a function's name for `function`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The tool calls of an assistant message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    /// The id of the tool call a `tool` message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// An assistant's refusal. [`Nullable`]: responses carry `"refusal": null`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable"
    )]
    pub refusal: Nullable<String>,
    /// The legacy single function call of an assistant message. [`Nullable`].
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable"
    )]
    pub function_call: Nullable<FunctionCall>,
    /// Fields not modelled here (e.g. `audio`, `annotations`).
    #[serde(flatten)]
    pub extra: Extra,
}

impl ChatMessage {
    /// A message of `role` with a text content and nothing else.
    #[must_use]
    pub fn new(role: Role, text: impl Into<String>) -> Self {
        Self {
            role,
            content: Some(Some(Content::Text(text.into()))),
            name: None,
            tool_calls: None,
            tool_call_id: None,
            refusal: None,
            function_call: None,
            extra: Extra::new(),
        }
    }

    /// The content, whether absent or `null`.
    #[must_use]
    pub fn content(&self) -> Option<&Content> {
        self.content.as_ref().and_then(Option::as_ref)
    }

    /// The text of the content: the string, or the text parts joined by `\n`; empty when there
    /// is no content.
    #[must_use]
    pub fn text(&self) -> String {
        self.content().map(Content::text).unwrap_or_default()
    }
}

/// A message's content: a string or an array of parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Typed parts: text, images, audio, files, refusals.
    Parts(Vec<ContentPart>),
}

impl Content {
    /// The text: the string, or the `text` parts joined by `\n`.
    #[must_use]
    pub fn text(&self) -> String {
        match self {
            Self::Text(text) => text.clone(),
            Self::Parts(parts) => parts
                .iter()
                .filter(|p| p.kind == PartKind::Text)
                .filter_map(|p| p.text.as_deref())
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

string_enum! {
    /// The `type` of a content part.
    pub enum PartKind {
        /// `{"type": "text", "text": …}`.
        Text = "text",
        /// `{"type": "image_url", "image_url": {"url", "detail"}}`.
        ImageUrl = "image_url",
        /// `{"type": "input_audio", "input_audio": {"data", "format"}}`.
        InputAudio = "input_audio",
        /// `{"type": "file", "file": {"file_data" | "file_id", "filename"}}`.
        File = "file",
        /// `{"type": "refusal", "refusal": …}` (assistant messages).
        Refusal = "refusal",
    }
}

/// One part of an array content.
///
/// A struct with the `type` as a field (rather than an enum tagged by it) so that a part of a
/// kind this crate does not know is kept whole: its payload lands in `extra`. The payload field
/// that matches `kind` is the one set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContentPart {
    /// The part's kind.
    #[serde(rename = "type")]
    pub kind: PartKind,
    /// The text of a `text` part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The image of an `image_url` part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_url: Option<ImageUrl>,
    /// The audio of an `input_audio` part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_audio: Option<InputAudio>,
    /// The file of a `file` part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<FileRef>,
    /// The refusal of a `refusal` part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// Fields not modelled here, and the payload of a part of an unknown kind.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ContentPart {
    /// A `text` part.
    #[must_use]
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            kind: PartKind::Text,
            text: Some(text.into()),
            image_url: None,
            input_audio: None,
            file: None,
            refusal: None,
            extra: Extra::new(),
        }
    }
}

/// The image of an `image_url` part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageUrl {
    /// An `https:` URL or a `data:` URL with the base64 image.
    pub url: String,
    /// `low`, `high` or `auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The audio of an `input_audio` part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputAudio {
    /// Base64 audio.
    pub data: String,
    /// `wav` or `mp3`.
    pub format: String,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The file of a `file` part: inline data or an uploaded file's id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileRef {
    /// Base64 file data (a `data:` URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_data: Option<String>,
    /// The id of an uploaded file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_id: Option<String>,
    /// The file's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

string_enum! {
    /// The `type` of a tool or a tool call.
    pub enum ToolKind {
        /// A function tool.
        Function = "function",
        /// A custom (free-form input) tool.
        Custom = "custom",
    }
}

impl ToolKind {
    /// `function`: what a tool call without a `type` is read as.
    #[must_use]
    pub fn function() -> Self {
        Self::Function
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// The tool's kind.
    #[serde(rename = "type")]
    pub kind: ToolKind,
    /// The function of a `function` tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<FunctionDefinition>,
    /// Fields not modelled here (e.g. a `custom` tool's `custom`).
    #[serde(flatten)]
    pub extra: Extra,
}

/// A function the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionDefinition {
    /// The function's name.
    pub name: String,
    /// What the function does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema of the arguments (any JSON, hence a raw `Value`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
    /// Whether the arguments must match the schema exactly. [`Nullable`].
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable"
    )]
    pub strict: Nullable<bool>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A tool call of an assistant message.
///
/// Read leniently, as compatible servers write them: a missing `id` reads as empty and a
/// missing `type` as `function`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id, echoed by the `tool` message answering it.
    #[serde(default)]
    pub id: String,
    /// The called tool's kind.
    #[serde(rename = "type", default = "ToolKind::function")]
    pub kind: ToolKind,
    /// The called function (`function` calls).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<FunctionCall>,
    /// Fields not modelled here (e.g. a `custom` call's `custom`).
    #[serde(flatten)]
    pub extra: Extra,
}

/// A function call: its name and its arguments as the model wrote them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// The function's name; empty when the call came without one (a reader skips such a
    /// call).
    #[serde(default)]
    pub name: String,
    /// The arguments: a string holding JSON, which the model may have left invalid. Read
    /// leniently (see [`arguments_text`]): some compatible servers send the arguments as a JSON
    /// object, or `null`, or not at all — an object is kept as its JSON text, `null` and a
    /// missing key read as empty.
    #[serde(default, deserialize_with = "arguments_text")]
    pub arguments: String,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Reads a function call's `arguments` as JSON text whatever form they came in: a string as it
/// is, `null` as empty, any other JSON (an object, as some compatible servers send) as its JSON
/// text — which parses back to the same value.
pub fn arguments_text<'de, D>(deserializer: D) -> Result<String, D::Error>
where
    D: serde::Deserializer<'de>,
{
    Ok(match Value::deserialize(deserializer)? {
        Value::String(text) => text,
        Value::Null => String::new(),
        other => other.to_string(),
    })
}

/// `tool_choice`: a mode or a named function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolChoice {
    /// `"none"`, `"auto"` or `"required"`.
    Mode(ToolChoiceMode),
    /// `{"type": "function", "function": {"name": …}}`.
    Named(NamedToolChoice),
}

string_enum! {
    /// A `tool_choice` mode.
    pub enum ToolChoiceMode {
        /// Call no tool.
        None = "none",
        /// Call tools or not, as the model sees fit.
        Auto = "auto",
        /// Call at least one tool.
        Required = "required",
    }
}

/// A `tool_choice` naming the function the model must call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NamedToolChoice {
    /// The tool's kind (`function`).
    #[serde(rename = "type")]
    pub kind: ToolKind,
    /// The function to call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<NamedFunction>,
    /// Fields not modelled here (e.g. `allowed_tools`, `custom`).
    #[serde(flatten)]
    pub extra: Extra,
}

/// The function a [`NamedToolChoice`] names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NamedFunction {
    /// The function's name.
    pub name: String,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

string_enum! {
    /// The `type` of a `response_format`.
    pub enum ResponseFormatKind {
        /// Free text (the default).
        Text = "text",
        /// Any valid JSON object.
        JsonObject = "json_object",
        /// JSON matching the given schema (structured output).
        JsonSchema = "json_schema",
    }
}

/// `response_format`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseFormat {
    /// The format's kind.
    #[serde(rename = "type")]
    pub kind: ResponseFormatKind,
    /// The schema of a `json_schema` format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_schema: Option<JsonSchemaFormat>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The `json_schema` of a `json_schema` response format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonSchemaFormat {
    /// The format's name (required by OpenAI; optional here, as Bridle's endpoint accepts it
    /// missing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What the format is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema (any JSON, hence a raw `Value`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// Whether the output must match the schema exactly. [`Nullable`].
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable"
    )]
    pub strict: Nullable<bool>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}
