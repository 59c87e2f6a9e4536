//! Stream events: the `data` of each server-sent event of a streamed reply, tagged by `type`
//! (the SSE `event:` name is the same string, [`StreamEvent::event_name`]).

use super::{
    ContentBlock, ErrorDetail, MessagesResponse, StopReason, UnknownObject, Usage, nullable,
    tagged_deserialize,
};
use crate::Extra;
use serde::{Deserialize, Serialize};

/// One stream event. An event of a type not listed here is kept whole in
/// [`StreamEvent::Unknown`] (the API says new event types may appear and must be tolerated).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// The reply begins: its `message` with empty content and `null` stop reason.
    MessageStart(MessageStartEvent),
    /// A content block begins (a `tool_use` block has `input: {}` here).
    ContentBlockStart(ContentBlockStartEvent),
    /// A piece of a content block.
    ContentBlockDelta(ContentBlockDeltaEvent),
    /// A content block ends.
    ContentBlockStop(ContentBlockStopEvent),
    /// The reply's stop reason and final output token count.
    MessageDelta(MessageDeltaEvent),
    /// The reply ends.
    MessageStop(Extra),
    /// A keep-alive.
    Ping(Extra),
    /// An error in the middle of the stream (e.g. `overloaded_error`).
    Error(ErrorEvent),
    /// An event of another type, kept as it came.
    #[serde(untagged)]
    Unknown(UnknownObject),
}

tagged_deserialize!(StreamEvent {
    "message_start" => MessageStart,
    "content_block_start" => ContentBlockStart,
    "content_block_delta" => ContentBlockDelta,
    "content_block_stop" => ContentBlockStop,
    "message_delta" => MessageDelta,
    "message_stop" => MessageStop,
    "ping" => Ping,
    "error" => Error,
});

impl StreamEvent {
    /// The event as one server-sent-events frame: `event: <name>\ndata: <json>\n\n`.
    pub fn to_sse(&self) -> Result<String, serde_json::Error> {
        let data = serde_json::to_string(self)?;
        Ok(format!("event: {}\ndata: {data}\n\n", self.event_name()))
    }

    /// The SSE `event:` name of this event: its `type`.
    pub fn event_name(&self) -> &str {
        match self {
            Self::MessageStart(_) => "message_start",
            Self::ContentBlockStart(_) => "content_block_start",
            Self::ContentBlockDelta(_) => "content_block_delta",
            Self::ContentBlockStop(_) => "content_block_stop",
            Self::MessageDelta(_) => "message_delta",
            Self::MessageStop(_) => "message_stop",
            Self::Ping(_) => "ping",
            Self::Error(_) => "error",
            Self::Unknown(unknown) => &unknown.kind,
        }
    }
}

/// `message_start`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageStartEvent {
    /// The reply so far.
    pub message: MessagesResponse,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `content_block_start`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContentBlockStartEvent {
    /// The block's index in the reply's content (0 when missing).
    #[serde(default)]
    pub index: u64,
    /// The block, empty (`text: ""`, `input: {}`).
    pub content_block: ContentBlock,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `content_block_delta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContentBlockDeltaEvent {
    /// The block's index in the reply's content (0 when missing).
    #[serde(default)]
    pub index: u64,
    /// The piece.
    pub delta: Delta,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `content_block_stop`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContentBlockStopEvent {
    /// The block's index in the reply's content (0 when missing).
    #[serde(default)]
    pub index: u64,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A piece of a content block, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Delta {
    /// `{"type": "text_delta", "text"}`.
    TextDelta(TextDelta),
    /// `{"type": "input_json_delta", "partial_json"}`: a piece of a tool call's input JSON.
    InputJsonDelta(InputJsonDelta),
    /// `{"type": "thinking_delta", "thinking"}`.
    ThinkingDelta(ThinkingDelta),
    /// `{"type": "signature_delta", "signature"}`: a thinking block's signature.
    SignatureDelta(SignatureDelta),
    /// A delta of another type (`citations_delta`, ...), kept as it came.
    #[serde(untagged)]
    Unknown(UnknownObject),
}

tagged_deserialize!(Delta {
    "text_delta" => TextDelta,
    "input_json_delta" => InputJsonDelta,
    "thinking_delta" => ThinkingDelta,
    "signature_delta" => SignatureDelta,
});

/// A piece of a text block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextDelta {
    /// The text.
    pub text: String,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A piece of a `tool_use` block's input, as JSON text (whole only once all pieces are joined).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputJsonDelta {
    /// The JSON text.
    pub partial_json: String,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A piece of a thinking block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThinkingDelta {
    /// The thinking text.
    pub thinking: String,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A thinking block's signature, sent just before its `content_block_stop`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SignatureDelta {
    /// The signature.
    pub signature: String,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `message_delta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageDeltaEvent {
    /// The reply's top-level changes (none when missing).
    #[serde(default)]
    pub delta: MessageDelta,
    /// Cumulative token counts (`output_tokens`, and in newer replies the input counts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The `delta` of a `message_delta` event.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MessageDelta {
    /// Why the model stopped.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "nullable")]
    pub stop_reason: Option<Option<StopReason>>,
    /// The stop sequence generated; usually `null`.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "nullable")]
    pub stop_sequence: Option<Option<String>>,
    /// Fields not modelled here (`container`).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `error`: `{"type": "error", "error": {"type", "message"}}` in the middle of a stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorEvent {
    /// What went wrong (an error without a message when missing).
    #[serde(default)]
    pub error: ErrorDetail,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}
