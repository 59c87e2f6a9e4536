//! [`ApiError`]: every error the server answers, mapped to an HTTP status and one JSON body
//! shape (OpenAI's: `{"error": {"message", "type", "code"}}`) in one table, so clients of the
//! native API and of the OpenAI-compatible endpoint read errors the same way.
//!
//! What a user reads carries no internals ([`ApiError::public_message`]): a failure on our side
//! (500) or of the store (503) is a fixed sentence, the database's own text going to the log
//! only; a provider failure names its kind and HTTP status, never the upstream URL or the
//! provider's own message; a turn without a valid reply says how many attempts were made,
//! never what an invalid attempt said (violations quote it). The detail is logged, and the
//! attempts, errors included, are in the record for administrators. Inside a request, the body's
//! `error` object also carries `request_id` (the response's `x-request-id`), for the user to
//! quote.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bridle_core::Violation;
use bridle_engine::providers::ProviderError;
use bridle_engine::{EngineError, TurnError};
use bridle_wire::Extra;
use bridle_wire::openai::{ApiError as WireError, ErrorBody, ErrorCode};
use serde::Serialize;
use std::time::Duration;

/// An error answer.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// No or an unknown API key.
    #[error("{0}")]
    Unauthorized(String),
    /// The key's role may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// No such thing (or not the caller's).
    #[error("{0}")]
    NotFound(String),
    /// The request names a model that is not configured (404 `model_not_found`, `param`
    /// `model`, as OpenAI answers).
    #[error("{0}")]
    ModelNotFound(String),
    /// The request body or parameters are wrong.
    #[error("{0}")]
    BadRequest(String),
    /// The request asks what the model's provider cannot honour (`seed` of an Anthropic
    /// model, an audio part, …): 400 `unsupported_parameter`, `param` naming the field, as
    /// OpenAI answers — never a silent drop.
    #[error("{message}")]
    UnsupportedParameter {
        /// What cannot be honoured.
        message: String,
        /// The request field.
        param: String,
    },
    /// The request conflicts with the state of the thing it names.
    #[error("{0}")]
    Conflict(String),
    /// A turn of the conversation is still running (409 `turn_in_progress`).
    #[error("{0}")]
    TurnInProgress(String),
    /// The request body did not arrive in time (408).
    #[error("{0}")]
    RequestTimeout(String),
    /// The request body is over the size limit.
    #[error("{0}")]
    PayloadTooLarge(String),
    /// The request is well-formed but breaks a limit or rule (too long, blocked, …).
    #[error("{0}")]
    Unprocessable(String),
    /// The conversation is blocked by the safety policy: the message is the blocked answer
    /// (crisis resources), shown instead of a reply until an admin unblocks it.
    #[error("{0}")]
    Blocked(String),
    /// Too many requests; retry after the given time.
    #[error("{message}")]
    RateLimited {
        /// What was exceeded.
        message: String,
        /// When to retry.
        retry_after: Duration,
    },
    /// The upstream model failed in a way retrying cannot fix, or no valid reply came back.
    /// The text is shown to the user: build it with [`provider_message`] or from counts.
    #[error("{0}")]
    Upstream(String),
    /// Every attempt of an enforced OpenAI-compatible call broke the contract and it has no
    /// fallback: 422 `contract_unmet`, which the OpenAI SDKs do not retry (they retry 5xx, and
    /// each retry would cost the whole turn again). The body lists where the last attempt broke
    /// which rule — never its content.
    #[error("{message}")]
    ContractUnmet {
        /// How many attempts were made, in words.
        message: String,
        /// The last attempt's violations, by path and rule.
        violations: Vec<UnmetRule>,
    },
    /// The body is not declared as JSON (415).
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// The store is out of reach or cannot write for now (database down or restarting, disk
    /// full or read-only): 503 with `Retry-After`; what was stored before stays whole. The
    /// text is the detail for the log; users read a fixed sentence.
    #[error("{0}")]
    Unavailable(String),
    /// Something on our side failed (storage, …). The text is the detail for the log; users
    /// read a fixed sentence.
    #[error("{0}")]
    Internal(String),
}

