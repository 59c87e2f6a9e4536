//! Google Gemini `generateContent` (`POST …/models/{model}:generateContent`, and
//! `:streamGenerateContent?alt=sse`, whose events are each a [`GenerateContentResponse`]):
//!
//! - [`GenerateContentRequest`]: [`Content`]s of [`Part`]s (text, `inlineData`,
//!   `functionCall`, `functionResponse`), the `systemInstruction`, [`Tool`]s with their
//!   `functionDeclarations`, the [`ToolConfig`] and the [`GenerationConfig`];
//! - [`GenerateContentResponse`]: [`Candidate`]s, their [`FinishReason`], [`UsageMetadata`];
//! - [`ErrorBody`]: `{"error": {"code", "message", "status"}}`.
//!
//! Field names are the API's camelCase. A [`Part`] is one of several shapes told apart by
//! which field it has; it is modelled as a struct of optional fields so a part of a kind this
//! crate does not know passes through in its `extra`. Every object keeps its unmodelled fields
//! in `extra`; enums the API grows keep an unknown value in `Other`.

use crate::Extra;
use crate::openai::string_enum;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The body of `generateContent` and `streamGenerateContent`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GenerateContentRequest {
    /// The conversation: `user` and `model` turns.
    #[serde(default)]
    pub contents: Vec<Content>,
    /// Instructions (the system prompt), given apart from the turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_instruction: Option<Content>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// How the model may call them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_config: Option<ToolConfig>,
    /// Sampling and output settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation_config: Option<GenerationConfig>,
    /// Fields not modelled here (`safetySettings`, `cachedContent`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// One turn: its role and parts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Content {
    /// `user` or `model` (absent in a `systemInstruction`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The parts.
    #[serde(default)]
    pub parts: Vec<Part>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Content {
    /// A turn of `role` (`user`, `model`, or none for a system instruction) with `parts`.
    pub fn new(role: Option<&str>, parts: Vec<Part>) -> Self {
        Self {
            role: role.map(str::to_owned),
            parts,
            extra: Extra::new(),
        }
    }

    /// The text of its text parts (thoughts left out), joined.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter(|part| part.thought != Some(true))
            .filter_map(|part| part.text.as_deref())
            .collect()
    }
}

/// One part of a turn: text, inline data, a function call or a function's response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    /// Text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Bytes given inline (an image, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline_data: Option<Blob>,
    /// A call the model made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_call: Option<FunctionCall>,
    /// The result of a call, sent back to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_response: Option<FunctionResponse>,
    /// Whether the text is the model's reasoning (a thought), not its reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought: Option<bool>,
    /// Fields not modelled here (`fileData`, `executableCode`, `thoughtSignature`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }
}

/// Bytes of a media type, base64-encoded.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Blob {
    /// `image/png`, …
    #[serde(default)]
    pub mime_type: String,
    /// The bytes, base64.
    #[serde(default)]
    pub data: String,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A function call the model made.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// The call's id, when the API gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The function's name.
    #[serde(default)]
    pub name: String,
    /// The arguments (an object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A function's result, answering a call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FunctionResponse {
    /// The id of the call it answers, when the call had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The function's name (required: Gemini matches results to calls by name).
    #[serde(default)]
    pub name: String,
    /// The result (an object).
    #[serde(default)]
    pub response: Value,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A tool: function declarations (or another kind, kept in `extra`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// The functions offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_declarations: Option<Vec<FunctionDeclaration>>,
    /// Fields not modelled here (`googleSearch`, `codeExecution`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// One function the model may call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionDeclaration {
    /// Its name.
    pub name: String,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its parameters: an OpenAPI schema object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
    /// Its parameters as a JSON Schema (the newer field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters_json_schema: Option<Value>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `toolConfig`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolConfig {
    /// How functions may be called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_calling_config: Option<FunctionCallingConfig>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `toolConfig.functionCallingConfig`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionCallingConfig {
    /// `AUTO`, `ANY` (a call is forced), `NONE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<FunctionCallingMode>,
    /// With `ANY`: the functions the forced call may be of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_function_names: Option<Vec<String>>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

string_enum! {
    /// Whether and how the model calls functions.
    pub enum FunctionCallingMode {
        /// The model decides.
        Auto = "AUTO",
        /// The model must call one of the allowed functions.
        Any = "ANY",
        /// No calls.
        None = "NONE",
        /// Calls or text, calls checked against the schema.
        Validated = "VALIDATED",
    }
}

/// `generationConfig`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GenerationConfig {
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling mass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Top-k sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u32>,
    /// Most tokens to generate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// Sequences where generation stops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// How many candidates to generate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate_count: Option<u32>,
    /// Sampling seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// Presence penalty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f64>,
    /// Frequency penalty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f64>,
    /// `text/plain` or `application/json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_mime_type: Option<String>,
    /// The reply's schema (Gemini's OpenAPI-3 subset), with `application/json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_schema: Option<Value>,
    /// Fields not modelled here (`responseJsonSchema`, `thinkingConfig`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// The answer of `generateContent` (and each event of a stream).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GenerateContentResponse {
    /// The candidates (one unless more were asked for).
    #[serde(default)]
    pub candidates: Vec<Candidate>,
    /// Tokens used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_metadata: Option<UsageMetadata>,
    /// The model version that answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_version: Option<String>,
    /// The answer's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    /// Fields not modelled here (`promptFeedback`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// One candidate reply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    /// Its content (absent when blocked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Content>,
    /// Why generation stopped (absent until the last event of a stream).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<FinishReason>,
    /// Its index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    /// Fields not modelled here (`safetyRatings`, `citationMetadata`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

string_enum! {
    /// Why a candidate stopped.
    pub enum FinishReason {
        /// A natural end or a stop sequence.
        Stop = "STOP",
        /// The token limit.
        MaxTokens = "MAX_TOKENS",
        /// Blocked for safety.
        Safety = "SAFETY",
        /// Blocked as recitation.
        Recitation = "RECITATION",
        /// A malformed function call.
        MalformedFunctionCall = "MALFORMED_FUNCTION_CALL",
        /// Another reason.
        Unspecified = "OTHER",
    }
}

/// `usageMetadata`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageMetadata {
    /// Prompt tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_token_count: Option<u64>,
    /// Tokens of the candidates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidates_token_count: Option<u64>,
    /// All tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_token_count: Option<u64>,
    /// Fields not modelled here (`thoughtsTokenCount`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// An error answer: `{"error": {"code", "message", "status"}}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ApiError,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The error of an [`ErrorBody`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ApiError {
    /// The HTTP status.
    #[serde(default)]
    pub code: u16,
    /// What went wrong.
    #[serde(default)]
    pub message: String,
    /// The status name (`INVALID_ARGUMENT`, `RESOURCE_EXHAUSTED`, …).
    #[serde(default)]
    pub status: String,
    /// Fields not modelled here (`details`).
    #[serde(flatten)]
    pub extra: Extra,
}

