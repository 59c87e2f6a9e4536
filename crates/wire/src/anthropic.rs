//! Anthropic Messages (`POST /v1/messages`): requests, responses, stream events, errors.
//!
//! - [`MessagesRequest`]: the request body, with [`Message`]s whose content is a string or
//!   [`ContentBlock`]s, the [`System`] prompt, [`Tool`]s, [`ToolChoice`] and [`Thinking`];
//! - [`MessagesResponse`]: the `message` object of a non-streamed reply (and of `message_start`);
//! - [`StreamEvent`]: one server-sent event's `data`, tagged by `type` (its `event:` name is
//!   [`StreamEvent::event_name`]);
//! - [`ErrorBody`]: `{"type": "error", "error": {"type", "message"}}`.
//!
//! Tagged unions (content blocks, sources, deltas, stream events) keep a variant of a `type`
//! they do not know as an `Unknown` value holding the whole object, so a newer block or event
//! passes through unchanged. String sets the API grows (roles, stop reasons, tool choice kinds)
//! keep an unknown value in an `Other(String)` variant.
//!
//! Replies are read as compatible servers and proxies write them, not only as the API does: a
//! reply's `id`, `type`, `role` and `model`, a block's or event's `index`, a tool call's `id`
//! and `name`, an error's `type`s and `message` may be missing (they read as empty, `assistant`
//! or 0), and an error body may be `{"error": "text"}`. Written, every field is there.

mod blocks;
mod stream;

pub use blocks::{
    Citation, ContentBlock, DataSource, DocumentBlock, FileSource, ImageBlock, MessageContent,
    RedactedThinkingBlock, Source, TextBlock, ThinkingBlock, ToolResultBlock, ToolResultContent,
    ToolUseBlock, UnknownObject, UrlSource,
};
pub use stream::{
    ContentBlockDeltaEvent, ContentBlockStartEvent, ContentBlockStopEvent, Delta, ErrorEvent,
    InputJsonDelta, MessageDelta, MessageDeltaEvent, MessageStartEvent, SignatureDelta,
    StreamEvent, TextDelta, ThinkingDelta,
};

use crate::Extra;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// Declares a string enum whose unknown values are kept in an `Other(String)` variant.
macro_rules! open_string_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident => $text:literal,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)*
            /// A value this crate does not know, kept as sent.
            Other(String),
        }

        impl $name {
            /// The value as it is written on the wire.
            pub fn as_str(&self) -> &str {
                match self {
                    $(Self::$variant => $text,)*
                    Self::Other(other) => other,
                }
            }
        }

        impl From<&str> for $name {
            fn from(text: &str) -> Self {
                match text {
                    $($text => Self::$variant,)*
                    other => Self::Other(other.to_owned()),
                }
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
                Ok(Self::from(text.as_ref()))
            }
        }
    };
}

/// Implements `Deserialize` for an enum tagged by `type` whose last variant, `Unknown`, keeps
/// an object of any other type. Serde's own `#[serde(untagged)]` fallback would also take a
/// *known* type with a missing or wrong field (a `tool_use` without `input`) as unknown and hide
/// the mistake; this reads the tag first, so a known type must parse as its variant (with
/// serde's message, e.g. "missing field `input`") and only other types become `Unknown`.
/// Serialising stays derived (`#[serde(tag = "type")]`, `Unknown` untagged).
macro_rules! tagged_deserialize {
    ($name:ident { $($tag:literal => $variant:ident,)* }) => {
        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                use serde::de::Error as _;
                let mut object = <$crate::Extra as serde::Deserialize>::deserialize(deserializer)?;
                let tag = object.remove("type").ok_or_else(|| D::Error::missing_field("type"))?;
                let kind = <String as serde::Deserialize>::deserialize(tag).map_err(D::Error::custom)?;
                match kind.as_str() {
                    $($tag => serde::Deserialize::deserialize(serde_json::Value::Object(object))
                        .map(Self::$variant)
                        .map_err(D::Error::custom),)*
                    _ => Ok(Self::Unknown($crate::anthropic::UnknownObject { kind, extra: object })),
                }
            }
        }
    };
}
pub(crate) use tagged_deserialize;