/// What a client is told to wait before retrying after a 503.
const UNAVAILABLE_RETRY_AFTER_SECS: u64 = 2;

impl ApiError {
    /// Status, OpenAI error `type`, and `code`.
    fn parts(&self) -> (StatusCode, &'static str, &'static str) {
        match self {
            Self::Unauthorized(_) => (
                StatusCode::UNAUTHORIZED,
                "authentication_error",
                "invalid_api_key",
            ),
            Self::Forbidden(_) => (StatusCode::FORBIDDEN, "permission_error", "forbidden"),
            Self::NotFound(_) => (StatusCode::NOT_FOUND, "invalid_request_error", "not_found"),
            Self::ModelNotFound(_) => (
                StatusCode::NOT_FOUND,
                "invalid_request_error",
                "model_not_found",
            ),
            Self::ContractUnmet { .. } => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "contract_unmet",
                "contract_unmet",
            ),
            Self::BadRequest(_) => (
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                "bad_request",
            ),
            Self::UnsupportedParameter { .. } => (
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                "unsupported_parameter",
            ),
            Self::Conflict(_) => (StatusCode::CONFLICT, "invalid_request_error", "conflict"),
            Self::TurnInProgress(_) => (
                StatusCode::CONFLICT,
                "invalid_request_error",
                "turn_in_progress",
            ),
            Self::RequestTimeout(_) => (
                StatusCode::REQUEST_TIMEOUT,
                "invalid_request_error",
                "request_timeout",
            ),
            Self::PayloadTooLarge(_) => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "invalid_request_error",
                "payload_too_large",
            ),
            Self::Unprocessable(_) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request_error",
                "unprocessable",
            ),
            Self::Blocked(_) => (
                StatusCode::LOCKED,
                "conversation_blocked",
                "conversation_blocked",
            ),
            Self::RateLimited { .. } => (
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limit_error",
                "rate_limited",
            ),
            Self::Upstream(_) => (StatusCode::BAD_GATEWAY, "upstream_error", "upstream_failed"),
            Self::UnsupportedMediaType(_) => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "invalid_request_error",
                "unsupported_media_type",
            ),
            Self::Unavailable(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "server_error",
                "store_unavailable",
            ),
            Self::Internal(_) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "server_error",
                "internal",
            ),
        }
    }
}

/// Longest field name (and message) an `unsupported_parameter` answer echoes, in characters: the
/// name can be a key the client made up.
const MAX_PARAM_CHARS: usize = 100;

impl ApiError {
    /// A 400 `unsupported_parameter` naming `field`, both cut to [`MAX_PARAM_CHARS`] (the
    /// message at twice that and the field's length) so a made-up key is never echoed whole.
    fn unsupported(message: &str, field: &str) -> Self {
        let param: String = field.chars().take(MAX_PARAM_CHARS).collect();
        let message = if field.chars().count() > MAX_PARAM_CHARS {
            message.replace(field, &format!("{param}…"))
        } else {
            message.to_owned()
        };
        Self::UnsupportedParameter {
            message: message.chars().take(2 * MAX_PARAM_CHARS + 100).collect(),
            param,
        }
    }
}

/// Most violations a 422 `contract_unmet` lists (the first ones of the last attempt).
const MAX_UNMET_RULES: usize = 20;
/// Longest path it lists, in characters (a path names keys the model wrote).
const MAX_UNMET_PATH_CHARS: usize = 200;

/// Where an attempt broke which rule, as a 422 `contract_unmet` lists it: the path and the
/// rule only, so nothing the model wrote reaches the client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnmetRule {
    /// JSON pointer into the reply (`""`: the whole reply).
    pub path: String,
    /// The rule's name (`required`, `enum`, `parse`, …).
    pub rule: String,
}

impl ApiError {
    /// The error of an enforced OpenAI-compatible call: [`ApiError::ContractUnmet`] when every
    /// attempt broke the contract, otherwise as for every route.
    pub fn from_enforced(error: EngineError) -> Self {
        match error {
            EngineError::Turn(TurnError::Exhausted {
                attempts,
                violations,
                ..
            }) => Self::contract_unmet(
                format!(
                    "the model gave no valid reply in {attempts} attempt(s); every attempt is recorded for the administrators"
                ),
                &violations,
            ),
            other => Self::from(other),
        }
    }

