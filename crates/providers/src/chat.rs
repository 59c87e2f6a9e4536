//! [`ChatRequest`]: a chat completion request, provider-neutral — its [`ChatMessage`]s (text,
//! content parts, an assistant's tool calls, a tool's result), the offered tools and the tool
//! choice, native structured output, and the client's [`CallOptions`] (`stop`, `seed`, `n`,
//! …) that an OpenAI-compatible caller passes through. Each provider writes it in its own wire
//! format, or refuses what that format cannot say ([`crate::Provider::check`]).

use bridle_core::ToolCall;
use bridle_wire::Extra;
use bridle_wire::openai::{self, ContentPart, PartKind, ReasoningEffort, Stop, ToolChoice};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Who wrote a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions.
    System,
    /// Instructions, as OpenAI's reasoning models name them (kept apart from `system` so
    /// that an OpenAI-compatible upstream gets the role the client wrote; every other
    /// provider reads it as `system`).
    Developer,
    /// The application's user (or Bridle's retry feedback).
    #[default]
    User,
    /// The model.
    Assistant,
    /// A tool's result, answering one of the model's tool calls.
    Tool,
}

impl Role {
    /// The wire name (`system`, `developer`, `user`, `assistant`, `tool`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::System => "system",
            Self::Developer => "developer",
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::Tool => "tool",
        }
    }
}

impl Role {
    /// Whether the message holds instructions (`system` or `developer`).
    pub fn is_instructions(self) -> bool {
        matches!(self, Self::System | Self::Developer)
    }
}

impl From<Role> for openai::Role {
    fn from(role: Role) -> Self {
        Self::from(role.as_str())
    }
}

impl From<Role> for bridle_wire::anthropic::Role {
    /// `user` or `assistant`; a tool's result is a `user` message there (its `tool_result`
    /// block); `system`, which the Messages API takes apart from the messages, as an unknown
    /// role.
    fn from(role: Role) -> Self {
        match role {
            Role::Tool => Self::from("user"),
            other => Self::from(other.as_str()),
        }
    }
}

/// One message of a chat.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Author.
    pub role: Role,
    /// The text (for content sent as parts: the text parts joined by newlines).
    pub content: String,
    /// The content as the client sent it in parts (text, images, audio, files); empty when it
    /// is `content` alone. A provider writes these, when present, instead of `content`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<ContentPart>,
    /// An assistant message's tool calls, with their ids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The id of the call a `tool` message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// A participant's name (OpenAI `name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The message's fields no type here models (an assistant message sent back with its
    /// `refusal` and `annotations`, …), written as they came by a provider that speaks
    /// OpenAI's format.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}

impl ChatMessage {
    /// A message of `role` with `content`.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            ..Self::default()
        }
    }

    /// Whether the content holds parts other than text (images, audio, files).
    pub fn has_media(&self) -> bool {
        self.parts.iter().any(|part| part.kind != PartKind::Text)
    }
}

/// Structured output asked of the provider (passed through only where the model entry says the
/// provider supports it natively; Bridle validates either way).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponseFormat {
    /// A JSON value meeting `schema`.
    JsonSchema {
        /// Schema name (OpenAI requires one).
        name: String,
        /// The JSON Schema.
        schema: Value,
    },
    /// Any JSON object.
    JsonObject,
}

/// What a caller of the OpenAI-compatible endpoint asks beyond the messages, passed to the
/// provider as it came (OpenAI's own names and meaning). Empty for Bridle's own turns.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CallOptions {
    /// Nucleus sampling mass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Sequences where generation stops (one, or a list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Stop>,
    /// Sampling seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// How many choices to generate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<u32>,
    /// The end user's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Presence penalty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f64>,
    /// Frequency penalty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f64>,
    /// Return the tokens' log probabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<bool>,
    /// How many alternatives per token with `logprobs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_logprobs: Option<u32>,
    /// Whether the model may call several tools at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// Reasoning effort (reasoning models).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<ReasoningEffort>,
    /// OpenAI's `metadata` (also the context of an enforced call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<BTreeMap<String, String>>,
    /// OpenAI's `store`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<bool>,
    /// Request fields no type here models (`logit_bias`, `service_tier`, …), sent as they came
    /// to a provider that speaks OpenAI's format.
    #[serde(default, skip_serializing_if = "Extra::is_empty")]
    pub extra: Extra,
}

