//! Content blocks: what a message's, a tool result's and a reply's `content` is made of.

use super::{nullable, tagged_deserialize};
use crate::Extra;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A message's content: a plain string or a list of blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MessageContent {
    /// `"content": "..."`.
    Text(String),
    /// `"content": [{"type": "text", ...}, ...]`.
    Blocks(Vec<ContentBlock>),
}

/// A content block, tagged by `type`. A block of a type not listed here (`server_tool_use`,
/// `web_search_tool_result`, `search_result`, ...) is kept whole in [`ContentBlock::Unknown`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// `{"type": "text", "text", "citations"?}`.
    Text(TextBlock),
    /// `{"type": "image", "source"}`.
    Image(ImageBlock),
    /// `{"type": "document", "source", "title"?, "context"?}`.
    Document(DocumentBlock),
    /// `{"type": "tool_use", "id", "name", "input"}`: a tool call.
    ToolUse(ToolUseBlock),
    /// `{"type": "tool_result", "tool_use_id", "content"?, "is_error"?}`.
    ToolResult(ToolResultBlock),
    /// `{"type": "thinking", "thinking", "signature"}`.
    Thinking(ThinkingBlock),
    /// `{"type": "redacted_thinking", "data"}`.
    RedactedThinking(RedactedThinkingBlock),
    /// A block of another type, kept as it came.
    #[serde(untagged)]
    Unknown(UnknownObject),
}

tagged_deserialize!(ContentBlock {
    "text" => Text,
    "image" => Image,
    "document" => Document,
    "tool_use" => ToolUse,
    "tool_result" => ToolResult,
    "thinking" => Thinking,
    "redacted_thinking" => RedactedThinking,
});

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(TextBlock {
            text: text.into(),
            citations: None,
            extra: Extra::new(),
        })
    }

    /// A tool call block.
    pub fn tool_use(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self::ToolUse(ToolUseBlock {
            id: id.into(),
            name: name.into(),
            input,
            extra: Extra::new(),
        })
    }

    /// A tool result block with text content.
    pub fn tool_result(tool_use_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self::ToolResult(ToolResultBlock {
            tool_use_id: tool_use_id.into(),
            content: Some(ToolResultContent::Text(content.into())),
            is_error: None,
            extra: Extra::new(),
        })
    }
}

/// A tagged object of a `type` this crate does not model, kept whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnknownObject {
    /// Its `type`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Its other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A text block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextBlock {
    /// The text.
    pub text: String,
    /// The citations backing the text (replies to cited documents); nullable in the API.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "nullable")]
    pub citations: Option<Option<Vec<Citation>>>,
    /// Fields not modelled here (`cache_control`).
    #[serde(flatten)]
    pub extra: Extra,
}

/// A citation (`char_location`, `page_location`, `content_block_location`,
/// `web_search_result_location`, ...), typed loosely: its kind and cited text, the rest kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Citation {
    /// The citation kind.
    #[serde(rename = "type")]
    pub kind: String,
    /// The text cited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cited_text: Option<String>,
    /// The location fields (`document_index`, `start_char_index`, `url`, ...).
    #[serde(flatten)]
    pub extra: Extra,
}

/// Where an image's or a document's bytes come from, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Source {
    /// `{"type": "base64", "media_type", "data"}`.
    Base64(DataSource),
    /// `{"type": "url", "url"}`.
    Url(UrlSource),
    /// `{"type": "text", "media_type": "text/plain", "data"}`: a plain-text document.
    Text(DataSource),
    /// `{"type": "file", "file_id"}`: a file uploaded through the Files API.
    File(FileSource),
    /// A source of another type (`content`, ...), kept as it came.
    #[serde(untagged)]
    Unknown(UnknownObject),
}

tagged_deserialize!(Source {
    "base64" => Base64,
    "url" => Url,
    "text" => Text,
    "file" => File,
});

/// The bytes of a `base64` or `text` [`Source`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataSource {
    /// e.g. `image/png`, `application/pdf`, `text/plain`.
    pub media_type: String,
    /// The bytes, base64 (or the text, for a `text` source).
    pub data: String,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The address of a `url` [`Source`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UrlSource {
    /// Where to fetch the bytes.
    pub url: String,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A `file` [`Source`]: a file uploaded through the Files API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileSource {
    /// The file's id.
    pub file_id: String,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// An image block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageBlock {
    /// The image's bytes or address.
    pub source: Source,
    /// Fields not modelled here (`cache_control`).
    #[serde(flatten)]
    pub extra: Extra,
}

/// A document block (PDF, plain text, custom content).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentBlock {
    /// The document's bytes or address.
    pub source: Source,
    /// The document's title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Context about the document, not cited from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// Fields not modelled here (`citations: {"enabled": true}`, `cache_control`).
    #[serde(flatten)]
    pub extra: Extra,
}

/// A tool call by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolUseBlock {
    /// The call's id, `toolu_...`, answered by a `tool_result`'s `tool_use_id` (empty when
    /// missing).
    #[serde(default)]
    pub id: String,
    /// The tool's name (empty when missing: a reader skips such a call).
    #[serde(default)]
    pub name: String,
    /// The tool's input (any JSON object, kept as is).
    pub input: Value,
    /// Fields not modelled here (`cache_control`).
    #[serde(flatten)]
    pub extra: Extra,
}

/// The result of a tool call, sent back in a `user` message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultBlock {
    /// The `tool_use` block's id.
    pub tool_use_id: String,
    /// The result: a string or blocks (text, image, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<ToolResultContent>,
    /// Whether the tool failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Fields not modelled here (`cache_control`).
    #[serde(flatten)]
    pub extra: Extra,
}

/// A tool result's content: a string or blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolResultContent {
    /// `"content": "..."`.
    Text(String),
    /// `"content": [{"type": "text", ...}, {"type": "image", ...}]`.
    Blocks(Vec<ContentBlock>),
}

/// The model's extended thinking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThinkingBlock {
    /// The thinking text.
    pub thinking: String,
    /// The signature that must be sent back unchanged with the block.
    pub signature: String,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Thinking the safety systems redacted, encrypted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RedactedThinkingBlock {
    /// The encrypted thinking, sent back unchanged.
    pub data: String,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}