    /// [`ApiError::ContractUnmet`] with `message` and the last attempt's `violations` (capped).
    fn contract_unmet(message: String, violations: &[Violation]) -> Self {
        Self::ContractUnmet {
            message,
            violations: violations
                .iter()
                .take(MAX_UNMET_RULES)
                .map(|v| UnmetRule {
                    path: v.path.chars().take(MAX_UNMET_PATH_CHARS).collect(),
                    rule: v.rule.as_str().to_owned(),
                })
                .collect(),
        }
    }
}

/// What users read for a 500.
const INTERNAL_MESSAGE: &str = "something went wrong on our side; it has been logged";
/// What users read for a 503.
const UNAVAILABLE_MESSAGE: &str = "the store is unavailable for now; try again shortly";

impl ApiError {
    /// The stable error code (`not_found`, `upstream_failed`, …), as in the JSON error body.
    pub fn code(&self) -> &'static str {
        self.parts().2
    }

    /// The message a client reads: the error's own text, except for failures on our side
    /// (500, 503), whose detail (database text, file paths) is for the log only.
    pub fn public_message(&self) -> String {
        match self {
            Self::Internal(_) => INTERNAL_MESSAGE.to_owned(),
            Self::Unavailable(_) => UNAVAILABLE_MESSAGE.to_owned(),
            other => other.to_string(),
        }
    }
}

/// What a user is told about a provider failure: its kind and HTTP status, never the
/// provider's URL or own message (which can quote keys, internal hosts or the request).
pub fn provider_message(error: &ProviderError) -> String {
    match error {
        ProviderError::Timeout(_) => "the model did not answer in time".into(),
        ProviderError::Connection(_) => "the model could not be reached".into(),
        ProviderError::Status { status, .. } => format!("the model answered HTTP {status}"),
        ProviderError::Decode(_) => "the model's answer could not be read".into(),
        ProviderError::Stream(_) => "the model's stream broke off".into(),
        // Bridle's own words about the request, naming a field of it.
        ProviderError::Unsupported { message, .. } => message.clone(),
    }
}

/// What a user is told about a turn that produced no final message.
fn turn_message(error: &TurnError) -> String {
    match error {
        TurnError::Exhausted {
            attempts,
            budget_spent: true,
            ..
        } => format!(
            "the model gave no valid reply in {attempts} attempt(s) before the turn's token budget was spent; every attempt is recorded for the administrators"
        ),
        TurnError::Exhausted { attempts, .. } => format!(
            "the model gave no valid reply in {attempts} attempt(s); every attempt is recorded for the administrators"
        ),
        TurnError::Provider { attempt, error } => format!(
            "attempt {attempt} failed and cannot be retried: {}",
            provider_message(error)
        ),
        TurnError::Cancelled { attempt } => {
            format!("the turn was cancelled during attempt {attempt}")
        }
        TurnError::Store(_) => UNAVAILABLE_MESSAGE.to_owned(),
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, kind, code) = self.parts();
        if status.is_server_error() {
            tracing::error!(error = %self, "request failed");
        }
        let mut extra = Extra::new();
        // The id the user quotes when reporting the failure (the response's `x-request-id`).
        if let Some(request_id) = crate::request_id::current().and_then(|ids| ids.request_id) {
            extra.insert("request_id".into(), serde_json::Value::String(request_id));
        }
        if let Self::ContractUnmet { violations, .. } = &self
            && let Ok(list) = serde_json::to_value(violations)
        {
            extra.insert("violations".into(), list);
        }
        let param = match &self {
            Self::ModelNotFound(_) => Some(Some("model".to_owned())),
            Self::UnsupportedParameter { param, .. } => Some(Some(param.clone())),
            _ => None,
        };
        let body = ErrorBody {
            error: WireError {
                message: self.public_message(),
                kind: Some(Some(kind.to_owned())),
                param,
                code: Some(Some(ErrorCode::Text(code.to_owned()))),
                extra,
            },
            extra: Extra::new(),
        };
        let mut response = (status, Json(body)).into_response();
        let retry_after = match &self {
            Self::RateLimited { retry_after, .. } => {
                Some(retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0))
            }
            Self::Unavailable(_) => Some(UNAVAILABLE_RETRY_AFTER_SECS),
            _ => None,
        };
        if let Some(seconds) = retry_after
            && let Ok(value) = HeaderValue::from_str(&seconds.max(1).to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        response
    }
}

