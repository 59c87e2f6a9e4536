//! The route table: every route the server answers, in one place.

use crate::AppState;
use crate::handlers::{conversations, health};
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::get;

/// The router over `state`.
///
/// | method | path | who | what |
/// |---|---|---|---|
/// | GET | `/healthz` | anyone | liveness and store check |
/// | POST | `/v1/conversations` | user, admin | start a conversation under a contract |
/// | GET | `/v1/conversations` | user, admin | the caller's own conversations |
/// | POST | `/v1/conversations/{id}/messages` | owner | send a message; the turn's final structured message |
/// | GET | `/v1/conversations/{id}/messages` | owner | the conversation as its user sees it (validated only) |
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
        .layer(DefaultBodyLimit::max(body_limit))
        .with_state(state)
}
