//! Extractors that answer with [`ApiError`] bodies: the authenticated [`Caller`] and
//! [`ApiJson`], a JSON body whose rejections (malformed, wrong type, too large) keep the error
//! shape of the rest of the API.

use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiError;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        state.keys.authenticate(&parts.headers)
    }
}

/// A JSON request body.
#[derive(Debug)]
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(request, state).await {
            Ok(axum::Json(value)) => Ok(Self(value)),
            Err(rejection) => Err(match rejection.status() {
                StatusCode::PAYLOAD_TOO_LARGE => {
                    ApiError::PayloadTooLarge("the request body is too large".into())
                }
                StatusCode::UNSUPPORTED_MEDIA_TYPE => {
                    ApiError::UnsupportedMediaType(body_message(&rejection))
                }
                _ => ApiError::BadRequest(body_message(&rejection)),
            }),
        }
    }
}

fn body_message(rejection: &JsonRejection) -> String {
    match rejection {
        JsonRejection::MissingJsonContentType(_) => {
            "send the body as JSON with Content-Type: application/json".into()
        }
        other => format!("invalid JSON body: {}", other.body_text()),
    }
}

/// Refuses a request whose declared `Content-Length` is past `[server] max_body_bytes` with 413
/// at once, before reading any of it (a body without a length is still cut at the limit).
pub async fn refuse_declared_oversize(
    axum::extract::State(state): axum::extract::State<AppState>,
    request: Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let declared = request
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    match declared {
        Some(length) if length > state.settings.max_body_bytes as u64 => {
            axum::response::IntoResponse::into_response(ApiError::PayloadTooLarge(format!(
                "the request body is {length} bytes; the limit is {}",
                state.settings.max_body_bytes
            )))
        }
        _ => next.run(request).await,
    }
}