/// `Option<Option<T>>` for a field the API sends as an explicit `null`: the outer `None` is
/// "the key was absent", `Some(None)` is "the key was `null`". Plain `Option<T>` would read a
/// `null` as absent and drop the key on the way back (e.g. `"stop_reason": null` in
/// `message_start`), so fields the API documents as nullable use this with
/// `#[serde(default, skip_serializing_if = "Option::is_none", with = "nullable")]`.
pub(crate) mod nullable {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// Writes `Some(None)` as `null` and `Some(Some(v))` as `v` (`None` is skipped).
    pub fn serialize<T: Serialize, S: Serializer>(
        value: &Option<Option<T>>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(inner) => inner.serialize(serializer),
            None => serializer.serialize_none(),
        }
    }

    /// Reads a present key: `null` as `Some(None)`, a value as `Some(Some(v))`.
    pub fn deserialize<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Option<T>>, D::Error> {
        Option::<T>::deserialize(deserializer).map(Some)
    }
}

open_string_enum! {
    /// Who wrote a message: `user` or `assistant`.
    Role {
        /// The person (and tool results).
        User => "user",
        /// The model.
        Assistant => "assistant",
    }
}

impl Role {
    /// `assistant`: the role of a reply that names none.
    pub fn assistant() -> Self {
        Self::Assistant
    }
}

open_string_enum! {
    /// Why the model stopped.
    StopReason {
        /// The model finished its turn.
        EndTurn => "end_turn",
        /// `max_tokens` was reached.
        MaxTokens => "max_tokens",
        /// One of `stop_sequences` was generated.
        StopSequence => "stop_sequence",
        /// The model called a tool.
        ToolUse => "tool_use",
        /// A long server-tool turn was paused; send the reply back to continue it.
        PauseTurn => "pause_turn",
        /// The model refused to answer.
        Refusal => "refusal",
    }
}

open_string_enum! {
    /// How the model may use tools (`tool_choice.type`).
    ToolChoiceKind {
        /// The model decides.
        Auto => "auto",
        /// The model must use some tool.
        Any => "any",
        /// The model must use the tool named in `name`.
        Tool => "tool",
        /// The model must not use tools.
        None => "none",
    }
}

open_string_enum! {
    /// Whether extended thinking is on (`thinking.type`).
    ThinkingKind {
        /// Thinking on, with a `budget_tokens`.
        Enabled => "enabled",
        /// Thinking off.
        Disabled => "disabled",
    }
}

/// The request body of `POST /v1/messages`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessagesRequest {
    /// The model, e.g. `claude-sonnet-4-20250514`.
    pub model: String,
    /// The most tokens the reply may have (required by the API).
    pub max_tokens: u64,
    /// The conversation, alternating `user` and `assistant` turns.
    pub messages: Vec<Message>,
    /// The system prompt: a string or text blocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<System>,
    /// Sampling temperature, 0 to 1. An integer (`1`) is written back as `1.0`, the same number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Top-k sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u64>,
    /// Strings that end the reply when generated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Whether the reply comes as server-sent [`StreamEvent`]s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// Request metadata (`user_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// The tools the model may call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// How the model must use the tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Extended thinking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<Thinking>,
    /// Fields not modelled here (`service_tier`, `container`, `mcp_servers`, ...).
    #[serde(flatten)]
    pub extra: Extra,
}

/// One turn of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// `user` or `assistant`.
    pub role: Role,
    /// A string or content blocks.
    pub content: MessageContent,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Message {
    /// A message with plain-text content.
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        Self {
            role,
            content: MessageContent::Text(text.into()),
            extra: Extra::new(),
        }
    }
}

/// The system prompt: a plain string or a list of blocks (text blocks, e.g. with
/// `cache_control`; any block is accepted and kept).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum System {
    /// `"system": "..."`.
    Text(String),
    /// `"system": [{"type": "text", "text": "..."}]`.
    Blocks(Vec<ContentBlock>),
}

/// Request metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    /// An opaque id of the end user. Nullable in the API.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "nullable")]
    pub user_id: Option<Option<String>>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A tool the model may call. Client tools have `name`, `description` and `input_schema`;
/// server tools (`{"type": "web_search_20250305", "name": "web_search", "max_uses": 5}`) have a
/// `type` and keep their own settings in `extra`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// `custom` (optional) for a client tool, a versioned kind for a server tool.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The tool's name.
    pub name: String,
    /// What the tool does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema of the tool's input (any JSON, kept as is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
    /// Fields not modelled here (`cache_control`, server tool settings).
    #[serde(flatten)]
    pub extra: Extra,
}