impl CallOptions {
    /// The options of a Chat Completions request.
    pub fn of(request: &openai::ChatCompletionRequest) -> Self {
        Self {
            top_p: request.top_p,
            stop: request.stop.clone(),
            seed: request.seed,
            n: request.n,
            user: request.user.clone(),
            presence_penalty: request.presence_penalty,
            frequency_penalty: request.frequency_penalty,
            logprobs: request.logprobs,
            top_logprobs: request.top_logprobs,
            parallel_tool_calls: request.parallel_tool_calls,
            reasoning_effort: request.reasoning_effort.clone(),
            metadata: request.metadata.clone(),
            store: request.store,
            extra: request.extra.clone(),
        }
    }

    /// The names of the options set that a provider without them cannot honour: everything
    /// but `stop`, `user`, `metadata` and `store` (which every provider can take or Bridle
    /// keeps) and `n: 1`, `logprobs: false`, `parallel_tool_calls: true` (the defaults).
    pub fn beyond_basics(&self) -> Vec<String> {
        let mut names: Vec<String> = [
            ("top_p", self.top_p.is_some()),
            ("seed", self.seed.is_some()),
            ("n", self.n.is_some_and(|n| n != 1)),
            ("presence_penalty", self.presence_penalty.is_some()),
            ("frequency_penalty", self.frequency_penalty.is_some()),
            ("logprobs", self.logprobs == Some(true)),
            ("top_logprobs", self.top_logprobs.is_some()),
            (
                "parallel_tool_calls",
                self.parallel_tool_calls == Some(false),
            ),
            ("reasoning_effort", self.reasoning_effort.is_some()),
        ]
        .into_iter()
        .filter(|(_, set)| *set)
        .map(|(name, _)| name.to_owned())
        .collect();
        names.extend(self.extra.keys().cloned());
        names
    }
}

impl CallOptions {
    /// The stop sequences as a list (none, one or several).
    pub fn stop_sequences(&self) -> Vec<String> {
        match &self.stop {
            None => Vec::new(),
            Some(Stop::One(one)) => vec![one.clone()],
            Some(Stop::Many(many)) => many.clone(),
        }
    }
}

/// A chat completion request, provider-neutral.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChatRequest {
    /// Model name as the provider knows it.
    pub model: String,
    /// System, history, user message, and on retries the bad reply and the feedback.
    pub messages: Vec<ChatMessage>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Most tokens to generate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Native structured output, when supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat>,
    /// Function tools the model may call, as OpenAI function tool bodies
    /// `{"type": "function", "function": {name, description, parameters}}`; each provider
    /// writes them in its own form.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Value>,
    /// Whether and which tool the model must call (absent: the model decides).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// The caller's other options.
    #[serde(default)]
    pub options: CallOptions,
}

impl ChatRequest {
    /// What a provider that does not speak OpenAI's format cannot say in any request, as the
    /// error naming it: a message field no type here models that says something (an answer's
    /// message sent back carries `refusal: null` and `annotations: []`, which say nothing), and
    /// a `tool_choice` that names no function. `provider` names the provider in the message.
    pub fn foreign_refusal(&self, provider: &str) -> Option<crate::ProviderError> {
        let unsupported = |field: String, what: &str| crate::ProviderError::Unsupported {
            message: format!("the {provider} provider cannot honour {what}"),
            field,
        };
        for (i, m) in self.messages.iter().enumerate() {
            if let Some((key, _)) = m.extra.iter().find(|(_, value)| !says_nothing(value)) {
                return Some(unsupported(
                    format!("messages[{i}].{key}"),
                    &format!("a message's `{key}`"),
                ));
            }
        }
        if let Some(ToolChoice::Named(named)) = &self.tool_choice
            && named.function.is_none()
        {
            return Some(unsupported(
                "tool_choice".into(),
                "a tool_choice that names no function",
            ));
        }
        None
    }
}

/// `null`, `[]`, `{}` or `""`.
fn says_nothing(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.is_empty(),
        Value::Object(fields) => fields.is_empty(),
        Value::String(text) => text.is_empty(),
        _ => false,
    }
}

/// The functions of offered tools ([`ChatRequest::tools`]), read through the wire type: each
/// provider writes them in its own form from here. A tool the wire type cannot read (one of
/// bridle-core's never is) or that is not a function is left out.
pub fn offered_functions(tools: &[Value]) -> impl Iterator<Item = openai::FunctionDefinition> + '_ {
    tools
        .iter()
        .filter_map(|tool| openai::Tool::deserialize(tool).ok()?.function)
}
