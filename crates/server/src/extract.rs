//! Extractors that answer with [`ApiError`] bodies: the authenticated [`Caller`] and [`Admin`],
//! [`ApiJson`], a JSON body, and [`ApiQuery`], query parameters, whose rejections (malformed,
//! wrong type, too large) keep the error shape of the rest of the API; and the two body guards
//! every request passes: [`refuse_declared_oversize`] and [`read_body_within`].

use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiError;
use axum::body::Body;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

/// An authenticated caller with an admin key: the admin routes take this instead of a
/// [`Caller`], so none of them can forget the check (401 without a valid key, 403 with a user
/// key, before anything else of the request is read).
#[derive(Debug)]
pub struct Admin;

impl FromRequestParts<AppState> for Admin {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        state.keys.authenticate(&parts.headers)?.require_admin()?;
        Ok(Self)
    }
}

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

/// Query parameters, rejected (`?limit=abc`) with the API's error body instead of axum's plain
/// text.
#[derive(Debug)]
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(value)) => Ok(Self(value)),
            Err(rejection) => Err(ApiError::BadRequest(format!(
                "invalid query parameters: {}",
                rejection.body_text()
            ))),
        }
    }
}

/// Reads the whole request body within `[server] body_timeout_ms` from the end of the headers,
/// at most `max_body_bytes` of it, before any handler runs: a body that arrives too slowly is
/// answered 408, however steadily it trickles (a per-piece deadline let one byte every few
/// seconds hold a request open for ever), and one past the limit 413. Every body the API
/// takes is a JSON document the handler reads whole anyway, so holding it here costs no more
/// memory than the handler would.
pub async fn read_body_within(
    axum::extract::State(state): axum::extract::State<AppState>,
    request: Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use http_body_util::BodyExt as _;
    let (parts, body) = request.into_parts();
    let limit = state.settings.max_body_bytes;
    let deadline = std::time::Duration::from_millis(state.settings.body_timeout_ms);
    let read = http_body_util::Limited::new(body, limit).collect();
    let error = match tokio::time::timeout(deadline, read).await {
        Ok(Ok(collected)) => {
            let request = Request::from_parts(parts, Body::from(collected.to_bytes()));
            return next.run(request).await;
        }
        Err(_) => ApiError::RequestTimeout(format!(
            "the request body did not arrive within {} ms",
            state.settings.body_timeout_ms
        )),
        Ok(Err(error)) if error.is::<http_body_util::LengthLimitError>() => {
            ApiError::PayloadTooLarge(format!("the request body is over {limit} bytes"))
        }
        Ok(Err(_)) => ApiError::BadRequest("the request body could not be read".into()),
    };
    axum::response::IntoResponse::into_response(error)
}
