//! OpenAI Chat Completions (`POST /v1/chat/completions`): requests, responses, stream chunks,
//! errors, and the models list (`GET /v1/models`).
//!
//! - [`request`]: [`ChatCompletionRequest`] and what it carries: [`ChatMessage`]s with their
//!   [`Content`] and [`ContentPart`]s, [`Tool`]s, [`ToolChoice`], [`ResponseFormat`];
//! - [`response`]: [`ChatCompletion`], [`ChatCompletionChunk`], [`Usage`], [`ErrorBody`],
//!   [`ModelList`].
//!
//! Every object keeps its unmodelled fields in `extra`. Optional fields are `Option`s that are
//! left out when `None`, so a body read and written again has exactly the keys it came with.
//! Where the API sends an explicit `null` (an assistant message's `content` next to its
//! `tool_calls`, a chunk's `finish_reason`, an error's `param`), the field is a [`Nullable`], so
//! that `null` is written back as `null` rather than dropped. Numbers Bridle reads as floats
//! (`temperature`, `top_p`, the penalties) are `f64`: an integral value such as `1` comes back
//! as `1.0`, the same JSON number.

pub mod request;
pub mod response;

pub use request::{
    ChatCompletionRequest, ChatMessage, Content, ContentPart, FileRef, FunctionCall,
    FunctionDefinition, ImageUrl, InputAudio, JsonSchemaFormat, NamedFunction, NamedToolChoice,
    PartKind, ReasoningEffort, ResponseFormat, ResponseFormatKind, Role, Stop, StreamOptions, Tool,
    ToolCall, ToolChoice, ToolChoiceMode, ToolKind, arguments_text,
};
pub use response::{
    ApiError, ChatCompletion, ChatCompletionChunk, Choice, ChoiceLogprobs, ChunkChoice,
    CompletionTokensDetails, Delta, ErrorBody, ErrorCode, FinishReason, FunctionCallDelta, Model,
    ModelList, PromptTokensDetails, StreamData, TokenLogprob, ToolCallDelta, TopLogprob, Usage,
};

/// An optional field whose explicit `null` is kept: `None` when the key is absent (and then not
/// written), `Some(None)` when it came as `null` (and then written as `null`), `Some(Some(v))`
/// otherwise. A plain `Option` cannot tell an absent key from a `null` one, so a round trip
/// would drop the `null` (or, with `skip_serializing_if` removed, add one that never came).
///
/// Fields of this type carry
/// `#[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "nullable")]`.
pub type Nullable<T> = Option<Option<T>>;

/// Reads a present key of a [`Nullable`] field: `null` as `Some(None)`, a value as
/// `Some(Some(v))`. (An absent key never reaches here: `#[serde(default)]` makes it `None`.)
fn nullable<'de, D, T>(deserializer: D) -> Result<Nullable<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    <Option<T> as serde::Deserialize>::deserialize(deserializer).map(Some)
}

/// Defines a closed set of string values with an `Other` fallback: a value the API adds later
/// is kept as it came instead of failing the whole body.
macro_rules! string_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $text)] $variant, )*
            /// A value this crate does not know yet, kept as it came.
            #[serde(untagged)]
            Other(String),
        }

        impl $name {
            /// The value as it is written on the wire.
            #[must_use]
            pub fn as_str(&self) -> &str {
                match self {
                    $( Self::$variant => $text, )*
                    Self::Other(other) => other,
                }
            }
        }

        impl From<&str> for $name {
            /// The value written `text` on the wire (`Other` when unknown).
            fn from(text: &str) -> Self {
                match text {
                    $( $text => Self::$variant, )*
                    other => Self::Other(other.to_owned()),
                }
            }
        }
    };
}
pub(crate) use string_enum;
