//! The route table: every route the server answers, in one place.

use crate::AppState;
use crate::handlers::{conversations, health, openai};
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};

/// The router over `state`.
///
/// | method | path | who | what |
/// |---|---|---|---|
/// | GET | `/healthz` | anyone | liveness and store check |
/// | POST | `/v1/conversations` | user, admin | start a conversation under a contract |
/// | GET | `/v1/conversations` | user, admin | the caller's own conversations |
/// | POST | `/v1/conversations/{id}/messages` | owner | send a message; the turn's final structured message |
/// | GET | `/v1/conversations/{id}/messages` | owner | the conversation as its user sees it (validated only) |
/// | POST | `/v1/chat/completions` | user, admin | OpenAI-compatible; a contract is enforced when named or given as `response_format` |
/// | GET | `/v1/models` | user, admin | OpenAI-compatible model list |
pub fn app(state: AppState) -> Router {
    let body_limit = state.settings.max_body_bytes;
    Router::new()
        .route("/healthz", get(health::healthz))
        .route(
            "/v1/conversations",
            get(conversations::list).post(conversations::create),
        )
        .route(
            "/v1/conversations/{id}/messages",
            get(conversations::history).post(conversations::send),
        )
        .route("/v1/chat/completions", post(openai::completions))
        .route("/v1/models", get(openai::models))
        .layer(DefaultBodyLimit::max(body_limit))
        .with_state(state)
}