/// How the model must use the tools: `{"type": "auto" | "any" | "tool" | "none"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolChoice {
    /// The kind of choice.
    #[serde(rename = "type")]
    pub kind: ToolChoiceKind,
    /// The tool to use, with `type: "tool"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// At most one tool call per reply, when `true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_parallel_tool_use: Option<bool>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Extended thinking: `{"type": "enabled", "budget_tokens": 2048}` or `{"type": "disabled"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Thinking {
    /// On or off.
    #[serde(rename = "type")]
    pub kind: ThinkingKind,
    /// The most tokens thinking may use, with `enabled`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u64>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A reply: the body of a non-streamed `POST /v1/messages`, and the `message` of
/// `message_start` (where `stop_reason` and `stop_sequence` are `null` and kept so).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessagesResponse {
    /// The message id, `msg_...` (empty when missing).
    #[serde(default)]
    pub id: String,
    /// Always `message` (empty when missing).
    #[serde(rename = "type", default)]
    pub kind: String,
    /// Always `assistant` (and read so when missing).
    #[serde(default = "Role::assistant")]
    pub role: Role,
    /// The model that answered (empty when missing).
    #[serde(default)]
    pub model: String,
    /// The reply's blocks (empty in `message_start`).
    pub content: Vec<ContentBlock>,
    /// Why the model stopped; `null` in `message_start`.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "nullable")]
    pub stop_reason: Option<Option<StopReason>>,
    /// The stop sequence generated, if any; usually `null`.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "nullable")]
    pub stop_sequence: Option<Option<String>>,
    /// Token counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Fields not modelled here (`container`, ...).
    #[serde(flatten)]
    pub extra: Extra,
}

impl MessagesResponse {
    /// The reply's text: its text blocks joined.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text(text) => Some(text.text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The reply's tool calls, in order.
    pub fn tool_uses(&self) -> impl Iterator<Item = &ToolUseBlock> {
        self.content.iter().filter_map(|block| match block {
            ContentBlock::ToolUse(tool_use) => Some(tool_use),
            _ => None,
        })
    }

    /// The stop reason, if the reply has a non-null one.
    pub fn stop_reason(&self) -> Option<&StopReason> {
        self.stop_reason.as_ref().and_then(Option::as_ref)
    }
}

/// Token counts of a reply (all optional: `message_delta` carries only some of them).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens not read from or written to the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Input tokens written to the cache. Nullable in the API.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "nullable")]
    pub cache_creation_input_tokens: Option<Option<u64>>,
    /// Input tokens read from the cache. Nullable in the API.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "nullable")]
    pub cache_read_input_tokens: Option<Option<u64>>,
    /// Fields not modelled here (`cache_creation`, `server_tool_use`, `service_tier`).
    #[serde(flatten)]
    pub extra: Extra,
}

impl Usage {
    /// Input and output token counts, nothing else.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens: Some(input_tokens),
            output_tokens: Some(output_tokens),
            ..Self::default()
        }
    }
}

/// An error body: `{"type": "error", "error": {"type": "...", "message": "..."}}`. Also read
/// from `{"error": "text"}`, as a proxy may answer: the text is the error's `message` (and the
/// body is written back in the API's form).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// Always `error` (empty when missing).
    #[serde(rename = "type", default)]
    pub kind: String,
    /// What went wrong.
    #[serde(deserialize_with = "ErrorDetail::object_or_text")]
    pub error: ErrorDetail,
    /// Fields not modelled here (`request_id`).
    #[serde(flatten)]
    pub extra: Extra,
}

impl ErrorBody {
    /// An error body of the given kind (`invalid_request_error`, `overloaded_error`, ...).
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            kind: "error".into(),
            error: ErrorDetail {
                kind: kind.into(),
                message: message.into(),
                extra: Extra::new(),
            },
            extra: Extra::new(),
        }
    }
}

/// The `error` object of an [`ErrorBody`] or an `error` stream event.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ErrorDetail {
    /// The error kind, e.g. `invalid_request_error`, `rate_limit_error`, `overloaded_error`
    /// (empty when missing).
    #[serde(rename = "type", default)]
    pub kind: String,
    /// A human-readable message (empty when missing).
    #[serde(default)]
    pub message: String,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ErrorDetail {
    /// Reads an error: an object, or a bare text taken as its message.
    fn object_or_text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Object(ErrorDetail),
            Text(String),
        }
        Ok(match Form::deserialize(deserializer)? {
            Form::Object(error) => error,
            Form::Text(message) => Self {
                message,
                ..Self::default()
            },
        })
    }
}