impl From<EngineError> for ApiError {
    fn from(error: EngineError) -> Self {
        match error {
            EngineError::NoConversation(_) | EngineError::NoMessage(_) => {
                Self::NotFound(error.to_string())
            }
            EngineError::NotReplayable(_) => Self::Conflict(error.to_string()),
            EngineError::Contract(e) => Self::BadRequest(e.to_string()),
            EngineError::UnknownModel { .. }
            | EngineError::BadContext(_)
            | EngineError::BadMessage(_) => Self::BadRequest(error.to_string()),
            EngineError::Blocked(_) | EngineError::BadAnswer(_) => {
                Self::Unprocessable(error.to_string())
            }
            EngineError::Turn(TurnError::Store(e)) | EngineError::Store(e) => Self::from(e),
            EngineError::Turn(TurnError::Provider {
                error: ProviderError::Unsupported { message, field },
                ..
            }) => Self::unsupported(&message, &field),
            // Every attempt broke the contract (the last one by content, not by a provider
            // failure) and it has no fallback: the same 422 as on the OpenAI endpoint.
            EngineError::Turn(ref e @ TurnError::Exhausted { ref violations, .. })
                if !violations.is_empty() =>
            {
                Self::contract_unmet(turn_message(e), violations)
            }
            EngineError::Turn(e) => {
                // The detail (violations quoting the invalid reply, the provider's own text)
                // is in the record and the log, not in the answer.
                tracing::warn!(error = %e, "the turn produced no final message");
                Self::Upstream(turn_message(&e))
            }
            EngineError::Refused(e) => Self::from(e),
            EngineError::Provider(e) => Self::Internal(format!("provider setup failed: {e}")),
            EngineError::Safety(e) => Self::Internal(format!("safety policy setup failed: {e}")),
        }
    }
}

impl From<ProviderError> for ApiError {
    /// A provider's refusal of a request ([`ProviderError::Unsupported`]) is the caller's 400;
    /// any other failure of a passed-through call is a 502 (429: rate limited, with the
    /// provider's `Retry-After`) that names its kind only.
    fn from(error: ProviderError) -> Self {
        if let ProviderError::Unsupported { message, field } = error {
            return Self::unsupported(&message, &field);
        }
        tracing::warn!(%error, "a passed-through call failed");
        let message = provider_message(&error);
        match error {
            ProviderError::Status { status: 429, .. } => Self::RateLimited {
                message,
                retry_after: error.retry_after().unwrap_or(Duration::from_secs(1)),
            },
            // The model refused what the client asked (a tool_choice naming no offered tool,
            // a context too long): the client's to fix, and not worth an SDK's retry.
            ProviderError::Status {
                status: 400 | 404 | 413 | 422,
                ..
            } => Self::BadRequest(format!("the model refused the request: {message}")),
            _ => Self::Upstream(message),
        }
    }
}

impl From<bridle_engine::store::StoreError> for ApiError {
    fn from(error: bridle_engine::store::StoreError) -> Self {
        if error.is_unavailable() {
            Self::Unavailable(format!("the store is unavailable: {error}"))
        } else {
            Self::Internal(format!("storage failed: {error}"))
        }
    }
}

impl From<crate::limits::Rejection> for ApiError {
    fn from(rejection: crate::limits::Rejection) -> Self {
        let what = match rejection.limit {
            crate::limits::LimitKind::RequestsPerMinute => "requests per minute",
            crate::limits::LimitKind::ConcurrentConversations => "concurrent active conversations",
        };
        Self::RateLimited {
            message: format!("rate limit reached: {} {what}", rejection.limit_value),
            retry_after: std::time::Duration::from_secs(rejection.retry_after_secs()),
        }
    }
}
