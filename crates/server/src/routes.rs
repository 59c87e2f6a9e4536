//! The route table: every route the server answers, in one place.

use crate::AppState;
use crate::handlers::{admin, contracts, conversations, health, openai};
use crate::metrics;
use crate::web;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};

/// The router over `state`.
///
/// | method | path | who | what |
/// |---|---|---|---|
/// | GET | `/healthz` | anyone | liveness: up, and the store answers reads |
/// | GET | `/readyz` | anyone | readiness: the store also takes a write now (503 on a full disk) |
/// | GET | `/metrics` | anyone | Prometheus series (HTTP, turns, attempts, repairs, violations, upstream, limits) |
/// | GET | `/v1/contracts` | user, admin | the contracts a conversation can be started under (name, version, kind, description) |
/// | POST | `/v1/conversations` | user, admin | start a conversation under a contract (counted against requests per minute) |
/// | GET | `/v1/conversations` | user, admin | the caller's own conversations (a short summary of each context) |
/// | GET | `/v1/conversations/{id}` | owner, admin | one conversation with its whole context |
/// | POST | `/v1/conversations/{id}/messages` | owner | send a message; the turn's final structured message |
/// | GET | `/v1/conversations/{id}/messages` | owner | the conversation as its user sees it (validated only) |
/// | POST | `/v1/chat/completions` | user, admin | OpenAI-compatible; a contract is enforced when named or given as `response_format` |
/// | GET | `/v1/models` | user, admin | OpenAI-compatible model list |
/// | GET | `/admin/v1/conversations` | admin | filters (user, contract, from, to, q, has_invalid, blocked, request_id), pagination |
/// | GET | `/admin/v1/conversations/{id}` | admin | every attempt with payload, violations, repairs; safety events |
/// | POST | `/admin/v1/conversations/{id}/unblock` | admin | lift a safety block |
/// | POST | `/admin/v1/messages/{id}/replay` | admin | send an attempt's stored request again and check the answer |
/// | GET | `/admin/v1/stats` | admin | compliance over time, attempts per turn, violated rules, repairs, retry tokens |
/// | GET | `/` | anyone | the web chat page (`web/chat/index.html`; the key is entered in the page) |
/// | GET | `/admin` | anyone | the admin console page (`web/admin/index.html`) |
/// | GET | `/admin/` | anyone | a permanent redirect (308) to `/admin` |
/// | GET | `/assets/{*path}` | anyone | a file under `web/` (embedded; CSP, nosniff, ETag) |
pub fn app(state: AppState) -> Router {
    let body_limit = state.settings.max_body_bytes;
    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/metrics", get(metrics::metrics))
        .route("/v1/contracts", get(contracts::list))
        .route(
            "/v1/conversations",
            get(conversations::list).post(conversations::create),
        )
        .route("/v1/conversations/{id}", get(conversations::read))
        .route(
            "/v1/conversations/{id}/messages",
            get(conversations::history).post(conversations::send),
        )
        .route("/v1/chat/completions", post(openai::completions))
        .route("/v1/models", get(openai::models))
        .route("/admin/v1/conversations", get(admin::conversations))
        .route("/admin/v1/stats", get(admin::stats))
        .route("/admin/v1/conversations/{id}", get(admin::conversation))
        .route("/admin/v1/conversations/{id}/unblock", post(admin::unblock))
        .route("/admin/v1/messages/{id}/replay", post(admin::replay))
        .route("/", get(web::chat))
        .route("/admin", get(web::admin))
        .route("/admin/", get(web::admin_slash))
        .route("/assets/{*path}", get(web::asset))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            metrics::track,
        ))
        // The request's span (traces, when `[telemetry]` is on), around everything above.
        .route_layer(axum::middleware::from_fn(crate::telemetry::request_span))
        .layer(DefaultBodyLimit::max(body_limit))
        // The whole body within `body_timeout_ms` (408), at most `max_body_bytes` (413).
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::extract::read_body_within,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::extract::refuse_declared_oversize,
        ))
        // Outermost: every answer, the other layers' refusals included, has its request id.
        .layer(axum::middleware::from_fn(crate::request_id::assign))
        .with_state(state)
}
