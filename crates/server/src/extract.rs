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