impl ErrorBody {
    /// The error body for HTTP `code` with `message` (its status name from the code).
    pub fn new(code: u16, message: impl Into<String>) -> Self {
        let status = match code {
            400 => "INVALID_ARGUMENT",
            401 => "UNAUTHENTICATED",
            403 => "PERMISSION_DENIED",
            404 => "NOT_FOUND",
            429 => "RESOURCE_EXHAUSTED",
            503 => "UNAVAILABLE",
            504 => "DEADLINE_EXCEEDED",
            _ => "INTERNAL",
        };
        Self {
            error: ApiError {
                code,
                message: message.into(),
                status: status.to_owned(),
                extra: Extra::new(),
            },
            extra: Extra::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_request_round_trips_with_what_it_does_not_model() {
        let body = json!({
            "contents": [
                {"role": "user", "parts": [{"text": "hi"},
                    {"inlineData": {"mimeType": "image/png", "data": "AAAA"}}]},
                {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {"a": 1}},
                    "thoughtSignature": "sig"}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"ok": true}}}]}
            ],
            "systemInstruction": {"parts": [{"text": "rules"}]},
            "tools": [{"functionDeclarations": [{"name": "f", "parameters": {"type": "OBJECT"}}]}],
            "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["f"]}},
            "generationConfig": {"temperature": 0.5, "maxOutputTokens": 10,
                "responseMimeType": "application/json", "thinkingConfig": {"thinkingBudget": 0}},
            "safetySettings": []
        });
        let request: GenerateContentRequest = serde_json::from_value(body.clone()).unwrap();
        assert_eq!(
            request
                .tool_config
                .as_ref()
                .and_then(|c| c.function_calling_config.as_ref())
                .and_then(|c| c.mode.clone()),
            Some(FunctionCallingMode::Any)
        );
        assert_eq!(
            request.contents[1].parts[0].extra["thoughtSignature"],
            "sig"
        );
        assert_eq!(serde_json::to_value(&request).unwrap(), body);
    }

    #[test]
    fn a_response_and_an_error_are_read() {
        let answer: GenerateContentResponse = serde_json::from_value(json!({
            "candidates": [{"content": {"role": "model", "parts": [
                {"text": "thinking", "thought": true}, {"text": "He"}, {"text": "llo"}]},
                "finishReason": "BLOCKLIST", "safetyRatings": []}],
            "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2, "totalTokenCount": 5}
        }))
        .unwrap();
        let candidate = &answer.candidates[0];
        assert_eq!(candidate.content.as_ref().unwrap().text(), "Hello");
        assert_eq!(
            candidate.finish_reason,
            Some(FinishReason::Other("BLOCKLIST".into()))
        );
        let error: ErrorBody = serde_json::from_str(
            r#"{"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}}"#,
        )
        .unwrap();
        assert_eq!(error, ErrorBody::new(429, "Quota exceeded"));
    }
}
