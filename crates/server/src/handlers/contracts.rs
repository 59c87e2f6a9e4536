//! `GET /v1/contracts`: the contracts a conversation can be started under (built-in and added),
//! so clients offer real choices instead of hard-coded names.

use super::bodies::{ContractItem, ItemsBody};
use crate::AppState;
use crate::auth::Caller;
use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};

pub async fn list(State(state): State<AppState>, _caller: Caller) -> Response {
    let items = state
        .engine
        .contracts()
        .iter()
        .map(|c| ContractItem {
            name: c.name(),
            version: c.version().to_string(),
            kind: c.kind().as_str(),
            description: c.description(),
        })
        .collect();
    Json(ItemsBody { items }).into_response()
}
