//! Bridle's typed wire formats: the request, response and stream-chunk bodies of the LLM APIs
//! Bridle calls (as a client, through its providers) and serves (its OpenAI-compatible endpoint,
//! the mock's front ends).
//!
//! - [`openai`]: OpenAI Chat Completions;
//! - [`anthropic`]: Anthropic Messages;
//! - [`gemini`]: Google Gemini `generateContent`;
//! - [`strings_as`]: a JSON value written with its strings replaced on the fly (the stored
//!   request leaves its prompt out, the upstream body writes long texts from their escaped form).
//!
//! Serde only, no I/O. Every type that a pass-through carries keeps the fields it does not
//! model in an explicit `extra` map (`#[serde(flatten)]`), so a body read and written again
//! loses nothing a client sent. Raw `serde_json::Value` stays only where the API itself says
//! "any JSON" (a JSON Schema, a tool's arguments object).

pub mod anthropic;
pub mod gemini;
pub mod openai;
pub mod strings_as;

/// The fields of a wire object that Bridle does not model, kept as they came.
pub type Extra = serde_json::Map<String, serde_json::Value>;
